"""`Fgcpay`, the blocking client, and its resources: each method sends one of `_api`'s
operations (`_async_resources` is the same, awaited)."""

from __future__ import annotations

import builtins
import datetime
from collections.abc import Iterator
from types import TracebackType
from typing import Any, Self

import httpx

from . import _api
from ._core import DEFAULT_BASE_URL, SyncTransport
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


class _Resource:
    def __init__(self, transport: SyncTransport) -> None:
        self._t = transport


class CheckoutSessions(_Resource):
    def create(self, *, idempotency_key: str | None = None, **fields: Any) -> CheckoutSession:
        return self._t.call(_api.CheckoutSessions.create(fields, idempotency_key))

    def retrieve(self, id: str) -> CheckoutSession:
        return self._t.call(_api.CheckoutSessions.retrieve(id))

    def list(self, **filters: Any) -> Iterator[CheckoutSession]:
        return self._t.every(_api.CheckoutSessions.list(filters))


class Subscriptions(_Resource):
    def create(self, *, idempotency_key: str | None = None, **fields: Any) -> Subscription:
        return self._t.call(_api.Subscriptions.create(fields, idempotency_key))

    def retrieve(self, id: str) -> Subscription:
        return self._t.call(_api.Subscriptions.retrieve(id))

    def list(self, **filters: Any) -> Iterator[Subscription]:
        return self._t.every(_api.Subscriptions.list(filters))

    def cancel(self, id: str, *, idempotency_key: str | None = None) -> Subscription:
        return self._t.call(_api.Subscriptions.cancel(id, idempotency_key))


class Refunds(_Resource):
    def create(self, *, idempotency_key: str | None = None, **fields: Any) -> Refund:
        return self._t.call(_api.Refunds.create(fields, idempotency_key))

    def retrieve(self, id: str) -> Refund:
        return self._t.call(_api.Refunds.retrieve(id))

    def list(self, **filters: Any) -> Iterator[Refund]:
        return self._t.every(_api.Refunds.list(filters))


class Transactions(_Resource):
    def retrieve(self, id: str) -> Transaction:
        return self._t.call(_api.Transactions.retrieve(id))

    def list(self, **filters: Any) -> Iterator[Transaction]:
        return self._t.every(_api.Transactions.list(filters))


class Balances(_Resource):
    def retrieve(self) -> Balance:
        return self._t.call(_api.Balances.retrieve())


class Events(_Resource):
    def retrieve(self, id: str) -> Event:
        return self._t.call(_api.Events.retrieve(id))

    def list(self, **filters: Any) -> Iterator[Event]:
        return self._t.every(_api.Events.list(filters))


class TestClocks(_Resource):
    def create(self, *, idempotency_key: str | None = None, **fields: Any) -> TestClock:
        return self._t.call(_api.TestClocks.create(fields, idempotency_key))

    def retrieve(self, id: str) -> TestClock:
        return self._t.call(_api.TestClocks.retrieve(id))

    def list(self, **filters: Any) -> Iterator[TestClock]:
        return self._t.every(_api.TestClocks.list(filters))

    def advance(
        self,
        id: str,
        frozen_time: datetime.datetime | str,
        *,
        idempotency_key: str | None = None,
    ) -> TestClock:
        return self._t.call(_api.TestClocks.advance(id, frozen_time, idempotency_key))

    def delete(self, id: str) -> DeletedTestClock:
        return self._t.call(_api.TestClocks.delete(id))


class WebhookEndpoints(_Resource):
    def create(self, *, idempotency_key: str | None = None, **fields: Any) -> WebhookEndpoint:
        return self._t.call(_api.WebhookEndpoints.create(fields, idempotency_key))

    def retrieve(self, id: str) -> WebhookEndpoint:
        return self._t.call(_api.WebhookEndpoints.retrieve(id))

    def list(self, **filters: Any) -> Iterator[WebhookEndpoint]:
        return self._t.every(_api.WebhookEndpoints.list(filters))

    def update(self, id: str, **fields: Any) -> WebhookEndpoint:
        return self._t.call(_api.WebhookEndpoints.update(id, fields))

    def delete(self, id: str) -> WebhookEndpoint:
        return self._t.call(_api.WebhookEndpoints.delete(id))


class Sandboxes(_Resource):
    def create(self, *, idempotency_key: str | None = None, **fields: Any) -> CreatedSandbox:
        return self._t.call(_api.Sandboxes.create(fields, idempotency_key))

    def retrieve(self, id: str) -> Sandbox:
        return self._t.call(_api.Sandboxes.retrieve(id))

    def list(self, **filters: Any) -> Iterator[Sandbox]:
        return self._t.every(_api.Sandboxes.list(filters))

    def delete(self, id: str) -> DeletedSandbox:
        return self._t.call(_api.Sandboxes.delete(id))


class TestHelpers(_Resource):
    def pay(
        self,
        session_id: str,
        customer_code: str | None = None,
        *,
        idempotency_key: str | None = None,
    ) -> CheckoutSession:
        return self._t.call(_api.TestHelpers.pay(session_id, customer_code, idempotency_key))

    def expire(self, id: str, *, idempotency_key: str | None = None) -> CheckoutSession:
        return self._t.call(_api.TestHelpers.expire(id, idempotency_key))

    def approve(
        self,
        subscription_id: str,
        customer_code: str | None = None,
        *,
        idempotency_key: str | None = None,
    ) -> Subscription:
        call = _api.TestHelpers.approve(subscription_id, customer_code, idempotency_key)
        return self._t.call(call)

    def trigger(
        self, event_type: str, object: str | None = None, *, idempotency_key: str | None = None
    ) -> Trigger:
        return self._t.call(_api.TestHelpers.trigger(event_type, object, idempotency_key))


class Fgcpay:
    """fgcpay's merchant API, blocking. `base_url` is the service's root (the client adds
    `/api/v1`); a 429, a 503 or a connection error is retried up to `max_retries` times;
    `timeout` (seconds) bounds each attempt. `http_client` replaces the `httpx.Client` the
    client would make (a proxy, TLS settings, event hooks); it is then the caller's to close.
    """

    def __init__(
        self,
        api_key: str,
        base_url: str = DEFAULT_BASE_URL,
        max_retries: int = 2,
        timeout: float = 30,
        *,
        http_client: httpx.Client | None = None,
    ) -> None:
        transport = SyncTransport(
            api_key,
            base_url,
            max_retries,
            owned=http_client is None,
            http=http_client or httpx.Client(timeout=timeout),
        )
        self._transport = transport
        self.checkout_sessions = CheckoutSessions(transport)
        self.subscriptions = Subscriptions(transport)
        self.refunds = Refunds(transport)
        self.transactions = Transactions(transport)
        self.balance = Balances(transport)
        self.events = Events(transport)
        self.test_clocks = TestClocks(transport)
        self.webhook_endpoints = WebhookEndpoints(transport)
        self.sandboxes = Sandboxes(transport)
        self.test_helpers = TestHelpers(transport)

    def close(self) -> None:
        """Close the connections (the `with` block does it on leaving)."""
        self._transport.close()

    def __enter__(self) -> Self:
        return self

    def __exit__(
        self,
        kind: builtins.type[BaseException] | None,
        error: BaseException | None,
        traceback: TracebackType | None,
    ) -> None:
        self.close()
