"""SQL for the limits on failed dashboard sign-ins, shared by every process: an attempt is
reserved from each of its counters before the password is compared, then settled.

Each attempt locks the counters of its email and of its address, and sign-ins from one
address with many emails (or the reverse) reach several processes' writers at once: the
functions that lock counters declare their keys (`_counter_keys`), so two processes'
writers take them in one order (storage/_database.py, "the lock order"). The purge takes
only counters nobody holds.
"""

from __future__ import annotations

from collections.abc import Sequence

import attrs
from fgcpay.domain.dashboard import FAILURE_WINDOW_US, LOCK_US, Limit

from ._database import LockKey, Tx, locks, skip_locked

# A counter is "stale" when its lock has run out, or when it holds no lock and its window
# is over: the next attempt starts it afresh. Parameters: now, window start.
_STALE = (
    "((locked_until IS NOT NULL AND locked_until <= ?)"
    " OR (locked_until IS NULL AND window_started_at <= ?))"
)
_IN_FLIGHT_DOWN = "CASE WHEN in_flight > 0 THEN in_flight - 1 ELSE 0 END"


def _counter_keys(limits: Sequence[Limit]) -> list[LockKey]:
    return [("sign_in", limit.subject) for limit in limits]


@attrs.frozen
class Refused:
    """The attempt was not reserved: a counter is locked until `locked_until`, or (None)
    its last attempts are still being compared and may lock it."""

    locked_until: int | None


@locks(_counter_keys)
def reserve(tx: Tx, limits: Sequence[Limit], now_us: int) -> Refused | None:
    """Reserve one attempt from every counter of `limits`, or from none of them.

    Each reservation is one conditional UPDATE that succeeds only while the counter is
    not locked and its failures plus the attempts in flight are under its maximum; on
    PostgreSQL it re-checks the condition on the row it locks, and SQLite has one writer,
    so concurrent attempts never reserve past the maximum. None when reserved.
    """
    window_start = now_us - FAILURE_WINDOW_US
    stale = (now_us, window_start)
    taken: list[Limit] = []
    for limit in limits:
        tx.execute(
            "INSERT INTO sign_in_failures"
            " (subject, failures, in_flight, window_started_at, locked_until)"
            " VALUES (?, 0, 0, ?, NULL) ON CONFLICT (subject) DO NOTHING",
            limit.subject,
            now_us,
        )
        reserved = tx.execute(
            "UPDATE sign_in_failures SET"
            f" failures = CASE WHEN {_STALE} THEN 0 ELSE failures END,"
            f" in_flight = CASE WHEN {_STALE} THEN 1 ELSE in_flight + 1 END,"
            f" window_started_at = CASE WHEN {_STALE} THEN ? ELSE window_started_at END,"
            f" locked_until = CASE WHEN {_STALE} THEN NULL ELSE locked_until END"
            " WHERE subject = ?"
            f" AND ({_STALE} OR (locked_until IS NULL AND failures + in_flight < ?))",
            *stale,
            *stale,
            *stale,
            now_us,
            *stale,
            limit.subject,
            *stale,
            limit.max_failures,
        )
        if not reserved:
            _release(tx, taken)
            until = tx.fetchval(
                "SELECT locked_until FROM sign_in_failures WHERE subject = ?", limit.subject
            )
            return Refused(None if until is None or int(until) <= now_us else int(until))
        taken.append(limit)
    return None


def _release(tx: Tx, limits: Sequence[Limit]) -> None:
    for limit in limits:
        tx.execute(
            f"UPDATE sign_in_failures SET in_flight = {_IN_FLIGHT_DOWN} WHERE subject = ?",
            limit.subject,
        )


@locks(_counter_keys)
def settle(tx: Tx, limits: Sequence[Limit], matched: bool, now_us: int) -> int | None:
    """End a reserved attempt. A success forgives the failures of the counters that a
    success forgives; a failure counts on every counter and locks each that reaches its
    maximum in the window for 15 minutes.

    Returns the latest `locked_until` among the counters locked now, or None.
    """
    latest: int | None = None
    for limit in limits:
        if matched:
            forgive = "failures = 0, " if limit.forgiven_by_success else ""
            tx.execute(
                f"UPDATE sign_in_failures SET {forgive}in_flight = {_IN_FLIGHT_DOWN}"
                " WHERE subject = ?",
                limit.subject,
            )
            continue
        tx.execute(
            f"UPDATE sign_in_failures SET in_flight = {_IN_FLIGHT_DOWN},"
            " failures = failures + 1,"
            " locked_until = CASE WHEN failures + 1 >= ?"
            "  AND (locked_until IS NULL OR locked_until <= ?) THEN ? ELSE locked_until END"
            " WHERE subject = ?",
            limit.max_failures,
            now_us,
            now_us + LOCK_US,
            limit.subject,
        )
        until = tx.fetchval(
            "SELECT locked_until FROM sign_in_failures WHERE subject = ?", limit.subject
        )
        if until is not None and int(until) > now_us:
            latest = max(latest or 0, int(until))
    return latest


@locks(_counter_keys)
def release(tx: Tx, limits: Sequence[Limit]) -> None:
    """Give back an attempt reserved and never settled: the sign-in crashed or was
    cancelled before its password was compared. Nothing is counted (a crash is not a wrong
    password) and nothing is forgiven."""
    _release(tx, limits)


def purge_stale(tx: Tx, now_us: int, limit: int) -> int:
    """Delete at most `limit` counters that hold nothing any more: no lock running and a
    window over long enough ago that no attempt of it can still be in flight; how many.
    On PostgreSQL it passes over a counter another transaction holds (an attempt starting
    it afresh): never waiting, it never waits in a circle."""
    return tx.execute(
        "DELETE FROM sign_in_failures WHERE subject IN (SELECT subject FROM sign_in_failures"
        " WHERE (locked_until IS NULL OR locked_until <= ?) AND window_started_at <= ?"
        f" LIMIT ?{skip_locked(tx)})",
        now_us,
        now_us - 2 * FAILURE_WINDOW_US,
        limit,
    )
