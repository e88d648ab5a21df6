"""Subscriptions: the record, its states and transitions, the request rules and the wire
form (the period arithmetic and the schedule are in `periods.py`)."""

from __future__ import annotations

from collections.abc import Mapping
from decimal import Decimal
from typing import Annotated, Any, Literal

import attrs
from pydantic import (
    BaseModel,
    ConfigDict,
    Field,
    ValidationError,
    ValidationInfo,
    WithJsonSchema,
    field_validator,
)
from typing_extensions import TypedDict

from . import ids, money
from .checkout import MAX_DESCRIPTION
from .errors import ValidationFailed
from .fields import (
    MAX_REFERENCE,
    Choice,
    Custom,
    Email,
    Metadata,
    Text,
    Url,
    amount,
    canonical_json,
    fail,
    field_errors,
    one_of,
    stored_metadata,
)
from .lists import DEFAULT_LIMIT, Cursor, Limit, OneOf
from .states import StateMachine, Transition
from .test_clocks import TEST_CLOCK_PREFIX, DateTime
from .times import iso_ms

PAUSED = "paused"
ACTIVE = "active"
PAST_DUE = "past_due"
CANCELLED = "cancelled"
ENDED = "ended"

# The one place a subscription's status rules live (contract, "Subscriptions"): the actor
# decides with it, and storage's conditional writes guard with it.
STATES = StateMachine(
    "subscription",
    statuses=(PAUSED, ACTIVE, PAST_DUE, CANCELLED, ENDED),
    transitions=(
        # The customer approved on the hosted page; the first interval is charged with it.
        Transition("approve", {PAUSED}, ACTIVE),
        # A period charged on time (the status stays; the period moves on).
        Transition("renew", {ACTIVE}, ACTIVE),
        # A renewal charge was declined; it is retried 1 and 3 days after the due time.
        Transition("decline", {ACTIVE}, PAST_DUE),
        # A retry was declined again, with a retry still to come.
        Transition("retry_declined", {PAST_DUE}, PAST_DUE),
        # A retry succeeded: active again, the period keeping its anchor.
        Transition("recover", {PAST_DUE}, ACTIVE),
        Transition("cancel", {PAUSED, ACTIVE, PAST_DUE}, CANCELLED),
        # end_date reached (approved or not: a paused subscription can no longer be
        # approved then), the next charge would pass max_total, or the retries failed.
        Transition("end", {PAUSED, ACTIVE, PAST_DUE}, ENDED),
    ),
)
STATUSES = STATES.statuses

INTERVALS = ("daily", "weekly", "monthly", "yearly")

# `ended_reason` values.
END_DATE_REACHED = "end_date_reached"
MAX_TOTAL_REACHED = "max_total_reached"
PAYMENT_FAILED = "payment_failed"
# The next period would end after 9999-12-31T23:59:59Z, the end of the time range (only
# on a test clock): it is never charged, and the subscription ends when it would start.
END_OF_TIME_RANGE = "end_of_time_range"
ENDED_REASONS = (END_DATE_REACHED, MAX_TOTAL_REACHED, PAYMENT_FAILED, END_OF_TIME_RANGE)


@attrs.frozen
class Subscription:
    """One subscription as stored. Money in minor units, times in microseconds (UTC)."""

    id: str
    merchant_id: str
    status: str
    version: int  # the compare-and-set token and the events' `sequence`
    interval: str  # one of INTERVALS
    amount_minor: int  # per interval
    currency: str
    eur_cents: int
    description: str
    merchant_customer_reference: str
    customer_email: str | None
    success_url: str
    cancel_url: str
    external_reference: str | None
    metadata_json: str
    max_total_minor: int | None
    end_date: int | None
    test_clock_id: str | None
    created_at: int
    updated_at: int
    # Set at approval: the anchor periods are counted from, and the customer charged.
    approved_at: int | None = None
    customer_code: str | None = None
    charge_count: int = 0  # charges made: the approval's is number 1
    charged_total_minor: int = 0
    current_period_start: int | None = None
    current_period_end: int | None = None  # the next charge's due time
    # The durable timer: when the sweep next hands this subscription to its actor (a
    # renewal, a retry, or the end); None once nothing is due (paused or final).
    next_action_at: int | None = None
    failed_attempts: int = 0  # declined charges of the current period
    cancelled_at: int | None = None
    ended_at: int | None = None
    ended_reason: str | None = None


SUBSCRIPTION_PREFIX = "sub_test_"


@attrs.frozen
class SubscriptionRequest:
    """A validated `POST /subscriptions` body."""

    amount_minor: int  # per interval
    interval: str
    description: str
    merchant_customer_reference: str
    customer_email: str | None
    success_url: str
    cancel_url: str
    external_reference: str | None
    max_total_minor: int | None
    end_date: int | None
    test_clock_id: str | None
    metadata: dict[str, Any]
    used_amount_minor: bool  # the response then carries `Deprecation: true`


def _test_clock_id(value: Any) -> str:
    if not isinstance(value, str) or not ids.looks_like_id(value, TEST_CLOCK_PREFIX, 24):
        raise ValueError(f"Must be a test clock id ({TEST_CLOCK_PREFIX}...).")
    return value


# The creation time travels in pydantic's validation context: `end_date` must be after it.
_NOW = "now_us"


class SubscriptionCreate(BaseModel):
    """The `POST /subscriptions` body; field order is the order problems are listed in.

    Validate it with `parse_create`, which passes the creation time the `end_date` rule needs.
    """

    model_config = ConfigDict(extra="forbid")

    amount_fgc: Annotated[
        int,
        amount(),
    ]
    amount_minor: Annotated[
        int | None,
        Custom(
            money.parse_minor,
            {
                "type": "string",
                "pattern": money.AMOUNT_MINOR_PATTERN,
                "deprecated": True,
                "description": (
                    "Deprecated: the amount per interval in minor units (1 FGC = 100), a "
                    "string of digits from 1 to 100000000. If sent it must agree with "
                    "amount_fgc; the response then carries `Deprecation: true`."
                ),
            },
            required=False,
            prefix="Must be a valid amount: ",
            suffix=".",
        ),
    ] = None
    currency: Annotated[str, Choice((money.CURRENCY,))]
    interval: Annotated[
        str, Choice(INTERVALS, description="How often amount_fgc is charged, from approval.")
    ]
    description: Annotated[str, Text(MAX_DESCRIPTION)]
    merchant_customer_reference: Annotated[str, Text(MAX_REFERENCE)]
    customer_email: Annotated[str | None, Email()] = None
    success_url: Annotated[
        str,
        Url(
            "Absolute http or https URL. After approval the customer is sent here with "
            "`subscription_id=<id>` added to the query."
        ),
    ]
    cancel_url: Annotated[str, Url("Absolute http or https URL.")]
    external_reference: Annotated[str | None, Text(MAX_REFERENCE, required=False)] = None
    max_total_amount_fgc: Annotated[
        int | None,
        amount(required=False),
    ] = None
    end_date: Annotated[
        int | None,
        DateTime(
            "When the subscription ends, in the future: nothing is charged from then on.",
            required=False,
        ),
    ] = None
    test_clock: Annotated[
        str | None,
        Custom(
            _test_clock_id,
            {
                "type": "string",
                "pattern": f"^{TEST_CLOCK_PREFIX}[0-9A-Za-z]{{24}}$",
                "description": (
                    "A test clock of yours: the subscription lives by its time (its "
                    "approval, renewals, retries and ending)."
                ),
            },
            required=False,
        ),
    ] = None
    metadata: Annotated[dict[str, Any], Metadata()] = Field(default_factory=dict)

    # Field validators, not a model one, so each cross-field problem is listed with every
    # other problem; a field another depends on is in `info.data` only when it was valid.
    @field_validator("amount_minor")
    @classmethod
    def _agrees(cls, legacy: int | None, info: ValidationInfo) -> int | None:
        minor = info.data.get("amount_fgc")
        if legacy is not None and minor is not None and legacy != minor:
            raise fail(
                f"Must agree with amount_fgc ({money.format_fgc(minor)} FGC is "
                f"{minor} minor units)."
            )
        return legacy

    @field_validator("max_total_amount_fgc")
    @classmethod
    def _covers_one_interval(cls, total: int | None, info: ValidationInfo) -> int | None:
        minor = info.data.get("amount_fgc")
        if total is not None and minor is not None and total < minor:
            raise fail(
                f"Must be at least amount_fgc ({money.format_fgc(minor)} FGC): the first "
                "interval is charged at approval."
            )
        return total

    @field_validator("end_date")
    @classmethod
    def _in_the_future(cls, end_date: int | None, info: ValidationInfo) -> int | None:
        now_us = (info.context or {}).get(_NOW)
        if not isinstance(now_us, int):
            # A bug, not a request's problem: raised as is, never listed as a field error.
            raise TypeError("validate SubscriptionCreate with parse_create (it needs now_us)")
        if end_date is not None and end_date <= now_us:
            raise fail(f"Must be in the future (after {iso_ms(now_us)}).")
        return end_date


def requested_test_clock(body: Mapping[str, Any]) -> str | None:
    """The `test_clock` a creation body names, when it has an id's form: the caller reads
    that clock first, since the subscription's creation time is the clock's time."""
    value = body.get("test_clock")
    if isinstance(value, str) and ids.looks_like_id(value, TEST_CLOCK_PREFIX, 24):
        return value
    return None


def parse_create(body: dict[str, Any], now_us: int) -> SubscriptionRequest:
    """Validate a creation body made at `now_us` (the test clock's frozen time when it
    names one, else the service's time); raises `ValidationFailed` listing every problem.
    Whether the named test clock exists is for storage to say."""
    try:
        parsed = SubscriptionCreate.model_validate(body, context={_NOW: now_us})
    except ValidationError as failed:
        raise ValidationFailed(field_errors(failed)) from None
    return SubscriptionRequest(
        amount_minor=parsed.amount_fgc,
        interval=parsed.interval,
        description=parsed.description,
        merchant_customer_reference=parsed.merchant_customer_reference,
        customer_email=parsed.customer_email,
        success_url=parsed.success_url,
        cancel_url=parsed.cancel_url,
        external_reference=parsed.external_reference,
        max_total_minor=parsed.max_total_amount_fgc,
        end_date=parsed.end_date,
        test_clock_id=parsed.test_clock,
        metadata=parsed.metadata,
        used_amount_minor=parsed.amount_minor is not None,
    )


class SubscriptionQuery(BaseModel):
    """`GET /subscriptions`: the page and the status filter."""

    model_config = ConfigDict(extra="forbid")

    limit: Annotated[int, Limit()] = DEFAULT_LIMIT
    status: Annotated[str | None, OneOf(STATUSES)] = None
    starting_after: Annotated[str | None, Cursor(SUBSCRIPTION_PREFIX, "a subscription")] = None


def new_subscription(
    request: SubscriptionRequest,
    *,
    subscription_id: str,
    merchant_id: str,
    now_us: int,
    eur_cents_per_fgc: Decimal,
) -> Subscription:
    """A new subscription, `paused` until the customer approves it. Its only due time is
    its `end_date`, when an unapproved subscription ends (`end_date_reached`)."""
    return Subscription(
        id=subscription_id,
        merchant_id=merchant_id,
        status=PAUSED,
        version=1,
        interval=request.interval,
        amount_minor=request.amount_minor,
        currency=money.CURRENCY,
        eur_cents=money.eur_cents(request.amount_minor, eur_cents_per_fgc),
        description=request.description,
        merchant_customer_reference=request.merchant_customer_reference,
        customer_email=request.customer_email,
        success_url=request.success_url,
        cancel_url=request.cancel_url,
        external_reference=request.external_reference,
        metadata_json=canonical_json(request.metadata),
        max_total_minor=request.max_total_minor,
        end_date=request.end_date,
        test_clock_id=request.test_clock_id,
        created_at=now_us,
        updated_at=now_us,
        next_action_at=request.end_date,
    )


def checkout_url(public_url: str, subscription_id: str) -> str:
    """The hosted page where the customer approves (the checkout sessions' route)."""
    return f"{public_url}/checkout/{subscription_id}"


_TIME = "UTC, millisecond precision, e.g. 2026-11-22T14:07:24.621Z"
Time = Annotated[
    str, WithJsonSchema({"type": "string", "format": "date-time", "description": _TIME})
]


def _optional_time(description: str) -> Any:
    return WithJsonSchema(
        {"type": ["string", "null"], "format": "date-time", "description": f"{description} {_TIME}"}
    )


_FGC = "Normalized, two decimals."


class SubscriptionWire(TypedDict):
    """A subscription on the wire (API answers, event payloads)."""

    id: Annotated[str, Field(pattern=f"^{SUBSCRIPTION_PREFIX}[0-9A-Za-z]{{24}}$")]
    object: Literal["subscription"]
    mode: Literal["test"]
    subscription_id: str
    status: Annotated[
        str,
        one_of(
            STATUSES,
            "`paused` (waiting for the customer's approval) -> `active` (approved; the "
            "first interval charged) -> `past_due` (a renewal declined, retried 1 and 3 "
            "days after its due time) -> `active` again or `ended`; `cancelled` by the "
            "cancel operation from `paused`, `active` or `past_due`; `ended` when "
            "end_date passes, the next charge would pass max_total_amount_fgc, the "
            "retries are declined, or (on a test clock) the next period would end after "
            "9999-12-31T23:59:59Z. `cancelled` and `ended` are final.",
        ),
    ]
    interval: Annotated[str, one_of(INTERVALS)]
    currency: Annotated[str, WithJsonSchema({"type": "string", "const": money.CURRENCY})]
    amount_fgc: Annotated[str, Field(description=f"Charged every interval. {_FGC}")]
    amount_minor: Annotated[
        str,
        WithJsonSchema(
            {
                "type": "string",
                "deprecated": True,
                "description": "Integer minor units as a string.",
            }
        ),
    ]
    eur_cents: Annotated[
        str,
        Field(
            description=(
                "amount_fgc x FGCPAY_EUR_CENTS_PER_FGC (default 100), rounded half-up, as an "
                "integer string; fixed at creation."
            )
        ),
    ]
    checkout_url: Annotated[
        str,
        WithJsonSchema(
            {
                "type": "string",
                "format": "uri",
                "description": (
                    "PUBLIC_URL + /checkout/<id>: the hosted page where the customer approves. "
                    "Keep it between you and your customer."
                ),
            }
        ),
    ]
    description: str
    merchant_customer_reference: str
    customer_email: str | None
    success_url: str
    cancel_url: str
    external_reference: str | None
    max_total_amount_fgc: Annotated[
        str | None,
        Field(description=f"The most charged in all; null for no limit. {_FGC}"),
    ]
    end_date: Annotated[str | None, _optional_time("When the subscription ends; null for never.")]
    current_period_start: Annotated[
        str | None, _optional_time("The start of the last period paid; null until approved.")
    ]
    current_period_end: Annotated[
        str | None,
        _optional_time(
            "The end of the last period paid: when the next charge is due (null until approved)."
        ),
    ]
    charged_total_fgc: Annotated[str, Field(description=f"Every charge so far. {_FGC}")]
    charge_count: Annotated[int, Field(ge=0, description="Charges so far, the approval's first.")]
    approved_at: Annotated[str | None, _optional_time("Null until approved.")]
    cancelled_at: Annotated[str | None, _optional_time("Null unless cancelled.")]
    ended_at: Annotated[str | None, _optional_time("Null unless ended.")]
    ended_reason: Annotated[
        str | None,
        WithJsonSchema(
            {"type": ["string", "null"], "enum": [*ENDED_REASONS, None]},
        ),
    ]
    test_clock: Annotated[
        str | None,
        WithJsonSchema(
            {
                "type": ["string", "null"],
                "pattern": f"^{TEST_CLOCK_PREFIX}[0-9A-Za-z]{{24}}$",
                "description": "The test clock the subscription lives by; null for real time.",
            }
        ),
    ]
    metadata: dict[str, Any]
    created_at: Time
    updated_at: Time


def _time_or_none(us: int | None) -> str | None:
    return iso_ms(us) if us is not None else None


def to_json(sub: Subscription, public_url: str) -> SubscriptionWire:
    """The subscription as the API, the events and the dashboard show it (one serializer)."""
    return {
        "id": sub.id,
        "object": "subscription",
        "mode": "test",
        "subscription_id": sub.id,
        "status": sub.status,
        "interval": sub.interval,
        "currency": sub.currency,
        "amount_fgc": money.format_fgc(sub.amount_minor),
        "amount_minor": str(sub.amount_minor),
        "eur_cents": str(sub.eur_cents),
        "checkout_url": checkout_url(public_url, sub.id),
        "description": sub.description,
        "merchant_customer_reference": sub.merchant_customer_reference,
        "customer_email": sub.customer_email,
        "success_url": sub.success_url,
        "cancel_url": sub.cancel_url,
        "external_reference": sub.external_reference,
        "max_total_amount_fgc": (
            money.format_fgc(sub.max_total_minor) if sub.max_total_minor is not None else None
        ),
        "end_date": _time_or_none(sub.end_date),
        "current_period_start": _time_or_none(sub.current_period_start),
        "current_period_end": _time_or_none(sub.current_period_end),
        "charged_total_fgc": money.format_fgc(sub.charged_total_minor),
        "charge_count": sub.charge_count,
        "approved_at": _time_or_none(sub.approved_at),
        "cancelled_at": _time_or_none(sub.cancelled_at),
        "ended_at": _time_or_none(sub.ended_at),
        "ended_reason": sub.ended_reason,
        "test_clock": sub.test_clock_id,
        "metadata": stored_metadata(sub.metadata_json),
        "created_at": iso_ms(sub.created_at),
        "updated_at": iso_ms(sub.updated_at),
    }
