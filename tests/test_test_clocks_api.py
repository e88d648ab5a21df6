"""POST/GET/DELETE /test_clocks and POST /test_clocks/{id}/advance as a merchant sees them,
on both backends: a year of a monthly subscription's renewals in one advance."""

from __future__ import annotations

from typing import Any

import pytest
from fgcpay.actors.subscription import APPROVED
from helpers import (
    MerchantClient,
    Server,
    advances_held,
    create_subscription,
    create_test_clock,
    subscription_body,
    wait_until,
)

FAKE = "0" * 24
ANCHOR = "2027-01-31T09:00:00Z"
# Every monthly period start from the anchor, month ends clamped.
YEAR_OF_STARTS = [
    "2027-01-31", "2027-02-28", "2027-03-31", "2027-04-30", "2027-05-31", "2027-06-30",
    "2027-07-31", "2027-08-31", "2027-09-30", "2027-10-31", "2027-11-30", "2027-12-31",
]  # fmt: skip
ADVANCE_DEADLINE = 120.0


async def wait_ready(merchant: MerchantClient, clock_id: str) -> dict[str, Any]:
    async def ready() -> bool:
        got = await merchant.get(f"/test_clocks/{clock_id}")
        return bool(got.json()["status"] == "ready")

    await wait_until(ready, within=ADVANCE_DEADLINE, what="the test clock reads ready")
    found: dict[str, Any] = (await merchant.get(f"/test_clocks/{clock_id}")).json()
    return found


async def test_create_get_and_list(server: Server) -> None:
    merchant = await server.merchant()
    response = await merchant.post(
        "/test_clocks", json={"frozen_time": "2027-01-31T09:00:00+02:00", "name": "Q1 run"}
    )
    assert response.status_code == 201, response.text
    clock = response.json()
    assert set(clock) == {
        "id", "object", "frozen_time", "status", "name", "created_at", "updated_at"
    }  # fmt: skip
    assert clock["id"].startswith("clock_test_") and len(clock["id"]) == 35
    assert (clock["object"], clock["status"], clock["name"]) == ("test_clock", "ready", "Q1 run")
    assert clock["frozen_time"] == "2027-01-31T07:00:00.000Z"
    assert (await merchant.get(f"/test_clocks/{clock['id']}")).json() == clock
    second = await create_test_clock(merchant, ANCHOR)
    listed = (await merchant.get("/test_clocks")).json()
    assert [c["id"] for c in listed["data"]] == [second["id"], clock["id"]]
    page = (await merchant.get("/test_clocks", params={"limit": "1"})).json()
    assert page["has_more"] is True
    rest = await merchant.get("/test_clocks", params={"starting_after": page["next_cursor"]})
    assert [c["id"] for c in rest.json()["data"]] == [clock["id"]]
    ready = await merchant.get("/test_clocks", params={"status": "ready"})
    assert len(ready.json()["data"]) == 2
    advancing = await merchant.get("/test_clocks", params={"status": "advancing"})
    assert advancing.json()["data"] == []
    other = await server.merchant("Other")
    assert (await other.get("/test_clocks")).json()["data"] == []
    assert (await other.get(f"/test_clocks/{clock['id']}")).status_code == 404
    assert (await merchant.get(f"/test_clocks/clock_test_{FAKE}")).status_code == 404


@pytest.mark.parametrize(
    ("body", "fields"),
    [
        ({}, ["frozen_time"]),
        ({"frozen_time": "2027-01-31"}, ["frozen_time"]),
        ({"frozen_time": 1800000000}, ["frozen_time"]),
        ({"frozen_time": ANCHOR, "name": 5, "x": 1}, ["name", "x"]),
    ],
)
async def test_invalid_creates_are_400_listing_every_problem(
    server: Server, body: dict[str, Any], fields: list[str]
) -> None:
    merchant = await server.merchant()
    response = await merchant.post("/test_clocks", json=body)
    assert response.status_code == 400, response.text
    assert sorted(d["field"] for d in response.json()["details"]) == sorted(fields)


async def test_create_with_a_key_replays(server: Server) -> None:
    merchant = await server.merchant()
    keyed = {"Idempotency-Key": "clock-1"}
    first = await merchant.post("/test_clocks", json={"frozen_time": ANCHOR}, headers=keyed)
    replay = await merchant.post("/test_clocks", json={"frozen_time": ANCHOR}, headers=keyed)
    assert replay.headers["Idempotent-Replayed"] == "true" and replay.content == first.content
    assert len((await merchant.get("/test_clocks")).json()["data"]) == 1


async def test_advancing_a_year_charges_a_monthly_subscription_twelve_times(
    server: Server,
) -> None:
    merchant = await server.merchant()
    clock = await create_test_clock(merchant, ANCHOR)
    sub = await create_subscription(merchant, test_clock=clock["id"])
    approved = await server.running.service.subscriptions.approve(sub["id"], "TEST-0001", "1234")
    assert approved.outcome == APPROVED
    # Up to the day before the anniversary: the approval's charge and eleven renewals.
    response = await merchant.post(
        f"/test_clocks/{clock['id']}/advance", json={"frozen_time": "2028-01-30T09:00:00Z"}
    )
    assert response.status_code == 200, response.text
    advanced = response.json()
    assert advanced["frozen_time"] == "2028-01-30T09:00:00.000Z"
    assert advanced["status"] in ("advancing", "ready")  # a year of one runs quickly
    ready = await wait_ready(merchant, clock["id"])
    assert ready["frozen_time"] == "2028-01-30T09:00:00.000Z"
    charged = await merchant.get("/events", params={"type": "subscription.charged", "limit": "100"})
    starts = sorted(
        e["data"]["object"]["current_period_start"][:10] for e in charged.json()["data"]
    )
    assert starts == YEAR_OF_STARTS
    now = (await merchant.get(f"/subscriptions/{sub['id']}")).json()
    assert (now["status"], now["charge_count"], now["charged_total_fgc"]) == (
        "active",
        12,
        "150.00",
    )
    assert now["current_period_end"] == "2028-01-31T09:00:00.000Z"


async def test_advance_while_advancing_is_409(server: Server) -> None:
    merchant = await server.merchant()
    clock = await create_test_clock(merchant, ANCHOR)
    sub = await create_subscription(merchant, test_clock=clock["id"], interval="daily")
    await server.running.service.subscriptions.approve(sub["id"], "TEST-0001", "1234")
    advance = f"/test_clocks/{clock['id']}/advance"
    # The first advance is held before its first batch until the test releases it.
    with advances_held(server.running.service) as release:
        first = await merchant.post(advance, json={"frozen_time": "2027-02-03T09:00:00Z"})
        assert (first.status_code, first.json()["status"]) == (200, "advancing")
        busy = await merchant.post(advance, json={"frozen_time": "2027-02-04T09:00:00Z"})
        assert busy.status_code == 409
        assert busy.json()["code"] == "test_clock_advancing"
        got = (await merchant.get(f"/test_clocks/{clock['id']}")).json()
        assert (got["status"], got["frozen_time"]) == ("advancing", "2027-02-03T09:00:00.000Z")
        listed = await merchant.get("/test_clocks", params={"status": "advancing"})
        assert [c["id"] for c in listed.json()["data"]] == [clock["id"]]
        assert (await merchant.get(f"/subscriptions/{sub['id']}")).json()["charge_count"] == 1
        # Nothing new on a clock mid-advance either (as Stripe); nothing is created.
        refused = await merchant.post(
            "/subscriptions", json=subscription_body(test_clock=clock["id"])
        )
        assert (refused.status_code, refused.json()["code"]) == (409, "test_clock_advancing")
        listed_subs = (await merchant.get("/subscriptions")).json()["data"]
        assert [s["id"] for s in listed_subs] == [sub["id"]]
        release.set()
        ready = await wait_ready(merchant, clock["id"])
    assert ready["frozen_time"] == "2027-02-03T09:00:00.000Z"
    # Released, it ran: the approval's charge and three days' renewals; the refused
    # advance moved nothing.
    assert (await merchant.get(f"/subscriptions/{sub['id']}")).json()["charge_count"] == 4
    again = await merchant.post(advance, json={"frozen_time": "2027-02-04T09:00:00Z"})
    assert (again.status_code, again.json()["frozen_time"]) == (200, "2027-02-04T09:00:00.000Z")
    await wait_ready(merchant, clock["id"])
    assert (await merchant.get(f"/subscriptions/{sub['id']}")).json()["charge_count"] == 5


async def test_advance_only_moves_forward(server: Server) -> None:
    merchant = await server.merchant()
    clock = await create_test_clock(merchant, ANCHOR)
    for frozen_time in (ANCHOR, "2027-01-01T00:00:00Z"):
        response = await merchant.post(
            f"/test_clocks/{clock['id']}/advance", json={"frozen_time": frozen_time}
        )
        assert response.status_code == 400, response.text
        assert [d["field"] for d in response.json()["details"]] == ["frozen_time"]
    for body in ({}, {"frozen_time": "soon"}, {"frozen_time": ANCHOR, "x": 1}):
        response = await merchant.post(f"/test_clocks/{clock['id']}/advance", json=body)
        assert response.status_code == 400, response.text
    unknown = await merchant.post(
        f"/test_clocks/clock_test_{FAKE}/advance", json={"frozen_time": "2030-01-01T00:00:00Z"}
    )
    assert unknown.status_code == 404
    assert (await merchant.get(f"/test_clocks/{clock['id']}")).json() == clock


async def test_delete_removes_the_clock_and_its_subscriptions(server: Server) -> None:
    merchant = await server.merchant()
    clock = await create_test_clock(merchant, ANCHOR)
    sub = await create_subscription(merchant, test_clock=clock["id"])
    other = await server.merchant("Other")
    assert (await other.delete(f"/test_clocks/{clock['id']}")).status_code == 404
    response = await merchant.delete(f"/test_clocks/{clock['id']}")
    assert response.status_code == 200, response.text
    assert response.json() == {**clock, "deleted": True}
    assert (await merchant.get(f"/test_clocks/{clock['id']}")).status_code == 404
    assert (await merchant.get(f"/subscriptions/{sub['id']}")).status_code == 404
    assert (await merchant.delete(f"/test_clocks/{clock['id']}")).status_code == 404
