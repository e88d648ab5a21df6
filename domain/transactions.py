"""Test transactions: the ledger that paid totals and balances are computed from, a
transaction's wire form (`GET /transactions`, and the charge in subscription events) and
the list's query."""

from __future__ import annotations

from typing import Annotated, Literal

import attrs
from pydantic import BaseModel, ConfigDict, Field, WithJsonSchema
from typing_extensions import TypedDict

from . import money
from .checkout import Time
from .fields import one_of
from .lists import DEFAULT_LIMIT, Cursor, IdFilter, Limit, OneOf
from .times import iso_ms

TRANSACTION_PREFIX = "txn_test_"

PAYMENT = "payment"
# One charge of a subscription: the approval's (period 0) or a renewal's (period n).
SUBSCRIPTION_CHARGE = "subscription_charge"
# An approved refund: a negative entry naming its refund.
REFUND = "refund"
TYPES = (PAYMENT, SUBSCRIPTION_CHARGE, REFUND)
# The entries a refund can be made against (money the merchant received).
REFUNDABLE = (PAYMENT, SUBSCRIPTION_CHARGE)

# Every ledger row succeeded: money moved. A declined charge moves none and is no ledger
# row; `subscription.payment_failed` shows it in the same shape, `declined`, with no id.
SUCCEEDED = "succeeded"
DECLINED = "declined"
STATUSES = (SUCCEEDED, DECLINED)


@attrs.frozen
class Transaction:
    id: str
    merchant_id: str
    kind: str
    checkout_session_id: str | None
    customer_code: str
    amount_minor: int
    currency: str
    created_at: int
    mode: str = "test"
    # A subscription charge's subscription and period; the ledger holds one charge per
    # (subscription_id, period), so a period can never be charged twice.
    subscription_id: str | None = None
    period: int | None = None
    # A refund entry's refund (its amount is negative); else None.
    refund_id: str | None = None
    # Of a payment or a charge: the part of it held by refunds that were not rejected
    # (pending review or approved). The refundable rest is `amount_minor` minus this; the
    # conditional write that raises it is what keeps refunds from ever exceeding the payment.
    refund_reserved_minor: int = 0


def nullable_id(prefix: str, description: str) -> WithJsonSchema:
    """The schema of an identifier with `prefix`, or null (a wire form's optional link)."""
    return WithJsonSchema(
        {
            "type": ["string", "null"],
            "pattern": f"^{prefix}[0-9A-Za-z]{{24}}$",
            "description": description,
        }
    )


class TransactionWire(TypedDict):
    """A transaction on the wire (`GET /transactions`, subscription events)."""

    id: Annotated[
        str | None,
        nullable_id(
            "txn_test_",
            "The ledger row's id; null only for a declined charge attempt "
            "(`subscription.payment_failed`), which is in no ledger.",
        ),
    ]
    object: Literal["transaction"]
    mode: Literal["test"]
    type: Annotated[
        str,
        one_of(
            TYPES,
            "`payment` (a checkout session paid), `subscription_charge` (a "
            "subscription's approval or renewal), `refund` (an approved refund, "
            "negative).",
        ),
    ]
    status: Annotated[
        str,
        one_of(
            STATUSES,
            "`succeeded` for every ledger row; `declined` only for the declined "
            "attempt a `subscription.payment_failed` event carries (no money moved).",
        ),
    ]
    amount_fgc: Annotated[
        str, Field(description="Normalized, two decimals; a refund's is negative: `-4.00`.")
    ]
    currency: Annotated[str, WithJsonSchema({"type": "string", "const": money.CURRENCY})]
    checkout_session_id: Annotated[
        str | None, nullable_id("cs_test_", "The session a payment paid; else null.")
    ]
    subscription_id: Annotated[
        str | None, nullable_id("sub_test_", "The subscription charged; else null.")
    ]
    refund_id: Annotated[
        str | None, nullable_id("re_test_", "A refund entry's refund (approved); else null.")
    ]
    period: Annotated[
        int | None,
        Field(
            ge=0,
            description=(
                "A subscription charge's period, counted from the approval's (0); else null."
            ),
        ),
    ]
    created_at: Time


def to_json(txn: Transaction, *, declined: bool = False) -> TransactionWire:
    """The transaction as the API and the events show it (one serializer). `declined`:
    a charge attempt that was declined, never written to the ledger (its id is not shown)."""
    return {
        "id": None if declined else txn.id,
        "object": "transaction",
        "mode": "test",
        "type": txn.kind,
        "status": DECLINED if declined else SUCCEEDED,
        "amount_fgc": money.format_fgc(txn.amount_minor),
        "currency": txn.currency,
        "checkout_session_id": txn.checkout_session_id,
        "subscription_id": txn.subscription_id,
        "refund_id": txn.refund_id,
        "period": txn.period,
        "created_at": iso_ms(txn.created_at),
    }


class TransactionQuery(BaseModel):
    """`GET /transactions`: the page, the type filter and the two id filters."""

    model_config = ConfigDict(extra="forbid")

    limit: Annotated[int, Limit()] = DEFAULT_LIMIT
    type: Annotated[str | None, OneOf(TYPES)] = None
    starting_after: Annotated[str | None, Cursor(TRANSACTION_PREFIX, "a transaction")] = None
    checkout_session_id: Annotated[
        str | None,
        IdFilter(
            "cs_test_",
            "a checkout session id (cs_test_...)",
            "Only this checkout session's payment and the entries of its approved refunds.",
        ),
    ] = None
    subscription_id: Annotated[
        str | None,
        IdFilter(
            "sub_test_",
            "a subscription id (sub_test_...)",
            "Only this subscription's charges and the entries of their approved refunds.",
        ),
    ] = None
