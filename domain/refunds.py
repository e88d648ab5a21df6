"""Refunds: placeholders created for review. The record, its states (`pending_review` ->
`approved` or `rejected`), the request rules, the refundable rest of a payment, the
ledger entry an approval writes, and the wire form."""

from __future__ import annotations

from typing import Annotated, Any, Literal

import attrs
from pydantic import BaseModel, ConfigDict, Field, ValidationError, WithJsonSchema
from typing_extensions import TypedDict

from . import ids, money
from .checkout import Time
from .errors import FieldError, ValidationFailed
from .fields import (
    UNKNOWN_FIELD,
    Choice,
    Custom,
    Metadata,
    amount,
    canonical_json,
    field_errors,
    one_of,
    stored_metadata,
)
from .lists import DEFAULT_LIMIT, Cursor, Limit, OneOf
from .states import StateMachine, Transition
from .times import iso_ms
from .transactions import REFUND, TRANSACTION_PREFIX, Transaction, nullable_id

PENDING_REVIEW = "pending_review"
APPROVED = "approved"
REJECTED = "rejected"

# The one place a refund's status rules live: the payment's actor decides with it, and
# storage's conditional writes guard with it. Final once decided.
STATES = StateMachine(
    "refund",
    statuses=(PENDING_REVIEW, APPROVED, REJECTED),
    transitions=(
        Transition("approve", {PENDING_REVIEW}, APPROVED),
        Transition("reject", {PENDING_REVIEW}, REJECTED),
    ),
)
STATUSES = STATES.statuses
# A review's decision is the name of its transition.
DECISIONS = tuple(transition.name for transition in STATES.transitions)
EVENT_OF = {"approve": "refund.approved", "reject": "refund.rejected"}

REASONS = ("requested_by_customer", "duplicate", "fraudulent", "other")
REFUND_PREFIX = "re_test_"
SESSION_PREFIX = "cs_test_"


@attrs.frozen
class Refund:
    """One refund as stored. Money in minor units, times in microseconds (UTC)."""

    id: str
    merchant_id: str
    status: str
    version: int  # the compare-and-set token and the events' `sequence`
    amount_minor: int
    currency: str
    # The ledger row refunded (a payment or a subscription charge), and what it paid: the
    # session for a payment, the subscription for a charge.
    transaction_id: str
    checkout_session_id: str | None
    subscription_id: str | None
    reason: str | None
    metadata_json: str
    created_at: int
    updated_at: int
    reviewed_at: int | None = None


@attrs.frozen
class RefundRequest:
    """A validated `POST /refunds` body: exactly one of the two ids."""

    checkout_session_id: str | None
    transaction_id: str | None
    amount_minor: int | None  # None: the whole refundable rest
    reason: str | None
    metadata_json: str  # canonical JSON (a message field: hashable)


def _id_of(prefix: str, what: str) -> Any:
    def parse(value: Any) -> str:
        if not isinstance(value, str) or not ids.looks_like_id(value, prefix, 24):
            raise ValueError(f"Must be {what} id ({prefix}...).")
        return value

    return parse


_ONE_OF = "Give exactly one of checkout_session_id and transaction_id."
_SESSION = "checkout_session_id"
_TRANSACTION = "transaction_id"


def _exactly_one() -> dict[str, Any]:
    """The body names one of the two (the other absent or null), in the document's terms."""

    def naming(given: str, other: str) -> dict[str, Any]:
        return {
            "required": [given],
            "properties": {given: {"type": "string"}, other: {"type": "null"}},
        }

    return {"oneOf": [naming(_SESSION, _TRANSACTION), naming(_TRANSACTION, _SESSION)]}


class RefundCreate(BaseModel):
    """The `POST /refunds` body; field order is the order problems are listed in. Exactly
    one of the two ids is checked by `parse_create`, with the rest."""

    model_config = ConfigDict(extra="forbid", json_schema_extra=_exactly_one())

    checkout_session_id: Annotated[
        str | None,
        Custom(
            _id_of(SESSION_PREFIX, "a checkout session"),
            {
                "type": "string",
                "pattern": f"^{SESSION_PREFIX}[0-9A-Za-z]{{24}}$",
                "description": (
                    "A paid checkout session of yours: its payment is refunded. Give this or "
                    "transaction_id, not both."
                ),
            },
            required=False,
        ),
    ] = None
    transaction_id: Annotated[
        str | None,
        Custom(
            _id_of(TRANSACTION_PREFIX, "a transaction"),
            {
                "type": "string",
                "pattern": f"^{TRANSACTION_PREFIX}[0-9A-Za-z]{{24}}$",
                "description": (
                    "A payment or a subscription charge of yours (GET /transactions). Give "
                    "this or checkout_session_id, not both."
                ),
            },
            required=False,
        ),
    ] = None
    amount_fgc: Annotated[
        int | None,
        amount(required=False),
    ] = None
    reason: Annotated[
        str | None,
        Choice(REASONS, required=False, description="Why, for the review; optional."),
    ] = None
    metadata: Annotated[dict[str, Any], Metadata()] = Field(default_factory=dict)


def parse_create(body: dict[str, Any]) -> RefundRequest:
    """Validate a creation body; raises `ValidationFailed` listing every problem (unknown
    fields first, then the fields in order, naming one of both ids missing or both given).
    Whether the session or transaction exists and is refundable is for the caller to say."""
    problems: list[FieldError] = []
    parsed: RefundCreate | None = None
    try:
        parsed = RefundCreate.model_validate(body)
    except ValidationError as failed:
        problems = field_errors(failed)
    given = [name for name in (_SESSION, _TRANSACTION) if body.get(name) is not None]
    if len(given) != 1:
        # Listed where the two ids are: after the unknown fields, before the rest.
        unknown = sum(1 for problem in problems if problem.message == UNKNOWN_FIELD)
        field = _TRANSACTION if len(given) == 2 else _SESSION
        problems.insert(unknown, FieldError(field, _ONE_OF))
    if problems or parsed is None:
        raise ValidationFailed(problems)
    return RefundRequest(
        checkout_session_id=parsed.checkout_session_id,
        transaction_id=parsed.transaction_id,
        amount_minor=parsed.amount_fgc,
        reason=parsed.reason,
        metadata_json=canonical_json(parsed.metadata),
    )


def refund_amount(payment: Transaction, requested_minor: int | None) -> int:
    """The amount of a new refund of `payment`: the one requested, or the whole refundable
    rest (paid minus the refunds not rejected). 400 on `amount_fgc` when the rest does not
    cover it, or when nothing is left."""
    paid, held = payment.amount_minor, payment.refund_reserved_minor
    rest = paid - held
    so_far = f"{money.format_fgc(paid)} paid, {money.format_fgc(held)} refunded or in review"
    if rest <= 0:
        message = f"Nothing is left to refund ({so_far})."
    elif requested_minor is not None and requested_minor > rest:
        message = f"Must be at most {money.format_fgc(rest)}, the refundable rest ({so_far})."
    else:
        return rest if requested_minor is None else requested_minor
    raise ValidationFailed([FieldError("amount_fgc", message)])


def new_refund(
    request: RefundRequest, *, refund_id: str, payment: Transaction, amount_minor: int, now_us: int
) -> Refund:
    """A new refund of `payment`, `pending_review`."""
    return Refund(
        id=refund_id,
        merchant_id=payment.merchant_id,
        status=PENDING_REVIEW,
        version=1,
        amount_minor=amount_minor,
        currency=payment.currency,
        transaction_id=payment.id,
        checkout_session_id=payment.checkout_session_id,
        subscription_id=payment.subscription_id,
        reason=request.reason,
        metadata_json=request.metadata_json,
        created_at=now_us,
        updated_at=now_us,
    )


def reviewed(refund: Refund, decision: str, now_us: int) -> Refund:
    """The refund after its review (`decision`: "approve" or "reject"); the caller has
    checked that the table allows it from the refund's status."""
    target = STATES.check(decision, refund.status).target
    return attrs.evolve(
        refund, status=target, version=refund.version + 1, updated_at=now_us, reviewed_at=now_us
    )


def ledger_entry(
    refund: Refund, payment: Transaction, *, transaction_id: str, now_us: int
) -> Transaction:
    """The negative ledger row an approval writes. It names its refund only (the refund
    names the session or charge): the ledger holds one payment per session and one charge
    per period, so a refund entry takes neither key."""
    return Transaction(
        id=transaction_id,
        merchant_id=refund.merchant_id,
        kind=REFUND,
        checkout_session_id=None,
        customer_code=payment.customer_code,
        amount_minor=-refund.amount_minor,
        currency=refund.currency,
        created_at=now_us,
        refund_id=refund.id,
    )


class RefundQuery(BaseModel):
    """`GET /refunds`: the page and the status filter."""

    model_config = ConfigDict(extra="forbid")

    limit: Annotated[int, Limit()] = DEFAULT_LIMIT
    status: Annotated[str | None, OneOf(STATUSES)] = None
    starting_after: Annotated[str | None, Cursor(REFUND_PREFIX, "a refund")] = None


class RefundWire(TypedDict):
    """A refund on the wire (API answers, event payloads)."""

    id: Annotated[str, Field(pattern=f"^{REFUND_PREFIX}[0-9A-Za-z]{{24}}$")]
    object: Literal["refund"]
    mode: Literal["test"]
    status: Annotated[
        str,
        one_of(
            STATUSES,
            "`pending_review` (created) -> `approved` (a negative entry joins the ledger) or "
            "`rejected` (its amount is refundable again). `approved` and `rejected` are final.",
        ),
    ]
    amount_fgc: Annotated[str, Field(description="Normalized, two decimals; positive.")]
    currency: Annotated[str, WithJsonSchema({"type": "string", "const": money.CURRENCY})]
    checkout_session_id: Annotated[
        str | None,
        nullable_id(SESSION_PREFIX, "The session whose payment is refunded; null for a charge."),
    ]
    transaction_id: Annotated[
        str,
        Field(
            pattern=f"^{TRANSACTION_PREFIX}[0-9A-Za-z]{{24}}$",
            description="The payment or subscription charge refunded.",
        ),
    ]
    reason: Annotated[
        str | None,
        WithJsonSchema({"type": ["string", "null"], "enum": [*REASONS, None]}),
    ]
    metadata: dict[str, Any]
    created_at: Time
    reviewed_at: Annotated[
        str | None,
        WithJsonSchema(
            {
                "type": ["string", "null"],
                "format": "date-time",
                "description": "When it was approved or rejected; null while pending review.",
            }
        ),
    ]
    updated_at: Time


def to_json(refund: Refund) -> RefundWire:
    """The refund as the API, the events and the dashboard show it (one serializer)."""
    return {
        "id": refund.id,
        "object": "refund",
        "mode": "test",
        "status": refund.status,
        "amount_fgc": money.format_fgc(refund.amount_minor),
        "currency": refund.currency,
        "checkout_session_id": refund.checkout_session_id,
        "transaction_id": refund.transaction_id,
        "reason": refund.reason,
        "metadata": stored_metadata(refund.metadata_json),
        "created_at": iso_ms(refund.created_at),
        "reviewed_at": iso_ms(refund.reviewed_at) if refund.reviewed_at is not None else None,
        "updated_at": iso_ms(refund.updated_at),
    }
