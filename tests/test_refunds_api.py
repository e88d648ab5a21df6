"""Refunds, the ledger and the balance as a merchant sees them over HTTP, on both backends:
the issue's acceptance walk (pay, refund part and the rest, a third refused, approve one,
reject the other, the balance, the verified webhooks), the refusals, a subscription charge
refunded, idempotency, and the lists and reads."""

from __future__ import annotations

import json
from typing import Any

import attrs
import trio
import trio.testing
from fgcpay.core.clock import TrioClock
from fgcpay.core.settings import Settings
from fgcpay.webhooks import verify_delivery
from helpers import (
    MerchantClient,
    Server,
    add_endpoint,
    create,
    create_subscription,
    start_server,
)
from hosted import paid_session
from receiver import start_receiver

FAKE = "0" * 24
REFUND_FIELDS = {
    "id", "object", "mode", "status", "amount_fgc", "currency", "checkout_session_id",
    "transaction_id", "reason", "metadata", "created_at", "reviewed_at", "updated_at",
}  # fmt: skip
BALANCE_FIELDS = {
    "object", "mode", "currency", "paid_total_fgc", "refunded_fgc", "refunds_pending_fgc",
    "net_fgc", "available_fgc", "live_payouts_enabled", "transaction_count", "as_of",
}  # fmt: skip


async def refund(merchant: MerchantClient, **body: Any) -> dict[str, Any]:
    response = await merchant.post("/refunds", json=body)
    assert response.status_code == 201, response.text
    created: dict[str, Any] = response.json()
    return created


async def review(merchant: MerchantClient, refund_id: str, decision: str) -> dict[str, Any]:
    response = await merchant.post(f"/test_helpers/refunds/{refund_id}/{decision}")
    assert response.status_code == 200, response.text
    reviewed: dict[str, Any] = response.json()
    return reviewed


async def ledger(merchant: MerchantClient) -> list[dict[str, Any]]:
    """The merchant's whole ledger (one page: the tests' are short), newest first."""
    response = await merchant.get("/transactions", params={"limit": "100"})
    assert response.status_code == 200 and not response.json()["has_more"], response.text
    rows: list[dict[str, Any]] = response.json()["data"]
    return rows


async def balance(merchant: MerchantClient) -> dict[str, Any]:
    response = await merchant.get("/balance")
    assert response.status_code == 200, response.text
    found: dict[str, Any] = response.json()
    return found


async def test_pay_refund_twice_then_approve_and_reject_with_the_balance_and_signed_events(
    server: Server, nursery: trio.Nursery
) -> None:
    merchant = await server.merchant()
    receiver = await start_receiver(nursery)
    endpoint = await add_endpoint(merchant, receiver.url)
    session = await paid_session(server, merchant)

    first = await merchant.post(
        "/refunds",
        json={
            "checkout_session_id": session["id"],
            "amount_fgc": "4.00",
            "reason": "requested_by_customer",
            "metadata": {"ticket": "T-7"},
        },
    )
    assert first.status_code == 201, first.text
    one = first.json()
    assert set(one) == REFUND_FIELDS
    assert one["id"].startswith("re_test_") and len(one["id"]) == 32
    assert (one["object"], one["mode"], one["status"]) == ("refund", "test", "pending_review")
    assert (one["amount_fgc"], one["currency"]) == ("4.00", "FGC")
    assert one["checkout_session_id"] == session["id"]
    assert one["transaction_id"].startswith("txn_test_")
    assert (one["reason"], one["metadata"]) == ("requested_by_customer", {"ticket": "T-7"})
    assert one["reviewed_at"] is None and one["created_at"] == one["updated_at"]

    # Without an amount: the rest. Then nothing is left.
    rest = await refund(merchant, checkout_session_id=session["id"])
    assert (rest["amount_fgc"], rest["reason"], rest["metadata"]) == ("8.50", None, {})
    assert rest["transaction_id"] == one["transaction_id"]
    third = await merchant.post("/refunds", json={"checkout_session_id": session["id"]})
    assert third.status_code == 400, third.text
    assert third.json()["details"] == [
        {
            "field": "amount_fgc",
            "message": "Nothing is left to refund (12.50 paid, 12.50 refunded or in review).",
        }
    ]
    pending = await balance(merchant)
    assert (pending["refunds_pending_fgc"], pending["refunded_fgc"]) == ("12.50", "0.00")

    approved = await review(merchant, one["id"], "approve")
    assert approved["status"] == "approved" and approved["reviewed_at"] is not None
    rejected = await review(merchant, rest["id"], "reject")
    assert rejected["status"] == "rejected"
    for decided, decision in ((one, "reject"), (rest, "approve"), (one, "approve")):
        again = await merchant.post(f"/test_helpers/refunds/{decided['id']}/{decision}")
        assert again.status_code == 409, again.text
        assert again.json()["code"] == "refund_already_reviewed"
        assert again.json()["details"]["id"] == decided["id"]

    summary = await balance(merchant)
    assert set(summary) == BALANCE_FIELDS
    assert summary == {
        **summary,
        "object": "balance",
        "mode": "test",
        "currency": "FGC",
        "paid_total_fgc": "12.50",
        "refunded_fgc": "4.00",
        "refunds_pending_fgc": "0.00",
        "net_fgc": "8.50",
        "available_fgc": "0.00",
        "live_payouts_enabled": False,
        "transaction_count": 2,
    }
    entry, payment = await ledger(merchant)  # newest first
    assert (payment["type"], payment["amount_fgc"], payment["id"]) == (
        "payment",
        "12.50",
        one["transaction_id"],
    )
    assert (entry["type"], entry["amount_fgc"], entry["refund_id"]) == (
        "refund",
        "-4.00",
        one["id"],
    )
    # It names the session it refunds.
    assert (entry["checkout_session_id"], entry["subscription_id"]) == (session["id"], None)
    # The rejected 8.50 is refundable again.
    refundable_again = await refund(merchant, checkout_session_id=session["id"])
    assert refundable_again["amount_fgc"] == "8.50"

    # Every refund event (and the payment's) arrived, signed with the endpoint's secret.
    expected = ["refund.created", "refund.created", "refund.approved", "refund.rejected"]
    arrived = await receiver.wait_for(1 + len(expected) + 1)
    events = []
    for delivery in arrived:
        verify_delivery(delivery.body, delivery.headers, endpoint["secret"])
        events.append(json.loads(delivery.body))
    refund_events = [e for e in events if e["type"].startswith("refund.")]
    assert sorted(e["type"] for e in refund_events) == sorted([*expected, "refund.created"])
    by_change = {(e["data"]["object"]["id"], e["sequence"]): e for e in refund_events}
    assert by_change[(one["id"], 1)]["data"]["object"] == one
    assert by_change[(one["id"], 2)]["type"] == "refund.approved"
    assert by_change[(one["id"], 2)]["data"]["object"] == approved
    assert by_change[(rest["id"], 2)]["data"]["object"] == rejected


async def test_a_session_not_paid_is_409_and_another_merchants_is_404(server: Server) -> None:
    merchant = await server.merchant()
    unpaid = await create(merchant)
    refused = await merchant.post("/refunds", json={"checkout_session_id": unpaid["id"]})
    assert refused.status_code == 409, refused.text
    body = refused.json()
    assert body["code"] == "checkout_session_not_paid"
    assert body["details"] == {"id": unpaid["id"], "status": "created"}

    paid = await paid_session(server, merchant)
    (payment,) = (await merchant.get("/transactions")).json()["data"]
    mine = await refund(merchant, checkout_session_id=paid["id"], amount_fgc="1")
    other = await server.merchant("Other Shop")
    for body_ in (
        {"checkout_session_id": paid["id"]},
        {"transaction_id": payment["id"]},
        {"checkout_session_id": "cs_test_" + FAKE},
        {"transaction_id": "txn_test_" + FAKE},
    ):
        answer = await other.post("/refunds", json=body_)
        assert (answer.status_code, answer.json()["code"]) == (404, "not_found"), body_
    for path in (
        f"/refunds/{mine['id']}",
        f"/transactions/{payment['id']}",
        f"/refunds/re_test_{FAKE}",
        "/refunds/junk",
    ):
        assert (await other.get(path)).status_code == 404, path
    for decision in ("approve", "reject"):
        answer = await other.post(f"/test_helpers/refunds/{mine['id']}/{decision}")
        assert answer.status_code == 404
    assert (await other.get("/refunds")).json()["data"] == []
    assert (await other.get("/transactions")).json()["data"] == []
    assert (await balance(other))["transaction_count"] == 0
    # A refund entry is no payment: refunding it is refused.
    await review(merchant, mine["id"], "approve")
    (entry,) = (await merchant.get("/transactions", params={"type": "refund"})).json()["data"]
    answer = await merchant.post("/refunds", json={"transaction_id": entry["id"]})
    assert answer.status_code == 400 and answer.json()["details"][0]["field"] == "transaction_id"


async def test_an_expired_session_is_409(
    nursery: trio.Nursery, settings: Settings, clock: trio.testing.MockClock
) -> None:
    ttl = 120
    server = await start_server(
        nursery, attrs.evolve(settings, checkout_ttl_seconds=ttl), clock=TrioClock()
    )
    merchant = await server.merchant()
    session = await create(merchant)
    clock.jump(ttl + 1)
    # Past expires_at a session is unpayable whether or not the sweep has run yet.
    refused = await merchant.post("/refunds", json={"checkout_session_id": session["id"]})
    assert refused.status_code == 409, refused.text
    assert refused.json()["code"] == "checkout_session_not_paid"
    expired = await server.running.service.checkout.expire(session["id"])
    assert expired.status == "expired"
    refused = await merchant.post("/refunds", json={"checkout_session_id": session["id"]})
    assert refused.json()["details"] == {"id": session["id"], "status": "expired"}
    server.stop.set()


async def test_a_subscription_charge_is_refunded_through_its_transaction(server: Server) -> None:
    merchant = await server.merchant()
    sub = await create_subscription(merchant, amount_fgc="20.00")
    approved = await server.running.service.subscriptions.approve(sub["id"], "TEST-0001", "1234")
    assert approved.subscription.status == "active"
    listed = (await merchant.get("/transactions", params={"type": "subscription_charge"})).json()
    (charge,) = listed["data"]
    assert (charge["subscription_id"], charge["amount_fgc"]) == (sub["id"], "20.00")
    made = await refund(merchant, transaction_id=charge["id"], amount_fgc="5", reason="other")
    assert (made["transaction_id"], made["checkout_session_id"]) == (charge["id"], None)
    over = await merchant.post(
        "/refunds", json={"transaction_id": charge["id"], "amount_fgc": "16"}
    )
    assert over.status_code == 400
    assert over.json()["details"] == [
        {
            "field": "amount_fgc",
            "message": "Must be at most 15.00, the refundable rest (20.00 paid, 5.00 refunded "
            "or in review).",
        }
    ]
    await review(merchant, made["id"], "approve")
    summary = await balance(merchant)
    assert (summary["paid_total_fgc"], summary["refunded_fgc"], summary["net_fgc"]) == (
        "20.00",
        "5.00",
        "15.00",
    )
    (entry,) = (await merchant.get("/transactions", params={"type": "refund"})).json()["data"]
    assert (entry["amount_fgc"], entry["refund_id"], entry["subscription_id"]) == (
        "-5.00",
        made["id"],
        sub["id"],
    )
    assert entry["checkout_session_id"] is None
    assert (await merchant.get(f"/transactions/{entry['id']}")).json() == entry
    # The subscription's own record and events are untouched by the refund.
    assert (await merchant.get(f"/subscriptions/{sub['id']}")).json()[
        "charged_total_fgc"
    ] == "20.00"


async def test_bad_bodies_are_400_naming_every_problem(server: Server) -> None:
    merchant = await server.merchant()
    session = f"cs_test_{FAKE}"
    cases: list[tuple[dict[str, Any], list[str]]] = [
        ({}, ["checkout_session_id"]),
        (
            {"checkout_session_id": session, "transaction_id": f"txn_test_{FAKE}"},
            ["transaction_id"],
        ),
        ({"checkout_session_id": None, "transaction_id": None}, ["checkout_session_id"]),
        ({"checkout_session_id": "cs_test_x", "surprise": 1}, ["surprise", "checkout_session_id"]),
        (
            {"transaction_id": 5, "amount_fgc": "0", "reason": "changed_mind"},
            ["transaction_id", "amount_fgc", "reason"],
        ),
        ({"checkout_session_id": session, "amount_fgc": 4.0}, ["amount_fgc"]),
        ({"checkout_session_id": session, "amount_fgc": "4.001"}, ["amount_fgc"]),
        ({"checkout_session_id": session, "metadata": [1]}, ["metadata"]),
        ({"checkout_session_id": session, "metadata": {"k" * 41: 1}}, ["metadata." + "k" * 40]),
    ]
    for body, fields in cases:
        answer = await merchant.post("/refunds", json=body)
        assert answer.status_code == 400, (body, answer.text)
        problems = answer.json()["details"]
        assert [problem["field"] for problem in problems] == fields, (body, problems)
    both = await merchant.post("/refunds", json=cases[1][0])
    assert both.json()["details"][0]["message"] == (
        "Give exactly one of checkout_session_id and transaction_id."
    )
    refused_bodies: list[Any] = [{"amount_fgc": "1"}, []]
    for refused in refused_bodies:
        assert (await merchant.post("/refunds", json=refused)).status_code == 400
    answer = await merchant.post(f"/test_helpers/refunds/re_test_{FAKE}/approve", json={"x": 1})
    assert answer.status_code == 400
    assert (await merchant.get("/balance", params={"at": "now"})).status_code == 400
    assert (await merchant.get("/refunds")).json()["data"] == []


async def test_idempotency_key_replays_the_refund_and_never_makes_a_second(server: Server) -> None:
    merchant = await server.merchant()
    session = await paid_session(server, merchant)
    keyed = {"Idempotency-Key": "refund-1"}
    body = {"checkout_session_id": session["id"]}  # the rest: decided by the first request
    first = await merchant.post("/refunds", json=body, headers=keyed)
    assert first.status_code == 201, first.text
    replay = await merchant.post("/refunds", json=body, headers=keyed)
    assert replay.status_code == 201
    assert replay.headers["Idempotent-Replayed"] == "true"
    assert replay.content == first.content
    other = await merchant.post("/refunds", json={**body, "amount_fgc": "1"}, headers=keyed)
    assert (other.status_code, other.json()["code"]) == (409, "idempotency_key_conflict")
    assert len((await merchant.get("/refunds")).json()["data"]) == 1
    # A refusal is a final answer too: replayed, even once the refund above is rejected.
    refused_key = {"Idempotency-Key": "refund-2"}
    refused = await merchant.post("/refunds", json=body, headers=refused_key)
    assert refused.status_code == 400
    await review(merchant, first.json()["id"], "reject")
    replayed = await merchant.post("/refunds", json=body, headers=refused_key)
    assert (replayed.status_code, replayed.content) == (400, refused.content)
    reviewed = await merchant.post(
        f"/test_helpers/refunds/{first.json()['id']}/approve", headers={"Idempotency-Key": "r"}
    )
    assert reviewed.status_code == 409


async def test_lists_page_newest_first_with_their_filters(server: Server) -> None:
    merchant = await server.merchant()
    sessions = [await paid_session(server, merchant) for _ in range(3)]
    made = [
        await refund(merchant, checkout_session_id=s["id"], amount_fgc="1.00") for s in sessions
    ]
    await review(merchant, made[0]["id"], "approve")
    await review(merchant, made[1]["id"], "reject")

    first = (await merchant.get("/refunds", params={"limit": "2"})).json()
    assert first["has_more"] is True and first["next_cursor"] == first["data"][-1]["id"]
    after = {"limit": "2", "starting_after": first["next_cursor"]}
    second = (await merchant.get("/refunds", params=after)).json()
    assert (second["has_more"], second["next_cursor"]) == (False, None)
    shown = [r["id"] for r in first["data"] + second["data"]]
    assert shown == [r["id"] for r in reversed(made)]
    for status, expected in (("approved", 0), ("rejected", 1), ("pending_review", 2)):
        page = (await merchant.get("/refunds", params={"status": status})).json()
        assert [r["id"] for r in page["data"]] == [made[expected]["id"]], status
    assert (await merchant.get(f"/refunds/{made[2]['id']}")).json() == made[2]

    assert [t["type"] for t in await ledger(merchant)] == [
        "refund",
        "payment",
        "payment",
        "payment",
    ]
    payments = (await merchant.get("/transactions", params={"type": "payment"})).json()["data"]
    assert [t["checkout_session_id"] for t in payments] == [s["id"] for s in reversed(sessions)]
    one = (await merchant.get("/transactions", params={"limit": "1"})).json()
    rest = {"starting_after": one["next_cursor"], "type": "payment"}
    assert len((await merchant.get("/transactions", params=rest)).json()["data"]) == 3
    for path, params in (
        ("/refunds", {"status": "paid"}),
        ("/refunds", {"starting_after": f"re_test_{FAKE}"}),
        ("/transactions", {"type": "charge"}),
        ("/transactions", {"limit": "101"}),
        ("/transactions", {"status": "paid"}),
    ):
        answer = await merchant.get(path, params=params)
        assert answer.status_code == 400, (path, params, answer.text)
    assert (await merchant.get(f"/transactions/txn_test_{FAKE}")).status_code == 404
    assert (await balance(merchant))["transaction_count"] == 4


async def _listed(merchant: MerchantClient, **params: str) -> list[dict[str, Any]]:
    """Every page of GET /transactions with `params`, one row a page (the keyset walked)."""
    rows: list[dict[str, Any]] = []
    cursor: str | None = None
    while True:
        asked = {**params, "limit": "1"} | ({"starting_after": cursor} if cursor else {})
        answer = await merchant.get("/transactions", params=asked)
        assert answer.status_code == 200, answer.text
        page = answer.json()
        rows += page["data"]
        if not page["has_more"]:
            assert page["next_cursor"] is None
            return rows
        cursor = page["next_cursor"]


async def test_the_ledger_filters_by_session_or_subscription_with_type_and_pages(
    server: Server,
) -> None:
    merchant = await server.merchant()
    first, second = [await paid_session(server, merchant) for _ in range(2)]
    sub = await create_subscription(merchant, amount_fgc="20.00")
    await server.running.service.subscriptions.approve(sub["id"], "TEST-0001", "1234")
    (charge,) = await _listed(merchant, subscription_id=sub["id"])
    assert charge["type"] == "subscription_charge"
    refunded = [
        await refund(merchant, checkout_session_id=first["id"], amount_fgc="1.00"),
        await refund(merchant, checkout_session_id=first["id"], amount_fgc="2.00"),
        await refund(merchant, transaction_id=charge["id"], amount_fgc="5.00"),
    ]
    for made in refunded:
        await review(merchant, made["id"], "approve")
    await refund(merchant, checkout_session_id=second["id"], amount_fgc="1.00")  # pending

    of_first = await _listed(merchant, checkout_session_id=first["id"])
    assert [(t["type"], t["refund_id"]) for t in of_first] == [
        ("refund", refunded[1]["id"]),
        ("refund", refunded[0]["id"]),
        ("payment", None),
    ]
    # A refund's entry names what it refunds.
    assert {t["checkout_session_id"] for t in of_first} == {first["id"]}
    assert of_first == [t for t in await ledger(merchant) if t in of_first]
    only_refunds = await _listed(merchant, checkout_session_id=first["id"], type="refund")
    assert only_refunds == of_first[:2]
    (paid,) = await _listed(merchant, checkout_session_id=second["id"])
    assert (paid["type"], paid["checkout_session_id"]) == ("payment", second["id"])
    of_sub = await _listed(merchant, subscription_id=sub["id"])
    assert [(t["type"], t["subscription_id"]) for t in of_sub] == [
        ("refund", sub["id"]),
        ("subscription_charge", sub["id"]),
    ]
    assert of_sub[0]["refund_id"] == refunded[2]["id"] and of_sub[1] == charge
    both = {"checkout_session_id": first["id"], "subscription_id": sub["id"]}
    assert await _listed(merchant, **both) == []

    # Unknown ids, and another merchant's, list nothing (as Stripe's filters do).
    other = await server.merchant()
    for params in (
        {"checkout_session_id": f"cs_test_{FAKE}"},
        {"subscription_id": f"sub_test_{FAKE}"},
    ):
        assert await _listed(merchant, **params) == []
    assert await _listed(other, checkout_session_id=first["id"]) == []
    assert await _listed(other, subscription_id=sub["id"]) == []
    # A value that is no such id: 400 naming it.
    for name, value in (
        ("checkout_session_id", "sub_test_" + FAKE),
        ("subscription_id", "nope"),
        ("checkout_session_id", ""),
    ):
        answer = await merchant.get("/transactions", params={name: value})
        assert answer.status_code == 400, (name, value, answer.text)
        assert [d["field"] for d in answer.json()["details"]] == [name]
