"""POST/GET /subscriptions and POST /subscriptions/{id}/cancel as a merchant sees them, on
both backends (the customer's approval goes through the client API: the hosted page is
tested on its own)."""

from __future__ import annotations

from typing import Any

import pytest
from fgcpay.actors.subscription import APPROVED
from helpers import (
    MerchantClient,
    Server,
    charges_of,
    component,
    create_subscription,
    create_test_clock,
    subscription_body,
    wait_until,
)

FAKE = "0" * 24
CONTRACT_FIELDS = {
    "id", "object", "mode", "subscription_id", "status", "interval", "currency", "amount_fgc",
    "amount_minor", "eur_cents", "checkout_url", "description", "merchant_customer_reference",
    "customer_email", "success_url", "cancel_url", "external_reference", "max_total_amount_fgc",
    "end_date", "current_period_start", "current_period_end", "charged_total_fgc",
    "charge_count", "approved_at", "cancelled_at", "ended_at", "ended_reason", "test_clock",
    "metadata", "created_at", "updated_at",
}  # fmt: skip


async def approve(server: Server, subscription_id: str) -> None:
    result = await server.running.service.subscriptions.approve(
        subscription_id, "TEST-0001", "1234"
    )
    assert result.outcome == APPROVED


async def events(merchant: MerchantClient, event_type: str) -> list[dict[str, Any]]:
    response = await merchant.get("/events", params={"type": event_type, "limit": "100"})
    assert response.status_code == 200, response.text
    found: list[dict[str, Any]] = response.json()["data"]
    return found


async def test_create_answers_201_paused_with_every_contract_field(server: Server) -> None:
    merchant = await server.merchant()
    response = await merchant.post(
        "/subscriptions",
        json=subscription_body(
            customer_email="ana@example.com",
            external_reference="plan-7",
            max_total_amount_fgc="100",
            end_date="2099-01-01T00:00:00Z",
            metadata={"plan": "gold"},
        ),
    )
    assert response.status_code == 201, response.text
    assert "Deprecation" not in response.headers
    sub = response.json()
    assert set(sub) == CONTRACT_FIELDS
    assert sub["id"].startswith("sub_test_") and len(sub["id"]) == 33
    assert (sub["object"], sub["mode"], sub["status"]) == ("subscription", "test", "paused")
    assert sub["subscription_id"] == sub["id"]
    public_url = server.running.service.settings.public_url
    assert sub["checkout_url"] == f"{public_url}/checkout/{sub['id']}"
    assert (sub["amount_fgc"], sub["amount_minor"], sub["eur_cents"]) == ("12.50", "1250", "1250")
    assert (sub["currency"], sub["interval"]) == ("FGC", "monthly")
    assert sub["description"] == "Coffee club"
    assert sub["merchant_customer_reference"] == "cust-42"
    assert sub["customer_email"] == "ana@example.com"
    assert sub["success_url"] == "https://shop.example/thanks"
    assert sub["cancel_url"] == "https://shop.example/cart"
    assert sub["external_reference"] == "plan-7"
    assert sub["max_total_amount_fgc"] == "100.00"
    assert sub["end_date"] == "2099-01-01T00:00:00.000Z"
    assert sub["metadata"] == {"plan": "gold"}
    assert (sub["charged_total_fgc"], sub["charge_count"]) == ("0.00", 0)
    for unset in ("approved_at", "cancelled_at", "ended_at", "ended_reason", "test_clock"):
        assert sub[unset] is None, unset
    assert sub["created_at"] == sub["updated_at"]
    assert (await merchant.get(f"/subscriptions/{sub['id']}")).json() == sub


async def test_amount_minor_that_agrees_is_accepted_with_deprecation_header(server: Server) -> None:
    merchant = await server.merchant()
    response = await merchant.post("/subscriptions", json=subscription_body(amount_minor="1250"))
    assert response.status_code == 201, response.text
    assert response.headers["Deprecation"] == "true"


@pytest.mark.parametrize(
    ("overrides", "fields"),
    [
        ({"surprise": 1, "another": 2}, ["surprise", "another"]),
        ({"amount_fgc": "0", "interval": "hourly", "description": ""},
         ["amount_fgc", "interval", "description"]),
        ({"max_total_amount_fgc": "12.49"}, ["max_total_amount_fgc"]),
        ({"end_date": "2020-01-01T00:00:00Z"}, ["end_date"]),
        ({"amount_minor": "1251"}, ["amount_minor"]),
        ({"test_clock": "clock_test_" + FAKE}, ["test_clock"]),
        ({"test_clock": "clock_test_" + FAKE, "currency": "EUR"}, ["currency", "test_clock"]),
        ({"success_url": ..., "cancel_url": "ftp://x"}, ["success_url", "cancel_url"]),
    ],
)  # fmt: skip
async def test_invalid_bodies_are_400_listing_every_problem(
    server: Server, overrides: dict[str, Any], fields: list[str]
) -> None:
    merchant = await server.merchant()
    response = await merchant.post("/subscriptions", json=subscription_body(**overrides))
    assert response.status_code == 400, response.text
    body = response.json()
    assert body["code"] == "validation_error"
    assert sorted(d["field"] for d in body["details"]) == sorted(fields)
    if "surprise" in fields:
        assert {"field": "surprise", "message": "Unknown field."} in body["details"]
    assert (await merchant.get("/subscriptions")).json()["data"] == []


async def test_a_subscription_on_a_test_clock_is_created_at_the_clocks_time(
    server: Server,
) -> None:
    merchant = await server.merchant()
    clock = await create_test_clock(merchant, "2030-05-01T12:00:00Z")
    # An end_date in the service's future but in the clock's past is refused.
    past = await merchant.post(
        "/subscriptions",
        json=subscription_body(test_clock=clock["id"], end_date="2030-04-01T00:00:00Z"),
    )
    assert past.status_code == 400
    assert [d["field"] for d in past.json()["details"]] == ["end_date"]
    sub = await create_subscription(merchant, test_clock=clock["id"])
    assert sub["test_clock"] == clock["id"]
    assert sub["created_at"] == "2030-05-01T12:00:00.000Z"
    # Another merchant's clock is no clock of yours.
    other = await server.merchant("Other")
    refused = await other.post("/subscriptions", json=subscription_body(test_clock=clock["id"]))
    assert refused.status_code == 400
    assert [d["field"] for d in refused.json()["details"]] == ["test_clock"]


async def test_same_key_same_body_replays_and_different_body_is_409(server: Server) -> None:
    merchant = await server.merchant()
    keyed = {"Idempotency-Key": "sub-1"}
    first = await merchant.post("/subscriptions", json=subscription_body(), headers=keyed)
    assert first.status_code == 201
    replay = await merchant.post("/subscriptions", json=subscription_body(), headers=keyed)
    assert replay.status_code == 201
    assert replay.headers["Idempotent-Replayed"] == "true"
    assert replay.content == first.content
    conflict = await merchant.post(
        "/subscriptions", json=subscription_body(description="Tea club"), headers=keyed
    )
    assert conflict.status_code == 409
    assert conflict.json()["code"] == "idempotency_key_conflict"
    assert len((await merchant.get("/subscriptions")).json()["data"]) == 1


async def test_list_pages_newest_first_and_filters_by_status(server: Server) -> None:
    merchant = await server.merchant()
    made = [(await create_subscription(merchant))["id"] for _ in range(3)]
    await approve(server, made[0])
    listed = (await merchant.get("/subscriptions")).json()
    assert [s["id"] for s in listed["data"]] == made[::-1]
    assert (listed["object"], listed["has_more"]) == ("list", False)
    page = (await merchant.get("/subscriptions", params={"limit": "2"})).json()
    assert [s["id"] for s in page["data"]] == made[:0:-1] and page["has_more"] is True
    rest = await merchant.get(
        "/subscriptions", params={"limit": "2", "starting_after": page["next_cursor"]}
    )
    assert [s["id"] for s in rest.json()["data"]] == made[:1]
    assert rest.json()["has_more"] is False
    active = (await merchant.get("/subscriptions", params={"status": "active"})).json()
    assert [s["id"] for s in active["data"]] == made[:1]
    paused = (await merchant.get("/subscriptions", params={"status": "paused"})).json()
    assert [s["id"] for s in paused["data"]] == made[:0:-1]
    for params in ({"status": "nope"}, {"limit": "0"}, {"starting_after": "cs_test_" + FAKE}):
        assert (await merchant.get("/subscriptions", params=params)).status_code == 400
    other = await server.merchant("Other")
    assert (await other.get("/subscriptions")).json()["data"] == []


async def test_get_and_cancel_of_an_unknown_or_another_merchants_are_404(server: Server) -> None:
    merchant = await server.merchant()
    sub = await create_subscription(merchant)
    other = await server.merchant("Other")
    for client, sub_id in ((other, sub["id"]), (merchant, "sub_test_" + FAKE), (merchant, "x")):
        got = await client.get(f"/subscriptions/{sub_id}")
        assert got.status_code == 404
        assert got.json()["code"] == "subscription_not_found"
        cancelled = await client.post(f"/subscriptions/{sub_id}/cancel")
        assert cancelled.status_code == 404
        assert cancelled.json()["code"] == "subscription_not_found"
    assert (await merchant.get(f"/subscriptions/{sub['id']}")).json()["status"] == "paused"


async def test_cancel_paused_and_active_then_409(server: Server) -> None:
    merchant = await server.merchant()
    paused = await create_subscription(merchant)
    active = await create_subscription(merchant)
    await approve(server, active["id"])
    for sub in (paused, active):
        response = await merchant.post(f"/subscriptions/{sub['id']}/cancel")
        assert response.status_code == 200, response.text
        cancelled = response.json()
        assert cancelled["status"] == "cancelled" and cancelled["cancelled_at"] is not None
        assert (await merchant.get(f"/subscriptions/{sub['id']}")).json() == cancelled
        again = await merchant.post(f"/subscriptions/{sub['id']}/cancel")
        assert again.status_code == 409
        assert again.json()["code"] == "subscription_not_cancellable"
    assert (await merchant.get(f"/subscriptions/{active['id']}")).json()["charge_count"] == 1
    assert (
        await merchant.post(f"/subscriptions/{paused['id']}/cancel", json={"x": 1})
    ).status_code == 400


async def test_cancel_with_a_key_replays_its_answer(server: Server) -> None:
    merchant = await server.merchant()
    sub = await create_subscription(merchant)
    keyed = {"Idempotency-Key": "cancel-1"}
    first = await merchant.post(f"/subscriptions/{sub['id']}/cancel", headers=keyed)
    replay = await merchant.post(f"/subscriptions/{sub['id']}/cancel", headers=keyed)
    assert (first.status_code, replay.status_code) == (200, 200)
    assert replay.headers["Idempotent-Replayed"] == "true" and replay.content == first.content


async def test_cancelling_an_ended_subscription_is_409(server: Server) -> None:
    merchant = await server.merchant()
    clock = await create_test_clock(merchant, "2030-05-01T12:00:00Z")
    # At most one charge: it ends once the approval's is taken and its period is over.
    sub = await create_subscription(
        merchant, test_clock=clock["id"], interval="daily", max_total_amount_fgc="12.50"
    )
    await approve(server, sub["id"])
    advanced = await merchant.post(
        f"/test_clocks/{clock['id']}/advance", json={"frozen_time": "2030-05-03T12:00:00Z"}
    )
    assert advanced.status_code == 200, advanced.text

    async def ended() -> bool:
        got = await merchant.get(f"/subscriptions/{sub['id']}")
        return bool(got.json()["status"] == "ended")

    await wait_until(ended, within=30.0, what="the subscription ended")
    response = await merchant.post(f"/subscriptions/{sub['id']}/cancel")
    assert response.status_code == 409
    assert response.json()["code"] == "subscription_not_cancellable"


async def test_created_and_cancelled_events_are_listed(server: Server) -> None:
    merchant = await server.merchant()
    sub = await create_subscription(merchant)
    assert (await merchant.post(f"/subscriptions/{sub['id']}/cancel")).status_code == 200
    created = await events(merchant, "subscription.created")
    assert [e["data"]["object"]["id"] for e in created] == [sub["id"]]
    assert created[0]["data"]["object"]["status"] == "paused"
    cancelled = await events(merchant, "subscription.cancelled")
    assert [e["data"]["object"]["id"] for e in cancelled] == [sub["id"]]
    assert cancelled[0]["data"]["object"]["status"] == "cancelled"


async def test_charge_events_carry_the_charges_transaction(server: Server) -> None:
    merchant = await server.merchant()
    clock = await create_test_clock(merchant, "2030-05-01T12:00:00Z")
    paying = await create_subscription(merchant, test_clock=clock["id"])
    declined = await create_subscription(merchant, test_clock=clock["id"])
    await approve(server, paying["id"])
    result = await server.running.service.subscriptions.approve(declined["id"], "TEST-0004", "1234")
    assert result.outcome == APPROVED
    # Past the first renewal (June 1), before the first retry (June 2).
    advanced = await merchant.post(
        f"/test_clocks/{clock['id']}/advance", json={"frozen_time": "2030-06-01T13:00:00Z"}
    )
    assert advanced.status_code == 200, advanced.text

    async def ready() -> bool:
        got = await merchant.get(f"/test_clocks/{clock['id']}")
        return bool(got.json()["status"] == "ready")

    await wait_until(ready, within=30.0, what="the test clock reads ready")
    charge = {
        "object": "transaction", "mode": "test", "type": "subscription_charge",
        "status": "succeeded", "amount_fgc": "12.50", "currency": "FGC",
        "checkout_session_id": None, "refund_id": None,
    }  # fmt: skip
    charged = sorted(
        (e["data"]["object"]["id"], e["data"]["transaction"]["period"], e["data"]["transaction"])
        for e in await events(merchant, "subscription.charged")
    )
    ledger = {
        sub_id: [c.id for c in await charges_of(server.db, sub_id)]
        for sub_id in (paying["id"], declined["id"])
    }
    # The approvals' (period 0, at the clock's time) and the renewal's (period 1, at its
    # due time on the clock), each the ledger row written.
    expected = [
        (sub_id, period, {**charge, "id": ledger[sub_id][period], "subscription_id": sub_id,
                          "period": period, "created_at": created_at})
        for sub_id, period, created_at in (
            (paying["id"], 0, "2030-05-01T12:00:00.000Z"),
            (paying["id"], 1, "2030-06-01T12:00:00.000Z"),
            (declined["id"], 0, "2030-05-01T12:00:00.000Z"),
        )
    ]  # fmt: skip
    assert charged == sorted(expected)
    # TEST-0004's renewal was declined: the attempt, with no id (it is in no ledger).
    [failed] = await events(merchant, "subscription.payment_failed")
    assert failed["data"]["object"]["id"] == declined["id"]
    assert failed["data"]["transaction"] == {
        **charge, "id": None, "status": "declined", "subscription_id": declined["id"],
        "period": 1, "created_at": "2030-06-01T12:00:00.000Z",
    }  # fmt: skip
    assert len(ledger[declined["id"]]) == 1
    # Only those two types carry it, and the document describes it.
    for other in await events(merchant, "subscription.activated"):
        assert "transaction" not in other["data"]
    for event in [failed, *await events(merchant, "subscription.charged")]:
        assert not list(component("Event").iter_errors(event))
