"""The balance: a merchant's running totals, what each ledger row and refund adds to them,
and the summary's wire form (`GET /balance`)."""

from __future__ import annotations

from collections.abc import Iterable
from typing import Annotated, Literal

import attrs
from pydantic import Field, WithJsonSchema
from typing_extensions import TypedDict

from . import money
from .times import iso_ms
from .transactions import REFUND, Transaction


@attrs.frozen
class Totals:
    """A merchant's totals in minor units, or a change to them. `refunded_minor` and
    `pending_minor` are positive amounts (what was given back, what waits for review)."""

    paid_minor: int = 0  # payments and subscription charges
    refunded_minor: int = 0  # approved refunds
    pending_minor: int = 0  # refunds pending review
    transaction_count: int = 0  # ledger rows, refund entries included

    def __add__(self, other: Totals) -> Totals:
        return Totals(
            self.paid_minor + other.paid_minor,
            self.refunded_minor + other.refunded_minor,
            self.pending_minor + other.pending_minor,
            self.transaction_count + other.transaction_count,
        )

    def negated(self) -> Totals:
        return Totals(
            -self.paid_minor, -self.refunded_minor, -self.pending_minor, -self.transaction_count
        )

    @property
    def net_minor(self) -> int:
        """Paid minus approved refunds (refunds pending review are not taken off yet)."""
        return self.paid_minor - self.refunded_minor

    @property
    def is_zero(self) -> bool:
        return self == Totals()


def of_ledger(rows: Iterable[Transaction]) -> dict[str, Totals]:
    """What ledger rows add to each merchant's totals: a payment or a subscription charge
    its amount to paid, a refund entry (negative) its amount to refunded; each counts one."""
    found: dict[str, Totals] = {}
    for row in rows:
        if row.kind == REFUND:
            change = Totals(refunded_minor=-row.amount_minor, transaction_count=1)
        else:
            change = Totals(paid_minor=row.amount_minor, transaction_count=1)
        found[row.merchant_id] = found.get(row.merchant_id, Totals()) + change
    return found


def pending(merchant_id: str, amount_minor: int) -> dict[str, Totals]:
    """A refund created (`amount_minor` > 0) or reviewed (< 0) changes what waits for review."""
    return {merchant_id: Totals(pending_minor=amount_minor)}


# The summary's fields, as `fgcpay ledger verify` names the totals it compares.
FIELDS = {
    "paid_minor": "paid_total_fgc",
    "refunded_minor": "refunded_fgc",
    "pending_minor": "refunds_pending_fgc",
    "transaction_count": "transaction_count",
}


def differences(running: Totals, recomputed: Totals) -> list[tuple[str, int, int]]:
    """(field as the summary names it, running total, recomputed total) for each total
    that disagrees."""
    return [
        (shown, getattr(running, name), getattr(recomputed, name))
        for name, shown in FIELDS.items()
        if getattr(running, name) != getattr(recomputed, name)
    ]


_FGC = "Normalized, two decimals."


class BalanceWire(TypedDict):
    """The merchant's test-mode settlement summary (`GET /balance`)."""

    object: Literal["balance"]
    mode: Literal["test"]
    currency: Annotated[str, WithJsonSchema({"type": "string", "const": money.CURRENCY})]
    paid_total_fgc: Annotated[
        str, Field(description=f"Every payment and subscription charge. {_FGC}")
    ]
    refunded_fgc: Annotated[str, Field(description=f"Approved refunds, positive. {_FGC}")]
    refunds_pending_fgc: Annotated[
        str, Field(description=f"Refunds waiting for review (not yet taken off). {_FGC}")
    ]
    net_fgc: Annotated[str, Field(description=f"paid_total_fgc minus refunded_fgc. {_FGC}")]
    available_fgc: Annotated[
        str,
        WithJsonSchema(
            {
                "type": "string",
                "const": "0.00",
                "description": "Always 0.00: test mode settles nothing.",
            }
        ),
    ]
    live_payouts_enabled: Annotated[
        bool,
        WithJsonSchema(
            {"type": "boolean", "const": False, "description": "Live payouts are not enabled."}
        ),
    ]
    transaction_count: Annotated[
        int, Field(ge=0, description="Rows in the ledger (GET /transactions), refunds included.")
    ]
    as_of: Annotated[
        str,
        WithJsonSchema(
            {
                "type": "string",
                "format": "date-time",
                "description": "When the totals were read (now). UTC, millisecond precision.",
            }
        ),
    ]


def to_json(totals: Totals, now_us: int) -> BalanceWire:
    """The summary as the API and the dashboard show it (one serializer)."""
    return {
        "object": "balance",
        "mode": "test",
        "currency": money.CURRENCY,
        "paid_total_fgc": money.format_fgc(totals.paid_minor),
        "refunded_fgc": money.format_fgc(totals.refunded_minor),
        "refunds_pending_fgc": money.format_fgc(totals.pending_minor),
        "net_fgc": money.format_fgc(totals.net_minor),
        "available_fgc": "0.00",
        "live_payouts_enabled": False,
        "transaction_count": totals.transaction_count,
        "as_of": iso_ms(now_us),
    }
