"""Counts for the bounds of `domain.limits`: how many of a thing a merchant, a test clock
or a payment already has (each by an index)."""

from __future__ import annotations

from ._database import Tx


def test_clocks_of_merchant(tx: Tx, merchant_id: str) -> int:
    return int(tx.fetchval("SELECT COUNT(*) FROM test_clocks WHERE merchant_id = ?", merchant_id))


def subscriptions_on_clock(tx: Tx, merchant_id: str, clock_id: str) -> int:
    return int(
        tx.fetchval(
            "SELECT COUNT(*) FROM subscriptions WHERE test_clock_id = ? AND merchant_id = ?",
            clock_id,
            merchant_id,
        )
    )


def charges_on_clock(tx: Tx, merchant_id: str, clock_id: str) -> int:
    """The ledger rows of every subscription on the clock, ended ones included: what
    deleting the clock deletes (by `subscriptions_on_clock` and the ledger's one row per
    period, bounded by `domain.limits.MAX_CHARGES_PER_TEST_CLOCK` itself)."""
    return int(
        tx.fetchval(
            "SELECT COUNT(*) FROM transactions WHERE merchant_id = ? AND subscription_id IN"
            " (SELECT id FROM subscriptions WHERE test_clock_id = ? AND merchant_id = ?)",
            merchant_id,
            clock_id,
            merchant_id,
        )
    )


def refunds_of_transaction(tx: Tx, merchant_id: str, transaction_id: str) -> int:
    """Every refund of the merchant's payment or charge, whatever its status (a rejected
    one is a row too, and a refund can be created and rejected again and again). Another
    merchant's counts 0: its answer is the 404 of a transaction not found."""
    return int(
        tx.fetchval(
            "SELECT COUNT(*) FROM refunds WHERE transaction_id = ? AND merchant_id = ?",
            transaction_id,
            merchant_id,
        )
    )


def refunds_of_session(tx: Tx, merchant_id: str, session_id: str) -> int:
    return int(
        tx.fetchval(
            "SELECT COUNT(*) FROM refunds WHERE merchant_id = ? AND checkout_session_id = ?",
            merchant_id,
            session_id,
        )
    )


def webhook_endpoints_of_merchant(tx: Tx, merchant_id: str) -> int:
    """The merchant's endpoints not deleted."""
    return int(
        tx.fetchval(
            "SELECT COUNT(*) FROM webhook_endpoints WHERE merchant_id = ? AND deleted_at IS NULL",
            merchant_id,
        )
    )
