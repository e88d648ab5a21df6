"""Checkout sessions: the request rules, the record, its states and its wire form."""

from __future__ import annotations

import json
from decimal import Decimal
from typing import Any

import attrs

from . import money
from .fields import MAX_REFERENCE, Fields, canonical_json
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

CREATE_FIELDS = {
    "amount_fgc",
    "amount_minor",
    "currency",
    "description",
    "customer_email",
    "customer_reference",
    "success_url",
    "cancel_url",
    "external_reference",
    "metadata",
}
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


def parse_amounts(fields: Fields) -> tuple[int | None, bool]:
    """`amount_fgc` (required) and the deprecated `amount_minor`, which must agree with it."""
    minor: int | None = None
    if fields.body.get("amount_fgc") is None:
        fields.fail("amount_fgc", "This field is required.")
    else:
        try:
            minor = money.parse_fgc(fields.body["amount_fgc"])
        except money.AmountError as error:
            fields.fail("amount_fgc", f"Must be a valid amount: {error}.")
    used_minor = "amount_minor" in fields.body and fields.body["amount_minor"] is not None
    if used_minor:
        try:
            legacy = money.parse_minor(fields.body["amount_minor"])
        except money.AmountError as error:
            fields.fail("amount_minor", f"Must be a valid amount: {error}.")
        else:
            if minor is not None and legacy != minor:
                fields.fail(
                    "amount_minor",
                    f"Must agree with amount_fgc ({money.format_fgc(minor)} FGC is {minor} minor units).",
                )
    return minor, used_minor


def parse_create(body: dict[str, Any]) -> CheckoutRequest:
    """Validate a creation body; raises `ValidationFailed` listing every problem."""
    fields = Fields(body, CREATE_FIELDS)
    minor, used_minor = parse_amounts(fields)
    fields.choice("currency", (money.CURRENCY,), required=True)
    description = fields.text("description", required=True, max_len=MAX_DESCRIPTION)
    success_url = fields.url("success_url", required=True)
    cancel_url = fields.url("cancel_url", required=True)
    customer_email = fields.email("customer_email")
    customer_reference = fields.text("customer_reference", required=False, max_len=MAX_REFERENCE)
    external_reference = fields.text("external_reference", required=False, max_len=MAX_REFERENCE)
    metadata = fields.metadata()
    fields.raise_if_any()
    assert minor is not None and description and success_url and cancel_url
    return CheckoutRequest(
        amount_minor=minor,
        description=description,
        success_url=success_url,
        cancel_url=cancel_url,
        customer_email=customer_email,
        customer_reference=customer_reference,
        external_reference=external_reference,
        metadata=metadata,
        used_amount_minor=used_minor,
    )


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


def to_json(session: CheckoutSession, public_url: str) -> dict[str, Any]:
    """The session as the API, the events and the dashboard show it (one serializer)."""
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
        "metadata": json.loads(session.metadata_json),
        "expires_at": iso_ms(session.expires_at),
        "created_at": iso_ms(session.created_at),
        "updated_at": iso_ms(session.updated_at),
        "paid_at": iso_ms(session.paid_at) if session.paid_at is not None else None,
    }
