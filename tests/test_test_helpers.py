"""The test helpers over HTTP, on both backends: paying, expiring and approving through
the real flows without a PIN. Each answer, the ledger and balance it leaves, the events
(with their sequences) and their deliveries to a receiver, as the hosted page's; the
declining test customers' 402s that change nothing; the 409s, 404s and 400s;
Idempotency-Key."""

from __future__ import annotations

import json
from typing import Any

import trio
from helpers import MerchantClient, Server, add_endpoint, create, create_subscription
from hosted import Customer, message
from receiver import Receiver, start_receiver

FAKE = "0" * 24


async def _events(merchant: MerchantClient, resource_id: str) -> list[dict[str, Any]]:
    """The merchant's events about `resource_id`, oldest first."""
    listed = await merchant.get("/events", params={"limit": "100"})
    assert listed.status_code == 200, listed.text
    ours = [e for e in listed.json()["data"] if e["data"]["object"]["id"] == resource_id]
    return list(reversed(ours))


async def _delivered(receiver: Receiver, count: int) -> list[dict[str, Any]]:
    bodies: list[dict[str, Any]] = [
        json.loads(item.body) for item in await receiver.wait_for(count)
    ]
    return bodies


async def test_pay_makes_the_hosted_pages_payment_and_its_webhook(
    server: Server, nursery: trio.Nursery
) -> None:
    merchant = await server.merchant()
    receiver = await start_receiver(nursery)
    await add_endpoint(merchant, receiver.url)
    session = await create(merchant, amount_fgc="12.50")

    paid = await merchant.post(f"/test_helpers/checkout/sessions/{session['id']}/pay")
    assert paid.status_code == 200, paid.text
    body = paid.json()
    assert (body["id"], body["status"], body["object"]) == (
        session["id"],
        "paid",
        "checkout_session",
    )
    assert body["paid_at"] is not None

    ledger = (await merchant.get("/transactions")).json()["data"]
    assert [(t["type"], t["amount_fgc"], t["checkout_session_id"]) for t in ledger] == [
        ("payment", "12.50", session["id"])
    ]
    balance = (await merchant.get("/balance")).json()
    assert (balance["paid_total_fgc"], balance["transaction_count"]) == ("12.50", 1)

    (event,) = await _events(merchant, session["id"])
    assert event["type"] == "checkout.session.paid"
    assert event["data"]["object"]["status"] == "paid"
    (delivered,) = await _delivered(receiver, 1)
    assert (delivered["id"], delivered["type"]) == (event["id"], "checkout.session.paid")
    assert delivered["sequence"] > 0

    again = await merchant.post(f"/test_helpers/checkout/sessions/{session['id']}/pay")
    assert again.status_code == 409, again.text
    assert again.json()["code"] == "checkout_session_not_open"
    assert len(await _events(merchant, session["id"])) == 1


async def test_declining_test_customers_are_402_and_change_nothing(server: Server) -> None:
    merchant = await server.merchant()
    session = await create(merchant)
    path = f"/test_helpers/checkout/sessions/{session['id']}/pay"
    for code, reason in (("TEST-0002", "insufficient_funds"), ("TEST-0003", "customer_blocked")):
        # More than the five wrong PINs that lock a code on the page: no attempt is counted.
        for _ in range(6):
            declined = await merchant.post(path, json={"customer_code": code})
            assert declined.status_code == 402, declined.text
            assert declined.json()["code"] == "payment_declined"
            assert declined.json()["details"] == {"reason": reason}
    unchanged = (await merchant.get(f"/checkout/sessions/{session['id']}")).json()
    assert unchanged["status"] == "created" and unchanged["paid_at"] is None
    assert (await merchant.get("/transactions")).json()["data"] == []
    assert await _events(merchant, session["id"]) == []

    paid = await merchant.post(path, json={"customer_code": "TEST-0004"})
    assert paid.status_code == 200 and paid.json()["status"] == "paid", paid.text


async def test_pay_refuses_bad_bodies_unknown_ids_and_other_merchants_sessions(
    server: Server,
) -> None:
    merchant = await server.merchant()
    other = await server.merchant("Other Shop")
    session = await create(merchant)
    path = f"/test_helpers/checkout/sessions/{session['id']}/pay"
    for body, field in (
        ({"customer_code": "TEST-9999"}, "customer_code"),
        ({"customer_code": 1}, "customer_code"),
        ({"pin": "1234"}, "pin"),
    ):
        refused = await merchant.post(path, json=body)
        assert refused.status_code == 400, refused.text
        assert [d["field"] for d in refused.json()["details"]] == [field]
    for who, target in ((merchant, f"cs_test_{FAKE}"), (other, session["id"]), (merchant, "x")):
        for action in ("pay", "expire"):
            missing = await who.post(f"/test_helpers/checkout/sessions/{target}/{action}")
            assert missing.status_code == 404, missing.text
    missing = await other.post(f"/test_helpers/subscriptions/sub_test_{FAKE}/approve")
    assert missing.status_code == 404 and missing.json()["code"] == "subscription_not_found"
    after = (await merchant.get(f"/checkout/sessions/{session['id']}")).json()
    assert after["status"] == "created"


async def test_expire_ends_the_session_now_with_its_event(
    server: Server, nursery: trio.Nursery
) -> None:
    merchant = await server.merchant()
    receiver = await start_receiver(nursery)
    await add_endpoint(merchant, receiver.url)
    session = await create(merchant)

    expired = await merchant.post(f"/test_helpers/checkout/sessions/{session['id']}/expire")
    assert expired.status_code == 200, expired.text
    body = expired.json()
    assert body["status"] == "expired"
    assert body["expires_at"] <= body["updated_at"] < session["expires_at"]
    (event,) = await _events(merchant, session["id"])
    assert event["type"] == "checkout.session.expired"
    (delivered,) = await _delivered(receiver, 1)
    assert delivered["id"] == event["id"]

    for action in ("expire", "pay"):
        refused = await merchant.post(f"/test_helpers/checkout/sessions/{session['id']}/{action}")
        assert refused.status_code == 409, refused.text
        assert refused.json()["code"] == "checkout_session_not_open"
    refused = await merchant.post(
        f"/test_helpers/checkout/sessions/{session['id']}/expire", json={"at": "now"}
    )
    assert refused.status_code == 400 and refused.json()["details"][0]["field"] == "at"


async def test_approve_activates_and_charges_with_two_sequenced_events(
    server: Server, nursery: trio.Nursery
) -> None:
    merchant = await server.merchant()
    receiver = await start_receiver(nursery)
    await add_endpoint(merchant, receiver.url)
    sub = await create_subscription(merchant)
    path = f"/test_helpers/subscriptions/{sub['id']}/approve"

    declined = await merchant.post(path, json={"customer_code": "TEST-0003"})
    assert declined.status_code == 402, declined.text
    assert declined.json()["details"] == {"reason": "customer_blocked"}
    assert (await merchant.get(f"/subscriptions/{sub['id']}")).json()["status"] == "paused"

    approved = await merchant.post(path, json={"customer_code": "TEST-0004"})
    assert approved.status_code == 200, approved.text
    body = approved.json()
    assert (body["status"], body["charge_count"], body["charged_total_fgc"]) == (
        "active",
        1,
        "12.50",
    )
    events = await _events(merchant, sub["id"])
    assert [e["type"] for e in events] == [
        "subscription.created",
        "subscription.activated",
        "subscription.charged",
    ]
    sequences = [e["sequence"] for e in events]
    assert sequences == sorted(set(sequences))
    assert events[2]["data"]["transaction"]["type"] == "subscription_charge"
    delivered = await _delivered(receiver, 3)
    assert sorted(d["id"] for d in delivered) == sorted(e["id"] for e in events)
    ledger = (await merchant.get("/transactions")).json()["data"]
    assert [(t["type"], t["subscription_id"]) for t in ledger] == [
        ("subscription_charge", sub["id"])
    ]

    again = await merchant.post(path)
    assert again.status_code == 409, again.text
    assert again.json()["code"] == "subscription_not_approvable"


async def test_an_idempotency_key_replays_the_helpers_answer(server: Server) -> None:
    merchant = await server.merchant()
    session = await create(merchant)
    path = f"/test_helpers/checkout/sessions/{session['id']}/pay"
    keyed = {"Idempotency-Key": "pay-once"}
    first = await merchant.post(path, json={"customer_code": "TEST-0001"}, headers=keyed)
    replay = await merchant.post(path, json={"customer_code": "TEST-0001"}, headers=keyed)
    assert first.status_code == replay.status_code == 200
    assert replay.headers["Idempotent-Replayed"] == "true"
    assert replay.content == first.content
    conflict = await merchant.post(path, json={"customer_code": "TEST-0004"}, headers=keyed)
    assert conflict.status_code == 409 and conflict.json()["code"] == "idempotency_key_conflict"
    assert len(await _events(merchant, session["id"])) == 1


async def test_the_helpers_leave_the_hosted_pages_pin_check_as_it_was(server: Server) -> None:
    """Five wrong PINs lock TEST-0001 on the page; the helper, which compares no PIN, still
    pays as it, and the page's lock is neither lifted nor counted by that."""
    merchant = await server.merchant()
    customer = Customer(server)
    locked_session = await create(merchant)
    for attempt in range(5):
        wrong = await customer.pay(locked_session["id"], "TEST-0001", "0000")
        assert ("locked" in (message(wrong) or "")) == (attempt == 4), wrong.text
    refused = await customer.pay(locked_session["id"], "TEST-0001", "1234")
    assert "locked" in (message(refused) or ""), refused.text

    other = await create(merchant)
    paid = await merchant.post(f"/test_helpers/checkout/sessions/{other['id']}/pay")
    assert paid.status_code == 200 and paid.json()["status"] == "paid", paid.text

    still = await customer.pay(locked_session["id"], "TEST-0001", "1234")
    assert "locked" in (message(still) or ""), still.text
    assert (await merchant.get(f"/checkout/sessions/{locked_session['id']}")).json()[
        "status"
    ] == "created"
    await customer.close()
