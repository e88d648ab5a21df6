"""SQL for the test transaction ledger."""

from __future__ import annotations

from fgcpay.domain.transactions import Transaction

from ._database import Tx


def insert(tx: Tx, t: Transaction) -> None:
    tx.execute(
        "INSERT INTO transactions (id, merchant_id, kind, checkout_session_id, customer_code,"
        " amount_minor, currency, mode, created_at) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)",
        t.id, t.merchant_id, t.kind, t.checkout_session_id, t.customer_code,
        t.amount_minor, t.currency, t.mode, t.created_at,
    )  # fmt: skip


def for_checkout_session(tx: Tx, session_id: str) -> list[Transaction]:
    rows = tx.fetch(
        "SELECT id, merchant_id, kind, checkout_session_id, customer_code, amount_minor,"
        " currency, mode, created_at FROM transactions WHERE checkout_session_id = ?",
        session_id,
    )
    return [
        Transaction(
            id=r["id"],
            merchant_id=r["merchant_id"],
            kind=r["kind"],
            checkout_session_id=r["checkout_session_id"],
            customer_code=r["customer_code"],
            amount_minor=r["amount_minor"],
            currency=r["currency"],
            mode=r["mode"],
            created_at=r["created_at"],
        )  # fmt: skip
        for r in rows
    ]
