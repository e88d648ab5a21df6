"""SQL for test customers and PIN lockouts."""

from __future__ import annotations

from fgcpay.domain.customers import FAILURE_WINDOW_US, LOCK_US, MAX_FAILURES, Customer

from ._database import Tx


async def set_pin_hmacs(tx: Tx, hmacs: list[tuple[str, str]]) -> None:
    """Store each test customer's PIN HMAC under the current secret (idempotent)."""
    for code, digest in hmacs:
        await tx.execute(
            "UPDATE test_customers SET pin_hmac = ?"
            " WHERE customer_code = ? AND (pin_hmac IS NULL OR pin_hmac <> ?)",
            digest,
            code,
            digest,
        )


async def by_code(tx: Tx, code: str) -> Customer | None:
    row = await tx.fetchrow(
        "SELECT customer_code, display_name, outcome, pin_hmac FROM test_customers"
        " WHERE customer_code = ?",
        code,
    )
    if row is None:
        return None
    return Customer(
        code=row["customer_code"],
        display_name=row["display_name"],
        outcome=row["outcome"],
        pin_hmac=row["pin_hmac"],
    )


async def locked_until(tx: Tx, code: str, now_us: int) -> int | None:
    value = await tx.fetchval(
        "SELECT locked_until FROM pin_failures WHERE customer_code = ? AND locked_until > ?",
        code,
        now_us,
    )
    return None if value is None else int(value)


async def record_failure(tx: Tx, code: str, now_us: int) -> int | None:
    """Count a wrong PIN; the fifth within 15 minutes locks the code for 15 minutes.

    Returns the lock's end when this failure locked the code. Atomic in one upsert, so
    concurrent attempts from several sessions or processes count exactly.
    """
    window_start = now_us - FAILURE_WINDOW_US
    await tx.execute(
        "INSERT INTO pin_failures (customer_code, failures, window_started_at, locked_until)"
        " VALUES (?, 1, ?, NULL)"
        " ON CONFLICT (customer_code) DO UPDATE SET"
        " failures = CASE WHEN pin_failures.window_started_at <= ? THEN 1"
        "  ELSE pin_failures.failures + 1 END,"
        " window_started_at = CASE WHEN pin_failures.window_started_at <= ?"
        "  THEN excluded.window_started_at ELSE pin_failures.window_started_at END",
        code,
        now_us,
        window_start,
        window_start,
    )
    until = now_us + LOCK_US
    locked = await tx.execute(
        "UPDATE pin_failures SET locked_until = ?, failures = 0, window_started_at = ?"
        " WHERE customer_code = ? AND failures >= ?",
        until,
        now_us,
        code,
        MAX_FAILURES,
    )
    return until if locked else None


async def clear_failures(tx: Tx, code: str, now_us: int) -> None:
    """A right PIN forgives earlier wrong ones (a running lock stays)."""
    await tx.execute(
        "DELETE FROM pin_failures WHERE customer_code = ?"
        " AND (locked_until IS NULL OR locked_until <= ?)",
        code,
        now_us,
    )
