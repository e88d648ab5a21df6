"""SQL for the dashboard's sessions (only a hash of each session id is stored)."""

from __future__ import annotations

from fgcpay.domain.dashboard import DashboardSession

from ._database import Row, Tx, skip_locked
from ._status import guarded_update


def _session(row: Row) -> DashboardSession:
    return DashboardSession(
        id_hash=row["id_hash"],
        merchant_id=row["merchant_id"],
        created_at=row["created_at"],
        last_seen_at=row["last_seen_at"],
    )


def insert(tx: Tx, session: DashboardSession, replaces: str | None) -> None:
    """Store a new session; the one it `replaces` (the browser's before a sign-in) ends in
    the same transaction."""
    if replaces is not None:
        tx.execute("DELETE FROM dashboard_sessions WHERE id_hash = ?", replaces)
    tx.execute(
        "INSERT INTO dashboard_sessions (id_hash, merchant_id, created_at, last_seen_at)"
        " VALUES (?, ?, ?, ?)",
        session.id_hash,
        session.merchant_id,
        session.created_at,
        session.last_seen_at,
    )


def by_hash(tx: Tx, id_hash: str) -> DashboardSession | None:
    row = tx.fetchrow(
        "SELECT id_hash, merchant_id, created_at, last_seen_at FROM dashboard_sessions"
        " WHERE id_hash = ?",
        id_hash,
    )
    return None if row is None else _session(row)


def touch(tx: Tx, merchant_id: str, id_hash: str, now_us: int) -> None:
    """Record the session's use at `now_us` (never moving it back). A browser's requests
    reach every process, each touching the session once a minute: on PostgreSQL one that
    another transaction is writing now is passed over rather than waited for, so a touch
    never waits in a circle (storage/_database.py, "the lock order")."""
    guarded_update(
        tx, "dashboard_sessions", "last_seen_at = ?", (now_us,), id_hash, "last_seen_at < ?",
        (now_us,), give_way=True, key="id_hash", merchant_id=merchant_id,
    )  # fmt: skip


def delete(tx: Tx, id_hash: str) -> None:
    tx.execute("DELETE FROM dashboard_sessions WHERE id_hash = ?", id_hash)


def delete_of_merchant(tx: Tx, merchant_id: str) -> int:
    """End every session of the merchant (its password was reset); how many ended."""
    return tx.execute("DELETE FROM dashboard_sessions WHERE merchant_id = ?", merchant_id)


def purge_idle(tx: Tx, seen_before_us: int, limit: int) -> int:
    """Delete at most `limit` sessions unused since `seen_before_us`; how many. On
    PostgreSQL it passes over a session another transaction holds (its browser back just
    now): never waiting, it never waits in a circle."""
    return tx.execute(
        "DELETE FROM dashboard_sessions WHERE id_hash IN (SELECT id_hash FROM dashboard_sessions"
        f" WHERE last_seen_at < ? LIMIT ?{skip_locked(tx)})",
        seen_before_us,
        limit,
    )
