"""The ledger's guards and running totals in storage, on both backends: two processes
refunding the same rest (one wins), totals summed over the shards processes write,
a test clock deleted with its charges and their refunds, and an upgraded database's
totals backfilled from the ledger it already had."""

from __future__ import annotations

import sqlite3
from contextlib import closing

import psycopg
import pytest
import trio
from fgcpay.admin import create_merchant, verify_ledger
from fgcpay.domain import ids, refunds
from fgcpay.domain.balances import Totals
from fgcpay.domain.events import new_event
from fgcpay.domain.refunds import Refund
from fgcpay.domain.transactions import Transaction
from fgcpay.storage import Database, Tx, open_database, transactions
from fgcpay.storage import balances as balance_rows
from fgcpay.storage import refunds as refund_rows
from fgcpay.storage import test_clocks as clock_rows
from fgcpay.storage._migrations import load_migrations, pg_apply_migrations, sqlite_apply_migrations
from helpers import NOW_US, add_approved_subscriptions, clock_record
from psycopg.rows import dict_row

CHARGE_MINOR = 1250  # subscription_body's amount


async def _merchant(db: Database, email: str = "owner@acme.test") -> str:
    return (await create_merchant(db, "Acme", email)).merchant.id


async def _charges(
    db: Database, merchant_id: str, count: int, **overrides: str
) -> list[Transaction]:
    """`count` approved subscriptions' first charges (each 12.50), written as the service
    writes them."""
    made = await add_approved_subscriptions(db, merchant_id, count, anchor_us=NOW_US, **overrides)
    return [(await db.read(transactions.for_subscription, sub_id))[0] for sub_id in made]


def _refund_of(charge: Transaction, amount_minor: int | None = None) -> Refund:
    request = refunds.parse_create({"transaction_id": charge.id})
    return refunds.new_refund(
        request,
        refund_id=ids.refund_id(),
        payment=charge,
        amount_minor=refunds.refund_amount(charge, amount_minor),
        now_us=NOW_US,
    )


async def _create(db: Database, refund: Refund) -> bool:
    body = refunds.to_json(refund)
    event = new_event(
        ids.event_id(), refund.merchant_id, "refund.created", refund.id, 1, body, NOW_US
    )
    return await db.write(refund_rows.create, refund, event, None)


async def _approve(db: Database, refund: Refund, charge: Transaction) -> None:
    after = refunds.reviewed(refund, "approve", NOW_US)
    body = refunds.to_json(after)
    event = new_event(
        ids.event_id(), refund.merchant_id, "refund.approved", refund.id, 2, body, NOW_US
    )
    entry = refunds.ledger_entry(refund, charge, transaction_id=ids.transaction_id(), now_us=NOW_US)
    assert await db.write(refund_rows.approve, refund, after, entry, event)


def _shards(tx: Tx, merchant_id: str) -> int:
    return int(
        tx.fetchval("SELECT COUNT(*) FROM balance_shards WHERE merchant_id = ?", merchant_id)
    )


async def _agrees(db: Database, merchant_id: str) -> Totals:
    (check,) = await verify_ledger(db, merchant_id)
    assert check.agrees, check
    return check.running


async def test_two_processes_refunding_the_same_rest_refund_it_once(
    db: Database, database_url: str
) -> None:
    """Two readers of the same payment (nothing refunded yet), on two connections as two
    processes have, each refund the whole rest: the reservation lets one through."""
    merchant = await _merchant(db)
    (charge,) = await _charges(db, merchant, 1)
    results: list[bool] = []
    async with open_database(database_url, 3) as second_process:

        async def take_the_rest(on: Database) -> None:
            results.append(await _create(on, _refund_of(charge)))

        async with trio.open_nursery() as nursery:
            nursery.start_soon(take_the_rest, db)
            nursery.start_soon(take_the_rest, second_process)

    assert sorted(results) == [False, True]
    (made,) = await db.read(refund_rows.for_transaction, charge.id)
    assert made.amount_minor == CHARGE_MINOR
    stored = await db.read(transactions.by_id, charge.id)
    assert stored is not None and stored.refund_reserved_minor == CHARGE_MINOR
    totals = await _agrees(db, merchant)
    assert (totals.paid_minor, totals.pending_minor) == (CHARGE_MINOR, CHARGE_MINOR)


async def test_the_balance_sums_the_shards_of_every_process(
    db: Database, monkeypatch: pytest.MonkeyPatch
) -> None:
    merchant = await _merchant(db)
    await _charges(db, merchant, 2)
    other_process = (balance_rows.shard() + 1) % balance_rows.SHARDS
    monkeypatch.setattr(balance_rows, "shard", lambda: other_process)
    (third,) = await _charges(db, merchant, 1)
    await _create(db, _refund_of(third, 500))
    totals = await _agrees(db, merchant)
    assert totals == Totals(3 * CHARGE_MINOR, 0, 500, 3)
    assert await db.read(_shards, merchant) == 2


async def test_deleting_a_test_clock_takes_its_charges_and_their_refunds_off_the_totals(
    db: Database,
) -> None:
    merchant = await _merchant(db)
    (kept,) = await _charges(db, merchant, 1)
    clock = clock_record(merchant, frozen_time=NOW_US)
    await db.write(clock_rows.insert, clock, None)
    on_clock = await _charges(db, merchant, 3, test_clock=clock.id)
    pending, approved = _refund_of(on_clock[0], 100), _refund_of(on_clock[1], 200)
    for made in (pending, approved, _refund_of(kept, 300)):
        assert await _create(db, made)
    await _approve(db, approved, on_clock[1])
    before = await _agrees(db, merchant)
    assert before == Totals(4 * CHARGE_MINOR, 200, 400, 5)

    assert await db.write(clock_rows.delete, merchant, clock.id) is not None
    after = await _agrees(db, merchant)
    assert after == Totals(CHARGE_MINOR, 0, 300, 1)
    assert await db.read(refund_rows.by_id, approved.id) is None


async def test_an_upgraded_database_starts_with_totals_that_agree_with_its_ledger(
    empty_database_url: str,
) -> None:
    """0012 backfills the running totals from the ledger an older database already has."""
    before_0011 = [m for m in load_migrations() if m.version < 11]
    rows = [
        "INSERT INTO merchants (id, name, email, created_at) VALUES"
        " ('mer_0000000000000001', 'Acme', 'a@acme.test', 1),"
        " ('mer_0000000000000002', 'Beans', 'b@beans.test', 1),"
        " ('mer_0000000000000003', 'Idle', 'c@idle.test', 1)",
    ]
    for n, (merchant, amount) in enumerate([(1, 1250), (1, 700), (2, 99)]):
        rows += [
            "INSERT INTO checkout_sessions (id, merchant_id, status, version, amount_minor,"
            " currency, eur_cents, description, success_url, cancel_url, metadata, created_at,"
            f" updated_at, expires_at, paid_at) VALUES ('cs_test_{n:024d}',"
            f" 'mer_{merchant:016d}', 'paid', 2, {amount}, 'FGC', {amount}, 'Beans',"
            " 'https://s.example/', 'https://s.example/', '{}', 1, 2, 3, 2)",
            "INSERT INTO transactions (id, merchant_id, kind, checkout_session_id, customer_code,"
            f" amount_minor, currency, mode, created_at) VALUES ('txn_test_{n:024d}',"
            f" 'mer_{merchant:016d}', 'payment', 'cs_test_{n:024d}', 'TEST-0001', {amount},"
            " 'FGC', 'test', 2)",
        ]
    if empty_database_url.startswith("sqlite:"):
        path = empty_database_url.removeprefix("sqlite:///")
        with closing(sqlite3.connect(path)) as conn, conn:
            sqlite_apply_migrations(conn, before_0011)
            for row in rows:
                conn.execute(row)
    else:
        with psycopg.connect(empty_database_url, autocommit=True, row_factory=dict_row) as pg:
            pg_apply_migrations(pg, before_0011)
            for row in rows:
                pg.execute(row.encode())

    async with open_database(empty_database_url, 3) as db:
        checks = await verify_ledger(db)
        assert [check.merchant_id for check in checks] == [f"mer_{n:016d}" for n in (1, 2, 3)]
        assert all(check.agrees for check in checks), checks
        assert [check.running for check in checks] == [
            Totals(1950, 0, 0, 2),
            Totals(99, 0, 0, 1),
            Totals(),
        ]
        # The payments made before are refundable as any other.
        payment = await db.read(transactions.by_id, f"txn_test_{0:024d}")
        assert payment is not None and payment.refund_reserved_minor == 0
        assert await _create(db, _refund_of(payment))
        assert (await _agrees(db, "mer_0000000000000001")).pending_minor == 1250
