"""Test transactions: the ledger that paid totals and balances are computed from."""

from __future__ import annotations

import attrs

PAYMENT = "payment"


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
