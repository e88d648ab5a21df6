"""Events: their types, the body every delivery of one sends (fixed when the event is
made), the test event, the event's wire form and the `GET /events` query, and which
types an endpoint's `enabled_events` takes."""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import Annotated, Any, Literal, NotRequired

import attrs
from pydantic import BaseModel, ConfigDict, Field, WithJsonSchema
from typing_extensions import TypedDict

from .fields import ref
from .lists import DEFAULT_LIMIT, Cursor, Limit, OneOf
from .times import iso_ms
from .transactions import TransactionWire

EVENT_TYPES = (
    "checkout.session.paid",
    "checkout.session.expired",
    "subscription.created",
    "subscription.activated",
    "subscription.charged",
    "subscription.payment_failed",
    "subscription.cancelled",
    "subscription.ended",
    "refund.created",
    "refund.approved",
    "refund.rejected",
)
ALL_EVENTS = "*"
EVENT_RETENTION_US = 30 * 24 * 3600 * 1_000_000


def event_body(
    event_id: str,
    event_type: str,
    created_at: int,
    sequence: int,
    data_object: Mapping[str, Any],
    transaction: TransactionWire | None = None,
) -> EventWire:
    data: EventData = {"object": dict(data_object)}
    # Only the events of a charge have it; the others' bodies have no `transaction` key.
    if transaction is not None:
        data["transaction"] = transaction
    return {
        "id": event_id,
        "object": "event",
        "type": event_type,
        "mode": "test",
        "created_at": iso_ms(created_at),
        "sequence": sequence,
        "data": data,
    }


# A test event (the dashboard's "Send a test event"): signed and sent like any event,
# once, to one endpoint, and neither stored nor retried, so it is in no list of events or
# deliveries and no receiver can mistake it for one of the types above.
TEST_EVENT_TYPE = "webhook_endpoint.test"


def test_event_body(event_id: str, now_us: int, endpoint: Mapping[str, Any]) -> str:
    """The body of a test event about `endpoint` (its wire form, without the secret)."""
    body = event_body(event_id, TEST_EVENT_TYPE, now_us, 0, endpoint)
    return json.dumps(body, separators=(",", ":"), ensure_ascii=False)


@attrs.frozen
class Event:
    id: str
    merchant_id: str
    type: str
    resource_id: str
    sequence: int
    body: str  # the exact JSON sent, constant across retries
    created_at: int


def new_event(
    event_id: str,
    merchant_id: str,
    event_type: str,
    resource_id: str,
    sequence: int,
    data_object: Mapping[str, Any],
    now_us: int,
    transaction: TransactionWire | None = None,
) -> Event:
    """An event whose body is fixed now, so every delivery sends the same bytes.
    `transaction`: the charge the event is about (`subscription.charged`,
    `subscription.payment_failed`), shown as `data.transaction`."""
    body = event_body(event_id, event_type, now_us, sequence, data_object, transaction)
    return Event(
        id=event_id,
        merchant_id=merchant_id,
        type=event_type,
        resource_id=resource_id,
        sequence=sequence,
        body=json.dumps(body, separators=(",", ":"), ensure_ascii=False),
        created_at=now_us,
    )


class EventQuery(BaseModel):
    """`GET /events`: the page and the type filter."""

    model_config = ConfigDict(extra="forbid")

    limit: Annotated[int, Limit()] = DEFAULT_LIMIT
    type: Annotated[str | None, OneOf(EVENT_TYPES)] = None
    starting_after: Annotated[str | None, Cursor("evt_", "an event")] = None


EventTypeName = Annotated[str, WithJsonSchema(ref("EventType"))]
Time = Annotated[str, WithJsonSchema({"type": "string", "format": "date-time"})]


class EventData(TypedDict):
    object: Annotated[
        dict[str, Any],
        WithJsonSchema(
            {"description": "The resource as the API returns it (e.g. a CheckoutSession)."}
        ),
    ]
    transaction: NotRequired[
        Annotated[
            TransactionWire,
            Field(
                description=(
                    "`subscription.charged` and `subscription.payment_failed` only: the "
                    "charge. The ledger row written (`succeeded`), or the declined attempt "
                    "(`declined`, `id` null: no money moved, so no ledger row)."
                )
            ),
        ]
    ]


class EventWire(TypedDict):
    """An event: the exact body its deliveries send and the API returns."""

    id: Annotated[
        str,
        Field(
            pattern="^evt_[0-9A-Za-z]{24}$",
            description="Constant across retries and redeliveries: use it to drop duplicates.",
        ),
    ]
    object: Literal["event"]
    type: EventTypeName
    mode: Literal["test"]
    created_at: Time
    sequence: Annotated[
        int,
        Field(
            description=(
                "Grows with every change of the resource: drop an event older than one "
                "already applied."
            )
        ),
    ]
    data: EventData


class RedeliveryWire(TypedDict):
    object: Literal["redelivery"]
    event_id: str
    deliveries_queued: int


def redelivery_to_json(event_id: str, queued: int) -> RedeliveryWire:
    return {"object": "redelivery", "event_id": event_id, "deliveries_queued": queued}


def subscribes(enabled_events: tuple[str, ...], event_type: str) -> bool:
    return ALL_EVENTS in enabled_events or event_type in enabled_events
