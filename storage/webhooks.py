"""SQL for webhook endpoints, events and the delivery outbox."""

from __future__ import annotations

from collections.abc import Sequence

import attrs
from fgcpay.domain import ids
from fgcpay.domain.endpoints import WebhookEndpoint, decode_events, encode_events
from fgcpay.domain.webhooks import (
    DELIVERY_PREFIX,
    Delivery,
    DeliveryAttempt,
    Event,
    SenderLimits,
    subscribes,
)

from . import event_stream
from ._bulk import Column, insert_rows
from ._database import Row, Tx
from .paging import newest_first

_ENDPOINT_COLUMNS = (
    "id, merchant_id, url, enabled_events, secret_sealed, previous_secret_sealed,"
    " previous_secret_expires_at, created_at, deleted_at"
)
_EVENT_TYPES: list[Column] = [
    ("id", "text"), ("merchant_id", "text"), ("type", "text"), ("resource_id", "text"),
    ("sequence", "bigint"), ("body", "text"), ("created_at", "bigint"),
]  # fmt: skip
_EVENT_COLUMNS = ", ".join(name for name, _ in _EVENT_TYPES)
_DELIVERY_TYPES: list[Column] = [
    ("id", "text"), ("event_id", "text"), ("endpoint_id", "text"), ("merchant_id", "text"),
    ("status", "text"), ("attempts", "bigint"), ("next_attempt_at", "bigint"),
    ("created_at", "bigint"), ("updated_at", "bigint"),
]  # fmt: skip


def _endpoint(row: Row) -> WebhookEndpoint:
    return WebhookEndpoint(
        id=row["id"],
        merchant_id=row["merchant_id"],
        url=row["url"],
        enabled_events=decode_events(row["enabled_events"]),
        secret_sealed=row["secret_sealed"],
        previous_secret_sealed=row["previous_secret_sealed"],
        previous_secret_expires_at=row["previous_secret_expires_at"],
        created_at=row["created_at"],
        deleted_at=row["deleted_at"],
    )


def _event(row: Row) -> Event:
    return Event(
        id=row["id"],
        merchant_id=row["merchant_id"],
        type=row["type"],
        resource_id=row["resource_id"],
        sequence=row["sequence"],
        body=row["body"],
        created_at=row["created_at"],
    )


# -- endpoints ------------------------------------------------------------------------------


def insert_endpoint(tx: Tx, endpoint: WebhookEndpoint) -> None:
    e = endpoint
    tx.execute(
        f"INSERT INTO webhook_endpoints ({_ENDPOINT_COLUMNS}) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)",
        e.id, e.merchant_id, e.url, encode_events(e.enabled_events), e.secret_sealed,
        e.previous_secret_sealed, e.previous_secret_expires_at, e.created_at, e.deleted_at,
    )  # fmt: skip


def endpoints_of(tx: Tx, merchant_id: str) -> list[WebhookEndpoint]:
    rows = tx.fetch(
        f"SELECT {_ENDPOINT_COLUMNS} FROM webhook_endpoints WHERE merchant_id = ?"
        " AND deleted_at IS NULL ORDER BY created_at DESC, id DESC",
        merchant_id,
    )
    return [_endpoint(row) for row in rows]


def endpoint_of(tx: Tx, merchant_id: str, endpoint_id: str) -> WebhookEndpoint | None:
    row = tx.fetchrow(
        f"SELECT {_ENDPOINT_COLUMNS} FROM webhook_endpoints WHERE id = ? AND merchant_id = ?"
        " AND deleted_at IS NULL",
        endpoint_id,
        merchant_id,
    )
    return None if row is None else _endpoint(row)


def delete_endpoint(tx: Tx, merchant_id: str, endpoint_id: str, now_us: int) -> bool:
    """Soft delete: pending deliveries to it are marked failed, history stays."""
    changed = tx.execute(
        "UPDATE webhook_endpoints SET deleted_at = ? WHERE id = ? AND merchant_id = ?"
        " AND deleted_at IS NULL",
        now_us,
        endpoint_id,
        merchant_id,
    )
    if changed:
        tx.execute(
            "UPDATE deliveries SET status = 'failed', updated_at = ?, lease_owner = NULL"
            " WHERE endpoint_id = ? AND status = 'pending'",
            now_us,
            endpoint_id,
        )
    return changed == 1


def rotate_secret(
    tx: Tx, merchant_id: str, endpoint_id: str, new_sealed: str, now_us: int, overlap_us: int
) -> WebhookEndpoint | None:
    """The current secret becomes the previous one (still signing until the overlap ends)."""
    changed = tx.execute(
        "UPDATE webhook_endpoints SET previous_secret_sealed = secret_sealed,"
        " previous_secret_expires_at = ?, secret_sealed = ?"
        " WHERE id = ? AND merchant_id = ? AND deleted_at IS NULL",
        now_us + overlap_us,
        new_sealed,
        endpoint_id,
        merchant_id,
    )
    if not changed:
        return None
    return endpoint_of(tx, merchant_id, endpoint_id)


def set_enabled_events(
    tx: Tx, merchant_id: str, endpoint_id: str, enabled_events: tuple[str, ...]
) -> WebhookEndpoint | None:
    """The event types the endpoint receives from now on (events already queued keep
    their deliveries); None when the merchant has no such endpoint."""
    changed = tx.execute(
        "UPDATE webhook_endpoints SET enabled_events = ?"
        " WHERE id = ? AND merchant_id = ? AND deleted_at IS NULL",
        encode_events(enabled_events),
        endpoint_id,
        merchant_id,
    )
    if not changed:
        return None
    return endpoint_of(tx, merchant_id, endpoint_id)


# -- events and the outbox ------------------------------------------------------------------


def record_event(tx: Tx, event: Event) -> int:
    """Insert `event` and one pending delivery per subscribed endpoint (same transaction
    as the change that caused it). Returns the number of deliveries queued."""
    return record_events(tx, [event])


def record_events(tx: Tx, events: Sequence[Event]) -> int:
    """`record_event` for each of `events`, with one statement for all the events and one
    for all their deliveries (a batched write's events)."""
    rows = [(e.id, e.merchant_id, e.type, e.resource_id, e.sequence, e.body, e.created_at)
            for e in events]  # fmt: skip
    # Their place in the event stream: PostgreSQL's column defaults fill it; SQLite's
    # comes from a counter (storage/event_stream.py).
    positions = event_stream.positions_for(tx, len(rows))
    if positions is None:
        insert_rows(tx, "events", _EVENT_TYPES, rows)
    else:
        columns = [*_EVENT_TYPES, ("stream_seq", "bigint")]
        insert_rows(
            tx, "events", columns, [(*row, n) for row, n in zip(rows, positions, strict=True)]
        )
    event_stream.announce(tx, events)
    return _queue_deliveries(tx, events, None)


def _queue_deliveries(tx: Tx, events: Sequence[Event], now_us: int | None) -> int:
    """A pending delivery of each event to each endpoint of its merchant subscribed to its
    type, due at `now_us` (None: at the event's own time)."""
    if not events:
        return 0
    merchants = sorted({event.merchant_id for event in events})
    rows = tx.fetch(
        "SELECT id, merchant_id, enabled_events FROM webhook_endpoints"
        f" WHERE merchant_id IN ({', '.join('?' for _ in merchants)}) AND deleted_at IS NULL",
        *merchants,
    )
    endpoints: dict[str, list[tuple[str, tuple[str, ...]]]] = {}
    for row in rows:
        enabled = decode_events(row["enabled_events"])
        endpoints.setdefault(row["merchant_id"], []).append((row["id"], enabled))
    deliveries = []
    for event in events:
        at = event.created_at if now_us is None else now_us
        for endpoint_id, enabled in endpoints.get(event.merchant_id, ()):
            if subscribes(enabled, event.type):
                deliveries.append((DELIVERY_PREFIX + ids.random_base62(24), event.id,
                                   endpoint_id, event.merchant_id, "pending", 0, at, at, at))  # fmt: skip
    insert_rows(tx, "deliveries", _DELIVERY_TYPES, deliveries)
    return len(deliveries)


def redeliver(tx: Tx, merchant_id: str, event_id: str, now_us: int) -> int | None:
    """Queue a new delivery of the event to each subscribed endpoint; None if unknown."""
    row = tx.fetchrow(
        f"SELECT {_EVENT_COLUMNS} FROM events WHERE id = ? AND merchant_id = ?",
        event_id,
        merchant_id,
    )
    if row is None:
        return None
    return _queue_deliveries(tx, [_event(row)], now_us)


def event_of(tx: Tx, merchant_id: str, event_id: str) -> Event | None:
    row = tx.fetchrow(
        f"SELECT {_EVENT_COLUMNS} FROM events WHERE id = ? AND merchant_id = ?",
        event_id,
        merchant_id,
    )
    return None if row is None else _event(row)


def events_page(
    tx: Tx,
    merchant_id: str,
    event_type: str | None,
    after: tuple[int, str] | None,
    since_us: int,
    limit: int,
) -> list[Event]:
    conditions = {"created_at >= ?": since_us, "type = ?": event_type}
    rows = newest_first(
        tx, f"SELECT {_EVENT_COLUMNS} FROM events", merchant_id, conditions, after, limit
    )
    return [_event(row) for row in rows]


@attrs.frozen
class DeliveryJob:
    """One claimed delivery, with what it takes to send it."""

    delivery_id: str
    attempts: int
    event_id: str
    body: str
    url: str
    secret_sealed: str = attrs.field(repr=False)
    previous_secret_sealed: str | None = attrs.field(repr=False)
    previous_secret_expires_at: int | None
    endpoint_id: str = ""
    merchant_id: str = ""


def _not_full(limits: SenderLimits) -> tuple[str, list[object]]:
    """SQL (on `deliveries d`) leaving out endpoints and merchants at their limit."""
    sql = ""
    args: list[object] = []
    for column, full in (
        ("endpoint_id", limits.full_endpoints()),
        ("merchant_id", limits.full_merchants()),
    ):
        if full:
            sql += f" AND d.{column} NOT IN ({', '.join('?' for _ in full)})"
            args += full
    return sql, args


def claim_due(
    tx: Tx, owner: str, now_us: int, lease_us: int, limit: int, limits: SenderLimits
) -> tuple[list[DeliveryJob], bool]:
    """Lease up to `limit` due deliveries to `owner`, within the sender limits.

    Returns the jobs and whether due deliveries were passed over for a limit reached in
    this very claim (claim again: the next claim leaves those out in SQL). PostgreSQL
    skips rows another process has locked (FOR UPDATE SKIP LOCKED), so any number of
    processes share the work; SQLite has one writer, which serializes claims.
    """
    lock = " FOR UPDATE SKIP LOCKED" if tx.dialect == "postgresql" else ""
    not_full, not_full_args = _not_full(limits)
    # A window larger than `limit`: some rows may be passed over for the limits.
    due = tx.fetch(
        "SELECT d.id, d.endpoint_id, d.merchant_id FROM deliveries d"
        " WHERE d.status = 'pending' AND d.next_attempt_at <= ?"
        f" AND (d.lease_expires_at IS NULL OR d.lease_expires_at <= ?){not_full}"
        f" ORDER BY d.next_attempt_at LIMIT ?{lock}",
        now_us,
        now_us,
        *not_full_args,
        limit * 4,
    )
    endpoints = dict(limits.endpoints)
    merchants = dict(limits.merchants)
    chosen: list[str] = []
    passed_over = False
    for row in due:
        if len(chosen) == limit:
            break
        endpoint_id, merchant_id = row["endpoint_id"], row["merchant_id"]
        if (
            endpoints.get(endpoint_id, 0) >= limits.per_endpoint
            or merchants.get(merchant_id, 0) >= limits.per_merchant
        ):
            passed_over = True
            continue
        endpoints[endpoint_id] = endpoints.get(endpoint_id, 0) + 1
        merchants[merchant_id] = merchants.get(merchant_id, 0) + 1
        chosen.append(row["id"])
    jobs = []
    for delivery_id in chosen:
        tx.execute(
            "UPDATE deliveries SET lease_owner = ?, lease_expires_at = ? WHERE id = ?",
            owner,
            now_us + lease_us,
            delivery_id,
        )
        job = tx.fetchrow(
            "SELECT d.id AS delivery_id, d.attempts, d.endpoint_id, d.merchant_id,"
            " e.id AS event_id, e.body, w.url, w.secret_sealed, w.previous_secret_sealed,"
            " w.previous_secret_expires_at"
            " FROM deliveries d JOIN events e ON e.id = d.event_id"
            " JOIN webhook_endpoints w ON w.id = d.endpoint_id WHERE d.id = ?",
            delivery_id,
        )
        assert job is not None
        jobs.append(
            DeliveryJob(
                delivery_id=job["delivery_id"],
                attempts=job["attempts"],
                event_id=job["event_id"],
                body=job["body"],
                url=job["url"],
                secret_sealed=job["secret_sealed"],
                previous_secret_sealed=job["previous_secret_sealed"],
                previous_secret_expires_at=job["previous_secret_expires_at"],
                endpoint_id=job["endpoint_id"],
                merchant_id=job["merchant_id"],
            )
        )
    return jobs, passed_over


@attrs.frozen
class AttemptRecord:
    delivery_id: str
    attempted_at: int
    response_status: int | None
    latency_ms: int
    error: str | None
    response_body: str | None
    # outcome: 'succeeded', 'failed', or 'pending' with next_attempt_at
    outcome: str
    next_attempt_at: int | None


def record_attempt(tx: Tx, owner: str, attempt: AttemptRecord) -> bool:
    """Record the attempt and settle the delivery, if `owner` still holds its lease."""
    changed = tx.execute(
        "UPDATE deliveries SET status = ?, attempts = attempts + 1, next_attempt_at = ?,"
        " lease_owner = NULL, lease_expires_at = NULL, updated_at = ?"
        " WHERE id = ? AND lease_owner = ?",
        attempt.outcome,
        attempt.next_attempt_at if attempt.next_attempt_at is not None else attempt.attempted_at,
        attempt.attempted_at,
        attempt.delivery_id,
        owner,
    )
    if changed != 1:
        return False
    tx.execute(
        "INSERT INTO delivery_attempts (id, delivery_id, attempted_at, response_status,"
        " latency_ms, error, response_body) VALUES (?, ?, ?, ?, ?, ?, ?)",
        "att_" + ids.random_base62(24),
        attempt.delivery_id,
        attempt.attempted_at,
        attempt.response_status,
        attempt.latency_ms,
        attempt.error,
        attempt.response_body,
    )
    return True


def release_leases(tx: Tx, owner: str) -> int:
    return tx.execute(
        "UPDATE deliveries SET lease_owner = NULL, lease_expires_at = NULL"
        " WHERE lease_owner = ? AND status = 'pending'",
        owner,
    )


def next_due(tx: Tx, limits: SenderLimits) -> int | None:
    """When the next delivery becomes claimable: due, not leased (or its lease lapsed),
    and not for an endpoint or merchant at its limit (a finished attempt wakes the
    dispatcher for those)."""
    not_full, not_full_args = _not_full(limits)
    value = tx.fetchval(
        "SELECT MIN(CASE WHEN d.lease_expires_at IS NOT NULL"
        " AND d.lease_expires_at > d.next_attempt_at"
        " THEN d.lease_expires_at ELSE d.next_attempt_at END) FROM deliveries d"
        f" WHERE d.status = 'pending'{not_full}",
        *not_full_args,
    )
    return None if value is None else int(value)


@attrs.frozen
class DeliveryView:
    id: str
    endpoint_id: str
    status: str
    attempts: int
    next_attempt_at: int
    last_status: int | None
    last_error: str | None


def deliveries_of_event(tx: Tx, event_id: str) -> list[DeliveryView]:
    rows = tx.fetch(
        "SELECT d.id, d.endpoint_id, d.status, d.attempts, d.next_attempt_at,"
        " (SELECT a.response_status FROM delivery_attempts a WHERE a.delivery_id = d.id"
        "  ORDER BY a.attempted_at DESC LIMIT 1) AS last_status,"
        " (SELECT a.error FROM delivery_attempts a WHERE a.delivery_id = d.id"
        "  ORDER BY a.attempted_at DESC LIMIT 1) AS last_error"
        " FROM deliveries d WHERE d.event_id = ? ORDER BY d.created_at, d.id",
        event_id,
    )
    return [
        DeliveryView(
            id=r["id"],
            endpoint_id=r["endpoint_id"],
            status=r["status"],
            attempts=r["attempts"],
            next_attempt_at=r["next_attempt_at"],
            last_status=r["last_status"],
            last_error=r["last_error"],
        )  # fmt: skip
        for r in rows
    ]


# -- the delivery log -----------------------------------------------------------------------

# The event's type by a correlated subquery rather than a join, so `created_at` and `id`
# stay the delivery's own for the shared keyset paging.
_DELIVERY_SELECT = (
    "SELECT id, merchant_id, event_id, endpoint_id, status, next_attempt_at, created_at,"
    " (SELECT e.type FROM events e WHERE e.id = deliveries.event_id) AS event_type"
    " FROM deliveries"
)


def _with_attempts(tx: Tx, rows: Sequence[Row]) -> list[Delivery]:
    """The deliveries of `rows`, each with its attempts oldest first (one query for all)."""
    attempts: dict[str, list[DeliveryAttempt]] = {row["id"]: [] for row in rows}
    if attempts:
        found = tx.fetch(
            "SELECT delivery_id, attempted_at, response_status, latency_ms, error, response_body"
            f" FROM delivery_attempts WHERE delivery_id IN ({', '.join('?' for _ in attempts)})"
            " ORDER BY attempted_at, id",
            *attempts,
        )
        for a in found:
            attempts[a["delivery_id"]].append(
                DeliveryAttempt(
                    at=a["attempted_at"],
                    status_code=a["response_status"],
                    latency_ms=a["latency_ms"],
                    error=a["error"],
                    response_body=a["response_body"],
                )  # fmt: skip
            )
    return [
        Delivery(
            id=r["id"],
            merchant_id=r["merchant_id"],
            event_id=r["event_id"],
            event_type=r["event_type"],
            endpoint_id=r["endpoint_id"],
            status=r["status"],
            next_attempt_at=r["next_attempt_at"],
            created_at=r["created_at"],
            attempts=tuple(attempts[r["id"]]),
        )  # fmt: skip
        for r in rows
    ]


def delivery_of(tx: Tx, merchant_id: str, delivery_id: str) -> Delivery | None:
    row = tx.fetchrow(
        f"{_DELIVERY_SELECT} WHERE id = ? AND merchant_id = ?", delivery_id, merchant_id
    )
    return None if row is None else (_with_attempts(tx, [row]))[0]


def deliveries_page(
    tx: Tx,
    merchant_id: str,
    endpoint_id: str | None,
    event_id: str | None,
    status: str | None,
    after: tuple[int, str] | None,
    limit: int,
) -> list[Delivery]:
    """The merchant's deliveries, newest first, matching every filter given."""
    conditions = {"endpoint_id = ?": endpoint_id, "event_id = ?": event_id, "status = ?": status}
    rows = newest_first(tx, _DELIVERY_SELECT, merchant_id, conditions, after, limit)
    return _with_attempts(tx, rows)
