"""SQL for subscriptions: the record, its lists, its due times, and one conditional write
per transition of `subscriptions.STATES`."""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from typing import Any, cast

import attrs
from fgcpay.domain.events import Event
from fgcpay.domain.idempotency import Completion
from fgcpay.domain.subscriptions import STATES, Subscription
from fgcpay.domain.transactions import SUBSCRIPTION_CHARGE, Transaction

from . import idempotency, transactions, webhooks
from ._bulk import Column
from ._database import Row, Tx, batched, locks
from ._status import status_in, update_versioned
from .checkout_sessions import notify_status
from .paging import newest_first

# One column per field of the record, in its order; only `metadata_json` is renamed.
_FIELDS = tuple(field.name for field in attrs.fields(Subscription))
_COLUMN_OF = {"metadata_json": "metadata"}
COLUMNS = ", ".join(_COLUMN_OF.get(name, name) for name in _FIELDS)

# What a transition may change, and each column's type; every other field is fixed at
# creation. The version is not set from the record: each write adds one to it (and a step
# with several events one per event, in a second statement: see `_move_many`).
_CHANGING: list[Column] = [
    ("status", "text"), ("updated_at", "bigint"), ("approved_at", "bigint"),
    ("customer_code", "text"), ("charge_count", "bigint"), ("charged_total_minor", "bigint"),
    ("current_period_start", "bigint"), ("current_period_end", "bigint"),
    ("next_action_at", "bigint"), ("failed_attempts", "bigint"), ("cancelled_at", "bigint"),
    ("ended_at", "bigint"), ("ended_reason", "text"),
]  # fmt: skip
_MUTABLE = ("version", *(name for name, _ in _CHANGING))
# The fields fixed at creation, compared one by one in `_problems` (cheaper than building
# a record to compare with).
_FIXED = tuple(name for name in _FIELDS if name not in _MUTABLE)
# `version = version + 1` rather than a parameter: the guard already pins the old one.
_SET = ", ".join(["version = version + 1", *(f"{name} = ?" for name, _ in _CHANGING)])


def from_row(row: Row) -> Subscription:
    """The record of a row selected with `COLUMNS`, which lists the columns in the record's
    fields' order: built positionally, four times quicker than by name (2 against 8.6 µs;
    a renewal sweep builds one per subscription due). A dict (PostgreSQL's rows) keeps
    the columns' order too."""
    values = row.values() if isinstance(row, dict) else cast(Iterable[Any], row)
    return Subscription(*values)


@locks(idempotency.completion_keys)
def insert(
    tx: Tx,
    subscription: Subscription,
    completion: Completion | None,
    events: Sequence[Event] = (),
) -> None:
    """Insert a new subscription and, in the same transaction, its idempotency answer
    and its events (`subscription.created`) with their deliveries."""
    placeholders = ", ".join("?" for _ in _FIELDS)
    tx.execute(
        f"INSERT INTO subscriptions ({COLUMNS}) VALUES ({placeholders})",
        *(getattr(subscription, name) for name in _FIELDS),
    )
    for event in events:
        webhooks.record_event(tx, event)
    if completion is not None:
        idempotency.complete(tx, completion)


def by_id(tx: Tx, subscription_id: str) -> Subscription | None:
    row = tx.fetchrow(f"SELECT {COLUMNS} FROM subscriptions WHERE id = ?", subscription_id)
    return None if row is None else from_row(row)


def of_merchant(tx: Tx, merchant_id: str, subscription_id: str) -> Subscription | None:
    row = tx.fetchrow(
        f"SELECT {COLUMNS} FROM subscriptions WHERE id = ? AND merchant_id = ?",
        subscription_id,
        merchant_id,
    )
    return None if row is None else from_row(row)


def page(
    tx: Tx,
    merchant_id: str,
    status: str | None,
    after: tuple[int, str] | None,
    limit: int,
) -> list[Subscription]:
    """Up to `limit` subscriptions, newest first, after the cursor position `after`."""
    rows = newest_first(
        tx,
        f"SELECT {COLUMNS} FROM subscriptions",
        merchant_id,
        {"status = ?": status},
        after,
        limit,
    )
    return [from_row(row) for row in rows]


# -- the durable timer ----------------------------------------------------------------------
# `next_action_at` is NULL once nothing is due, so the due reads need no status condition;
# `IS NOT NULL` is spelled out so both planners see the partial indexes' predicates.


def due(tx: Tx, now_us: int, limit: int, offset: int = 0) -> list[Subscription]:
    """Up to `limit` subscriptions on the real clock due at `now_us`, earliest first (then
    by id) after skipping `offset`: the renewal sweep's work. Whole records, not ids: each
    is handed to its actor as its state, which spares the actor's read on activation."""
    rows = tx.fetch(
        f"SELECT {COLUMNS} FROM subscriptions WHERE test_clock_id IS NULL"
        " AND next_action_at IS NOT NULL AND next_action_at <= ?"
        " ORDER BY next_action_at, id LIMIT ? OFFSET ?",
        now_us,
        limit,
        offset,
    )
    return [from_row(row) for row in rows]


def due_on_clock(
    tx: Tx, merchant_id: str, clock_id: str, up_to_us: int, limit: int
) -> list[Subscription]:
    """Up to `limit` subscriptions of the merchant's test clock `clock_id` due at or before
    `up_to_us`, earliest first (then by id), whole as `due` reads them: an advance's work."""
    rows = tx.fetch(
        f"SELECT {COLUMNS} FROM subscriptions WHERE test_clock_id = ? AND merchant_id = ?"
        " AND next_action_at IS NOT NULL AND next_action_at <= ?"
        " ORDER BY next_action_at, id LIMIT ?",
        clock_id,
        merchant_id,
        up_to_us,
        limit,
    )
    return [from_row(row) for row in rows]


def next_due(tx: Tx) -> int | None:
    """The nearest due time on the real clock, or None when nothing is due ever."""
    value = tx.fetchval(
        "SELECT MIN(next_action_at) FROM subscriptions WHERE test_clock_id IS NULL"
        " AND next_action_at IS NOT NULL"
    )
    return None if value is None else int(value)


# -- the transitions ------------------------------------------------------------------------
# Each takes the record as the caller read it (`before`) and as it must be after (`after`,
# computed by the domain), and writes in one transaction: the row, guarded by the table's
# source statuses and `before.version`; the ledger row where money moves; the events with
# their deliveries; the live-status notification. False, with nothing written, when the
# row moved on meanwhile. A record that breaks the transition's shape (a changed creation
# field, totals that disagree with the charge, a charge of the wrong period) is a bug in
# the caller: ValueError, nothing written.


def approve(
    tx: Tx, before: Subscription, after: Subscription, charge: Transaction, events: Sequence[Event]
) -> bool:
    """`approve` (`paused` -> `active`): the customer approved, and the first interval is
    charged with it (period 0)."""
    return _move(tx, "approve", before, after, charge, events)


@locks(idempotency.completion_keys)
def approve_answered(
    tx: Tx,
    before: Subscription,
    after: Subscription,
    charge: Transaction,
    events: Sequence[Event],
    completion: Completion | None,
) -> bool:
    """`approve` without a PIN attempt (a test helper's), with the request's idempotent
    answer (raises `IdempotencyLost`, nothing written, if its claim was taken over); on a
    test clock only while the clock reads the approval's time (`approve_at_clock_time`)."""
    if not approve_at_clock_time(tx, before, after, charge, events):
        return False
    if completion is not None:
        idempotency.complete(tx, completion)
    return True


@batched(lambda tx, calls: _move_many(tx, "renew", calls))
def renew(
    tx: Tx, before: Subscription, after: Subscription, charge: Transaction, events: Sequence[Event]
) -> bool:
    """`renew` (`active` -> `active`): period n charged on time (the charge's period is
    `before.charge_count`)."""
    return _move(tx, "renew", before, after, charge, events)


@batched(lambda tx, calls: _move_many(tx, "decline", _uncharged(calls)))
def decline(tx: Tx, before: Subscription, after: Subscription, events: Sequence[Event]) -> bool:
    """`decline` (`active` -> `past_due`): a renewal charge was declined; nothing is
    charged, the retry's due time is `after.next_action_at`."""
    return _move(tx, "decline", before, after, None, events)


@batched(lambda tx, calls: _move_many(tx, "retry_declined", _uncharged(calls)))
def retry_declined(
    tx: Tx, before: Subscription, after: Subscription, events: Sequence[Event]
) -> bool:
    """`retry_declined` (`past_due` -> `past_due`): a retry was declined, another is due."""
    return _move(tx, "retry_declined", before, after, None, events)


@batched(lambda tx, calls: _move_many(tx, "recover", calls))
def recover(
    tx: Tx, before: Subscription, after: Subscription, charge: Transaction, events: Sequence[Event]
) -> bool:
    """`recover` (`past_due` -> `active`): a retry charged the overdue period."""
    return _move(tx, "recover", before, after, charge, events)


@locks(idempotency.completion_keys)
def cancel(
    tx: Tx,
    before: Subscription,
    after: Subscription,
    events: Sequence[Event],
    completion: Completion | None = None,
) -> bool:
    """`cancel` (`paused`, `active` or `past_due` -> `cancelled`), with the request's
    idempotent answer when written (raises `IdempotencyLost`, nothing written, if its claim
    was taken over): a retry after a 503 replays it."""
    if not _move(tx, "cancel", before, after, None, events):
        return False
    if completion is not None:
        idempotency.complete(tx, completion)
    return True


@batched(lambda tx, calls: _move_many(tx, "end", _uncharged(calls)))
def end(tx: Tx, before: Subscription, after: Subscription, events: Sequence[Event]) -> bool:
    """`end` (`active` or `past_due` -> `ended`): end_date reached, max total reached, or
    the retries failed (`after.ended_reason`)."""
    return _move(tx, "end", before, after, None, events)


def _uncharged(calls: Sequence[tuple[Any, ...]]) -> list[Call]:
    # The calls of a step that charges nothing, `(before, after, events)`, as `Call`s.
    return [(before, after, None, events) for before, after, events in calls]


# Built once from the table: the status condition of each transition's write.
_GUARDS = {transition.name: status_in(transition) for transition in STATES.transitions}
# The steps the renewal timer takes (the sweep's and an advance's): on PostgreSQL they give
# way to a row another process is writing (`guarded_update`); approve and cancel wait.
_TIMER_STEPS = frozenset({"renew", "decline", "retry_declined", "recover", "end"})


Call = tuple[Subscription, Subscription, Transaction | None, Sequence[Event]]


def _move(
    tx: Tx,
    name: str,
    before: Subscription,
    after: Subscription,
    charge: Transaction | None,
    events: Sequence[Event],
) -> bool:
    return _move_many(tx, name, [(before, after, charge, events)])[0]


def _move_many(tx: Tx, name: str, calls: Sequence[Call]) -> list[bool]:
    """Transition `name` for each call, with one statement per table for all of them
    (the batched form of each timer step); whether each was written."""
    if len({before.id for before, *_ in calls}) < len(calls):
        # One subscription twice in a group (its actor waits for each write, so this is no
        # burst): one at a time, in order, each guarded by the version the last one left.
        return [_move(tx, name, *call) for call in calls]
    for before, after, charge, events in calls:
        problems = _problems(name, before, after, charge, events)
        if problems:
            raise ValueError(f"subscription {before.id} {name}: " + "; ".join(problems))
    moved = update_versioned(
        tx,
        "subscriptions",
        _CHANGING,
        [
            (before.id, before.merchant_id, before.version, _changed_values(after))
            for before, after, *_ in calls
        ],
        _GUARDS[name],
        give_way=name in _TIMER_STEPS,
    )
    written = [call for call in calls if call[0].id in moved]
    # The update moved each version on by one; a step with several events by one per event.
    for before, after, _, _ in written:
        if after.version > before.version + 1:
            tx.execute(
                "UPDATE subscriptions SET version = ? WHERE id = ? AND merchant_id = ?"
                " AND version = ?",
                after.version,
                before.id,
                before.merchant_id,
                before.version + 1,
            )
    # Unique per (subscription, period): should a period's charge ever be written a
    # second time, this raises and the whole transaction rolls back.
    transactions.insert_all(tx, [charge for _, _, charge, _ in written if charge is not None])
    webhooks.record_events(tx, [event for *_, events in written for event in events])
    for before, after, _, _ in written:
        # The hub carries statuses: a renewal, which changes none, notifies nobody (a
        # burst of renewals would otherwise be a burst of notifications no page needs).
        if after.status != before.status:
            notify_status(tx, before.id, after.status)
    return [before.id in moved for before, *_ in calls]


def _changed_values(after: Subscription) -> tuple[object, ...]:
    return tuple(getattr(after, name) for name, _ in _CHANGING)


def _problems(
    name: str,
    before: Subscription,
    after: Subscription,
    charge: Transaction | None,
    events: Sequence[Event],
) -> list[str]:
    transition = STATES.transition(name)
    problems = []
    if after.status != transition.target:
        problems.append(f"the new status is {after.status!r}, not {transition.target!r}")
    # One version per event (`periods.sequenced`): two events of one change never share a
    # sequence, and the first has the lower one.
    expected_version = before.version + max(len(events), 1)
    if after.version != expected_version:
        problems.append(f"the new version is {after.version}, not {expected_version}")
    if any(getattr(after, field) != getattr(before, field) for field in _FIXED):
        problems.append("a field fixed at creation changed")
    if transition.target in STATES.final and after.next_action_at is not None:
        problems.append("a final status keeps a due time")
    # The record's totals agree with the ledger: a charge adds one, and its amount.
    count, total = before.charge_count, before.charged_total_minor
    if charge is not None:
        count, total = count + 1, total + charge.amount_minor
    if (after.charge_count, after.charged_total_minor) != (count, total):
        problems.append("charge_count or charged_total_minor disagrees with the charge")
    if charge is not None:
        # Each period once and in order: the charge is always the next period's.
        expected = (SUBSCRIPTION_CHARGE, before.merchant_id, before.id, before.charge_count,
                    before.amount_minor, before.currency, after.customer_code, None)  # fmt: skip
        found = (charge.kind, charge.merchant_id, charge.subscription_id, charge.period,
                 charge.amount_minor, charge.currency, charge.customer_code,
                 charge.checkout_session_id)  # fmt: skip
        if found != expected:
            problems.append(f"the charge is {found}, expected {expected}")
    # (A count that disagrees is the version problem above; zip stops at the shorter.)
    sequences = range(before.version + 1, after.version + 1)
    for event, sequence in zip(events, sequences, strict=False):
        if (event.merchant_id, event.resource_id, event.sequence) != (
            before.merchant_id,
            before.id,
            sequence,
        ):
            problems.append(f"event {event.id} is not of this change (sequence {sequence})")
    return problems


def approve_at_clock_time(
    tx: Tx, before: Subscription, after: Subscription, charge: Transaction, events: Sequence[Event]
) -> bool:
    """`approve` at the time the approval read from its test clock, if it is on one: the
    customer's on the hosted page (in `customers.attempt`, with the PIN's attempt) and a
    test helper's (`approve_answered`).

    On a test clock the approval is written only while the clock still reads the time it
    was made at (`after.approved_at`): an advance begun meanwhile counted its bounds
    without this subscription, and would otherwise run its periods from the old time
    unbounded. False then, as for a row that moved on (the customer approves again, at the
    clock's new time)."""
    if after.test_clock_id is not None and not tx.fetchval(
        "SELECT 1 FROM test_clocks WHERE id = ? AND merchant_id = ? AND frozen_time = ?",
        after.test_clock_id,
        after.merchant_id,
        after.approved_at,
    ):
        return False
    return approve(tx, before, after, charge, events)
