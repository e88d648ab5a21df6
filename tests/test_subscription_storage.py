"""Subscriptions and test clocks in storage, on SQLite and PostgreSQL: every field survives
a round trip, a period can never be charged twice, a transition's row, charge, event and
outbox commit together or not at all, the due reads keep the real clock and each test
clock apart, and a test clock only moves forward, one advance at a time."""

from __future__ import annotations

import json
import sqlite3
from contextlib import closing
from typing import Any

import attrs
import psycopg
import pytest
import trio
from fgcpay.admin import create_merchant
from fgcpay.domain import ids
from fgcpay.domain import subscriptions as subs
from fgcpay.domain.endpoints import WebhookEndpoint
from fgcpay.domain.idempotency import Completion, Scope, StoredResponse
from fgcpay.domain.subscriptions import Subscription
from fgcpay.domain.test_clocks import ADVANCING, READY
from fgcpay.storage import (
    Database,
    checkout_sessions,
    idempotency,
    open_database,
    subscriptions,
    test_clocks,
    transactions,
    webhooks,
)
from fgcpay.storage._migrations import (
    load_migrations,
    pg_apply_migrations,
    sqlite_apply_migrations,
)
from helpers import (
    DAY,
    NOW_US,
    SECOND,
    after_transition,
    clock_record,
    subscription_charge,
    subscription_event,
    subscription_record,
)
from psycopg.rows import dict_row

# What a broken unique key or foreign key raises on each backend.
CONSTRAINT_VIOLATION = (sqlite3.IntegrityError, psycopg.errors.IntegrityError)


async def _merchant(db: Database, email: str = "owner@acme.test") -> str:
    return (await create_merchant(db, "Acme", email)).merchant.id


async def _stored(db: Database, subscription: Subscription) -> Subscription:
    """Insert `subscription` and return it as read back."""
    await db.write(subscriptions.insert, subscription, None)
    found = await db.read(subscriptions.by_id, subscription.id)
    assert found is not None
    return found


async def _renew(db: Database, before: Subscription) -> bool:
    after, charge = after_transition(before, "renew", NOW_US)
    assert charge is not None
    event = subscription_event(after, "subscription.charged", NOW_US)
    return await db.write(subscriptions.renew, before, after, charge, [event])


# -- round trips ----------------------------------------------------------------------------


async def test_every_field_survives_insert_and_read(db: Database) -> None:
    merchant_id = await _merchant(db)
    clock = clock_record(merchant_id)
    await db.write(test_clocks.insert, clock, None)
    # No field left at a default, none equal to another: a swapped column shows.
    record = subscription_record(
        merchant_id,
        subs.PAST_DUE,
        test_clock_id=clock.id,
        version=7,
        interval="monthly",
        amount_minor=123_456_789_012,
        eur_cents=98_765_432_101,
        customer_email="jo@example.com",
        external_reference="order-1042",
        metadata_json='{"plan": "gold", "note": "caf\u00e9 \u2615"}',
        max_total_minor=999_999_999_999,
        end_date=NOW_US + 400 * DAY,
        failed_attempts=2,
        cancelled_at=NOW_US + 1,
        ended_at=NOW_US + 2,
        ended_reason=subs.MAX_TOTAL_REACHED,
    )
    assert all(getattr(record, field.name) is not None for field in attrs.fields(Subscription))

    assert await _stored(db, record) == record
    assert await db.read(subscriptions.of_merchant, merchant_id, record.id) == record
    assert await db.read(test_clocks.by_id, clock.id) == clock
    assert await db.read(test_clocks.of_merchant, merchant_id, clock.id) == clock


async def test_a_paused_subscription_reads_back_with_its_empty_fields(db: Database) -> None:
    record = subscription_record(await _merchant(db))
    assert await _stored(db, record) == record


async def test_another_merchant_reads_nothing(db: Database) -> None:
    owner, other = await _merchant(db), await _merchant(db, "other@acme.test")
    record = await _stored(db, subscription_record(owner))
    clock = clock_record(owner)
    await db.write(test_clocks.insert, clock, None)
    assert await db.read(subscriptions.of_merchant, other, record.id) is None
    assert await db.read(test_clocks.of_merchant, other, clock.id) is None
    assert await db.write(test_clocks.delete, other, clock.id) is None
    assert await db.read(test_clocks.by_id, clock.id) == clock


async def test_a_subscription_cannot_live_on_another_merchants_clock(db: Database) -> None:
    owner, other = await _merchant(db), await _merchant(db, "other@acme.test")
    clock = clock_record(owner)
    await db.write(test_clocks.insert, clock, None)
    with pytest.raises(CONSTRAINT_VIOLATION):
        await db.write(
            subscriptions.insert, subscription_record(other, test_clock_id=clock.id), None
        )


async def test_pages_run_newest_first_with_the_status_filter(db: Database) -> None:
    merchant_id = await _merchant(db)
    other = await _merchant(db, "other@acme.test")
    await _stored(db, subscription_record(other))
    made = []
    for n, status in enumerate([subs.PAUSED, subs.ACTIVE, subs.PAUSED, subs.ACTIVE, subs.ENDED]):
        made.append(await _stored(db, subscription_record(merchant_id, status, created_at=n)))
    newest_first = made[::-1]

    first = await db.read(subscriptions.page, merchant_id, None, None, 2)
    assert first == newest_first[:2]
    cursor = (first[-1].created_at, first[-1].id)
    assert await db.read(subscriptions.page, merchant_id, None, cursor, 10) == newest_first[2:]
    active = await db.read(subscriptions.page, merchant_id, subs.ACTIVE, None, 10)
    assert active == [made[3], made[1]]


async def test_clocks_page_newest_first(db: Database) -> None:
    merchant_id = await _merchant(db)
    clocks = [clock_record(merchant_id, created_at=n) for n in range(3)]
    for clock in clocks:
        await db.write(test_clocks.insert, clock, None)
    first = await db.read(test_clocks.page, merchant_id, None, 2)
    assert first == [clocks[2], clocks[1]]
    cursor = (first[-1].created_at, first[-1].id)
    assert await db.read(test_clocks.page, merchant_id, cursor, 2) == [clocks[0]]


async def test_the_create_stores_its_idempotent_answer_and_event_with_it(db: Database) -> None:
    merchant_id = await _merchant(db)
    record = subscription_record(merchant_id)
    scope = Scope(merchant_id, "POST", "/api/v1/subscriptions", "order-1042")
    claim = await db.write(idempotency.claim, scope, "hash", "owner-1", NOW_US)
    assert claim.owned
    answer = StoredResponse(201, {}, json.dumps({"id": record.id}))
    created = subscription_event(record, "subscription.created", NOW_US)

    await db.write(subscriptions.insert, record, Completion(scope, "owner-1", answer), [created])

    again = await db.write(idempotency.claim, scope, "hash", "owner-2", NOW_US)
    assert (again.owned, again.response) == (False, answer)
    assert await db.read(webhooks.event_of, merchant_id, created.id) == created


async def test_payments_made_before_the_migration_read_back_unchanged(
    empty_database_url: str,
) -> None:
    """0009 adds the charge columns (and their check) to a ledger that already has rows."""
    before_0009 = [m for m in load_migrations() if m.version < 9]
    rows = (
        "INSERT INTO merchants (id, name, email, created_at)"
        " VALUES ('mer_0000000000000001', 'Acme', 'o@acme.test', 1)",
        "INSERT INTO checkout_sessions (id, merchant_id, status, version, amount_minor, currency,"
        " eur_cents, description, success_url, cancel_url, metadata, created_at, updated_at,"
        " expires_at, paid_at) VALUES ('cs_test_000000000000000000000001',"
        " 'mer_0000000000000001', 'paid', 2, 1250, 'FGC', 1250, 'Beans', 'https://s.example/',"
        " 'https://s.example/', '{}', 1, 2, 3, 2)",
        "INSERT INTO transactions (id, merchant_id, kind, checkout_session_id, customer_code,"
        " amount_minor, currency, mode, created_at) VALUES ('txn_test_000000000000000000000001',"
        " 'mer_0000000000000001', 'payment', 'cs_test_000000000000000000000001', 'TEST-0001',"
        " 1250, 'FGC', 'test', 2)",
    )
    if empty_database_url.startswith("sqlite:"):
        with closing(sqlite3.connect(empty_database_url.removeprefix("sqlite:///"))) as conn, conn:
            sqlite_apply_migrations(conn, before_0009)
            for row in rows:
                conn.execute(row)
    else:
        with psycopg.connect(empty_database_url, autocommit=True, row_factory=dict_row) as pg:
            pg_apply_migrations(pg, before_0009)
            for row in rows:
                pg.execute(row.encode())

    async with open_database(empty_database_url, 3) as db:
        session = await db.read(checkout_sessions.by_id, "cs_test_000000000000000000000001")
        assert session is not None and session.status == "paid"
        (payment,) = await db.read(transactions.for_checkout_session, session.id)
    assert (payment.kind, payment.amount_minor) == ("payment", 1250)
    assert (payment.subscription_id, payment.period) == (None, None)


# -- the ledger: one charge per period ------------------------------------------------------


async def test_two_processes_renewing_the_same_period_charge_it_once(
    db: Database, database_url: str
) -> None:
    """Two readers of the same version, on two connections as two processes have, both
    renew period 1: one wins, the other writes nothing."""
    before = await _stored(db, subscription_record(await _merchant(db), subs.ACTIVE))
    results: list[bool] = []
    async with open_database(database_url, 3) as second_process:

        async def renew(on: Database) -> None:
            results.append(await _renew(on, before))

        async with trio.open_nursery() as nursery:
            nursery.start_soon(renew, db)
            nursery.start_soon(renew, second_process)

    assert sorted(results) == [False, True]
    (charge,) = await db.read(transactions.for_subscription, before.id)
    assert (charge.period, charge.amount_minor) == (1, before.amount_minor)
    stored = await db.read(subscriptions.by_id, before.id)
    assert stored is not None
    assert (stored.version, stored.charge_count) == (before.version + 1, 2)


async def test_a_renewal_gives_way_to_a_row_another_process_is_writing(postgres_url: str) -> None:
    """PostgreSQL: another process's transaction holds the row (its group commit taking the
    same step). The timer's step writes nothing and returns at once rather than wait: two
    groups renewing the same rows in different orders would deadlock. Once it is gone, the
    step is taken."""
    async with open_database(postgres_url, 3) as db:
        before = await _stored(db, subscription_record(await _merchant(db), subs.ACTIVE))
        with psycopg.connect(postgres_url) as other:  # a transaction stays open until the end
            other.execute("SELECT id FROM subscriptions WHERE id = %s FOR UPDATE", (before.id,))
            # Waiting would end only at the statement timeout, with DatabaseUnavailable.
            assert not await _renew(db, before)
        assert await _renew(db, before)
        assert [t.period for t in await db.read(transactions.for_subscription, before.id)] == [1]


async def test_a_stale_reader_charges_nothing(db: Database) -> None:
    before = await _stored(db, subscription_record(await _merchant(db), subs.ACTIVE))
    assert await _renew(db, before)
    assert not await _renew(db, before)  # the same version, read before the first renewal
    assert [t.period for t in await db.read(transactions.for_subscription, before.id)] == [1]


async def test_a_second_insert_of_a_charged_period_is_refused(db: Database) -> None:
    before = await _stored(db, subscription_record(await _merchant(db), subs.ACTIVE))
    assert await _renew(db, before)
    again = subscription_charge(before, NOW_US)  # period 1 again, under a new id
    with pytest.raises(CONSTRAINT_VIOLATION):
        await db.write(transactions.insert, again)
    assert len(await db.read(transactions.for_subscription, before.id)) == 1


async def test_a_renewal_of_a_period_already_in_the_ledger_rolls_back_whole(
    db: Database,
) -> None:
    """Should the version guard ever be passed for a period already charged, the ledger's
    key still refuses, and the row change goes back with it."""
    before = await _stored(db, subscription_record(await _merchant(db), subs.ACTIVE))
    await db.write(transactions.insert, subscription_charge(before, NOW_US))
    with pytest.raises(CONSTRAINT_VIOLATION):
        await _renew(db, before)
    assert await db.read(subscriptions.by_id, before.id) == before
    assert len(await db.read(transactions.for_subscription, before.id)) == 1


async def test_a_subscription_charge_needs_its_period(db: Database) -> None:
    """A charge naming a subscription without a period would slip past the unique key."""
    before = await _stored(db, subscription_record(await _merchant(db), subs.ACTIVE))
    with pytest.raises(CONSTRAINT_VIOLATION):
        await db.write(
            transactions.insert, attrs.evolve(subscription_charge(before, 0), period=None)
        )


async def test_renewals_charge_each_period_once_in_order(db: Database) -> None:
    record = await _stored(db, subscription_record(await _merchant(db)))
    after, charge = after_transition(record, "approve", NOW_US)
    assert charge is not None
    assert await db.write(subscriptions.approve, record, after, charge, [])
    for _ in range(3):
        assert await _renew(db, after)
        stored = await db.read(subscriptions.by_id, after.id)
        assert stored is not None
        after = stored
    ledger = await db.read(transactions.for_subscription, record.id)
    assert [t.period for t in ledger] == [0, 1, 2, 3]
    assert after.charged_total_minor == sum(t.amount_minor for t in ledger)
    assert after.charge_count == len(ledger)


@pytest.mark.parametrize(
    "bad",
    [
        pytest.param({"amount_minor": 1}, id="a creation field changed"),
        pytest.param({"charge_count": 5}, id="a charge count off the ledger"),
        pytest.param({"version": 9}, id="a version skipped"),
        pytest.param({"status": subs.PAST_DUE}, id="another status"),
    ],
)
async def test_a_record_out_of_shape_is_refused_before_anything_is_written(
    db: Database, bad: dict[str, Any]
) -> None:
    before = await _stored(db, subscription_record(await _merchant(db), subs.ACTIVE))
    after, charge = after_transition(before, "renew", NOW_US)
    assert charge is not None
    with pytest.raises(ValueError, match=before.id):
        await db.write(subscriptions.renew, before, attrs.evolve(after, **bad), charge, [])
    assert await db.read(subscriptions.by_id, before.id) == before
    assert await db.read(transactions.for_subscription, before.id) == []


async def test_a_charge_of_another_period_is_refused(db: Database) -> None:
    before = await _stored(db, subscription_record(await _merchant(db), subs.ACTIVE))
    after, charge = after_transition(before, "renew", NOW_US)
    assert charge is not None
    with pytest.raises(ValueError, match="charge"):
        await db.write(subscriptions.renew, before, after, attrs.evolve(charge, period=2), [])
    assert await db.read(transactions.for_subscription, before.id) == []


# -- one transaction: the row, the charge, the event, the outbox ----------------------------


async def _with_endpoint(db: Database, merchant_id: str) -> None:
    endpoint = WebhookEndpoint(
        id="we_" + ids.random_base62(24),
        merchant_id=merchant_id,
        url="https://hooks.example/fgcpay",
        enabled_events=("*",),
        secret_sealed="sealed",
        previous_secret_sealed=None,
        previous_secret_expires_at=None,
        created_at=NOW_US - DAY,
    )
    await db.write(webhooks.insert_endpoint, endpoint)


async def test_approve_writes_the_first_charge_and_the_events_with_their_deliveries(
    db: Database,
) -> None:
    merchant_id = await _merchant(db)
    await _with_endpoint(db, merchant_id)
    before = await _stored(db, subscription_record(merchant_id))
    after, charge = after_transition(before, "approve", NOW_US)
    assert charge is not None
    # Two events, two sequences: the version moves on by one per event.
    after = attrs.evolve(after, version=before.version + 2)
    events = [
        subscription_event(after, "subscription.activated", NOW_US, before.version + 1),
        subscription_event(after, "subscription.charged", NOW_US),
    ]

    assert await db.write(subscriptions.approve, before, after, charge, events)

    assert await db.read(subscriptions.by_id, before.id) == after
    assert await db.read(transactions.for_subscription, before.id) == [charge]
    assert charge.period == 0
    for event in events:
        assert await db.read(webhooks.event_of, merchant_id, event.id) == event
        (delivery,) = await db.read(webhooks.deliveries_of_event, event.id)
        assert delivery.status == "pending"


@pytest.mark.parametrize("failing", ["the event", "the charge"])
async def test_a_failure_inside_approve_rolls_all_of_it_back(db: Database, failing: str) -> None:
    merchant_id = await _merchant(db)
    await _with_endpoint(db, merchant_id)
    before = await _stored(db, subscription_record(merchant_id))
    after, charge = after_transition(before, "approve", NOW_US)
    assert charge is not None
    after = attrs.evolve(after, version=before.version + 2)
    activated = subscription_event(after, "subscription.activated", NOW_US, before.version + 1)
    charged = subscription_event(after, "subscription.charged", NOW_US)
    # An id already taken fails its insert, after the row change (and, for the event, the
    # charge and the first event with its delivery) was written.
    if failing == "the event":
        taken = subscription_event(before, "subscription.created", NOW_US)
        await db.write(webhooks.record_event, taken)
        charged = attrs.evolve(charged, id=taken.id)
    else:
        other = await _stored(db, subscription_record(merchant_id, subs.ACTIVE))
        taken_charge = subscription_charge(other, NOW_US)
        await db.write(transactions.insert, taken_charge)
        charge = attrs.evolve(charge, id=taken_charge.id)

    with pytest.raises(CONSTRAINT_VIOLATION):
        await db.write(subscriptions.approve, before, after, charge, [activated, charged])

    assert await db.read(subscriptions.by_id, before.id) == before
    assert await db.read(transactions.for_subscription, before.id) == []
    assert await db.read(webhooks.event_of, merchant_id, activated.id) is None
    assert await db.read(webhooks.deliveries_of_event, activated.id) == []


# -- the durable timer ----------------------------------------------------------------------


async def test_the_due_reads_keep_the_real_clock_and_each_test_clock_apart(db: Database) -> None:
    merchant_id = await _merchant(db)
    clock, other_clock = clock_record(merchant_id), clock_record(merchant_id)
    for c in (clock, other_clock):
        await db.write(test_clocks.insert, c, None)

    async def subscription(due_at: int | None, on: str | None = None) -> str:
        record = subscription_record(
            merchant_id, subs.ACTIVE, test_clock_id=on, next_action_at=due_at
        )
        return (await _stored(db, record)).id

    # Inserted out of order; two fall due at the same instant (then ordered by id).
    late = await subscription(NOW_US)
    tied = sorted([await subscription(NOW_US - DAY), await subscription(NOW_US - DAY)])
    early = await subscription(NOW_US - 2 * DAY)
    await subscription(NOW_US + SECOND)  # not yet due
    await subscription(None)  # nothing due ever
    on_clock_late = await subscription(NOW_US + 30 * DAY, clock.id)
    on_clock_early = await subscription(NOW_US - 3 * DAY, clock.id)
    await subscription(NOW_US + 31 * DAY, clock.id)  # beyond the advance
    await subscription(NOW_US - 5 * DAY, other_clock.id)

    def ids_of(records: list[Subscription]) -> list[str]:
        return [record.id for record in records]

    assert ids_of(await db.read(subscriptions.due, NOW_US, 100)) == [early, *tied, late]
    assert ids_of(await db.read(subscriptions.due, NOW_US, 2)) == [early, tied[0]]
    assert await db.read(subscriptions.due, NOW_US - 3 * DAY, 100) == []
    assert await db.read(subscriptions.next_due) == NOW_US - 2 * DAY
    assert ids_of(
        await db.read(
            subscriptions.due_on_clock, clock.merchant_id, clock.id, NOW_US + 30 * DAY, 100
        )
    ) == [
        on_clock_early,
        on_clock_late,
    ]
    assert ids_of(
        await db.read(subscriptions.due_on_clock, clock.merchant_id, clock.id, NOW_US, 100)
    ) == [on_clock_early]


async def test_what_is_cancelled_falls_out_of_the_due_reads(db: Database) -> None:
    before = await _stored(
        db, subscription_record(await _merchant(db), subs.ACTIVE, next_action_at=NOW_US)
    )
    assert await db.read(subscriptions.due, NOW_US, 10) == [before]  # whole, as stored
    after, _ = after_transition(before, "cancel", NOW_US)
    assert await db.write(subscriptions.cancel, before, after, [])
    assert await db.read(subscriptions.due, NOW_US, 10) == []
    assert await db.read(subscriptions.next_due) is None


async def test_a_final_status_keeping_a_due_time_is_refused(db: Database) -> None:
    before = await _stored(db, subscription_record(await _merchant(db), subs.ACTIVE))
    after, _ = after_transition(before, "end", NOW_US)
    with pytest.raises(ValueError, match="due time"):
        await db.write(subscriptions.end, before, attrs.evolve(after, next_action_at=NOW_US), [])


# -- test clocks ----------------------------------------------------------------------------


async def test_a_clock_only_moves_forward(db: Database) -> None:
    clock = clock_record(await _merchant(db))
    await db.write(test_clocks.insert, clock, None)
    for not_later in (clock.frozen_time - DAY, clock.frozen_time):
        assert await db.write(test_clocks.begin_advance, clock, not_later, NOW_US) is None
    assert await db.read(test_clocks.by_id, clock.id) == clock

    advanced = await db.write(test_clocks.begin_advance, clock, clock.frozen_time + DAY, NOW_US)

    assert advanced == attrs.evolve(
        clock, status=ADVANCING, frozen_time=clock.frozen_time + DAY, version=2, updated_at=NOW_US
    )
    assert await db.read(test_clocks.by_id, clock.id) == advanced


async def test_one_advance_at_a_time(db: Database) -> None:
    clock = clock_record(await _merchant(db))
    await db.write(test_clocks.insert, clock, None)
    assert await db.write(test_clocks.finish_advance, clock, NOW_US) is None  # not advancing
    advancing = await db.write(test_clocks.begin_advance, clock, NOW_US + DAY, NOW_US)
    assert advancing is not None
    # A second advance, from the clock as read before or after the first began: refused.
    assert await db.write(test_clocks.begin_advance, clock, NOW_US + 2 * DAY, NOW_US) is None
    assert await db.write(test_clocks.begin_advance, advancing, NOW_US + 2 * DAY, NOW_US) is None
    assert await db.read(test_clocks.advancing, 10) == [advancing]

    ready = await db.write(test_clocks.finish_advance, advancing, NOW_US + SECOND)

    assert ready == attrs.evolve(advancing, status=READY, version=3, updated_at=NOW_US + SECOND)
    assert await db.write(test_clocks.finish_advance, advancing, NOW_US) is None  # stale
    assert await db.read(test_clocks.advancing, 10) == []


async def test_an_advance_finishes_only_once_nothing_is_due_behind_the_clock(
    db: Database,
) -> None:
    merchant_id = await _merchant(db)
    clock = clock_record(merchant_id)
    await db.write(test_clocks.insert, clock, None)
    due = await _stored(
        db,
        subscription_record(
            merchant_id, subs.ACTIVE, test_clock_id=clock.id, next_action_at=NOW_US + DAY
        ),
    )
    advancing = await db.write(test_clocks.begin_advance, clock, NOW_US + DAY, NOW_US)
    assert advancing is not None
    assert await db.write(test_clocks.finish_advance, advancing, NOW_US) is None

    after, _ = after_transition(due, "cancel", NOW_US + DAY)
    assert await db.write(subscriptions.cancel, due, after, [])

    ready = await db.write(test_clocks.finish_advance, advancing, NOW_US)
    assert ready is not None and ready.status == READY


async def test_deleting_a_clock_deletes_its_subscriptions_and_their_charges(
    db: Database,
) -> None:
    merchant_id = await _merchant(db)
    clock = clock_record(merchant_id)
    await db.write(test_clocks.insert, clock, None)
    on_clock = [
        await _stored(db, subscription_record(merchant_id, status, test_clock_id=clock.id))
        for status in (subs.PAUSED, subs.ACTIVE)
    ]
    after, charge = after_transition(on_clock[1], "renew", NOW_US)
    assert charge is not None
    charged = subscription_event(after, "subscription.charged", NOW_US)
    assert await db.write(subscriptions.renew, on_clock[1], after, charge, [charged])
    real = await _stored(db, subscription_record(merchant_id, subs.ACTIVE))
    assert await _renew(db, real)

    deleted = await db.write(test_clocks.delete, merchant_id, clock.id)

    assert deleted == sorted(s.id for s in on_clock)
    assert await db.read(test_clocks.by_id, clock.id) is None
    for gone in on_clock:
        assert await db.read(subscriptions.by_id, gone.id) is None
        assert await db.read(transactions.for_subscription, gone.id) == []
    # What was sent stays sent; the real clock's subscription is untouched.
    assert await db.read(webhooks.event_of, merchant_id, charged.id) == charged
    assert await db.read(subscriptions.by_id, real.id) is not None
    assert len(await db.read(transactions.for_subscription, real.id)) == 1
    assert await db.write(test_clocks.delete, merchant_id, clock.id) is None


async def test_an_advance_in_progress_does_not_stop_a_delete(db: Database) -> None:
    clock = clock_record(await _merchant(db))
    await db.write(test_clocks.insert, clock, None)
    advancing = await db.write(test_clocks.begin_advance, clock, NOW_US + DAY, NOW_US)
    assert advancing is not None
    assert await db.write(test_clocks.delete, clock.merchant_id, clock.id) == []
    assert await db.write(test_clocks.finish_advance, advancing, NOW_US) is None
