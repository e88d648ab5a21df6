"""Issue 11's first acceptance point, end to end, on both backends: a merchant creates a
monthly subscription on a test clock, a real browser approves it as TEST-0001, the merchant
sees it `active` and gets `subscription.activated`; a year's advance of the clock makes 12
charges in all, then (the maximum total being 12 intervals) `ended`, each charge one
ledger row and one `subscription.charged` event.

Everything a merchant touches is real: the service over loopback, its HTTP API, the hosted
page in headless chromium, webhook deliveries to a receiver over HTTP, checked with the
shipped `fgcpay.webhooks.verify_delivery`.
"""

from __future__ import annotations

import json
from collections import Counter
from typing import Any

import pytest
import trio
from fgcpay.domain.subscriptions import MAX_TOTAL_REACHED
from fgcpay.webhooks import verify_delivery
from helpers import (
    WAIT_MS,
    MerchantClient,
    Server,
    add_endpoint,
    browser,
    charges_of,
    create_subscription,
    create_test_clock,
    fill_and_approve,
    in_browser,
    screenshot,
    shop_site,
    wait_until,
)
from receiver import Receiver, start_receiver

# Skips (or, in CI, fails) without chromium.
pytestmark = pytest.mark.usefixtures("need_browser")

ANCHOR = "2027-01-31T09:00:00Z"
A_YEAR_LATER = "2028-01-31T09:00:00.000Z"
ADVANCE_DEADLINE = 60.0


def events_received(receiver: Receiver, secret: str) -> list[dict[str, Any]]:
    """Every delivery so far, each verified with the endpoint's secret, as events."""
    events = []
    for delivery in receiver.received:
        verify_delivery(delivery.body, delivery.headers, secret)
        event: dict[str, Any] = json.loads(delivery.body)
        assert delivery.headers["service-event-id"] == event["id"]
        events.append(event)
    return events


async def clock_ready(merchant: MerchantClient, clock_id: str) -> dict[str, Any]:
    async def ready() -> bool:
        return bool((await merchant.get(f"/test_clocks/{clock_id}")).json()["status"] == "ready")

    await wait_until(ready, within=ADVANCE_DEADLINE, what="the test clock reading ready")
    found: dict[str, Any] = (await merchant.get(f"/test_clocks/{clock_id}")).json()
    return found


async def test_a_browser_approved_monthly_subscription_charges_twelve_times_then_ends(
    server: Server, nursery: trio.Nursery
) -> None:
    receiver = await start_receiver(nursery)
    merchant = await server.merchant("Acme Coffee")
    endpoint = await add_endpoint(merchant, receiver.url)
    clock = await create_test_clock(merchant, ANCHOR)

    with shop_site() as shop:
        sub = await create_subscription(
            merchant,
            test_clock=clock["id"],
            max_total_amount_fgc="150.00",  # 12 intervals of 12.50
            success_url=f"{shop}/thanks?plan=club",
            cancel_url=f"{shop}/cart",
        )
        assert sub["status"] == "paused"
        landed: list[str] = []

        def approve() -> None:
            with browser() as b:
                page = b.new_page(viewport={"width": 390, "height": 844})
                page.goto(sub["checkout_url"])
                assert page.get_by_test_id("amount").inner_text() == "12.50 FGC every month"
                fill_and_approve(page, "TEST-0001", "1234")
                page.wait_for_url(f"{shop}/thanks*", timeout=WAIT_MS)
                assert page.get_by_text("Thank you for your order").is_visible()
                screenshot(page, f"subscription-acceptance-{server.db.dialect}")
                landed.append(page.url)

        await in_browser(approve)
    assert landed == [f"{shop}/thanks?plan=club&subscription_id={sub['id']}"]

    active = (await merchant.get(f"/subscriptions/{sub['id']}")).json()
    assert (active["status"], active["charge_count"]) == ("active", 1)
    assert active["approved_at"] == "2027-01-31T09:00:00.000Z"  # the clock's time
    await receiver.wait_for(3)  # created, activated and the approval's charge
    first = {e["type"]: e for e in events_received(receiver, endpoint["secret"])}
    assert set(first) == {
        "subscription.created", "subscription.activated", "subscription.charged"
    }  # fmt: skip
    activated = first["subscription.activated"]
    assert activated["data"]["object"]["id"] == sub["id"]
    assert activated["data"]["object"]["status"] == "active"
    assert activated["sequence"] > first["subscription.created"]["sequence"]

    advanced = await merchant.post(
        f"/test_clocks/{clock['id']}/advance", json={"frozen_time": "2028-01-31T09:00:00Z"}
    )
    assert advanced.status_code == 200, advanced.text
    ready = await clock_ready(merchant, clock["id"])
    assert ready["frozen_time"] == A_YEAR_LATER

    ended = (await merchant.get(f"/subscriptions/{sub['id']}")).json()
    assert (ended["status"], ended["ended_reason"]) == ("ended", MAX_TOTAL_REACHED)
    assert (ended["charge_count"], ended["charged_total_fgc"]) == (12, "150.00")
    assert ended["ended_at"] == A_YEAR_LATER  # when the 13th charge would have been due

    # created, activated, 12 charges, ended: each delivered, each signed.
    await receiver.wait_for(15)
    events = events_received(receiver, endpoint["secret"])
    assert len({e["id"] for e in events}) == len(events) == 15
    assert Counter(e["type"] for e in events) == {
        "subscription.created": 1, "subscription.activated": 1,
        "subscription.charged": 12, "subscription.ended": 1,
    }  # fmt: skip
    assert {e["data"]["object"]["id"] for e in events} == {sub["id"]}
    charged = sorted(
        (e for e in events if e["type"] == "subscription.charged"),
        key=lambda e: e["data"]["object"]["charge_count"],
    )
    assert [e["data"]["object"]["charge_count"] for e in charged] == list(range(1, 13))
    sequences = [e["sequence"] for e in charged]
    assert sequences == sorted(set(sequences)), sequences  # each charge a newer change
    (end,) = (e for e in events if e["type"] == "subscription.ended")
    assert end["sequence"] > sequences[-1]
    assert end["data"]["object"]["ended_reason"] == MAX_TOTAL_REACHED

    # What the API's event log shows is what was delivered.
    listed = await merchant.get("/events", params={"type": "subscription.charged", "limit": "100"})
    assert {e["id"] for e in listed.json()["data"]} == {e["id"] for e in charged}
    # One ledger row per charge, periods 0 to 11, each of the approving customer. The API
    # has no transactions list yet (the contract's GET /transactions): read the storage.
    ledger = await charges_of(server.db, sub["id"])
    assert [row.period for row in ledger] == list(range(12))
    assert {(row.amount_minor, row.customer_code) for row in ledger} == {(1250, "TEST-0001")}
