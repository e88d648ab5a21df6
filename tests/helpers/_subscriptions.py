"""Subscriptions and test clocks made through a running service's client API (no HTTP yet),
and what the ledger and the event log hold for one subscription."""

from __future__ import annotations

import json
from collections.abc import Iterator
from contextlib import contextmanager
from datetime import UTC, datetime
from typing import Any

import attrs
import trio
from fgcpay.domain import subscriptions, test_clocks
from fgcpay.domain.subscriptions import Subscription
from fgcpay.domain.test_clocks import TestClock
from fgcpay.domain.transactions import Transaction
from fgcpay.service import Service
from fgcpay.storage import Database, Tx
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

    service.test_clocks.before_advance = hold
    try:
        yield release
    finally:
        service.test_clocks.before_advance = None
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


def _events(tx: Tx, resource_id: str) -> list[StoredEvent]:
    rows = tx.fetch(
        "SELECT type, sequence, created_at, body FROM events WHERE resource_id = ?"
        " ORDER BY sequence, type",
        resource_id,
    )
    found = []
    for row in rows:
        data = json.loads(row["body"])["data"]
        found.append(
            StoredEvent(
                row["type"],
                int(row["sequence"]),
                int(row["created_at"]),
                data["object"],
                data.get("transaction"),
            )
        )
    return found


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
