"""Subscriptions and test clocks made through a running service's client API (no HTTP yet)
or loaded in bulk into storage, and what the ledger and the event log hold for them."""

from __future__ import annotations

import json
import time
from collections import defaultdict
from collections.abc import Iterator
from contextlib import contextmanager
from datetime import UTC, datetime
from decimal import Decimal
from typing import Any

import attrs
import trio
from fgcpay.domain import ids, periods, subscriptions, test_clocks
from fgcpay.domain.events import Event, new_event
from fgcpay.domain.subscriptions import Subscription
from fgcpay.domain.test_clocks import TestClock
from fgcpay.domain.transactions import Transaction
from fgcpay.service import Service
from fgcpay.storage import Database, Row, Tx
from fgcpay.storage import subscriptions as subscription_rows
from fgcpay.storage import transactions as transaction_rows


def utc_us(year: int, month: int, day: int, hour: int = 0) -> int:
    """`utc_us(2027, 1, 31, 9)` -> microseconds since the epoch of that UTC date and time."""
    return int(datetime(year, month, day, hour, tzinfo=UTC).timestamp()) * 1_000_000


def subscription_body(**overrides: Any) -> dict[str, Any]:
    """A valid creation body (monthly, 12.50 FGC); `...` drops a field."""
    fields: dict[str, Any] = {
        "amount_fgc": "12.50",
        "currency": "FGC",
        "interval": "monthly",
        "description": "Coffee club",
        "merchant_customer_reference": "cust-42",
        "success_url": "https://shop.example/thanks",
        "cancel_url": "https://shop.example/cart",
    }
    fields.update(overrides)
    return {name: value for name, value in fields.items() if value is not ...}


async def add_subscription(service: Service, merchant_id: str, **overrides: Any) -> Subscription:
    """Create a `paused` subscription as `POST /subscriptions` will: validated at its
    creation time (its test clock's when `test_clock` is given), stored with its event."""
    body = subscription_body(**overrides)
    api = service.subscriptions
    now = await api.creation_time(merchant_id, subscriptions.requested_test_clock(body))
    subscription = api.build(subscriptions.parse_create(body, now), merchant_id, now)
    await api.create(subscription, None)
    return subscription


async def add_test_clock(service: Service, merchant_id: str, frozen_time: str) -> TestClock:
    """Create a `ready` test clock at `frozen_time` (an RFC 3339 date-time)."""
    request = test_clocks.parse_create({"frozen_time": frozen_time})
    clock = service.test_clocks.build(request, merchant_id)
    await service.test_clocks.create(clock, None)
    return clock


async def charges_of(db: Database, subscription_id: str) -> list[Transaction]:
    """The subscription's charges in the ledger, by period."""
    found = await db.read(transaction_rows.for_subscription, subscription_id)
    return sorted(found, key=lambda charge: charge.period or 0)


@contextmanager
def advances_held(service: Service) -> Iterator[trio.Event]:
    """Hold every test clock advance the service begins, before its first batch, until
    the event yielded is set (at the latest when the block ends): meanwhile the clock
    reads `advancing`, for exactly as long as the test needs."""
    release = trio.Event()

    async def hold(test_clock: TestClock) -> None:
        await release.wait()

    service.test_clock_advances.before_advance = hold
    try:
        yield release
    finally:
        service.test_clock_advances.before_advance = None
        release.set()


@attrs.frozen
class StoredEvent:
    """An event as the log holds it: its type, sequence, time, data object and, for the
    events of a charge, `data.transaction` (else None)."""

    type: str
    sequence: int
    created_at: int
    data: dict[str, Any]
    transaction: dict[str, Any] | None = None


def _stored_event(row: Row) -> StoredEvent:
    data = json.loads(row["body"])["data"]
    return StoredEvent(
        row["type"],
        int(row["sequence"]),
        int(row["created_at"]),
        data["object"],
        data.get("transaction"),
    )


def _events(tx: Tx, resource_id: str) -> list[StoredEvent]:
    rows = tx.fetch(
        "SELECT type, sequence, created_at, body FROM events WHERE resource_id = ?"
        " ORDER BY sequence, type",
        resource_id,
    )
    return [_stored_event(row) for row in rows]


async def events_of(db: Database, resource_id: str) -> list[StoredEvent]:
    """Every event of the resource, by sequence (then type)."""
    return await db.read(_events, resource_id)


async def wait_for_subscription_status(service: Service, subscription_id: str, status: str) -> None:
    """Wait until the subscription is stored in `status` (subscribed first, then read, so
    a change after the read is sure to be heard)."""
    with service.status_hub.subscribe(subscription_id) as heard:
        while (await stored(service.db, subscription_id)).status != status:
            await heard.next()


async def stored(db: Database, subscription_id: str) -> Subscription:
    """The subscription as stored now."""
    found = await db.read(subscription_rows.by_id, subscription_id)
    assert found is not None, subscription_id
    return found


# -- bulk loads and whole-merchant reads, for the tests of bursts of renewals ---------------

# The service's default rate (FGCPAY_EUR_CENTS_PER_FGC).
_EUR_CENTS_PER_FGC = Decimal(100)
_PUBLIC_URL = "http://127.0.0.1"
_APPROVER = "TEST-0001"


def _bulk_event(
    sub: Subscription, event_type: str, now_us: int, sequence: int | None = None
) -> Event:
    wire = subscriptions.to_json(sub, _PUBLIC_URL)
    number = sub.version if sequence is None else sequence
    return new_event(ids.event_id(), sub.merchant_id, event_type, sub.id, number, wire, now_us)


def _insert_approved(
    tx: Tx, merchant_id: str, count: int, anchor_us: int, body: dict[str, Any]
) -> list[str]:
    now = time.time_ns() // 1000  # events carry the service's time, as the actor's do
    request = subscriptions.parse_create(body, anchor_us)
    made = []
    for _ in range(count):
        paused = subscriptions.new_subscription(
            request,
            subscription_id=ids.subscription_id(),
            merchant_id=merchant_id,
            now_us=anchor_us,
            eur_cents_per_fgc=_EUR_CENTS_PER_FGC,
        )
        approval_step = periods.approve(paused, customer_code=_APPROVER, now_us=anchor_us)
        active = periods.sequenced(approval_step, 2).subscription
        charge = periods.next_charge(
            paused, transaction_id=ids.transaction_id(), customer_code=_APPROVER, now_us=anchor_us
        )
        created = _bulk_event(paused, "subscription.created", now)
        subscription_rows.insert(tx, paused, None, [created])
        approval = [
            _bulk_event(active, "subscription.activated", now, active.version - 1),
            _bulk_event(active, "subscription.charged", now + 1),
        ]
        assert subscription_rows.approve(tx, paused, active, charge, approval), paused.id
        made.append(paused.id)
    return made


async def add_approved_subscriptions(
    db: Database, merchant_id: str, count: int, *, anchor_us: int, **overrides: Any
) -> list[str]:
    """`count` subscriptions (`subscription_body(**overrides)`: `interval`, `test_clock`,
    ...) created and approved by TEST-0001 at `anchor_us`, written as the service writes
    them (the row with its `subscription.created`, then the `approve` transition with period
    0's charge and its events), all in one transaction: a bulk load, far quicker than the
    hosted page. Their ids."""
    return await db.write(
        _insert_approved, merchant_id, count, anchor_us, subscription_body(**overrides)
    )


def _ledger_size(tx: Tx, merchant_id: str) -> int:
    return int(tx.fetchval("SELECT COUNT(*) FROM transactions WHERE merchant_id = ?", merchant_id))


async def ledger_size(db: Database, merchant_id: str) -> int:
    """How many transactions the merchant's ledger holds."""
    return await db.read(_ledger_size, merchant_id)


def _charges_by_subscription(tx: Tx, merchant_id: str) -> dict[str, list[Transaction]]:
    rows = tx.fetch(
        f"SELECT {transaction_rows.COLUMNS} FROM transactions"
        " WHERE merchant_id = ? AND subscription_id IS NOT NULL ORDER BY subscription_id, period",
        merchant_id,
    )
    found: dict[str, list[Transaction]] = defaultdict(list)
    for row in rows:
        charge = transaction_rows.from_row(row)
        found[str(charge.subscription_id)].append(charge)
    return dict(found)


async def charges_by_subscription(db: Database, merchant_id: str) -> dict[str, list[Transaction]]:
    """Every subscription charge in the merchant's ledger, by subscription, by period."""
    return await db.read(_charges_by_subscription, merchant_id)


def _events_by_resource(tx: Tx, merchant_id: str) -> dict[str, list[StoredEvent]]:
    rows = tx.fetch(
        "SELECT resource_id, type, sequence, created_at, body FROM events"
        " WHERE merchant_id = ? ORDER BY resource_id, sequence, type",
        merchant_id,
    )
    found: dict[str, list[StoredEvent]] = defaultdict(list)
    for row in rows:
        found[row["resource_id"]].append(_stored_event(row))
    return dict(found)


async def events_by_resource(db: Database, merchant_id: str) -> dict[str, list[StoredEvent]]:
    """Every event of the merchant's, by resource, each resource's by sequence (then type)."""
    return await db.read(_events_by_resource, merchant_id)


async def charged_once_each(db: Database, merchant_id: str) -> dict[str, int]:
    """How many periods each of the merchant's subscriptions has been charged, having
    checked that each was charged once and in order: its ledger holds periods 0..k-1 and
    nothing else, and its events one `subscription.charged` per charge (`charge_count`
    1..k, each at a later period than the one before)."""
    charges = await charges_by_subscription(db, merchant_id)
    events = await events_by_resource(db, merchant_id)
    counts = {}
    for resource_id, its_events in events.items():
        if not resource_id.startswith(subscriptions.SUBSCRIPTION_PREFIX):
            continue
        charged_periods = [charge.period for charge in charges.pop(resource_id, [])]
        count = len(charged_periods)
        assert charged_periods == list(range(count)), (resource_id, charged_periods)
        charged = [event for event in its_events if event.type == "subscription.charged"]
        assert [event.data["charge_count"] for event in charged] == list(range(1, count + 1)), (
            resource_id
        )
        starts = [event.data["current_period_start"] for event in charged]
        assert starts == sorted(set(starts)), (resource_id, starts)
        counts[resource_id] = count
    assert not charges, f"charges of subscriptions without events: {sorted(charges)}"
    return counts
