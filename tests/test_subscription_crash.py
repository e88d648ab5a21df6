"""kill -9 in the middle of a burst of renewals, restart: no period charged twice, none
skipped.

`fgcpay serve` runs as a real process. A merchant has 80 daily subscriptions approved by
TEST-0001 (bulk-loaded into storage as the service writes them: the hosted page would
cost two round trips each), and 24 days of renewals fall due at once, one of two ways:

- `advance`: they live on a test clock, which the merchant advances by 24 days
  (`POST /test_clocks/{id}/advance`);
- `sweep`: they live on the real clock, approved 24 days ago as if the service had been
  down since: the renewal sweep charges every missed period as soon as it starts.

Once the ledger shows the burst under way (some renewals written, not all), the process
is SIGKILLed, restarted on the same database and left to finish (the clock reads `ready`;
nothing is due any more). Then every subscription has exactly periods 0..k-1 in the
ledger, `charge_count` k over the API, and one `subscription.charged` event per charge.
"""

from __future__ import annotations

import signal
import time
from collections.abc import Awaitable, Callable
from pathlib import Path

import attrs
import httpx
import pytest
from fgcpay.admin import create_merchant
from fgcpay.domain import money
from fgcpay.domain.times import iso_ms
from fgcpay.storage import Database, open_database
from fgcpay.storage import subscriptions as subscription_rows
from fgcpay.storage import test_clocks as clock_rows
from helpers import (
    DAY,
    add_approved_subscriptions,
    charged_once_each,
    clock_record,
    events_by_resource,
    every_page,
    ledger_size,
    utc_us,
    wait_until,
)
from processes import ServiceProcess

SUBSCRIPTIONS = 80
DAYS = 24
PERIODS = DAYS + 1  # period 0 charged at approval, then one a day
TOTAL = SUBSCRIPTIONS * PERIODS
# The kill comes once a fifth of the renewals are written: well inside the burst.
KILL_AT = SUBSCRIPTIONS + (TOTAL - SUBSCRIPTIONS) // 5
CLOCK_START = utc_us(2027, 1, 31, 9)
HOUR = 3600 * 1_000_000


async def _kill_mid_burst(service: ServiceProcess, db: Database, merchant_id: str) -> None:
    """SIGKILL the service once the burst is seen under way, and check that it was (some
    renewals written, not all)."""

    async def under_way() -> bool:
        return await ledger_size(db, merchant_id) >= KILL_AT

    await wait_until(under_way, within=30, what=f"{KILL_AT} charges written")
    assert await service.stop(signal.SIGKILL) == -signal.SIGKILL
    assert await ledger_size(db, merchant_id) < TOTAL, "the burst was over before the kill"


async def _assert_each_period_charged_once(
    db: Database, api: httpx.AsyncClient, merchant_id: str, ids: list[str], anchor: int
) -> None:
    starts = [iso_ms(anchor + period * DAY) for period in range(PERIODS)]
    # What the merchant sees.
    shown = {sub["id"]: sub for sub in await every_page(api, "/subscriptions")}
    assert set(shown) == set(ids)
    for sub in shown.values():
        seen = (sub["status"], sub["charge_count"], sub["current_period_start"])
        assert seen == ("active", PERIODS, starts[-1]), sub
        assert sub["charged_total_fgc"] == money.format_fgc(PERIODS * 1250), sub
    # What the ledger and the event log hold.
    assert await charged_once_each(db, merchant_id) == dict.fromkeys(ids, PERIODS)
    events = await events_by_resource(db, merchant_id)
    for sub_id in ids:
        assert [event.type for event in events[sub_id]] == [
            "subscription.created",
            "subscription.activated",
            *["subscription.charged"] * PERIODS,
        ], sub_id
        charged = events[sub_id][2:]
        assert [event.sequence for event in charged] == list(range(3, PERIODS + 3)), sub_id
        assert [event.data["current_period_start"] for event in charged] == starts, sub_id


@attrs.frozen
class Burst:
    """A burst of renewals under way: the subscriptions, their anchor, and how to tell
    that the service has finished it."""

    ids: list[str]
    anchor: int
    finished: Callable[[], Awaitable[bool]]


async def _advance_a_clock(
    service: ServiceProcess, db: Database, api: httpx.AsyncClient, merchant_id: str
) -> Burst:
    """Subscriptions on a test clock, the service started, the clock advanced DAYS days."""
    clock = clock_record(merchant_id, frozen_time=CLOCK_START)
    await db.write(clock_rows.insert, clock, None)
    ids = await add_approved_subscriptions(
        db, merchant_id, SUBSCRIPTIONS, anchor_us=CLOCK_START, interval="daily",
        test_clock=clock.id,
    )  # fmt: skip
    await service.start()
    to = iso_ms(CLOCK_START + DAYS * DAY)
    advanced = await api.post(f"/test_clocks/{clock.id}/advance", json={"frozen_time": to})
    assert advanced.status_code == 200, advanced.text
    assert advanced.json()["status"] == "advancing"

    async def ready() -> bool:
        got = await api.get(f"/test_clocks/{clock.id}")
        assert got.status_code == 200, got.text
        if got.json()["status"] != "ready":
            return False
        assert got.json()["frozen_time"] == to, got.text
        return True

    return Burst(ids, CLOCK_START, ready)


async def _sweep_after_downtime(service: ServiceProcess, db: Database, merchant_id: str) -> Burst:
    """Subscriptions on the real clock approved DAYS days (and an hour) ago, as if the
    service had been down since: period DAYS is due, the next is not yet. The service is
    launched, not awaited: its sweep starts before it answers."""
    anchor = time.time_ns() // 1000 - DAYS * DAY - HOUR
    ids = await add_approved_subscriptions(
        db, merchant_id, SUBSCRIPTIONS, anchor_us=anchor, interval="daily"
    )
    await service.launch()

    async def caught_up() -> bool:
        return not await db.read(subscription_rows.due, time.time_ns() // 1000, 1)

    return Burst(ids, anchor, caught_up)


@pytest.mark.parametrize("how", ["advance", "sweep"])
async def test_sigkill_mid_burst_of_renewals_charges_each_period_once(
    tmp_path: Path, database_url: str, how: str
) -> None:
    service = ServiceProcess(cwd=tmp_path, database_url=database_url)
    try:
        async with open_database(database_url, 3) as db:
            merchant = await create_merchant(db, "Renewals", "renewals@example.com")
            auth = {"Authorization": f"Bearer {merchant.api_key}"}
            api = httpx.AsyncClient(base_url=service.url + "/api/v1", headers=auth, timeout=30)
            merchant_id = merchant.merchant.id
            if how == "advance":
                burst = await _advance_a_clock(service, db, api, merchant_id)
            else:
                burst = await _sweep_after_downtime(service, db, merchant_id)
            await _kill_mid_burst(service, db, merchant_id)

            await service.start()
            await wait_until(burst.finished, within=60, what=f"the {how} finished")
            await _assert_each_period_charged_once(db, api, merchant_id, burst.ids, burst.anchor)
            await api.aclose()
            assert await service.stop(signal.SIGTERM) == 0
        assert service.errors_logged() == []
    finally:
        service.kill()  # after a failure: no process outlives the test
