"""One test clock advance bills at most 1,000 periods of any one subscription and 10,000
charges in all; beyond either it is 400 `test_clock_advance_too_far`, nothing changes,
and `details.max_frozen_time` is the furthest time an advance may reach now (contract,
"Test clocks"). The count is closed-form (checked here against the actor's own steps,
taken one by one); the API on both backends."""

from __future__ import annotations

import itertools
from typing import Any

import attrs
import pytest
import trio
from fgcpay.domain import advance_bounds, periods
from fgcpay.domain import subscriptions as subs
from fgcpay.domain.advance_bounds import Billable, charges_by
from fgcpay.domain.periods import DAY_US, End
from fgcpay.domain.test_clocks import parse_date_time
from fgcpay.domain.times import MAX_TIME_US, iso_ms
from fgcpay.storage import customers as customer_rows
from fgcpay.storage import subscriptions as subscription_rows
from helpers import (
    MerchantClient,
    Server,
    add_approved_subscriptions,
    charges_of,
    create_subscription,
    create_test_clock,
    stored,
    subscription_record,
    wait_until,
)

ANCHOR = "2027-01-01T00:00:00Z"
ANCHOR_US = parse_date_time(ANCHOR)


def simulate(billable: Billable, until_us: int) -> int:
    """The charges the actor makes up to `until_us`, step by step as `_act` takes them."""
    sub, count = billable.subscription, 0
    while (action := periods.next_action(sub, until_us)) is not None:
        if isinstance(action, End):
            break
        count += 1
        if billable.renewals_pay:
            sub = periods.charged(sub, action, now_us=action.due_at).subscription
        else:
            sub = periods.declined(sub, action, now_us=action.due_at).subscription
    return count


def approved(interval: str, anchor: int, **changes: Any) -> subs.Subscription:
    record = subscription_record("mer_x", subs.ACTIVE, interval=interval)
    paused = attrs.evolve(
        record, status=subs.PAUSED, approved_at=None, customer_code=None, charge_count=0,
        charged_total_minor=0, current_period_start=None, current_period_end=None,
        next_action_at=None, version=1,
    )  # fmt: skip
    step = periods.approve(paused, customer_code="TEST-0001", now_us=anchor)
    return attrs.evolve(step.subscription, **changes)


CASES = [
    ("daily", {}),
    ("weekly", {"end_date": ANCHOR_US + 40 * DAY_US + 5}),
    ("monthly", {}),
    ("monthly", {"max_total_minor": 1250 * 7}),
    ("yearly", {"end_date": ANCHOR_US + 3 * 366 * DAY_US}),
    ("daily", {"status": subs.PAST_DUE, "failed_attempts": 1}),
    ("daily", {"status": subs.PAST_DUE, "failed_attempts": 2}),
    ("weekly", {"status": subs.PAST_DUE, "failed_attempts": 2, "max_total_minor": 1250}),
]
UNTIL = [ANCHOR_US, ANCHOR_US + DAY_US - 1, ANCHOR_US + DAY_US, ANCHOR_US + 45 * DAY_US,
         ANCHOR_US + 400 * DAY_US + 3]  # fmt: skip


@pytest.mark.parametrize(("interval", "changes"), CASES)
@pytest.mark.parametrize("pays", [True, False])
def test_the_count_agrees_with_the_actors_steps(
    interval: str, changes: dict[str, Any], pays: bool
) -> None:
    billable = Billable(approved(interval, ANCHOR_US, **changes), pays)
    for until in UNTIL:
        assert charges_by(billable, until) == simulate(billable, until), until


@pytest.mark.parametrize("interval", ["daily", "monthly", "yearly"])
def test_the_count_agrees_near_the_end_of_time(interval: str) -> None:
    anchor = parse_date_time("9990-01-31T12:00:00Z")
    billable = Billable(approved(interval, anchor), True)
    for until in (anchor + 100 * DAY_US, MAX_TIME_US):
        assert charges_by(billable, until) == simulate(billable, until)


def test_max_frozen_time_is_the_last_instant_within_the_bounds() -> None:
    daily = Billable(approved("daily", ANCHOR_US), True)
    # Periods 1..1000 start at anchor + 1..1000 days: the 1,001st at anchor + 1001 days.
    furthest = advance_bounds.max_frozen_time([daily], ANCHOR_US)
    assert furthest == ANCHOR_US + 1001 * DAY_US - 1
    assert charges_by(daily, furthest) == 1000
    assert charges_by(daily, furthest + 1) == 1001
    # Eleven of them: 909 each is 9,999 charges, 910 each would pass 10,000.
    many = [daily] * 11
    assert advance_bounds.max_frozen_time(many, ANCHOR_US) == ANCHOR_US + 910 * DAY_US - 1
    # Declined renewals: three charges at most, whatever the time.
    declining = Billable(daily.subscription, False)
    assert advance_bounds.max_frozen_time([declining] * 3000, ANCHOR_US) == MAX_TIME_US


async def wait_ready(merchant: MerchantClient, clock_id: str) -> dict[str, Any]:
    async def ready() -> bool:
        got = await merchant.get(f"/test_clocks/{clock_id}")
        return bool(got.json()["status"] == "ready")

    await wait_until(ready, within=60.0, what="the test clock reads ready")
    found: dict[str, Any] = (await merchant.get(f"/test_clocks/{clock_id}")).json()
    return found


def too_far(response: Any) -> str:
    assert response.status_code == 400, response.text
    body = response.json()
    assert body["code"] == "test_clock_advance_too_far"
    assert set(body["details"]) == {"max_frozen_time"}
    assert "1,000" in body["message"] and "10,000" in body["message"]
    assert body["request_id"]
    found: str = body["details"]["max_frozen_time"]
    return found


async def test_one_daily_subscription_advanced_to_9999_is_refused(server: Server) -> None:
    merchant = await server.merchant()
    clock = await create_test_clock(merchant, ANCHOR)
    sub = await create_subscription(merchant, interval="daily", test_clock=clock["id"])
    result = await server.running.service.subscriptions.approve(sub["id"], "TEST-0001", "1234")
    assert result.outcome == "approved"
    before = await stored(server.db, sub["id"])
    advance = f"/test_clocks/{clock['id']}/advance"
    response = await merchant.post(advance, json={"frozen_time": "9999-12-31T23:59:59Z"})
    furthest = too_far(response)
    # The 1,001st renewal starts 1,001 days after the approval: just before it.
    assert furthest == iso_ms(ANCHOR_US + 1001 * DAY_US - 1) == "2029-09-27T23:59:59.999Z"
    # Nothing changed: the clock, the subscription.
    again = (await merchant.get(f"/test_clocks/{clock['id']}")).json()
    assert (again["frozen_time"], again["status"]) == (clock["frozen_time"], "ready")
    assert await stored(server.db, sub["id"]) == before
    # The same with a key: refused again, the same answer (a final 400 is kept).
    keyed = {"Idempotency-Key": "too-far"}
    first = await merchant.post(
        advance, json={"frozen_time": "3000-01-01T00:00:00Z"}, headers=keyed
    )
    assert too_far(first) == furthest
    # A day short of the bound runs.
    ok = await merchant.post(advance, json={"frozen_time": "2027-01-20T12:00:00Z"})
    assert ok.status_code == 200, ok.text
    await wait_ready(merchant, clock["id"])
    assert (await stored(server.db, sub["id"])).charge_count == 20
    # From there the bound has moved on with the clock.
    response = await merchant.post(advance, json={"frozen_time": "9999-12-31T23:59:59Z"})
    assert too_far(response) == iso_ms(ANCHOR_US + 1020 * DAY_US - 1)


async def test_the_bound_of_all_charges_of_a_clock(server: Server) -> None:
    merchant = await server.merchant()
    clock = await create_test_clock(merchant, ANCHOR)
    await add_approved_subscriptions(
        server.db, merchant.id, 11, anchor_us=ANCHOR_US, interval="daily", test_clock=clock["id"]
    )
    advance = f"/test_clocks/{clock['id']}/advance"
    # 950 days: under 1,000 each, 10,450 in all.
    response = await merchant.post(advance, json={"frozen_time": iso_ms(ANCHOR_US + 950 * DAY_US)})
    assert too_far(response) == iso_ms(ANCHOR_US + 910 * DAY_US - 1)
    again = (await merchant.get(f"/test_clocks/{clock['id']}")).json()
    assert (again["frozen_time"], again["status"]) == ("2027-01-01T00:00:00.000Z", "ready")
    events = await merchant.get("/events", params={"type": "subscription.charged", "limit": "100"})
    assert len(events.json()["data"]) == 11  # the approvals' charges only


async def test_declined_renewals_do_not_hold_an_advance_back(server: Server) -> None:
    merchant = await server.merchant()
    clock = await create_test_clock(merchant, ANCHOR)
    sub = await create_subscription(merchant, interval="daily", test_clock=clock["id"])
    result = await server.running.service.subscriptions.approve(sub["id"], "TEST-0004", "1234")
    assert result.outcome == "approved"
    advance = f"/test_clocks/{clock['id']}/advance"
    # Ten years on: the renewal and its two retries are declined, then it ends.
    ok = await merchant.post(advance, json={"frozen_time": "2037-01-01T00:00:00Z"})
    assert ok.status_code == 200, ok.text
    await wait_ready(merchant, clock["id"])
    got = (await merchant.get(f"/subscriptions/{sub['id']}")).json()
    assert (got["status"], got["ended_reason"]) == ("ended", "payment_failed")


@pytest.mark.parametrize("interval", ["monthly", "yearly"])
def test_a_year_of_periods_is_counted_in_constant_time(interval: str) -> None:
    billable = Billable(approved(interval, ANCHOR_US), True)
    for until in itertools.islice(range(ANCHOR_US, MAX_TIME_US, 97 * DAY_US + 13), 40):
        assert charges_by(billable, until) == simulate(billable, until)


async def test_an_approval_raced_by_an_advance_is_not_billed_from_the_old_time(
    server: Server, nursery: trio.Nursery, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The approval reads the clock's time, checks the PIN, then writes; an advance begun in
    between counted its bounds without it. Written at the old time, its periods up to the
    new one would run unbounded: it is refused instead, and approved again at the new time."""
    merchant = await server.merchant()
    clock = await create_test_clock(merchant, ANCHOR)
    sub = await create_subscription(merchant, interval="daily", test_clock=clock["id"])
    real_write = server.db.write
    advanced = trio.Event()

    async def advance_first(fn: Any, *args: Any, **kwargs: Any) -> Any:
        if fn is customer_rows.attempt and not advanced.is_set():
            far = iso_ms(ANCHOR_US + 5000 * DAY_US)
            response = await merchant.post(
                f"/test_clocks/{clock['id']}/advance", json={"frozen_time": far}
            )
            assert response.status_code == 200, response.text  # nothing billable yet
            advanced.set()
        return await real_write(fn, *args, **kwargs)

    monkeypatch.setattr(server.db, "write", advance_first)
    service = server.running.service
    first = await service.subscriptions.approve(sub["id"], "TEST-0001", "1234")
    assert advanced.is_set()
    assert first.outcome != "approved"
    await wait_ready(merchant, clock["id"])
    assert await charges_of(server.db, sub["id"]) == []
    again = await service.subscriptions.approve(sub["id"], "TEST-0001", "1234")
    assert again.outcome == "approved"
    got = (await merchant.get(f"/subscriptions/{sub['id']}")).json()
    assert (got["approved_at"], got["charge_count"]) == (iso_ms(ANCHOR_US + 5000 * DAY_US), 1)


async def test_a_helpers_approval_raced_by_an_advance_is_not_billed_from_the_old_time(
    server: Server, monkeypatch: pytest.MonkeyPatch
) -> None:
    """As the page's approval above, through `POST /test_helpers/subscriptions/{id}/approve`:
    an advance begun between the helper's read of the clock and its write counted its
    bounds without the subscription. The approval is not written at the old time; the
    merchant is told the clock is advancing (409, as a create is), and a retry once it is
    ready approves at the new time."""
    merchant = await server.merchant()
    clock = await create_test_clock(merchant, ANCHOR)
    sub = await create_subscription(merchant, interval="daily", test_clock=clock["id"])
    real_write = server.db.write
    advanced = trio.Event()
    far = ANCHOR_US + 5000 * DAY_US

    async def advance_first(fn: Any, *args: Any, **kwargs: Any) -> Any:
        if fn is subscription_rows.approve_answered and not advanced.is_set():
            response = await merchant.post(
                f"/test_clocks/{clock['id']}/advance", json={"frozen_time": iso_ms(far)}
            )
            assert response.status_code == 200, response.text  # nothing billable yet
            advanced.set()
        return await real_write(fn, *args, **kwargs)

    monkeypatch.setattr(server.db, "write", advance_first)
    path = f"/test_helpers/subscriptions/{sub['id']}/approve"
    first = await merchant.post(path)
    assert advanced.is_set()
    assert first.status_code == 409, first.text
    assert first.json()["code"] == "test_clock_advancing"
    await wait_ready(merchant, clock["id"])
    assert await charges_of(server.db, sub["id"]) == []
    again = await merchant.post(path)
    assert again.status_code == 200, again.text
    got = (await merchant.get(f"/subscriptions/{sub['id']}")).json()
    assert (got["approved_at"], got["charge_count"]) == (iso_ms(far), 1)
