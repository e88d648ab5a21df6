"""PostgreSQL: a test clock deleted while another process refunds one of its
subscriptions' charges. The delete takes the charges, their refunds and the balance's
totals along in one transaction; what the other process writes meanwhile must either be
deleted with them and taken off the totals, or not be written at all. Either way the
ledger and the totals still agree (`fgcpay ledger verify`), and nobody hears a 500.
(SQLite has one writer: there is no meanwhile.)"""

from __future__ import annotations

import threading
from typing import Any

import psycopg
import pytest
import trio
from fgcpay.admin import create_merchant, verify_ledger
from fgcpay.domain import ids, refunds
from fgcpay.domain.events import new_event
from fgcpay.domain.transactions import Transaction
from fgcpay.storage import Database, Tx, balances, open_database, transactions
from fgcpay.storage import refunds as refund_rows
from fgcpay.storage import test_clocks as clock_rows
from fgcpay.storage._postgres import PgTx
from helpers import NOW_US, add_approved_subscriptions, clock_record, wait_until
from psycopg.rows import dict_row

REFUND_MINOR = 500


async def _clock_with_a_charge(db: Database) -> tuple[str, str, Transaction]:
    merchant_id = (await create_merchant(db, "Acme", "owner@acme.test")).merchant.id
    clock = clock_record(merchant_id, frozen_time=NOW_US)
    await db.write(clock_rows.insert, clock, None)
    (sub_id,) = await add_approved_subscriptions(
        db, merchant_id, 1, anchor_us=NOW_US, test_clock=clock.id
    )
    (charge,) = await db.read(transactions.for_subscription, sub_id)
    return merchant_id, clock.id, charge


def _refund_on(cur: psycopg.Cursor[Any], charge: Transaction) -> bool:
    """What another process's refund of 5.00 of `charge` writes, in the transaction `cur`
    is in (its commit is the caller's)."""
    request = refunds.parse_create({"transaction_id": charge.id, "amount_fgc": "5.00"})
    refund = refunds.new_refund(
        request, refund_id=ids.refund_id(), payment=charge, amount_minor=REFUND_MINOR,
        now_us=NOW_US,
    )  # fmt: skip
    event = new_event(
        ids.event_id(), charge.merchant_id, "refund.created", refund.id, 1,
        refunds.to_json(refund), NOW_US,
    )  # fmt: skip
    return refund_rows.create(PgTx(cur), refund, event, None)


def _waiting_on_a_lock(tx: Tx) -> bool:
    return bool(
        tx.fetchval(
            "SELECT COUNT(*) FROM pg_stat_activity WHERE wait_event_type = 'Lock'"
            " AND application_name LIKE 'fgcpay/%'"
        )
    )


async def _agrees(db: Database, merchant_id: str) -> None:
    (check,) = await verify_ledger(db, merchant_id)
    assert check.agrees, check
    totals = await db.read(balances.of_merchant, merchant_id)
    assert (totals.paid_minor, totals.pending_minor, totals.transaction_count) == (0, 0, 0)


async def test_a_refund_in_flight_is_waited_for_and_deleted_with_the_clock(
    postgres_url: str,
) -> None:
    async with open_database(postgres_url, 3) as db:
        merchant_id, clock_id, charge = await _clock_with_a_charge(db)
        with psycopg.connect(postgres_url, row_factory=dict_row) as other:
            with other.cursor() as cur:
                assert _refund_on(cur, charge)  # written, not committed: its rows held
            deleted: list[Any] = []

            async def delete() -> None:
                deleted.append(await db.write(clock_rows.delete, merchant_id, clock_id))

            with trio.fail_after(30):
                async with trio.open_nursery() as nursery:
                    nursery.start_soon(delete)
                    await wait_until(
                        lambda: db.read(_waiting_on_a_lock), within=10, what="the delete waits"
                    )
                    other.commit()
        assert deleted and deleted[0] is not None
        assert await db.read(transactions.by_id, charge.id) is None
        await _agrees(db, merchant_id)


async def test_a_refund_begun_during_the_delete_writes_nothing(
    postgres_url: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    async with open_database(postgres_url, 3) as db:
        merchant_id, clock_id, charge = await _clock_with_a_charge(db)
        results: list[bool] = []

        def other_process() -> None:
            with psycopg.connect(postgres_url, row_factory=dict_row) as conn:
                with conn.cursor() as cur:
                    results.append(_refund_on(cur, charge))

        other = threading.Thread(target=other_process)
        read = PgTx.fetch

        def fetch(self: PgTx, sql: str, *args: Any) -> Any:
            rows = read(self, sql, *args)
            # Once the delete has read what it will take off the totals, the other
            # process's refund begins (and waits, or writes, as the delete lets it).
            if "AS held FROM refunds" in sql and not other.is_alive():
                other.start()
            return rows

        monkeypatch.setattr(PgTx, "fetch", fetch)
        assert await db.write(clock_rows.delete, merchant_id, clock_id) is not None
        monkeypatch.setattr(PgTx, "fetch", read)
        await trio.to_thread.run_sync(other.join, 30)
        assert results == [False]  # the charge was gone once it could look
        await _agrees(db, merchant_id)
