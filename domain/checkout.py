"""Checkout sessions: the request rules, the record, its states and its wire form."""

from __future__ import annotations

from decimal import Decimal
from typing import Annotated, Any, Literal

import attrs
from pydantic import BaseModel, ConfigDict, Field, ValidationInfo, WithJsonSchema, field_validator
from typing_extensions import TypedDict

from . import money
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
    one_of,
    stored_metadata,
    validate,
)
from .lists import DEFAULT_LIMIT, Cursor, Limit, OneOf
from .states import StateMachine, Transition
from .times import iso_ms

CREATED = "created"
PAID = "paid"
EXPIRED = "expired"

# The one place a checkout session's status rules live: the actor decides with it, and
# storage's conditional writes (`pay`, `mark_expired`) guard with it.
STATES = StateMachine(
    "checkout_session",
    statuses=(CREATED, PAID, EXPIRED),
    transitions=(
        Transition("pay", {CREATED}, PAID),
        Transition("expire", {CREATED}, EXPIRED),
    ),
)
STATUSES = STATES.statuses

MAX_DESCRIPTION = 500


@attrs.frozen
class CheckoutRequest:
    """A validated `POST /checkout/sessions` body."""

    amount_minor: int
    description: str
    success_url: str
    cancel_url: str
    customer_email: str | None
    customer_reference: str | None
    external_reference: str | None
    metadata: dict[str, Any]
    used_amount_minor: bool  # the response then carries `Deprecation: true`


@attrs.frozen
class CheckoutSession:
    id: str
    merchant_id: str
    status: str
    version: int
    amount_minor: int
    currency: str
    eur_cents: int
    description: str
    success_url: str
    cancel_url: str
    customer_email: str | None
    customer_reference: str | None
    external_reference: str | None
    metadata_json: str
    created_at: int
    updated_at: int
    expires_at: int
    paid_at: int | None = None

    def is_expired_at(self, now_us: int) -> bool:
        return now_us >= self.expires_at


class CheckoutSessionCreate(BaseModel):
    """The `POST /checkout/sessions` body; field order is the order problems are listed in."""

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
                    "Deprecated: the amount in minor units (1 FGC = 100), a string of digits "
                    "from 1 to 100000000. If sent it must agree with amount_fgc; the response "
                    "then carries `Deprecation: true`."
                ),
            },
            required=False,
            prefix="Must be a valid amount: ",
            suffix=".",
        ),
    ] = None
    currency: Annotated[str, Choice((money.CURRENCY,))]
    description: Annotated[str, Text(MAX_DESCRIPTION)]
    success_url: Annotated[
        str,
        Url(
            "Absolute http or https URL. After payment the customer is sent here with "
            "`checkout_session_id=<id>` added to the query."
        ),
    ]
    cancel_url: Annotated[str, Url("Absolute http or https URL.")]
    customer_email: Annotated[str | None, Email()] = None
    customer_reference: Annotated[str | None, Text(MAX_REFERENCE, required=False)] = None
    external_reference: Annotated[str | None, Text(MAX_REFERENCE, required=False)] = None
    metadata: Annotated[dict[str, Any], Metadata()] = Field(default_factory=dict)

    @field_validator("amount_minor")
    @classmethod
    def _agrees(cls, legacy: int | None, info: ValidationInfo) -> int | None:
        # A field validator (not a model one), so the disagreement is listed with every
        # other problem; `amount_fgc` is in `info.data` only when it was valid.
        minor = info.data.get("amount_fgc")
        if legacy is not None and minor is not None and legacy != minor:
            raise fail(
                f"Must agree with amount_fgc ({money.format_fgc(minor)} FGC is "
                f"{minor} minor units)."
            )
        return legacy


AMOUNT_SCHEMA: dict[str, Any] = {
    "type": "string",
    "pattern": money.AMOUNT_FGC_PATTERN,
    "description": (
        "Decimal FGC amount as a string: digits with an optional fraction (leading and "
        "trailing zeros are fine), at most two significant decimal places, above 0 and at most "
        "1000000.00; parsed exactly, never rounded. No sign, exponent, spaces or JSON number. "
        'Responses show exactly two decimals, e.g. "10.50".'
    ),
    "examples": ["12.50"],
}


def parse_create(body: dict[str, Any]) -> CheckoutRequest:
    """Validate a creation body; raises `ValidationFailed` listing every problem."""
    parsed = validate(CheckoutSessionCreate, body)
    return CheckoutRequest(
        amount_minor=parsed.amount_fgc,
        description=parsed.description,
        success_url=parsed.success_url,
        cancel_url=parsed.cancel_url,
        customer_email=parsed.customer_email,
        customer_reference=parsed.customer_reference,
        external_reference=parsed.external_reference,
        metadata=parsed.metadata,
        used_amount_minor=parsed.amount_minor is not None,
    )


class CheckoutSessionQuery(BaseModel):
    """`GET /checkout/sessions`: the page and the status filter."""

    model_config = ConfigDict(extra="forbid")

    limit: Annotated[int, Limit()] = DEFAULT_LIMIT
    status: Annotated[str | None, OneOf(STATUSES)] = None
    starting_after: Annotated[str | None, Cursor("cs_test_", "a checkout session")] = None


def new_session(
    request: CheckoutRequest,
    *,
    session_id: str,
    merchant_id: str,
    now_us: int,
    ttl_seconds: int,
    eur_cents_per_fgc: Decimal,
) -> CheckoutSession:
    return CheckoutSession(
        id=session_id,
        merchant_id=merchant_id,
        status=CREATED,
        version=1,
        amount_minor=request.amount_minor,
        currency=money.CURRENCY,
        eur_cents=money.eur_cents(request.amount_minor, eur_cents_per_fgc),
        description=request.description,
        success_url=request.success_url,
        cancel_url=request.cancel_url,
        customer_email=request.customer_email,
        customer_reference=request.customer_reference,
        external_reference=request.external_reference,
        metadata_json=canonical_json(request.metadata),
        created_at=now_us,
        updated_at=now_us,
        expires_at=now_us + ttl_seconds * 1_000_000,
    )


def checkout_url(public_url: str, session_id: str) -> str:
    return f"{public_url}/checkout/{session_id}"


_TIME = "UTC, millisecond precision, e.g. 2026-11-22T14:07:24.621Z"
Time = Annotated[
    str, WithJsonSchema({"type": "string", "format": "date-time", "description": _TIME})
]


class CheckoutSessionWire(TypedDict):
    """A checkout session on the wire (API answers, event payloads)."""

    id: Annotated[str, Field(pattern="^cs_test_[0-9A-Za-z]{24}$")]
    object: Literal["checkout_session"]
    mode: Literal["test"]
    status: Annotated[
        str,
        one_of(
            STATUSES,
            "`created` -> `paid` (the customer authorized on the hosted page) or "
            "`expired` (at expires_at). `paid` and `expired` are final.",
        ),
    ]
    currency: Annotated[str, WithJsonSchema({"type": "string", "const": money.CURRENCY})]
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
    amount_fgc: Annotated[str, Field(description="Normalized, two decimals.")]
    eur_cents: Annotated[
        str,
        Field(
            description=(
                "amount_fgc x FGCPAY_EUR_CENTS_PER_FGC (default 100), rounded half-up, as an "
                "integer string; fixed at creation."
            )
        ),
    ]
    checkout_session_id: str
    checkout_url: Annotated[
        str,
        WithJsonSchema(
            {
                "type": "string",
                "format": "uri",
                "description": (
                    "PUBLIC_URL + /checkout/<id>: the hosted page. Knowing it lets a customer "
                    "pay: keep it between you and your customer."
                ),
            }
        ),
    ]
    customer_email: str | None
    customer_reference: str | None
    description: str
    success_url: str
    cancel_url: str
    external_reference: str | None
    metadata: dict[str, Any]
    expires_at: Time
    created_at: Time
    updated_at: Time
    paid_at: Annotated[
        str | None,
        WithJsonSchema({"type": ["string", "null"], "format": "date-time", "description": _TIME}),
    ]


def to_json(session: CheckoutSession, public_url: str) -> CheckoutSessionWire:
    """The session as the API, the events and the dashboard show it (one serializer)."""
    created, updated = session.created_at, session.updated_at
    created_at = iso_ms(created)
    return {
        "id": session.id,
        "object": "checkout_session",
        "mode": "test",
        "status": session.status,
        "currency": session.currency,
        "amount_minor": str(session.amount_minor),
        "amount_fgc": money.format_fgc(session.amount_minor),
        "eur_cents": str(session.eur_cents),
        "checkout_session_id": session.id,
        "checkout_url": checkout_url(public_url, session.id),
        "customer_email": session.customer_email,
        "customer_reference": session.customer_reference,
        "description": session.description,
        "success_url": session.success_url,
        "cancel_url": session.cancel_url,
        "external_reference": session.external_reference,
        "metadata": stored_metadata(session.metadata_json),
        "expires_at": iso_ms(session.expires_at),
        "created_at": created_at,
        # The same instant until the session changes: formatted once then.
        "updated_at": created_at if updated == created else iso_ms(updated),
        "paid_at": iso_ms(session.paid_at) if session.paid_at is not None else None,
    }
