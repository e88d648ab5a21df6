"""The test helpers' requests and answers (test mode): paying, expiring and approving
without the hosted page, and triggering any event type; and what each trigger does, the
one table the orchestration (`fgcpay.testing.triggers`) and the API reference follow."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Annotated, Any, Literal

import attrs
from pydantic import BaseModel, ConfigDict, Field
from typing_extensions import TypedDict

from .customers import TEST_CUSTOMERS
from .errors import Conflict, ServiceError
from .events import EVENT_TYPES
from .fields import Custom, validate

TEST_CUSTOMER_CODES = tuple(code for code, _, _ in TEST_CUSTOMERS)
DEFAULT_CUSTOMER = "TEST-0001"
MAX_OBJECT_ID = 64


def _choice(choices: Sequence[str], what: str) -> Any:
    def parse(value: Any) -> str:
        if not isinstance(value, str) or value not in choices:
            raise ValueError(f"Must be {what}: " + ", ".join(choices) + ".")
        return value

    return parse


def _object_id(value: Any) -> str:
    if not isinstance(value, str) or not 1 <= len(value) <= MAX_OBJECT_ID:
        raise ValueError(
            f"Must be the id of one of your checkout sessions, subscriptions or refunds"
            f" (at most {MAX_OBJECT_ID} characters)."
        )
    return value


def _customer_code(description: str) -> Custom:
    return Custom(
        _choice(TEST_CUSTOMER_CODES, "one of the test customers"),
        {"type": "string", "enum": list(TEST_CUSTOMER_CODES), "description": description},
        required=False,
    )


class TestPayBody(BaseModel):
    """The `POST /test_helpers/checkout/sessions/{id}/pay` body (optional)."""

    __test__ = False
    model_config = ConfigDict(extra="forbid")

    customer_code: Annotated[
        str | None,
        _customer_code(
            f"The test customer who pays (default `{DEFAULT_CUSTOMER}`): `TEST-0002` is "
            "declined (insufficient funds), `TEST-0003` refused (blocked)."
        ),
    ] = None


class TestApproveBody(BaseModel):
    """The `POST /test_helpers/subscriptions/{id}/approve` body (optional)."""

    __test__ = False
    model_config = ConfigDict(extra="forbid")

    customer_code: Annotated[
        str | None,
        _customer_code(
            f"The test customer who approves (default `{DEFAULT_CUSTOMER}`): `TEST-0004` "
            "approves and declines every renewal; `TEST-0002` and `TEST-0003` are declined."
        ),
    ] = None


class TriggerBody(BaseModel):
    """The `POST /test_helpers/triggers` body."""

    __test__ = False
    model_config = ConfigDict(extra="forbid")

    event_type: Annotated[
        str,
        Custom(
            _choice(EVENT_TYPES, "an event type"),
            {"type": "string", "enum": list(EVENT_TYPES), "description": "The event to make."},
        ),
    ]
    object: Annotated[
        str | None,
        Custom(
            _object_id,
            {
                "type": "string",
                "minLength": 1,
                "maxLength": MAX_OBJECT_ID,
                "description": "One of your checkout sessions, subscriptions or refunds to "
                "make the event on (it must be able to make it, else 409); without it the "
                "trigger makes its own objects.",
            },
            required=False,
        ),
    ] = None


def parse_customer_code(model: type[TestPayBody] | type[TestApproveBody], body: Any) -> str:
    """The test customer of a pay or approve body (default `DEFAULT_CUSTOMER`); raises
    `ValidationFailed` naming the field."""
    parsed = validate(model, body)
    return parsed.customer_code or DEFAULT_CUSTOMER


@attrs.frozen
class TriggerRequest:
    event_type: str
    object_id: str | None


def parse_trigger(body: Any) -> TriggerRequest:
    """A validated trigger body; raises `ValidationFailed` naming each bad field."""
    parsed = validate(TriggerBody, body)
    return TriggerRequest(parsed.event_type, parsed.object)


class TriggerWire(TypedDict):
    """A trigger's answer."""

    object: Literal["trigger"]
    event_type: Annotated[str, Field(json_schema_extra={"enum": list(EVENT_TYPES)})]
    object_id: Annotated[
        str, Field(description="The id of the events' `data.object` (made or given).")
    ]
    events: Annotated[
        list[str], Field(description="Every event id the trigger caused, oldest first.")
    ]


def trigger_to_json(event_type: str, object_id: str, events: Sequence[str]) -> TriggerWire:
    return {
        "object": "trigger",
        "event_type": event_type,
        "object_id": object_id,
        "events": list(events),
    }


# The resources a trigger's `object` may be, by id prefix.
SESSION = "checkout_session"
SUBSCRIPTION = "subscription"
REFUND = "refund"


@attrs.frozen
class Plan:
    """What a trigger of one event type does: on a given object of kind `accepts` (None:
    no object accepted), and on objects it makes (`makes`), in the reference's words."""

    accepts: str | None
    on_object: str
    makes: str


PLANS: dict[str, Plan] = {
    "checkout.session.paid": Plan(
        SESSION, "pays it as `TEST-0001`", "creates a session of 10.00 FGC and pays it"
    ),
    "checkout.session.expired": Plan(SESSION, "expires it now", "creates a session and expires it"),
    "subscription.created": Plan(None, "", "creates a daily subscription of 10.00 FGC (`paused`)"),
    "subscription.activated": Plan(
        SUBSCRIPTION,
        "approves it as `TEST-0001` (with its first `subscription.charged`)",
        "creates a subscription and approves it",
    ),
    "subscription.charged": Plan(
        SUBSCRIPTION,
        "approves it as `TEST-0001`: the first period's charge",
        "creates a subscription on a new test clock, approves it and advances the clock one"
        " interval: a renewal",
    ),
    "subscription.payment_failed": Plan(
        None,
        "",
        "creates a subscription on a new test clock, approves it as `TEST-0004` (whose"
        " renewals are declined) and advances the clock one interval",
    ),
    "subscription.cancelled": Plan(
        SUBSCRIPTION, "cancels it", "creates a subscription and cancels it"
    ),
    "subscription.ended": Plan(
        None,
        "",
        "creates a subscription on a new test clock with an `end_date` one day in, approves"
        " it and advances the clock to that day",
    ),
    "refund.created": Plan(
        SESSION,
        "refunds the rest of its payment not yet refunded",
        "creates a session, pays it and refunds it",
    ),
    "refund.approved": Plan(
        REFUND,
        "approves the refund",
        "creates a session, pays it, refunds it and approves the refund",
    ),
    "refund.rejected": Plan(
        REFUND,
        "rejects the refund",
        "creates a session, pays it, refunds it and rejects the refund",
    ),
}
assert tuple(PLANS) == EVENT_TYPES  # one plan per event type, in the contract's order


class PaymentDeclined(ServiceError):
    """A test helper paid or approved as a declining test customer (details:
    `{"reason": "insufficient_funds" or "customer_blocked"}`); nothing changed."""

    status = 402
    code = "payment_declined"


class CheckoutSessionNotOpen(Conflict):
    """Paying or expiring a session that is not `created` (or is past `expires_at`)."""

    code = "checkout_session_not_open"


class SubscriptionNotApprovable(Conflict):
    """Approving a subscription that is not `paused` (or whose `end_date` has passed)."""

    code = "subscription_not_approvable"
