"""Times run from 1970-01-01 to 9999-12-31T23:59:59Z (contract, "Test clocks"): a clock, an
advance or an `end_date` past it is 400 naming the field; an approval whose first period
would end past it is refused with a clear message (not a crashed actor and a 503); a
renewal whose period would end past it is never charged, and the subscription ends
(`end_of_time_range`). Both backends."""

from __future__ import annotations

from typing import Any

import pytest
from fgcpay.actors.subscription import OUT_OF_TIME
from fgcpay.domain import periods
from fgcpay.domain.test_clocks import parse_date_time
from fgcpay.domain.times import MAX_TIME_US
from helpers import (
    MerchantClient,
    Server,
    charges_of,
    create_subscription,
    create_test_clock,
    stored,
    subscription_body,
    wait_until,
)
from hosted import Customer, message, page_status

LAST = "9999-12-31T23:59:59Z"


async def advance(merchant: MerchantClient, clock_id: str, to: str) -> dict[str, Any]:
    response = await merchant.post(f"/test_clocks/{clock_id}/advance", json={"frozen_time": to})
    assert response.status_code == 200, response.text

    async def ready() -> bool:
        got = await merchant.get(f"/test_clocks/{clock_id}")
        return bool(got.json()["status"] == "ready")

    await wait_until(ready, within=60.0, what="the test clock reads ready")
    found: dict[str, Any] = (await merchant.get(f"/test_clocks/{clock_id}")).json()
    return found


def fields_of(response: Any) -> list[str]:
    assert response.status_code == 400, response.text
    body = response.json()
    assert body["code"] == "validation_error"
    return [detail["field"] for detail in body["details"]]


async def test_a_clock_at_and_past_the_last_second(server: Server) -> None:
    merchant = await server.merchant()
    at_end = await merchant.post("/test_clocks", json={"frozen_time": LAST})
    assert at_end.status_code == 201, at_end.text
    assert at_end.json()["frozen_time"] == "9999-12-31T23:59:59.000Z"
    for past in ("9999-12-31T23:59:59-00:01", "10000-01-01T00:00:00Z"):
        response = await merchant.post("/test_clocks", json={"frozen_time": past})
        assert fields_of(response) == ["frozen_time"]
    clock = await create_test_clock(merchant, "9999-12-30T00:00:00Z")
    refused = await merchant.post(
        f"/test_clocks/{clock['id']}/advance", json={"frozen_time": "9999-12-31T23:00:00-01:00"}
    )
    assert fields_of(refused) == ["frozen_time"]
    assert (await advance(merchant, clock["id"], LAST))["frozen_time"].startswith(
        "9999-12-31T23:59:59"
    )


async def test_end_date_at_and_past_the_last_second(server: Server) -> None:
    merchant = await server.merchant()
    clock = await create_test_clock(merchant, "9999-12-01T00:00:00Z")
    made = await create_subscription(
        merchant, interval="daily", test_clock=clock["id"], end_date=LAST
    )
    assert made["end_date"] == "9999-12-31T23:59:59.000Z"
    past = subscription_body(
        interval="daily", test_clock=clock["id"], end_date="9999-12-31T23:59:59-00:01"
    )
    response = await merchant.post("/subscriptions", json=past)
    assert fields_of(response) == ["end_date"]


async def test_approving_on_the_hosted_page_past_the_range_is_a_clear_refusal(
    server: Server,
) -> None:
    merchant = await server.merchant()
    clock = await create_test_clock(merchant, "9999-11-15T00:00:00Z")
    sub = await create_subscription(merchant, interval="monthly", test_clock=clock["id"])
    # A month from 9999-12-20 is in the year 10000.
    await advance(merchant, clock["id"], "9999-12-20T00:00:00Z")
    customer = Customer(server)
    response = await customer.pay(sub["id"])
    assert response.status_code == 400, response.text
    assert "9999-12-31T23:59:59Z" in (message(response) or "")
    assert page_status(response) == "paused"
    assert (await stored(server.db, sub["id"])).status == "paused"
    assert await charges_of(server.db, sub["id"]) == []
    # Nothing was held: the same customer pays a session at once.
    session = await merchant.post(
        "/checkout/sessions",
        json={"amount_fgc": "1.00", "currency": "FGC", "description": "x",
              "success_url": "https://shop.example/ok", "cancel_url": "https://shop.example/no"},
    )  # fmt: skip
    paid = await customer.pay(session.json()["id"])
    assert paid.status_code == 303, paid.text
    await customer.close()
    got = (await merchant.get(f"/subscriptions/{sub['id']}")).json()
    assert (got["status"], got["current_period_end"]) == ("paused", None)


@pytest.mark.parametrize("interval", ["daily", "monthly", "yearly"])
async def test_approving_through_the_actor_past_the_range(server: Server, interval: str) -> None:
    merchant = await server.merchant()
    clock = await create_test_clock(merchant, "9999-01-01T00:00:00Z")
    sub = await create_subscription(merchant, interval=interval, test_clock=clock["id"])
    await advance(merchant, clock["id"], "9999-12-31T12:00:00Z")
    service = server.running.service
    for _ in range(2):  # the actor is alive and answers again
        result = await service.subscriptions.approve(sub["id"], "TEST-0001", "1234")
        assert result.outcome == OUT_OF_TIME
        assert "9999-12-31T23:59:59Z" in result.message
    assert (await service.subscriptions.snapshot(sub["id"])).status == "paused"


async def test_approving_when_the_first_period_just_fits(server: Server) -> None:
    merchant = await server.merchant()
    clock = await create_test_clock(merchant, "9999-12-30T23:59:59Z")
    sub = await create_subscription(merchant, interval="daily", test_clock=clock["id"])
    result = await server.running.service.subscriptions.approve(sub["id"], "TEST-0001", "1234")
    assert result.outcome == "approved"
    got = (await merchant.get(f"/subscriptions/{sub['id']}")).json()
    assert got["current_period_end"] == "9999-12-31T23:59:59.000Z"
    # Its next period would end in the year 10000: at the clock's last second it ends.
    await advance(merchant, clock["id"], LAST)
    got = (await merchant.get(f"/subscriptions/{sub['id']}")).json()
    assert (got["status"], got["ended_reason"], got["charge_count"]) == (
        "ended", "end_of_time_range", 1
    )  # fmt: skip
    assert got["ended_at"] == "9999-12-31T23:59:59.000Z"


@pytest.mark.parametrize(
    ("interval", "approve_at", "last_start", "count"),
    [
        ("daily", "9999-12-29T12:00:00Z", "9999-12-30T12:00:00.000Z", 2),
        ("weekly", "9999-12-01T00:00:00Z", "9999-12-22T00:00:00.000Z", 4),
        ("monthly", "9999-08-31T09:30:00Z", "9999-11-30T09:30:00.000Z", 4),
        ("yearly", "9996-02-29T00:00:00Z", "9998-02-28T00:00:00.000Z", 3),
    ],
)
async def test_renewals_stop_at_the_end_of_time(
    server: Server, interval: str, approve_at: str, last_start: str, count: int
) -> None:
    merchant = await server.merchant()
    clock = await create_test_clock(merchant, approve_at)
    sub = await create_subscription(merchant, interval=interval, test_clock=clock["id"])
    approved = await server.running.service.subscriptions.approve(sub["id"], "TEST-0001", "1234")
    assert approved.outcome == "approved"
    await advance(merchant, clock["id"], LAST)
    got = (await merchant.get(f"/subscriptions/{sub['id']}")).json()
    assert got["status"] == "ended", got
    assert got["ended_reason"] == "end_of_time_range"
    assert got["charge_count"] == count
    assert got["current_period_start"] == last_start
    # Every time written is a valid date-time in the range: nothing in the year 10000.
    for name in ("current_period_start", "current_period_end", "ended_at", "updated_at"):
        assert parse_date_time(got[name]) <= MAX_TIME_US, (name, got[name])
    assert got["ended_at"] == got["current_period_end"]
    events = await merchant.get("/events", params={"limit": "100"})
    for event in events.json()["data"]:
        for name in ("current_period_start", "current_period_end", "ended_at"):
            value = event["data"]["object"][name]
            assert value is None or parse_date_time(value) <= MAX_TIME_US, (name, value)
    assert len(await charges_of(server.db, sub["id"])) == count


def test_the_period_arithmetic_at_the_end_of_time() -> None:
    last_day = parse_date_time("9999-12-31T00:00:00Z")
    assert periods.period_start_or_none(last_day, "daily", 1) is None
    assert periods.period_start_or_none(last_day, "monthly", 1) is None
    with pytest.raises(periods.OutOfTime):
        periods.period_start(last_day, "yearly", 1)
    assert not periods.period_fits(last_day, "daily", 0)
    assert periods.period_at(last_day, "daily", MAX_TIME_US) == 0
    assert periods.period_at(parse_date_time("9999-10-31T00:00:00Z"), "monthly", MAX_TIME_US) == 2
