"""Every operation the client offers, as a request and the generated model its answer is
parsed into: written once here, sent by the sync resources (`_resources`) and the async
ones (`_async_resources`) alike.

Bodies are the caller's fields as given (datetimes written as RFC 3339): the service
checks them and answers a 400 naming any field it does not know, which the generated
request models would drop without a word."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from ._core import Call, Listing, segment, wire
from .generated.models import (
    Balance,
    CheckoutSession,
    CreatedSandbox,
    DeletedSandbox,
    DeletedTestClock,
    Event,
    Refund,
    Sandbox,
    Subscription,
    TestClock,
    Transaction,
    Trigger,
    WebhookEndpoint,
)


def _fields(fields: Mapping[str, Any], **given: Any) -> dict[str, Any]:
    """`fields` and the named arguments that were given (not None)."""
    return wire({**fields, **{k: v for k, v in given.items() if v is not None}})


class CheckoutSessions:
    @staticmethod
    def create(fields: Mapping[str, Any], key: str | None) -> Call[CheckoutSession]:
        return Call("POST", "/checkout/sessions", CheckoutSession.from_dict, wire(fields), key)

    @staticmethod
    def retrieve(id: str) -> Call[CheckoutSession]:
        return Call("GET", f"/checkout/sessions/{segment(id)}", CheckoutSession.from_dict)

    @staticmethod
    def list(filters: Mapping[str, Any]) -> Listing[CheckoutSession]:
        return Listing("/checkout/sessions", CheckoutSession.from_dict, filters)


class Subscriptions:
    @staticmethod
    def create(fields: Mapping[str, Any], key: str | None) -> Call[Subscription]:
        return Call("POST", "/subscriptions", Subscription.from_dict, wire(fields), key)

    @staticmethod
    def retrieve(id: str) -> Call[Subscription]:
        return Call("GET", f"/subscriptions/{segment(id)}", Subscription.from_dict)

    @staticmethod
    def list(filters: Mapping[str, Any]) -> Listing[Subscription]:
        return Listing("/subscriptions", Subscription.from_dict, filters)

    @staticmethod
    def cancel(id: str, key: str | None) -> Call[Subscription]:
        path = f"/subscriptions/{segment(id)}/cancel"
        return Call("POST", path, Subscription.from_dict, None, key)


class Refunds:
    @staticmethod
    def create(fields: Mapping[str, Any], key: str | None) -> Call[Refund]:
        return Call("POST", "/refunds", Refund.from_dict, wire(fields), key)

    @staticmethod
    def retrieve(id: str) -> Call[Refund]:
        return Call("GET", f"/refunds/{segment(id)}", Refund.from_dict)

    @staticmethod
    def list(filters: Mapping[str, Any]) -> Listing[Refund]:
        return Listing("/refunds", Refund.from_dict, filters)


class Transactions:
    @staticmethod
    def retrieve(id: str) -> Call[Transaction]:
        return Call("GET", f"/transactions/{segment(id)}", Transaction.from_dict)

    @staticmethod
    def list(filters: Mapping[str, Any]) -> Listing[Transaction]:
        return Listing("/transactions", Transaction.from_dict, filters)


class Balances:
    @staticmethod
    def retrieve() -> Call[Balance]:
        return Call("GET", "/balance", Balance.from_dict)


class Events:
    @staticmethod
    def retrieve(id: str) -> Call[Event]:
        return Call("GET", f"/events/{segment(id)}", Event.from_dict)

    @staticmethod
    def list(filters: Mapping[str, Any]) -> Listing[Event]:
        return Listing("/events", Event.from_dict, filters)


class TestClocks:
    @staticmethod
    def create(fields: Mapping[str, Any], key: str | None) -> Call[TestClock]:
        return Call("POST", "/test_clocks", TestClock.from_dict, wire(fields), key)

    @staticmethod
    def retrieve(id: str) -> Call[TestClock]:
        return Call("GET", f"/test_clocks/{segment(id)}", TestClock.from_dict)

    @staticmethod
    def list(filters: Mapping[str, Any]) -> Listing[TestClock]:
        return Listing("/test_clocks", TestClock.from_dict, filters)

    @staticmethod
    def advance(id: str, frozen_time: Any, key: str | None) -> Call[TestClock]:
        path = f"/test_clocks/{segment(id)}/advance"
        body = wire({"frozen_time": frozen_time})
        return Call("POST", path, TestClock.from_dict, body, key)

    @staticmethod
    def delete(id: str) -> Call[DeletedTestClock]:
        return Call("DELETE", f"/test_clocks/{segment(id)}", DeletedTestClock.from_dict)


class WebhookEndpoints:
    @staticmethod
    def create(fields: Mapping[str, Any], key: str | None) -> Call[WebhookEndpoint]:
        return Call("POST", "/webhook_endpoints", WebhookEndpoint.from_dict, wire(fields), key)

    @staticmethod
    def retrieve(id: str) -> Call[WebhookEndpoint]:
        return Call("GET", f"/webhook_endpoints/{segment(id)}", WebhookEndpoint.from_dict)

    @staticmethod
    def list(filters: Mapping[str, Any]) -> Listing[WebhookEndpoint]:
        return Listing("/webhook_endpoints", WebhookEndpoint.from_dict, filters)

    @staticmethod
    def update(id: str, fields: Mapping[str, Any]) -> Call[WebhookEndpoint]:
        path = f"/webhook_endpoints/{segment(id)}"
        return Call("PATCH", path, WebhookEndpoint.from_dict, wire(fields))

    @staticmethod
    def delete(id: str) -> Call[WebhookEndpoint]:
        path = f"/webhook_endpoints/{segment(id)}"
        return Call("DELETE", path, WebhookEndpoint.from_dict)


class Sandboxes:
    @staticmethod
    def create(fields: Mapping[str, Any], key: str | None) -> Call[CreatedSandbox]:
        return Call("POST", "/sandboxes", CreatedSandbox.from_dict, wire(fields), key)

    @staticmethod
    def retrieve(id: str) -> Call[Sandbox]:
        return Call("GET", f"/sandboxes/{segment(id)}", Sandbox.from_dict)

    @staticmethod
    def list(filters: Mapping[str, Any]) -> Listing[Sandbox]:
        return Listing("/sandboxes", Sandbox.from_dict, filters)

    @staticmethod
    def delete(id: str) -> Call[DeletedSandbox]:
        return Call("DELETE", f"/sandboxes/{segment(id)}", DeletedSandbox.from_dict)


class TestHelpers:
    @staticmethod
    def pay(session_id: str, customer_code: str | None, key: str | None) -> Call[CheckoutSession]:
        path = f"/test_helpers/checkout/sessions/{segment(session_id)}/pay"
        body = _fields({}, customer_code=customer_code)
        return Call("POST", path, CheckoutSession.from_dict, body, key)

    @staticmethod
    def expire(id: str, key: str | None) -> Call[CheckoutSession]:
        path = f"/test_helpers/checkout/sessions/{segment(id)}/expire"
        return Call("POST", path, CheckoutSession.from_dict, None, key)

    @staticmethod
    def approve(
        subscription_id: str, customer_code: str | None, key: str | None
    ) -> Call[Subscription]:
        path = f"/test_helpers/subscriptions/{segment(subscription_id)}/approve"
        body = _fields({}, customer_code=customer_code)
        return Call("POST", path, Subscription.from_dict, body, key)

    @staticmethod
    def trigger(event_type: str, object: str | None, key: str | None) -> Call[Trigger]:
        body = _fields({"event_type": event_type}, object=object)
        return Call("POST", "/test_helpers/triggers", Trigger.from_dict, body, key)
