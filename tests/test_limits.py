"""The bounds on how many of a thing a merchant may make where each one makes later work
grow (domain/limits.py): each refused with a clear 400/409 that changes nothing, freed
again where the thing can be deleted, and listed in docs/api.md's "Limits". The bounds
are lowered here (the code reads them at each request), so that reaching them is quick;
both backends."""

from __future__ import annotations

import re
from pathlib import Path

import pytest
from fgcpay.domain import limits
from helpers import Server, add_endpoint, create_subscription, create_test_clock
from hosted import paid_session

API_MD = Path(__file__).resolve().parents[1] / "docs" / "api.md"


async def test_test_clocks_per_merchant(server: Server, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(limits, "MAX_TEST_CLOCKS_PER_MERCHANT", 3)
    merchant = await server.merchant()
    made = [await create_test_clock(merchant, "2027-01-01T00:00:00Z") for _ in range(3)]
    for key in (None, "fourth"):
        headers = {"Idempotency-Key": key} if key else {}
        refused = await merchant.post(
            "/test_clocks", json={"frozen_time": "2027-01-01T00:00:00Z"}, headers=headers
        )
        assert refused.status_code == 409, refused.text
        body = refused.json()
        assert (body["code"], body["details"]) == ("test_clock_limit_reached", {"limit": 3})
        assert "delete" in body["message"] and body["request_id"]
    assert len((await merchant.get("/test_clocks")).json()["data"]) == 3
    # Another merchant has its own; a deleted clock frees its place.
    other = await server.merchant("Other")
    await create_test_clock(other, "2027-01-01T00:00:00Z")
    assert (await merchant.delete(f"/test_clocks/{made[0]['id']}")).status_code == 200
    await create_test_clock(merchant, "2027-01-01T00:00:00Z")


async def test_subscriptions_per_test_clock(
    server: Server, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(limits, "MAX_SUBSCRIPTIONS_PER_TEST_CLOCK", 2)
    merchant = await server.merchant()
    clock = await create_test_clock(merchant, "2027-01-01T00:00:00Z")
    for _ in range(2):
        await create_subscription(merchant, test_clock=clock["id"])
    refused = await merchant.post(
        "/subscriptions",
        json={
            "amount_fgc": "1.00", "currency": "FGC", "interval": "monthly",
            "description": "x", "merchant_customer_reference": "c",
            "success_url": "https://shop.example/ok", "cancel_url": "https://shop.example/no",
            "test_clock": clock["id"],
        },
    )  # fmt: skip
    assert refused.status_code == 400, refused.text
    body = refused.json()
    assert body["code"] == "validation_error"
    assert [d["field"] for d in body["details"]] == ["test_clock"]
    assert "2 subscriptions" in body["details"][0]["message"]
    listed = (await merchant.get("/subscriptions")).json()["data"]
    assert len(listed) == 2
    # Off the clock, or on another one, subscriptions are made as before.
    await create_subscription(merchant)
    other = await create_test_clock(merchant, "2027-01-01T00:00:00Z")
    await create_subscription(merchant, test_clock=other["id"])


async def test_refunds_per_payment(server: Server, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(limits, "MAX_REFUNDS_PER_PAYMENT", 3)
    merchant = await server.merchant()
    session = await paid_session(server, merchant)
    first = None
    for _ in range(3):
        made = await merchant.post(
            "/refunds", json={"checkout_session_id": session["id"], "amount_fgc": "0.01"}
        )
        assert made.status_code == 201, made.text
        first = first or made.json()
    assert first is not None
    # Rejected refunds count too: created and rejected again and again, they are rows.
    rejected = await merchant.post(f"/test_helpers/refunds/{first['id']}/reject")
    assert rejected.status_code == 200, rejected.text
    for body, field in (
        ({"checkout_session_id": session["id"], "amount_fgc": "0.01"}, "checkout_session_id"),
        ({"transaction_id": first["transaction_id"], "amount_fgc": "0.01"}, "transaction_id"),
    ):
        refused = await merchant.post("/refunds", json=body)
        assert refused.status_code == 400, refused.text
        assert refused.json()["code"] == "validation_error"
        assert [d["field"] for d in refused.json()["details"]] == [field]
    assert len((await merchant.get("/refunds")).json()["data"]) == 3
    # Another merchant naming this transaction learns nothing: 404, as for any unknown one.
    other = await server.merchant("Other")
    foreign = await other.post("/refunds", json={"transaction_id": first["transaction_id"]})
    assert foreign.status_code == 404, foreign.text


async def test_webhook_endpoints_per_merchant(
    server: Server, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(limits, "MAX_WEBHOOK_ENDPOINTS_PER_MERCHANT", 2)
    merchant = await server.merchant()
    made = [await add_endpoint(merchant, f"https://hooks.example/{n}") for n in range(2)]
    refused = await merchant.post("/webhook_endpoints", json={"url": "https://hooks.example/3"})
    assert refused.status_code == 400, refused.text
    assert [d["field"] for d in refused.json()["details"]] == ["url"]
    assert "2 endpoints" in refused.json()["details"][0]["message"]
    assert len((await merchant.get("/webhook_endpoints")).json()["data"]) == 2
    assert (await merchant.delete(f"/webhook_endpoints/{made[0]['id']}")).status_code == 200
    await add_endpoint(merchant, "https://hooks.example/3")


def test_every_limit_is_in_the_api_reference() -> None:
    text = API_MD.read_text()
    section = text[text.index("\n## Limits\n") :]
    section = section[: section.find("\n## ", 1)]
    for label, value in (
        ("test clocks per merchant", limits.MAX_TEST_CLOCKS_PER_MERCHANT),
        ("subscriptions per test clock", limits.MAX_SUBSCRIPTIONS_PER_TEST_CLOCK),
        ("refunds per payment", limits.MAX_REFUNDS_PER_PAYMENT),
        ("webhook endpoints per merchant", limits.MAX_WEBHOOK_ENDPOINTS_PER_MERCHANT),
    ):
        assert re.search(rf"^\| {label} \| {value:,}\b", section, re.M), label
    for code in ("test_clock_advance_too_far", "test_clock_limit_reached", "invalid_json"):
        assert code in section
