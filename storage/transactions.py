"""SQL for the test transaction ledger."""

from __future__ import annotations

from fgcpay.domain.transactions import Transaction

from ._database import Row, Tx

COLUMNS = (
    "id, merchant_id, kind, checkout_session_id, customer_code, amount_minor, currency, mode,"
    " created_at, subscription_id, period"
)


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
    tx.execute(
        f"INSERT INTO transactions ({COLUMNS}) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
        t.id, t.merchant_id, t.kind, t.checkout_session_id, t.customer_code,
        t.amount_minor, t.currency, t.mode, t.created_at, t.subscription_id, t.period,
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
