"""Webhooks: event types and payloads, signing (both header families), verification,
the retry schedule, endpoint request rules, and the delivery log's wire form and query."""

from __future__ import annotations

import base64
import hashlib
import hmac
import json
import random
import secrets
from collections.abc import Mapping, Sequence
from typing import Annotated, Any, Literal, NotRequired

import attrs
from pydantic import BaseModel, ConfigDict, Field, WithJsonSchema, with_config
from typing_extensions import TypedDict

from .fields import Custom, Url, fail, one_of, ref, validate
from .lists import DEFAULT_LIMIT, Cursor, IdFilter, Limit, ListQuery, OneOf, parse_query
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
TOLERANCE_SECONDS = 300
SECRET_PREFIX = "whsec_"
ROTATION_OVERLAP_US = 24 * 3600 * 1_000_000
EVENT_RETENTION_US = 30 * 24 * 3600 * 1_000_000
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


class WebhookVerificationError(Exception):
    """The delivery is not authentic or not fresh; do not act on it."""


def new_secret() -> str:
    """`whsec_` + base64 of 32 random bytes (the Standard Webhooks form)."""
    return SECRET_PREFIX + base64.b64encode(secrets.token_bytes(32)).decode()


def _standard_key(secret: str) -> bytes:
    return base64.b64decode(
        secret[len(SECRET_PREFIX) :] if secret.startswith(SECRET_PREFIX) else secret
    )


def service_signature(secret: str, timestamp: int, body: bytes) -> str:
    """Lowercase hex HMAC-SHA256, key = the secret string as shown (UTF-8),
    message = `"<timestamp>.<raw body>"`."""
    message = str(timestamp).encode() + b"." + body
    return hmac.new(secret.encode("utf-8"), message, hashlib.sha256).hexdigest()


def standard_signature(secret: str, msg_id: str, timestamp: int, body: bytes) -> str:
    """Standard Webhooks: base64 HMAC-SHA256 keyed with the base64-decoded secret over
    `"<msg_id>.<timestamp>.<body>"`."""
    message = f"{msg_id}.{timestamp}.".encode() + body
    return base64.b64encode(
        hmac.new(_standard_key(secret), message, hashlib.sha256).digest()
    ).decode()


def signed_headers(
    event_id: str, body: bytes, timestamp: int, signing_secrets: list[str]
) -> dict[str, str]:
    """Every header of one delivery attempt; `signing_secrets` is [old, new] during a rotation."""
    return {
        "Content-Type": "application/json",
        "User-Agent": "fgcpay-webhooks/1",
        "Service-Timestamp": str(timestamp),
        "Service-Signature": ",".join(
            f"v1={service_signature(secret, timestamp, body)}" for secret in signing_secrets
        ),
        "Service-Event-Id": event_id,
        "webhook-id": event_id,
        "webhook-timestamp": str(timestamp),
        "webhook-signature": " ".join(
            f"v1,{standard_signature(secret, event_id, timestamp, body)}"
            for secret in signing_secrets
        ),
    }


def verify(
    body: bytes,
    headers: Mapping[str, str],
    secret: str,
    *,
    now: int,
    tolerance: int = TOLERANCE_SECONDS,
) -> None:
    """Verify a delivery with either header family; raise `WebhookVerificationError`.

    `headers` is matched case-insensitively. The timestamp must be within `tolerance`
    seconds of `now` (unix seconds) in either direction. Comparisons are constant time.
    """
    lowered = {k.lower(): v for k, v in headers.items()}
    if "service-signature" in lowered:
        raw_ts = lowered.get("service-timestamp", "")
        timestamp = _fresh(raw_ts, now, tolerance)
        expected = service_signature(secret, timestamp, body)
        offered = [
            part.strip()[3:]
            for part in lowered["service-signature"].split(",")
            if part.strip().startswith("v1=")
        ]
    elif "webhook-signature" in lowered:
        timestamp = _fresh(lowered.get("webhook-timestamp", ""), now, tolerance)
        expected = standard_signature(secret, lowered.get("webhook-id", ""), timestamp, body)
        offered = [
            part[3:] for part in lowered["webhook-signature"].split() if part.startswith("v1,")
        ]
    else:
        raise WebhookVerificationError("no signature header")
    if not any(hmac.compare_digest(expected, candidate) for candidate in offered):
        raise WebhookVerificationError("no signature matches")


def _fresh(raw: str, now: int, tolerance: int) -> int:
    if not raw.isdigit():
        raise WebhookVerificationError("missing or malformed timestamp")
    timestamp = int(raw)
    if abs(now - timestamp) > tolerance:
        raise WebhookVerificationError("timestamp outside the tolerance window")
    return timestamp


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


@attrs.frozen
class EndpointRequest:
    url: str
    enabled_events: tuple[str, ...]  # ("*",) for every type


def _event_types(value: Any) -> tuple[str, ...]:
    if not isinstance(value, list) or not value or not all(isinstance(v, str) for v in value):
        raise fail("Must be a non-empty list of event types, or omitted for all.")
    if ALL_EVENTS in value:
        return (ALL_EVENTS,)
    unknown = sorted(set(value) - set(EVENT_TYPES))
    if unknown:
        raise fail("Unknown event types: " + ", ".join(unknown[:5]) + ".")
    return tuple(sorted(set(value)))


def _enabled_events(description: str) -> Custom:
    """The optional `enabled_events` field of an endpoint's create and update."""
    return Custom(
        _event_types,
        {
            "type": "array",
            "minItems": 1,
            "items": {"oneOf": [ref("EventType"), {"const": ALL_EVENTS}]},
            "description": description,
        },
        required=False,
    )


class WebhookEndpointEvents(BaseModel):
    """The event selection alone, checked as the create's (the dashboard's edit)."""

    model_config = ConfigDict(extra="forbid")

    enabled_events: Annotated[
        tuple[str, ...], Custom(_event_types, {"type": "array"}, required=True)
    ]


def parse_enabled_events(chosen: list[str]) -> tuple[str, ...]:
    """The event types of an endpoint as the create checks them (`["*"]`: all); a
    `ValidationFailed` on `enabled_events` otherwise (none chosen, an unknown type)."""
    return validate(WebhookEndpointEvents, {"enabled_events": chosen}).enabled_events


class WebhookEndpointCreate(BaseModel):
    """The `POST /webhook_endpoints` body."""

    model_config = ConfigDict(extra="forbid")

    url: Annotated[
        str,
        Url(
            "Absolute http(s) URL. Private, loopback and link-local targets are refused unless "
            "the operator sets FGCPAY_WEBHOOK_ALLOW_PRIVATE=1; checked on save and again before "
            "every delivery, after DNS resolution."
        ),
    ]
    enabled_events: Annotated[
        tuple[str, ...] | None,
        _enabled_events('Event types to receive; omitted or ["*"] for all.'),
    ] = None


def parse_endpoint(body: dict[str, Any]) -> EndpointRequest:
    parsed = validate(WebhookEndpointCreate, body)
    return EndpointRequest(url=parsed.url, enabled_events=parsed.enabled_events or (ALL_EVENTS,))


class WebhookEndpointUpdate(BaseModel):
    """The `PATCH /webhook_endpoints/{id}` body: only the fields given change, each
    checked as the create checks it (an absent or null field is left as it is)."""

    model_config = ConfigDict(extra="forbid")

    url: Annotated[
        str | None,
        Url(
            "The new absolute http(s) URL, under the create's rules (private targets included).",
            required=False,
        ),
    ] = None
    enabled_events: Annotated[
        tuple[str, ...] | None,
        _enabled_events('The event types to receive from now on; ["*"] for all.'),
    ] = None


@attrs.frozen
class EndpointChange:
    """What a PATCH changes: None for a field left as it is."""

    url: str | None = None
    enabled_events: tuple[str, ...] | None = None


def parse_endpoint_update(body: dict[str, Any]) -> EndpointChange:
    parsed = validate(WebhookEndpointUpdate, body)
    return EndpointChange(url=parsed.url, enabled_events=parsed.enabled_events)


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


def subscribes(enabled_events: tuple[str, ...], event_type: str) -> bool:
    return ALL_EVENTS in enabled_events or event_type in enabled_events


# -- the delivery log -----------------------------------------------------------------------

DELIVERY_STATUSES = ("pending", "succeeded", "failed")
DELIVERY_PREFIX = "whd_"


@attrs.frozen
class DeliveryAttempt:
    """One attempt as recorded: `status_code` None when no answer came, `error` None on
    an answer, `response_body` the answer's first 2 KiB as text."""

    at: int
    status_code: int | None
    latency_ms: int
    error: str | None
    response_body: str | None


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
    query = parse_query(WebhookDeliveryQuery, args)
    return DeliveryQuery(
        page=ListQuery(limit=query.limit, status=query.status, starting_after=query.starting_after),
        endpoint_id=query.endpoint_id,
        event_id=query.event_id,
    )
