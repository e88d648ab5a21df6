"""SQL of the event stream (`GET /api/v1/events/stream`): the events table read in the
order transactions became visible, the notification that wakes the streams, and the
registry of the streams open in every process.

The position of an event in the stream is (`stream_xid`, `stream_seq`), filled when it is
inserted (migration 0014). On PostgreSQL `stream_xid` is the inserting transaction's id
and a read takes only the rows of transactions below its snapshot's xmin, which have all
ended: a transaction still running (or starting later) has an id at or above that xmin,
so what it commits sorts after every row already read, and a reader that resumes after
the last position it saw misses nothing, even when two transactions commit in the other
order than they started. On SQLite writes are serialized: `stream_xid` is 0 and
`stream_seq` counts inserts, which is commit order. docs/architecture.md, "The event
stream".
"""

from __future__ import annotations

from collections.abc import Sequence

import attrs
from fgcpay.domain.events import Event

from ._database import LockKey, Row, Tx, locks
from .merchants import api_key_of

EVENTS_CHANNEL = "fgcpay_events"
"""Notified with a merchant's id when a transaction that wrote its events commits."""

_EVENT_COLUMNS = "id, merchant_id, type, resource_id, sequence, body, created_at"
# Below every running transaction's id: the rows of transactions that have all ended.
# In a subquery, so it is read once per statement, from the statement's own snapshot.
_PG_VISIBLE = " AND stream_xid < (SELECT pg_snapshot_xmin(pg_current_snapshot())::text::bigint)"


@attrs.frozen(order=True)
class Position:
    """Where an event sits in the stream; (0, 0) is before every event."""

    xid: int
    seq: int


START = Position(0, 0)


@attrs.frozen
class Anchor:
    """The event a stream resumes after: its position and when it was made."""

    event_id: str
    position: Position
    created_at: int


@attrs.frozen
class StreamRead:
    """One read of a stream: the events after its position, in stream order, each with
    its position; whether its key still stands; and whether committed events of the
    merchant are held back behind a transaction that has not ended yet (read again soon)."""

    events: list[tuple[Event, Position]]
    key_valid: bool
    held_back: bool


def _visible(tx: Tx) -> str:
    return _PG_VISIBLE if tx.dialect == "postgresql" else ""


def event_from_row(row: Row) -> Event:
    """An `events` row as the domain's `Event` (this module's reads and `webhooks`'s)."""
    return Event(
        id=row["id"],
        merchant_id=row["merchant_id"],
        type=row["type"],
        resource_id=row["resource_id"],
        sequence=row["sequence"],
        body=row["body"],
        created_at=row["created_at"],
    )


# -- writing events -------------------------------------------------------------------------


def positions_for(tx: Tx, count: int) -> list[int] | None:
    """`stream_seq` for `count` events about to be inserted, in insertion order, on
    SQLite (the writer holds the file's lock, so the counter is this transaction's
    alone); None on PostgreSQL, where the columns' defaults fill them."""
    if tx.dialect == "postgresql" or count == 0:
        return None
    (row,) = tx.fetch(
        "UPDATE event_stream_counter SET last_seq = last_seq + ? RETURNING last_seq", count
    )
    last = int(row["last_seq"])
    return list(range(last - count + 1, last + 1))


def announce(tx: Tx, events: Sequence[Event]) -> None:
    """Wake, once this transaction commits, the streams of the merchants of `events`.

    On PostgreSQL only the merchants with a stream open somewhere are notified: a NOTIFY
    makes the commits of every transaction that sends one wait for each other (a burst of
    renewals would pay for streams nobody holds). On SQLite a notification is a call in
    this process, so every merchant is told."""
    merchants = sorted({event.merchant_id for event in events})
    if not merchants:
        return
    if tx.dialect == "postgresql":
        rows = tx.fetch(
            "SELECT DISTINCT merchant_id FROM event_streams"
            f" WHERE merchant_id IN ({', '.join('?' for _ in merchants)}) AND expires_at > ?",
            *merchants,
            max(event.created_at for event in events),
        )
        merchants = sorted(row["merchant_id"] for row in rows)
    for merchant_id in merchants:
        tx.notify(EVENTS_CHANNEL, merchant_id)


# -- reading --------------------------------------------------------------------------------


def anchor_of(tx: Tx, merchant_id: str, event_id: str) -> Anchor | None:
    """The merchant's event `event_id` as a place to resume after; None for an unknown id
    or another merchant's."""
    row = tx.fetchrow(
        "SELECT stream_xid, stream_seq, created_at FROM events WHERE id = ? AND merchant_id = ?",
        event_id,
        merchant_id,
    )
    if row is None:
        return None
    return Anchor(event_id, Position(row["stream_xid"], row["stream_seq"]), row["created_at"])


def newest_anchor(tx: Tx, merchant_id: str) -> Anchor | None:
    """The merchant's last event in stream order (of those a reader may take now), where
    a stream that asks for new events only starts; None when it has none."""
    row = tx.fetchrow(
        "SELECT id, stream_xid, stream_seq, created_at FROM events"
        f" WHERE merchant_id = ?{_visible(tx)}"
        " ORDER BY stream_xid DESC, stream_seq DESC LIMIT 1",
        merchant_id,
    )
    if row is None:
        return None
    return Anchor(row["id"], Position(row["stream_xid"], row["stream_seq"]), row["created_at"])


def any_after(tx: Tx, merchant_id: str, after: Position) -> bool:
    """Whether the merchant has an event after `after` in stream order (committed, taken
    now or not)."""
    row = tx.fetchrow(
        "SELECT 1 FROM events WHERE merchant_id = ? AND (stream_xid, stream_seq) > (?, ?) LIMIT 1",
        merchant_id,
        after.xid,
        after.seq,
    )
    return row is not None


def read(tx: Tx, merchant_id: str, key_id: str, after: Position, limit: int) -> StreamRead:
    """At most `limit` of the merchant's events after `after`, in stream order (every type:
    the stream filters, and moves past what it skips), with whether the key `key_id` still
    stands (unknown or revoked: no)."""
    rows = tx.fetch(
        f"SELECT {_EVENT_COLUMNS}, stream_xid, stream_seq FROM events"
        f" WHERE merchant_id = ? AND (stream_xid, stream_seq) > (?, ?){_visible(tx)}"
        " ORDER BY stream_xid, stream_seq LIMIT ?",
        merchant_id,
        after.xid,
        after.seq,
        limit,
    )
    events = [(event_from_row(row), Position(row["stream_xid"], row["stream_seq"])) for row in rows]
    held_back = False
    if tx.dialect == "postgresql" and len(rows) < limit:
        last = events[-1][1] if events else after
        held_back = any_after(tx, merchant_id, last)
    key = api_key_of(tx, merchant_id, key_id)
    return StreamRead(events, key is not None and key.revoked_at is None, held_back)


# -- the open streams -----------------------------------------------------------------------


def _streams_keys(merchant_id: str) -> list[LockKey]:
    return [("event_streams", merchant_id)]


@locks(_streams_keys)
def open_stream(
    tx: Tx, stream_id: str, merchant_id: str, owner: str, now_us: int, expires_at: int, most: int
) -> int:
    """Register stream `stream_id` of the merchant, held by process `owner` until
    `expires_at` (renewed by `keep_streams`), unless `most` streams of the merchant are
    open already. Returns how many were open before: the stream is registered when that
    is below `most`.

    Two processes opening the merchant's last place must not both count the places free:
    on PostgreSQL the writer takes the merchant's key (declared with `locks`) before the
    group runs, so the second waits, then counts. It is taken there, in the group's one
    order, rather than here, halfway through a group that holds other callers' locks
    (storage/_database.py, "the lock order"). `keep_streams` and `close_stream` write the
    rows of their own process; this deletes another's only once expired, its owner
    having stopped renewing them."""
    tx.execute(
        "DELETE FROM event_streams WHERE merchant_id = ? AND expires_at <= ?", merchant_id, now_us
    )
    open_now = int(
        tx.fetchval("SELECT COUNT(*) FROM event_streams WHERE merchant_id = ?", merchant_id)
    )
    if open_now < most:
        tx.execute(
            "INSERT INTO event_streams (id, merchant_id, owner, opened_at, expires_at)"
            " VALUES (?, ?, ?, ?, ?)",
            stream_id,
            merchant_id,
            owner,
            now_us,
            expires_at,
        )
    return open_now


def close_stream(tx: Tx, merchant_id: str, stream_id: str) -> None:
    tx.execute("DELETE FROM event_streams WHERE id = ? AND merchant_id = ?", stream_id, merchant_id)


def keep_streams(tx: Tx, owner: str, stream_ids: Sequence[str], expires_at: int) -> None:
    """Renew the places of process `owner`'s open streams `stream_ids`, and drop its others
    (a stream whose closing could not be written)."""
    marks = ", ".join("?" for _ in stream_ids)
    others = f" AND id NOT IN ({marks})" if stream_ids else ""
    tx.execute(f"DELETE FROM event_streams WHERE owner = ?{others}", owner, *stream_ids)
    if stream_ids:
        tx.execute(
            f"UPDATE event_streams SET expires_at = ? WHERE id IN ({marks})",
            expires_at,
            *stream_ids,
        )


def open_streams(tx: Tx, merchant_id: str, now_us: int) -> int:
    """How many streams of the merchant are open now (in every process)."""
    return int(
        tx.fetchval(
            "SELECT COUNT(*) FROM event_streams WHERE merchant_id = ? AND expires_at > ?",
            merchant_id,
            now_us,
        )
    )
