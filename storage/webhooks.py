"""SQL for webhook endpoints, events and the delivery outbox."""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from typing import Any

import attrs
from fgcpay.domain import faults as fault_rules
from fgcpay.domain import ids
from fgcpay.domain.deliveries import DELIVERY_PREFIX, Delivery, DeliveryAttempt, SenderLimits
from fgcpay.domain.endpoints import WebhookEndpoint, decode_events, encode_events
from fgcpay.domain.events import Event, subscribes
from fgcpay.domain.faults import FaultPlan, Faults

from . import event_stream
from ._bulk import Column, arrays, insert_rows, unnest
from ._database import Row, Tx
from .paging import newest_first

_ENDPOINT_COLUMNS = (
    "id, merchant_id, url, enabled_events, secret_sealed, previous_secret_sealed,"
    " previous_secret_expires_at, created_at, deleted_at, faults"
)
_EVENT_TYPES: list[Column] = [
    ("id", "text"), ("merchant_id", "text"), ("type", "text"), ("resource_id", "text"),
    ("sequence", "bigint"), ("body", "text"), ("created_at", "bigint"),
]  # fmt: skip
_EVENT_COLUMNS = ", ".join(name for name, _ in _EVENT_TYPES)
_DELIVERY_TYPES: list[Column] = [
    ("id", "text"), ("event_id", "text"), ("endpoint_id", "text"), ("merchant_id", "text"),
    ("status", "text"), ("attempts", "bigint"), ("next_attempt_at", "bigint"),
    ("created_at", "bigint"), ("updated_at", "bigint"), ("fault_plan", "text"),
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
        faults=fault_rules.decode(row["faults"]),
    )


# -- endpoints ------------------------------------------------------------------------------


def insert_endpoint(tx: Tx, endpoint: WebhookEndpoint) -> None:
    e = endpoint
    tx.execute(
        f"INSERT INTO webhook_endpoints ({_ENDPOINT_COLUMNS})"
        " VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
        e.id, e.merchant_id, e.url, encode_events(e.enabled_events), e.secret_sealed,
        e.previous_secret_sealed, e.previous_secret_expires_at, e.created_at, e.deleted_at,
        fault_rules.encode(e.faults),
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


def endpoint_by_id(tx: Tx, endpoint_id: str) -> WebhookEndpoint | None:
    """Any merchant's endpoint (the operator's `fgcpay webhook check --endpoint`)."""
    row = tx.fetchrow(
        f"SELECT {_ENDPOINT_COLUMNS} FROM webhook_endpoints WHERE id = ? AND deleted_at IS NULL",
        endpoint_id,
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
            " WHERE endpoint_id = ? AND merchant_id = ? AND status = 'pending'",
            now_us,
            endpoint_id,
            merchant_id,
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


def update_endpoint(
    tx: Tx,
    merchant_id: str,
    endpoint_id: str,
    url: str | None,
    enabled_events: tuple[str, ...] | None,
    faults: tuple[Faults | None] | None = None,
) -> WebhookEndpoint | None:
    """Change the endpoint's URL, event types and faults, each only when given (`faults`
    as `(value,)`, `(None,)` clearing them); deliveries already queued keep their events
    and faults, and are sent to the URL as it is when they are attempted. Faults set
    count the deliveries' ordinals from 1 again. None when the merchant has no such
    endpoint."""
    set_faults = "" if faults is None else ", faults = ?, fault_ordinal = 0"
    changed = tx.execute(
        "UPDATE webhook_endpoints SET url = COALESCE(?, url),"
        f" enabled_events = COALESCE(?, enabled_events){set_faults}"
        " WHERE id = ? AND merchant_id = ? AND deleted_at IS NULL",
        url,
        None if enabled_events is None else encode_events(enabled_events),
        *(() if faults is None else (fault_rules.encode(faults[0]),)),
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
        "SELECT id, merchant_id, enabled_events, faults IS NOT NULL AS faulted"
        " FROM webhook_endpoints"
        f" WHERE merchant_id IN ({', '.join('?' for _ in merchants)}) AND deleted_at IS NULL",
        *merchants,
    )
    endpoints: dict[str, list[tuple[str, tuple[str, ...]]]] = {}
    faulted: set[str] = set()
    for row in rows:
        enabled = decode_events(row["enabled_events"])
        endpoints.setdefault(row["merchant_id"], []).append((row["id"], enabled))
        if row["faulted"]:
            faulted.add(row["id"])
    deliveries: list[tuple[Any, ...]] = []
    for event in events:
        at = event.created_at if now_us is None else now_us
        for endpoint_id, enabled in endpoints.get(event.merchant_id, ()):
            if subscribes(enabled, event.type):
                deliveries.append((DELIVERY_PREFIX + ids.random_base62(24), event.id,
                                   endpoint_id, event.merchant_id, "pending", 0, at, at, at, None))  # fmt: skip
    if faulted:
        deliveries = _with_faults(tx, deliveries, faulted)
    insert_rows(tx, "deliveries", _DELIVERY_TYPES, deliveries)
    return len(deliveries)


def _with_faults(
    tx: Tx, deliveries: list[tuple[Any, ...]], faulted: set[str]
) -> list[tuple[Any, ...]]:
    """The deliveries to endpoints with faults given their ordinals (in the order they are
    created) and their faults: each such endpoint's counter is raised here, in the
    outbox transaction (its row locked till the commit on PostgreSQL, so concurrent
    transactions take turns and no two deliveries share an ordinal), in the order of the
    endpoints' ids so two transactions never wait on each other. A delivery delayed by
    `delay_ms` falls due that much later: it waits in the outbox, holding no sender."""
    counts: dict[str, int] = {}
    owners: dict[str, str] = {}  # each endpoint's merchant, named in its update
    for row in deliveries:
        endpoint_id = str(row[2])
        if endpoint_id in faulted:
            counts[endpoint_id] = counts.get(endpoint_id, 0) + 1
            owners[endpoint_id] = str(row[3])
    next_ordinal: dict[str, tuple[int, Faults]] = {}
    for endpoint_id in sorted(counts):
        raised = tx.fetchrow(
            "UPDATE webhook_endpoints SET fault_ordinal = fault_ordinal + ?"
            " WHERE id = ? AND merchant_id = ? AND faults IS NOT NULL"
            " RETURNING fault_ordinal, faults",
            counts[endpoint_id],
            endpoint_id,
            owners[endpoint_id],
        )
        faults = None if raised is None else fault_rules.decode(raised["faults"])
        if raised is not None and faults is not None:  # not cleared meanwhile
            first = int(raised["fault_ordinal"]) - counts[endpoint_id] + 1
            next_ordinal[endpoint_id] = (first, faults)
    planned: list[tuple[Any, ...]] = []
    for row in deliveries:
        endpoint_id = str(row[2])
        if endpoint_id in next_ordinal:
            ordinal, faults = next_ordinal[endpoint_id]
            next_ordinal[endpoint_id] = (ordinal + 1, faults)
            chosen = fault_rules.plan(faults, ordinal)
            if chosen is not None:
                due = row[6] + chosen.delay_ms * 1000
                row = (*row[:6], due, *row[7:9], fault_rules.encode_plan(chosen))
        planned.append(row)
    return planned


def redeliver(tx: Tx, merchant_id: str, event_id: str, now_us: int) -> int | None:
    """Queue a new delivery of the event to each subscribed endpoint; None if unknown."""
    row = tx.fetchrow(
        f"SELECT {_EVENT_COLUMNS} FROM events WHERE id = ? AND merchant_id = ?",
        event_id,
        merchant_id,
    )
    if row is None:
        return None
    return _queue_deliveries(tx, [event_stream.event_from_row(row)], now_us)


def event_of(tx: Tx, merchant_id: str, event_id: str) -> Event | None:
    row = tx.fetchrow(
        f"SELECT {_EVENT_COLUMNS} FROM events WHERE id = ? AND merchant_id = ?",
        event_id,
        merchant_id,
    )
    return None if row is None else event_stream.event_from_row(row)


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
    return [event_stream.event_from_row(row) for row in rows]


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
    # The resource the event is about: its events go to one endpoint one at a time.
    resource_id: str = ""
    # The faults of its first attempt (fault injection), decided when it was created.
    plan: FaultPlan | None = None


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


# How many due rows one claim looks at for each row it may take: rows of an endpoint or a
# merchant at its limit are passed over, and the rest of the window serves the others.
_WINDOW = 2


def _rooms(tx: Tx, busy: Mapping[str, int], limit: int) -> tuple[str, list[object]]:
    """A relation `(key, n)`: the attempts each busy endpoint (or merchant) may still take."""
    keys = sorted(busy)
    rooms = [limit - busy[key] for key in keys]
    if tx.dialect == "postgresql":
        return "SELECT * FROM unnest(?::text[], ?::bigint[]) AS r(key, n)", [keys, rooms]
    return "SELECT key, value AS n FROM json_each(?)", [
        json.dumps(dict(zip(keys, rooms, strict=True)))
    ]


def _choose(tx: Tx, now_us: int, limit: int, limits: SenderLimits) -> tuple[str, list[object]]:
    """The CTEs that choose what a claim takes, the same on both backends: a window of the
    due deliveries, oldest due first (on PostgreSQL locked, skipping rows another
    transaction holds), then, in that order, each row while its endpoint and its merchant
    have room (the endpoint's first, so a merchant's room is counted only on rows its
    endpoints let through: the order a sender would take them one by one), at most
    `limit` of them (`chosen`); `due` and `fits` tell whether any were passed over."""
    endpoint_rooms, endpoint_args = _rooms(tx, limits.endpoints, limits.per_endpoint)
    merchant_rooms, merchant_args = _rooms(tx, limits.merchants, limits.per_merchant)
    lock = " FOR UPDATE OF d SKIP LOCKED" if tx.dialect == "postgresql" else ""
    sql = (
        f"WITH endpoint_room AS ({endpoint_rooms}), merchant_room AS ({merchant_rooms}),"
        " due AS MATERIALIZED (SELECT d.id, d.endpoint_id, d.merchant_id, d.next_attempt_at"
        " FROM deliveries d WHERE d.status = 'pending' AND d.next_attempt_at <= ?"
        " AND (d.lease_expires_at IS NULL OR d.lease_expires_at <= ?)"
        " AND d.endpoint_id NOT IN (SELECT key FROM endpoint_room WHERE n <= 0)"
        " AND d.merchant_id NOT IN (SELECT key FROM merchant_room WHERE n <= 0)"
        f" ORDER BY d.next_attempt_at LIMIT ?{lock}),"
        " by_endpoint AS (SELECT due.id, due.merchant_id, due.next_attempt_at,"
        " row_number() OVER (PARTITION BY due.endpoint_id"
        " ORDER BY due.next_attempt_at, due.id) AS nth,"
        " COALESCE((SELECT r.n FROM endpoint_room r WHERE r.key = due.endpoint_id), ?) AS room"
        " FROM due),"
        " by_merchant AS (SELECT b.id, b.next_attempt_at,"
        " row_number() OVER (PARTITION BY b.merchant_id ORDER BY b.next_attempt_at, b.id) AS nth,"
        " COALESCE((SELECT r.n FROM merchant_room r WHERE r.key = b.merchant_id), ?) AS room"
        " FROM by_endpoint b WHERE b.nth <= b.room),"
        " fits AS MATERIALIZED (SELECT id, next_attempt_at FROM by_merchant WHERE nth <= room),"
        " chosen AS (SELECT id, next_attempt_at FROM fits ORDER BY next_attempt_at, id LIMIT ?)"
    )
    args = [*endpoint_args, *merchant_args, now_us, now_us, limit * _WINDOW,
            limits.per_endpoint, limits.per_merchant, limit]  # fmt: skip
    return sql, args


_PASSED_OVER = "(SELECT count(*) FROM due) - (SELECT count(*) FROM fits) AS passed_over"
_JOB_COLUMNS = (
    "e.id AS event_id, e.resource_id, e.body, w.url, w.secret_sealed, w.previous_secret_sealed,"
    " w.previous_secret_expires_at"
)


def claim_due(
    tx: Tx, owner: str, now_us: int, lease_us: int, limit: int, limits: SenderLimits
) -> tuple[list[DeliveryJob], bool]:
    """Lease up to `limit` due deliveries to `owner`, within the sender limits, with what
    it takes to send them (the event's body, the endpoint's URL and secrets).

    Returns the jobs, oldest due first, and whether due deliveries were passed over for
    a limit reached in this very claim (rows past them may be other endpoints': claim
    again, and the next claim leaves the endpoints now at their limit out in SQL).
    PostgreSQL claims in one statement (`UPDATE ... FROM` the chosen rows, `RETURNING`
    them joined to their events and endpoints) and skips rows another process has locked
    (FOR UPDATE SKIP LOCKED), so any number of processes share the work; SQLite, in
    process, chooses, leases and reads in three statements of one write (its one writer
    serializes claims).
    """
    choose, args = _choose(tx, now_us, limit, limits)
    if tx.dialect == "postgresql":
        rows = tx.fetch(
            f"{choose}, claimed AS (UPDATE deliveries SET lease_owner = ?, lease_expires_at = ?"
            " FROM chosen WHERE deliveries.id = chosen.id"
            " RETURNING deliveries.id, deliveries.attempts, deliveries.event_id,"
            " deliveries.endpoint_id, deliveries.merchant_id, deliveries.fault_plan,"
            " chosen.next_attempt_at)"
            " SELECT c.id AS delivery_id, c.attempts, c.endpoint_id, c.merchant_id,"
            f" c.fault_plan, {_JOB_COLUMNS},"
            f" {_PASSED_OVER} FROM claimed c JOIN events e ON e.id = c.event_id"
            " JOIN webhook_endpoints w ON w.id = c.endpoint_id"
            " ORDER BY c.next_attempt_at, c.id",
            *args,
            owner,
            now_us + lease_us,
        )
        counted = rows
    else:
        counted = tx.fetch(f"{choose} SELECT id, {_PASSED_OVER} FROM chosen", *args)
        if not counted:
            return [], False
        ids = [row["id"] for row in counted]
        marks = ", ".join("?" for _ in ids)
        tx.execute(
            f"UPDATE deliveries SET lease_owner = ?, lease_expires_at = ? WHERE id IN ({marks})",
            owner,
            now_us + lease_us,
            *ids,
        )
        rows = tx.fetch(
            "SELECT d.id AS delivery_id, d.attempts, d.endpoint_id, d.merchant_id,"
            f" d.fault_plan, {_JOB_COLUMNS} FROM deliveries d JOIN events e ON e.id = d.event_id"
            " JOIN webhook_endpoints w ON w.id = d.endpoint_id"
            f" WHERE d.id IN ({marks}) ORDER BY d.next_attempt_at, d.id",
            *ids,
        )
    # A due row passed over means at least one was taken (the first due row always fits),
    # so the rows taken carry the count.
    passed_over = bool(counted) and counted[0]["passed_over"] > 0
    jobs = [
        DeliveryJob(
            delivery_id=row["delivery_id"],
            attempts=row["attempts"],
            event_id=row["event_id"],
            body=row["body"],
            url=row["url"],
            secret_sealed=row["secret_sealed"],
            previous_secret_sealed=row["previous_secret_sealed"],
            previous_secret_expires_at=row["previous_secret_expires_at"],
            endpoint_id=row["endpoint_id"],
            merchant_id=row["merchant_id"],
            resource_id=row["resource_id"],
            plan=fault_rules.decode_plan(row["fault_plan"]),
        )
        for row in rows
    ]
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
    # The fault the attempt carried (fault injection), if any.
    injected: str | None = None
    # Sent after it, logged as attempts of their own without settling the delivery: the
    # extra send of an injected `duplicate`.
    also: tuple[DeliveryAttempt, ...] = ()


_SETTLED_TYPES: list[Column] = [
    ("id", "text"), ("status", "text"), ("next_attempt_at", "bigint"), ("updated_at", "bigint"),
]  # fmt: skip
_ATTEMPT_TYPES: list[Column] = [
    ("id", "text"), ("delivery_id", "text"), ("attempted_at", "bigint"),
    ("response_status", "bigint"), ("latency_ms", "bigint"), ("error", "text"),
    ("response_body", "text"), ("injected", "text"),
]  # fmt: skip


def record_attempts(tx: Tx, owner: str, attempts: Sequence[AttemptRecord]) -> list[bool]:
    """Record each attempt (a row of its own) and settle its delivery, where `owner` still
    holds the delivery's lease; whether each was recorded (False: the lease lapsed and
    another process may hold the delivery now, or it was settled otherwise, as by deleting
    its endpoint). One statement per table for all of them on PostgreSQL (`unnest`)."""
    settled = [
        (a.delivery_id, a.outcome,
         a.next_attempt_at if a.next_attempt_at is not None else a.attempted_at, a.attempted_at)
        for a in attempts
    ]  # fmt: skip
    if tx.dialect == "postgresql" and len({a.delivery_id for a in attempts}) == len(attempts) > 1:
        names = ", ".join(name for name, _ in _SETTLED_TYPES)
        changed = tx.fetch(
            "UPDATE deliveries SET status = a.status, attempts = deliveries.attempts + 1,"
            " next_attempt_at = a.next_attempt_at, lease_owner = NULL, lease_expires_at = NULL,"
            f" updated_at = a.updated_at FROM {unnest(_SETTLED_TYPES)} AS a({names})"
            " WHERE deliveries.id = a.id AND deliveries.lease_owner = ? RETURNING deliveries.id",
            *arrays(_SETTLED_TYPES, settled),
            owner,
        )
        written = {row["id"] for row in changed}
        kept = [a.delivery_id in written for a in attempts]
    else:
        # SQLite in process, one attempt, or one delivery twice (the second finds the
        # lease given up by the first, and is not recorded).
        kept = [
            tx.execute(
                "UPDATE deliveries SET status = ?, attempts = attempts + 1, next_attempt_at = ?,"
                " lease_owner = NULL, lease_expires_at = NULL, updated_at = ?"
                " WHERE id = ? AND lease_owner = ?",
                status, next_at, at, delivery_id, owner,
            ) == 1
            for delivery_id, status, next_at, at in settled
        ]  # fmt: skip
    rows = []
    for a, recorded in zip(attempts, kept, strict=True):
        if recorded:
            rows.append(
                (
                    "att_" + ids.random_base62(24),
                    a.delivery_id,
                    a.attempted_at,
                    a.response_status,
                    a.latency_ms,
                    a.error,
                    a.response_body,
                    a.injected,
                )
            )
            rows += [
                (
                    "att_" + ids.random_base62(24),
                    a.delivery_id,
                    x.at,
                    x.status_code,
                    x.latency_ms,
                    x.error,
                    x.response_body,
                    x.injected,
                )
                for x in a.also
            ]
    insert_rows(tx, "delivery_attempts", _ATTEMPT_TYPES, rows)  # fmt: skip
    return kept


def release_leases(tx: Tx, owner: str) -> int:
    return tx.execute(
        "UPDATE deliveries SET lease_owner = NULL, lease_expires_at = NULL"
        " WHERE lease_owner = ? AND status = 'pending'",
        owner,
    )


def release_deliveries(tx: Tx, owner: str, delivery_ids: Sequence[str], retry_at_us: int) -> int:
    """Give back deliveries `owner` holds whose attempt crashed or could not be recorded:
    nothing is recorded for them, and any process may claim them again from
    `retry_at_us` (a short pause, so a delivery that crashes its sender every time is
    not a tight loop), not only once their lease lapses."""
    if not delivery_ids:
        return 0
    marks = ", ".join("?" * len(delivery_ids))
    return tx.execute(
        "UPDATE deliveries SET lease_owner = NULL, lease_expires_at = ?"
        f" WHERE lease_owner = ? AND status = 'pending' AND id IN ({marks})",
        retry_at_us,
        owner,
        *delivery_ids,
    )


def next_due(tx: Tx, limits: SenderLimits, owner: str | None = None) -> int | None:
    """When the next delivery becomes claimable: due, not leased (or its lease lapsed),
    and not for an endpoint or merchant at its limit (a finished attempt wakes the
    dispatcher for those). The deliveries `owner` holds are left out: it settles them
    itself, and knows their next due times when it does."""
    not_full, not_full_args = _not_full(limits)
    if owner is not None:
        not_full += " AND (d.lease_owner IS NULL OR d.lease_owner <> ?)"
        not_full_args.append(owner)
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
    " (SELECT e.type FROM events e WHERE e.id = deliveries.event_id"
    " AND e.merchant_id = deliveries.merchant_id) AS event_type"
    " FROM deliveries"
)


def _with_attempts(tx: Tx, rows: Sequence[Row]) -> list[Delivery]:
    """The deliveries of `rows`, each with its attempts oldest first (one query for all)."""
    attempts: dict[str, list[DeliveryAttempt]] = {row["id"]: [] for row in rows}
    if attempts:
        found = tx.fetch(
            "SELECT delivery_id, attempted_at, response_status, latency_ms, error, response_body,"
            f" injected FROM delivery_attempts WHERE delivery_id IN ({', '.join('?' for _ in attempts)})"
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
                    injected=a["injected"],
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
