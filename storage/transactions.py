"""SQL for the test transaction ledger."""

from __future__ import annotations

from collections.abc import Sequence

from fgcpay.domain.transactions import Transaction

from ._bulk import Column, insert_rows
from ._database import Row, Tx

_TYPES: list[Column] = [
    ("id", "text"), ("merchant_id", "text"), ("kind", "text"), ("checkout_session_id", "text"),
    ("customer_code", "text"), ("amount_minor", "bigint"), ("currency", "text"),
    ("mode", "text"), ("created_at", "bigint"), ("subscription_id", "text"),
    ("period", "bigint"),
]  # fmt: skip
COLUMNS = ", ".join(name for name, _ in _TYPES)


def from_row(row: Row) -> Transaction:
    return Transaction(
        id=row["id"],
        merchant_id=row["merchant_id"],
        kind=row["kind"],
        checkout_session_id=row["checkout_session_id"],
        customer_code=row["customer_code"],
        amount_minor=row["amount_minor"],
        currency=row["currency"],
        mode=row["mode"],
        created_at=row["created_at"],
        subscription_id=row["subscription_id"],
        period=row["period"],
    )


def insert(tx: Tx, t: Transaction) -> None:
    """Insert one ledger row. A second payment of a checkout session, or a second charge
    of a subscription's period, violates a unique key and raises: never two."""
    insert_many(tx, [t])


def insert_many(tx: Tx, rows: Sequence[Transaction]) -> None:
    """`insert` for each of `rows`, in one statement (a batched write's charges)."""
    insert_rows(
        tx,
        "transactions",
        _TYPES,
        [(t.id, t.merchant_id, t.kind, t.checkout_session_id, t.customer_code, t.amount_minor,
          t.currency, t.mode, t.created_at, t.subscription_id, t.period) for t in rows],
    )  # fmt: skip


def for_checkout_session(tx: Tx, session_id: str) -> list[Transaction]:
    rows = tx.fetch(f"SELECT {COLUMNS} FROM transactions WHERE checkout_session_id = ?", session_id)
    return [from_row(row) for row in rows]


def for_subscription(tx: Tx, subscription_id: str) -> list[Transaction]:
    """A subscription's charges, in period order."""
    rows = tx.fetch(
        f"SELECT {COLUMNS} FROM transactions WHERE subscription_id = ? ORDER BY period",
        subscription_id,
    )
    return [from_row(row) for row in rows]
