"""SQL for test customers and PIN lockouts.

A code's wrong PINs are counted in one `pin_failures` row per (scope, code), which every
payment with the code locks once, in the payment's own transaction (`attempt`): payments
of many merchants' customers with one test code lock one row each, in whatever order they
reach a process's writer. Each function that locks one declares its key (`pin_keys`), so
the PostgreSQL writers of two processes lock them in one order (storage/_database.py,
"the lock order").
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any, TypeVar

from fgcpay.domain.customers import (
    FAILURE_WINDOW_US,
    GLOBAL_SCOPE,
    LOCK_US,
    MAX_FAILURES,
    Customer,
    PinAttempt,
    PinTry,
    pays,
)

from ._database import LockKey, Shared, Tx, declared_keys, for_update, locks

T = TypeVar("T")


def pin_keys(scope: str | None, code: str) -> list[LockKey | Shared]:
    """The lock keys of `code`'s wrong-PIN counter in `scope` (None: in every scope), for
    each function that locks it (`locks`) and each that calls one.

    Every scope's counter of a code lies under the code's own key: a caller of one scope
    shares that key (callers of different merchants never wait for each other there), and
    an unlock of every scope, which cannot name its rows beforehand, takes it alone."""
    if scope is None:
        return [("pin", code)]
    return [Shared(("pin", code)), ("pin", code, scope)]


def set_pin_hmacs(tx: Tx, hmacs: list[tuple[str, str]]) -> None:
    """Store each test customer's PIN HMAC under the current secret (idempotent)."""
    for code, digest in hmacs:
        tx.execute(
            "UPDATE test_customers SET pin_hmac = ?"
            " WHERE customer_code = ? AND (pin_hmac IS NULL OR pin_hmac <> ?)",
            digest,
            code,
            digest,
        )


def by_code(tx: Tx, code: str) -> Customer | None:
    row = tx.fetchrow(
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


# A row is "stale" when its lock has run out, or when it holds no lock and its failure
# window is over: the next attempt starts it afresh. Parameters: now, now, window start.
_STALE = (
    "((locked_until IS NOT NULL AND locked_until <= ?)"
    " OR (locked_until IS NULL AND window_started_at <= ?))"
)


@locks(pin_keys)
def reserve_attempt(tx: Tx, scope: str, code: str, now_us: int) -> PinAttempt:
    """Reserve the right to compare one PIN for `code`, or refuse it as locked.

    One conditional UPDATE decides: it succeeds only while the code is not locked and
    fewer than five attempts are counted or in flight in the window. PostgreSQL re-checks
    the condition on the row it locks and SQLite runs one writer at a time, so concurrent
    attempts from any session or process never reserve more than five. (`attempt`
    reserves and settles in one transaction, so no other sees its slot held: a crash
    rolls both back.)
    """
    window_start = now_us - FAILURE_WINDOW_US
    # A merchant's counter only while the merchant exists: an attempt racing its
    # sandbox's deletion (its session's actor still in memory in some process) must not
    # leave a row of it behind; it finds no counter and is refused as busy.
    tx.execute(
        "INSERT INTO pin_failures"
        " (scope, customer_code, failures, in_flight, window_started_at, locked_until)"
        " SELECT ?, ?, 0, 0, ?, NULL"
        " WHERE ? = ? OR EXISTS (SELECT 1 FROM merchants WHERE id = ?)"
        " ON CONFLICT (scope, customer_code) DO NOTHING",
        scope,
        code,
        now_us,
        scope,
        GLOBAL_SCOPE,
        scope,
    )
    reserved = tx.execute(
        "UPDATE pin_failures SET"
        f" failures = CASE WHEN {_STALE} THEN 0 ELSE failures END,"
        f" in_flight = CASE WHEN {_STALE} THEN 1 ELSE in_flight + 1 END,"
        f" window_started_at = CASE WHEN {_STALE} THEN ? ELSE window_started_at END,"
        f" locked_until = CASE WHEN {_STALE} THEN NULL ELSE locked_until END"
        " WHERE scope = ? AND customer_code = ?"
        f" AND ({_STALE} OR (locked_until IS NULL AND failures + in_flight < ?))",
        *(now_us, window_start),
        *(now_us, window_start),
        *(now_us, window_start),
        now_us,
        *(now_us, window_start),
        scope,
        code,
        *(now_us, window_start),
        MAX_FAILURES,
    )
    if not reserved:
        until = tx.fetchval(
            "SELECT locked_until FROM pin_failures WHERE scope = ? AND customer_code = ?",
            scope,
            code,
        )
        return PinAttempt(locked=True, busy=until is None or int(until) <= now_us)
    return PinAttempt(locked=False, customer=by_code(tx, code))


@locks(pin_keys)
def settle_attempt(tx: Tx, scope: str, code: str, now_us: int, matched: bool) -> bool:
    """End a reserved attempt. A right PIN forgives earlier wrong ones; a wrong one stays
    counted, and the fifth in the window locks the code for 15 minutes.

    Returns whether the code is locked now.
    """
    in_flight = "CASE WHEN in_flight > 0 THEN in_flight - 1 ELSE 0 END"
    if matched:
        tx.execute(
            f"UPDATE pin_failures SET failures = 0, in_flight = {in_flight}"
            " WHERE scope = ? AND customer_code = ?",
            scope,
            code,
        )
        return False
    tx.execute(
        f"UPDATE pin_failures SET in_flight = {in_flight}, failures = failures + 1,"
        " locked_until = CASE WHEN failures + 1 >= ?"
        "  AND (locked_until IS NULL OR locked_until <= ?) THEN ? ELSE locked_until END"
        " WHERE scope = ? AND customer_code = ?",
        MAX_FAILURES,
        now_us,
        now_us + LOCK_US,
        scope,
        code,
    )
    until = tx.fetchval(
        "SELECT locked_until FROM pin_failures WHERE scope = ? AND customer_code = ?",
        scope,
        code,
    )
    return until is not None and int(until) > now_us


def _attempt_keys(
    scope: str,
    code: str,
    charge: Callable[..., object],
    charge_args: tuple[Any, ...],
    charge_kwargs: Mapping[str, Any],
) -> list[LockKey | Shared]:
    return [*pin_keys(scope, code), *declared_keys(charge, charge_args, charge_kwargs)]


def _counts_nothing(tx: Tx, scope: str, code: str) -> bool:
    """Lock `code`'s counter in `scope` and say whether it holds nothing: no wrong PIN
    counted, none in flight, no lock (False, nothing locked, when there is no counter)."""
    row = tx.fetchrow(
        "SELECT failures, in_flight, locked_until FROM pin_failures"
        f" WHERE scope = ? AND customer_code = ?{for_update(tx)}",
        scope,
        code,
    )
    if row is None:
        return False
    return (row["failures"], row["in_flight"], row["locked_until"]) == (0, 0, None)


@locks(_attempt_keys)
def attempt(
    tx: Tx,
    scope: str,
    code: str,
    now_us: int,
    matches: Callable[[Customer | None], bool],
    charge: Callable[..., T],
    charge_args: tuple[Any, ...],
    charge_kwargs: Mapping[str, Any],
) -> PinTry[T]:
    """One PIN attempt for `code` and the charge it authorizes, in one transaction: the
    customer's confirm costs one durable commit, and a crash anywhere in it (the function
    raising, the process dying before the commit) leaves nothing counted, nothing held
    and nothing charged.

    The attempt is reserved (refused, nothing compared, while the code is locked), the
    PIN compared by `matches` (given the code's customer, None when unknown), and the
    attempt settled: a wrong PIN counted (the fifth in the window locks the code), a
    right one forgiving earlier wrong ones. When the PIN is right and the customer pays,
    `charge(tx, *charge_args, **charge_kwargs)` is written too, its result in `charged`.
    The counter's row stays locked until the commit, so attempts with one code from any
    process are decided one after another, each on the count the one before it left."""
    compared: bool | None = None
    if _counts_nothing(tx, scope, code):
        # The usual confirm: no wrong PIN counted, no lock. A right PIN changes nothing
        # of the counter (locking it was enough), so it costs two statements, not four.
        customer = by_code(tx, code)
        compared = matches(customer)
        if compared and customer is not None:
            if not pays(customer.outcome):
                return PinTry(customer=customer, matched=True)
            charged = charge(tx, *charge_args, **charge_kwargs)
            return PinTry(customer=customer, matched=True, charged=charged)
    reserved = reserve_attempt(tx, scope, code, now_us)
    if reserved.locked:  # (never after a clean counter: its row is locked by now)
        return PinTry(refused=True, busy=reserved.busy)
    customer = reserved.customer
    matched = matches(customer) if compared is None else compared
    if matched and customer is not None and pays(customer.outcome):
        settle_attempt(tx, scope, code, now_us, True)
        return PinTry(
            customer=customer, matched=True, charged=charge(tx, *charge_args, **charge_kwargs)
        )
    locked = settle_attempt(tx, scope, code, now_us, matched)
    return PinTry(customer=customer, matched=matched, locked=locked)


@locks(pin_keys)
def unlock(tx: Tx, code: str, scope: str | None, now_us: int) -> int:
    """Forget a code's wrong PINs and lift its locks (in one scope, or in all of them).

    Returns how many locks were running.
    """
    where = "customer_code = ?" + ("" if scope is None else " AND scope = ?")
    args: list[object] = [code] if scope is None else [code, scope]
    running = tx.fetchval(
        f"SELECT COUNT(*) FROM pin_failures WHERE {where} AND locked_until > ?", *args, now_us
    )
    tx.execute(
        f"UPDATE pin_failures SET failures = 0, locked_until = NULL, window_started_at = ?"
        f" WHERE {where}",
        now_us,
        *args,
    )
    return int(running)
