"""Batched writes: a group commit holding several calls of a timer step (a burst of
renewals, retries or endings) writes them with one statement per table, and every caller
still hears exactly what it would have heard alone: written, moved on meanwhile, or its
own error with nothing of it kept."""

from __future__ import annotations

import sqlite3
import threading
from collections.abc import Callable, Sequence
from typing import Any

import psycopg
import pytest
import trio
import trio.testing
from fgcpay.admin import create_merchant
from fgcpay.domain import subscriptions as subs
from fgcpay.domain.endpoints import WebhookEndpoint
from fgcpay.domain.subscriptions import Subscription
from fgcpay.storage import (
    Database,
    Tx,
    balances,
    open_database,
    subscriptions,
    transactions,
    webhooks,
)
from fgcpay.storage import _database as seam
from helpers import (
    NOW_US,
    after_transition,
    subscription_charge,
    subscription_event,
    subscription_record,
)

WAIT = 10.0
CONSTRAINT_VIOLATION = (sqlite3.IntegrityError, psycopg.errors.IntegrityError)


def _hold(tx: Tx, entered: threading.Event, opened: threading.Event) -> None:
    # Holds the writer until the next callers are queued, so they form one group.
    entered.set()
    assert opened.wait(WAIT)


@pytest.fixture
def batch_sizes(monkeypatch: pytest.MonkeyPatch) -> dict[str, list[int]]:
    """The size of each batch the writer hands to a subscription step's batched form."""
    sizes: dict[str, list[int]] = {}
    for name in ("renew", "end"):
        fn = getattr(subscriptions, name)
        many = seam.batched_form(fn)
        assert many is not None

        def spy(
            tx: Tx, calls: Sequence[tuple[Any, ...]], name: str = name, many: Any = many
        ) -> Any:
            sizes.setdefault(name, []).append(len(calls))
            return many(tx, calls)

        monkeypatch.setitem(seam._MANY, fn, spy)
    return sizes


async def _in_one_group(
    db: Database, writes: list[tuple[Callable[..., Any], tuple[Any, ...]]]
) -> list[Any]:
    """Queue `writes` behind a held writer, so they run as one group; each one's result,
    or the type of the error it raised."""
    entered, opened = threading.Event(), threading.Event()
    results: list[Any] = [None] * len(writes)

    async def write(i: int, fn: Callable[..., Any], args: tuple[Any, ...]) -> None:
        try:
            results[i] = await db.write(fn, *args)
        except Exception as error:
            results[i] = error

    with trio.fail_after(WAIT):
        async with trio.open_nursery() as nursery:
            nursery.start_soon(db.write, _hold, entered, opened)
            assert await trio.to_thread.run_sync(entered.wait, WAIT)
            for i, (fn, args) in enumerate(writes):
                nursery.start_soon(write, i, fn, args)
                await trio.testing.wait_all_tasks_blocked()
            opened.set()
    return results


async def _merchant_with_endpoint(db: Database) -> str:
    merchant_id = (await create_merchant(db, "Acme", "owner@acme.test")).merchant.id
    endpoint = WebhookEndpoint(
        id="we_" + "0" * 24, merchant_id=merchant_id, url="https://shop.example/hooks",
        enabled_events=("*",), secret_sealed="sealed", previous_secret_sealed=None,
        previous_secret_expires_at=None, created_at=NOW_US, deleted_at=None,
    )  # fmt: skip
    await db.write(webhooks.insert_endpoint, endpoint)
    return merchant_id


async def _stored(db: Database, merchant_id: str, status: str) -> Subscription:
    record = subscription_record(merchant_id, status)
    await db.write(subscriptions.insert, record, None)
    return record


def _renewal(before: Subscription) -> tuple[Callable[..., Any], tuple[Any, ...]]:
    after, charge = after_transition(before, "renew", NOW_US)
    return subscriptions.renew, (
        before,
        after,
        charge,
        [subscription_event(after, "subscription.charged", NOW_US)],
    )


def _ending(before: Subscription) -> tuple[Callable[..., Any], tuple[Any, ...]]:
    after, _ = after_transition(before, "end", NOW_US)
    return subscriptions.end, (
        before,
        after,
        [subscription_event(after, "subscription.ended", NOW_US)],
    )


async def test_a_group_of_timer_steps_is_written_in_batches_each_caller_answered(
    db: Database, batch_sizes: dict[str, list[int]]
) -> None:
    merchant_id = await _merchant_with_endpoint(db)
    renewing = [await _stored(db, merchant_id, subs.ACTIVE) for _ in range(3)]
    stale = await _stored(db, merchant_id, subs.ACTIVE)
    fn, args = _renewal(stale)
    assert await db.write(fn, *args)  # moved on: the group's renewal of it is stale
    ending = [await _stored(db, merchant_id, subs.ACTIVE) for _ in range(2)]
    writes = [_renewal(sub) for sub in renewing] + [_ending(sub) for sub in ending]
    writes.insert(1, _renewal(stale))

    results = await _in_one_group(db, writes)

    assert results == [True, False, True, True, True, True]
    assert batch_sizes == {"renew": [4], "end": [2]}
    for (fn, (before, after, *rest)), written in zip(writes, results, strict=True):
        if not written:
            continue
        assert await db.read(subscriptions.by_id, before.id) == after
        for event in rest[-1]:
            assert await db.read(webhooks.event_of, merchant_id, event.id) == event
            (delivery,) = await db.read(webhooks.deliveries_of_event, event.id)
            assert (delivery.status, delivery.next_attempt_at) == ("pending", event.created_at)
        if fn is subscriptions.renew:
            assert await db.read(transactions.for_subscription, before.id) == [rest[0]]
    # The stale renewal wrote nothing: its subscription keeps the one renewal before it.
    assert [t.period for t in await db.read(transactions.for_subscription, stale.id)] == [1]
    stored = await db.read(subscriptions.by_id, stale.id)
    assert stored is not None and stored.version == stale.version + 1
    # The balance's running totals took the batch's charges with the one before it.
    totals = await db.read(balances.of_merchant, merchant_id)
    assert (totals.paid_minor, totals.transaction_count) == (4 * stale.amount_minor, 4)


async def test_one_failing_call_in_a_batch_fails_alone(
    db: Database, batch_sizes: dict[str, list[int]]
) -> None:
    """The batch fails as a whole; each call is then run alone, so only the caller whose
    own write broke a rule hears an error, and only its work is lost."""
    merchant_id = await _merchant_with_endpoint(db)
    first, clashing, last = [await _stored(db, merchant_id, subs.ACTIVE) for _ in range(3)]
    # Period 1 of `clashing` is already in the ledger: its renewal breaks the unique key.
    await db.write(transactions.insert, subscription_charge(clashing, NOW_US))

    results = await _in_one_group(db, [_renewal(first), _renewal(clashing), _renewal(last)])

    assert results[0] is True and results[2] is True
    assert isinstance(results[1], CONSTRAINT_VIOLATION)
    assert batch_sizes == {"renew": [3]}
    assert await db.read(subscriptions.by_id, clashing.id) == clashing
    for sub in (first, last):
        assert [t.period for t in await db.read(transactions.for_subscription, sub.id)] == [1]


async def test_one_subscription_twice_in_a_group_is_renewed_once(db: Database) -> None:
    merchant_id = await _merchant_with_endpoint(db)
    sub = await _stored(db, merchant_id, subs.ACTIVE)

    results = await _in_one_group(db, [_renewal(sub), _renewal(sub)])

    assert results == [True, False]
    assert [t.period for t in await db.read(transactions.for_subscription, sub.id)] == [1]


async def test_a_batch_gives_way_to_a_row_another_process_is_writing(postgres_url: str) -> None:
    """PostgreSQL: a row another transaction holds is left to it, as a single renewal
    leaves it; the rest of the batch is written."""
    async with open_database(postgres_url, 3) as db:
        merchant_id = await _merchant_with_endpoint(db)
        free, held = [await _stored(db, merchant_id, subs.ACTIVE) for _ in range(2)]
        with psycopg.connect(postgres_url) as other:  # its transaction stays open until the end
            other.execute("SELECT id FROM subscriptions WHERE id = %s FOR UPDATE", (held.id,))
            results = await _in_one_group(db, [_renewal(free), _renewal(held)])
        assert results == [True, False]
        assert await db.read(transactions.for_subscription, held.id) == []
