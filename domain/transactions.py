"""Test transactions: the ledger that paid totals and balances are computed from."""

from __future__ import annotations

import attrs

PAYMENT = "payment"
# One charge of a subscription: the approval's (period 0) or a renewal's (period n).
SUBSCRIPTION_CHARGE = "subscription_charge"


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
