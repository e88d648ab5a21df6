"""Subscriptions served by two `fgcpay serve` processes on one PostgreSQL, which share
nothing but the database (and the secret key, as every host of one service does).

One subscription crosses them: created through A, approved on B's hosted page, read
`active` through A, its status polled on B and heard on a socket held by A. Then a burst:
daily subscriptions on a test clock that A advances by weeks, while B cancels some of
them, then dies (SIGKILL) and comes back, resuming the advance beside A (one
subscription the test keeps locked holds the advance open until then); and overdue
subscriptions on the real clock, which both processes' renewal sweeps charge from their
first moment. Every period is charged once and every event written once; a cancelled
subscription is charged nothing after its cancel was answered.
"""

from __future__ import annotations

import json
import signal
import time
from pathlib import Path
from typing import Any

import httpx
import psycopg
import trio
from fgcpay.admin import create_merchant
from fgcpay.domain.times import iso_ms
from fgcpay.storage import Database, open_database
from fgcpay.storage import subscriptions as subscription_rows
from fgcpay.storage import test_clocks as clock_rows
from helpers import (
    DAY,
    TEST_SECRET,
    add_approved_subscriptions,
    charged_once_each,
    clock_record,
    events_by_resource,
    subscription_body,
    utc_us,
    wait_until,
)
from hosted import TOKEN
from processes import ServiceProcess
from trio_websocket import open_websocket_url

ON_CLOCK = 64
CLOCK_DAYS = 40
CANCELLED = 8  # of the subscriptions on the clock, spread over the order the advance takes
OVERDUE = 32
OVERDUE_DAYS = 20
CLOCK_START = utc_us(2027, 1, 31, 9)
HOUR = 3600 * 1_000_000


def _process(tmp_path: Path, name: str, database_url: str) -> ServiceProcess:
    cwd = tmp_path / name
    cwd.mkdir()
    return ServiceProcess(cwd=cwd, database_url=database_url, settings={"SECRET_KEY": TEST_SECRET})


def _api(service: ServiceProcess, api_key: str) -> httpx.AsyncClient:
    headers = {"Authorization": f"Bearer {api_key}"}
    return httpx.AsyncClient(base_url=service.url + "/api/v1", headers=headers, timeout=30)


async def _approve_on(service: ServiceProcess, subscription_id: str) -> httpx.Response:
    """TEST-0001 approves on `service`'s hosted page, as a browser without JavaScript."""
    async with httpx.AsyncClient(base_url=service.url, timeout=30) as browser:
        page = await browser.get(f"/checkout/{subscription_id}")
        token = TOKEN.search(page.text)
        assert token, page.text
        return await browser.post(
            f"/checkout/{subscription_id}",
            data={"csrf_token": token.group(1), "customer_code": "TEST-0001", "pin": "1234"},
        )


async def _clock_status(api: httpx.AsyncClient, clock_id: str) -> str:
    got = await api.get(f"/test_clocks/{clock_id}")
    assert got.status_code == 200, got.text
    status: str = got.json()["status"]
    return status


async def _one_subscription_across_both(
    a: ServiceProcess, b: ServiceProcess, api_a: httpx.AsyncClient
) -> str:
    created = await api_a.post("/subscriptions", json=subscription_body())
    assert created.status_code == 201, created.text
    sub_id = created.json()["id"]
    assert created.json()["status"] == "paused"
    # The page is any process's: B serves the path of the checkout_url A answered.
    assert created.json()["checkout_url"] == f"{a.url}/checkout/{sub_id}"
    socket_url = a.url.replace("http://", "ws://") + f"/checkout/{sub_id}/ws"
    async with open_websocket_url(socket_url) as heard_on_a:
        assert json.loads(await heard_on_a.get_message()) == {"id": sub_id, "status": "paused"}
        approved = await _approve_on(b, sub_id)
        assert approved.status_code == 303, approved.text
        location = approved.headers["location"]
        assert location == f"https://shop.example/thanks?subscription_id={sub_id}"
        # B's commit reaches A through PostgreSQL's notifications.
        with trio.fail_after(10):
            heard = json.loads(await heard_on_a.get_message())
        assert heard == {"id": sub_id, "status": "active"}
    read = await api_a.get(f"/subscriptions/{sub_id}")
    assert read.status_code == 200, read.text
    assert (read.json()["status"], read.json()["charge_count"]) == ("active", 1)
    async with httpx.AsyncClient(base_url=b.url, timeout=30) as browser:
        polled = await browser.get(f"/checkout/{sub_id}/status")
    assert polled.status_code == 200, polled.text
    assert polled.json() == {"id": sub_id, "status": "active"}
    return str(sub_id)


async def _cancel_during_advance(
    api_a: httpx.AsyncClient, api_b: httpx.AsyncClient, clock_id: str, on_clock: list[str]
) -> dict[str, int]:
    """A advances the clock; B cancels some of its subscriptions meanwhile. Each cancelled
    one's charge count as B's answer showed it."""
    to = iso_ms(CLOCK_START + CLOCK_DAYS * DAY)
    advanced = await api_a.post(f"/test_clocks/{clock_id}/advance", json={"frozen_time": to})
    assert advanced.status_code == 200, advanced.text
    assert advanced.json()["status"] == "advancing"
    # All are due at once, and the advance takes them by id, 32 at a time, each through
    # every period: some picked are mid-renewals, others not reached yet.
    picked = sorted(on_clock)[:: ON_CLOCK // CANCELLED]
    charged_when_cancelled = {}
    for sub_id in picked:
        cancelled = await api_b.post(f"/subscriptions/{sub_id}/cancel")
        assert cancelled.status_code == 200, cancelled.text
        assert cancelled.json()["status"] == "cancelled"
        charged_when_cancelled[sub_id] = cancelled.json()["charge_count"]
    assert await _clock_status(api_b, clock_id) == "advancing", "the cancels came too late"
    return charged_when_cancelled


async def _subscriptions_as_shown(api: httpx.AsyncClient) -> dict[str, dict[str, Any]]:
    found: dict[str, dict[str, Any]] = {}
    params: dict[str, str | int] = {"limit": 100}
    while True:
        page = await api.get("/subscriptions", params=params)
        assert page.status_code == 200, page.text
        body = page.json()
        found.update((sub["id"], sub) for sub in body["data"])
        if not body["has_more"]:
            return found
        params["starting_after"] = body["data"][-1]["id"]


async def _assert_charged_once(
    db: Database,
    api: httpx.AsyncClient,
    merchant_id: str,
    expected: dict[str, int],
    cancelled: set[str],
) -> None:
    """Each subscription charged exactly its expected periods, once each, in the ledger,
    over the API and in the event log, with one event per change."""
    assert await charged_once_each(db, merchant_id) == expected
    shown = await _subscriptions_as_shown(api)
    assert {sub_id: sub["charge_count"] for sub_id, sub in shown.items()} == expected
    events = await events_by_resource(db, merchant_id)
    for sub_id, count in expected.items():
        assert shown[sub_id]["status"] == ("cancelled" if sub_id in cancelled else "active")
        assert [event.type for event in events[sub_id]] == [
            "subscription.created",
            "subscription.activated",
            *["subscription.charged"] * count,
            *(["subscription.cancelled"] if sub_id in cancelled else []),
        ], sub_id
        # One version per event: the approval's two, then each charge's, then the cancel's.
        sequences = [event.sequence for event in events[sub_id][1:]]
        assert sequences == list(range(2, len(events[sub_id]) + 1)), sub_id


async def _nothing_due(db: Database) -> bool:
    return not await db.read(subscription_rows.due, time.time_ns() // 1000, 1)


async def test_two_processes_serve_one_merchants_subscriptions(
    tmp_path: Path, postgres_url: str
) -> None:
    a = _process(tmp_path, "a", postgres_url)
    b = _process(tmp_path, "b", postgres_url)
    try:
        async with open_database(postgres_url, 3) as db:
            merchant = await create_merchant(db, "Two hosts", "two-hosts@example.com")
            merchant_id = merchant.merchant.id
            clock = clock_record(merchant_id, frozen_time=CLOCK_START)
            await db.write(clock_rows.insert, clock, None)
            on_clock = await add_approved_subscriptions(
                db, merchant_id, ON_CLOCK, anchor_us=CLOCK_START, interval="daily",
                test_clock=clock.id,
            )  # fmt: skip
            # Due since OVERDUE_DAYS days: both sweeps charge them as soon as they start.
            overdue_since = time.time_ns() // 1000 - OVERDUE_DAYS * DAY - HOUR
            overdue = await add_approved_subscriptions(
                db, merchant_id, OVERDUE, anchor_us=overdue_since, interval="daily"
            )
            async with trio.open_nursery() as starting:
                starting.start_soon(a.start)
                starting.start_soon(b.start)
            api_a, api_b = _api(a, merchant.api_key), _api(b, merchant.api_key)

            crossing = await _one_subscription_across_both(a, b, api_a)
            # One subscription on the clock (none B cancels) stays locked by a transaction
            # of the test's own, as a third process's group commit would hold it: the
            # advance gives way to it and cannot finish, so the cancels and B's restart
            # happen mid-advance however fast the rest of it runs.
            held = sorted(on_clock)[1]
            with psycopg.connect(postgres_url) as holder:
                holder.execute("SELECT id FROM subscriptions WHERE id = %s FOR UPDATE", (held,))
                charged_when_cancelled = await _cancel_during_advance(
                    api_a, api_b, clock.id, on_clock
                )
                assert held not in charged_when_cancelled

                # B dies mid-advance and comes back: at its start it resumes the advance A runs.
                assert await b.stop(signal.SIGKILL) == -signal.SIGKILL
                await api_b.aclose()
                await b.start()
                api_b = _api(b, merchant.api_key)
                assert await _clock_status(api_b, clock.id) == "advancing"
                # Leaving the block ends the holder's transaction: the advance goes on.

            async def ready() -> bool:
                return await _clock_status(api_b, clock.id) == "ready"

            await wait_until(ready, within=60, what="the advance finished")
            await wait_until(
                lambda: _nothing_due(db), within=60, what="the overdue periods charged"
            )

            expected = {
                crossing: 1,
                **dict.fromkeys(on_clock, CLOCK_DAYS + 1),
                **charged_when_cancelled,
                **dict.fromkeys(overdue, OVERDUE_DAYS + 1),
            }
            await _assert_charged_once(
                db, api_a, merchant_id, expected, set(charged_when_cancelled)
            )
            await api_a.aclose()
            await api_b.aclose()
            for process in (a, b):
                assert await process.stop(signal.SIGTERM) == 0
        assert a.errors_logged() == [] and b.errors_logged() == []
    finally:
        a.kill()  # after a failure: no process outlives the test
        b.kill()
