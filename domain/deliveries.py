"""Webhook deliveries: the retry schedule and an attempt's bounds, the senders' limits,
and the delivery log (a delivery and its attempts, their wire form, the log's query)."""

from __future__ import annotations

import random
from collections.abc import Mapping, Sequence
from typing import Annotated, Literal

import attrs
from pydantic import BaseModel, ConfigDict, Field, WithJsonSchema, with_config
from typing_extensions import TypedDict

from .events import EventTypeName, Time
from .faults import INJECTED
from .fields import one_of
from .lists import DEFAULT_LIMIT, Cursor, IdFilter, Limit, ListQuery, OneOf, parse_query
from .times import iso_ms

# About 3 days in all: 5 s, 5 min, 30 min, 2 h, 5 h, 10 h, 14 h, 20 h, 24 h.
RETRY_SCHEDULE_SECONDS = (5, 300, 1800, 7200, 18000, 36000, 50400, 72000, 86400)
MAX_ATTEMPTS = len(RETRY_SCHEDULE_SECONDS) + 1
JITTER = 0.1
# One deadline for a whole attempt (resolve, connect, send, answer): "a 2xx within 10 s".
ATTEMPT_TIMEOUT_SECONDS = 10.0
# A claim's lease must outlast an attempt and the recording of its outcome with room to
# spare, or a slow attempt's delivery is claimed and sent again by another process.
MIN_LEASE_SECONDS = 2 * ATTEMPT_TIMEOUT_SECONDS
RESPONSE_KEEP_BYTES = 2048
MAX_RETRY_AFTER_SECONDS = 86400


def retry_delay(
    attempts_made: int, retry_after: int | None, rng: random.Random | None = None
) -> float | None:
    """Seconds until the next attempt after `attempts_made` failures, or None when done.

    Exponential-ish schedule with +/-10% jitter; a `Retry-After` (429/503) is honoured as
    a lower bound.
    """
    if attempts_made >= MAX_ATTEMPTS:
        return None
    base = RETRY_SCHEDULE_SECONDS[attempts_made - 1]
    jitter = (rng or random).uniform(1 - JITTER, 1 + JITTER)
    delay = base * jitter
    if retry_after is not None:
        delay = max(delay, float(min(retry_after, MAX_RETRY_AFTER_SECONDS)))
    return delay


@attrs.frozen
class SenderLimits:
    """At most `per_endpoint` attempts at once to one endpoint and `per_merchant` for one
    merchant (so slow receivers cannot hold every sender), with the counts running now."""

    per_endpoint: int
    per_merchant: int
    endpoints: Mapping[str, int] = attrs.field(factory=dict)
    merchants: Mapping[str, int] = attrs.field(factory=dict)

    def full_endpoints(self) -> list[str]:
        return sorted(e for e, n in self.endpoints.items() if n >= self.per_endpoint)

    def full_merchants(self) -> list[str]:
        return sorted(m for m, n in self.merchants.items() if n >= self.per_merchant)


# -- the delivery log -----------------------------------------------------------------------

DELIVERY_STATUSES = ("pending", "succeeded", "failed")
DELIVERY_PREFIX = "whd_"


@attrs.frozen
class DeliveryAttempt:
    """One attempt as recorded: `status_code` None when no answer came, `error` None on
    an answer, `response_body` the answer's first 2 KiB as text, `injected` the fault it
    carried (`faults.INJECTED`), if any."""

    at: int
    status_code: int | None
    latency_ms: int
    error: str | None
    response_body: str | None
    injected: str | None = None


@attrs.frozen
class Delivery:
    """One delivery of one event to one endpoint, with its attempts oldest first."""

    id: str
    merchant_id: str
    event_id: str
    event_type: str
    endpoint_id: str
    status: str
    next_attempt_at: int
    created_at: int
    attempts: tuple[DeliveryAttempt, ...]


@with_config(ConfigDict(extra="forbid"))
class WebhookDeliveryAttemptWire(TypedDict):
    at: Time
    status_code: Annotated[
        int | None, Field(description="The receiver's HTTP status; null when no answer came.")
    ]
    latency_ms: Annotated[int, Field(ge=0)]
    error: Annotated[
        str | None,
        Field(
            description=(
                "Why no answer came (connection refused, timeout, destination refused); "
                "null on an answer."
            )
        ),
    ]
    response_body: Annotated[
        str | None,
        Field(description="The answer's first 2 KiB as text; null when no answer came."),
    ]
    injected: Annotated[
        str | None,
        WithJsonSchema(
            {
                "type": ["string", "null"],
                "enum": [*INJECTED, None],
                "description": (
                    "The fault the endpoint's `faults` injected into this attempt; null for "
                    "none. Only a delivery's first attempt (`reordered`, `delayed`, "
                    "`bad_signature`, `stale_timestamp`: one, the first that applied in the "
                    "order bad_signature, stale_timestamp, reordered, delayed) and the extra "
                    "send of a `duplicate` (an attempt of its own, right after the first, "
                    "which does not change the delivery's status or schedule) carry one."
                ),
            }
        ),
    ]


@with_config(ConfigDict(extra="forbid"))
class WebhookDeliveryWire(TypedDict):
    """A delivery with its attempts, as the API and `fgcpay webhook deliveries` show it."""

    id: Annotated[str, Field(pattern="^whd_[0-9A-Za-z]{24}$")]
    object: Literal["webhook_delivery"]
    event_id: Annotated[str, Field(pattern="^evt_[0-9A-Za-z]{24}$")]
    event_type: EventTypeName
    endpoint_id: Annotated[str, Field(pattern="^we_[0-9A-Za-z]{24}$")]
    status: Annotated[
        str,
        one_of(
            DELIVERY_STATUSES,
            "`pending` until an attempt gets a 2xx (`succeeded`) or the retries run out "
            "or the endpoint is deleted (`failed`).",
        ),
    ]
    attempt_count: Annotated[int, Field(ge=0)]
    next_attempt_at: Annotated[
        str | None,
        WithJsonSchema(
            {
                "type": ["string", "null"],
                "format": "date-time",
                "description": "When the next attempt is due; null once the delivery is final.",
            }
        ),
    ]
    created_at: Time
    attempts: Annotated[list[WebhookDeliveryAttemptWire], Field(description="Oldest first.")]


def delivery_to_json(delivery: Delivery) -> WebhookDeliveryWire:
    """The delivery as the API and `fgcpay webhook deliveries` show it."""
    return {
        "id": delivery.id,
        "object": "webhook_delivery",
        "event_id": delivery.event_id,
        "event_type": delivery.event_type,
        "endpoint_id": delivery.endpoint_id,
        "status": delivery.status,
        "attempt_count": len(delivery.attempts),
        # Only a pending delivery has a next attempt; a final one keeps a stale time.
        "next_attempt_at": (
            iso_ms(delivery.next_attempt_at) if delivery.status == "pending" else None
        ),
        "created_at": iso_ms(delivery.created_at),
        "attempts": [
            {
                "at": iso_ms(attempt.at),
                "status_code": attempt.status_code,
                "latency_ms": attempt.latency_ms,
                "error": attempt.error,
                "response_body": attempt.response_body,
                "injected": attempt.injected,
            }
            for attempt in delivery.attempts
        ],
    }


@attrs.frozen
class DeliveryQuery:
    """A delivery-log page: the list parameters plus the two id filters."""

    page: ListQuery
    endpoint_id: str | None
    event_id: str | None


class WebhookDeliveryQuery(BaseModel):
    """`GET /webhook_deliveries`: the page, the status filter and the two id filters."""

    model_config = ConfigDict(extra="forbid")

    limit: Annotated[int, Limit()] = DEFAULT_LIMIT
    starting_after: Annotated[str | None, Cursor(DELIVERY_PREFIX, "a webhook delivery")] = None
    status: Annotated[str | None, OneOf(DELIVERY_STATUSES)] = None
    endpoint_id: Annotated[
        str | None,
        IdFilter(
            "we_",
            "a webhook endpoint id (we_...)",
            "Only deliveries to this webhook endpoint (a deleted one too).",
        ),
    ] = None
    event_id: Annotated[
        str | None, IdFilter("evt_", "an event id (evt_...)", "Only deliveries of this event.")
    ] = None


def parse_delivery_query(args: Mapping[str, Sequence[str]]) -> DeliveryQuery:
    """`limit`, `starting_after`, `status` as every list has them, and `endpoint_id`,
    `event_id`; every bad parameter is named in one 400."""
    return delivery_query(parse_query(WebhookDeliveryQuery, args))


def delivery_query(query: WebhookDeliveryQuery) -> DeliveryQuery:
    """The delivery log's filter from the parsed query parameters."""
    return DeliveryQuery(
        page=ListQuery(limit=query.limit, status=query.status, starting_after=query.starting_after),
        endpoint_id=query.endpoint_id,
        event_id=query.event_id,
    )
