"""The bounds on how many of a thing a merchant may make where each one makes later work
grow (domain/limits.py): each refused with a clear 400/409 that changes nothing, freed
again where the thing can be deleted, and listed in docs/api.md's "Limits". The bounds
are lowered here (the code reads them at each request), so that reaching them is quick;
both backends."""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
from contextlib import AsyncExitStack
from pathlib import Path
from typing import Any

import pytest
import trio
from fgcpay.admin import KeyInputError, create_api_key, create_merchant, revoke_api_key
from fgcpay.domain import limits
from fgcpay.storage import merchants, open_database
from helpers import (
    Server,
    add_endpoint,
    create_subscription,
    create_test_clock,
    new_email,
    signed_up,
    wait_until,
)
from hosted import Customer, new_session, paid_session
from trio_websocket import ConnectionRejected, open_websocket_url

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


async def test_charges_of_a_test_clock_over_its_life(
    server: Server, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(limits, "MAX_CHARGES_PER_TEST_CLOCK", 5)
    merchant = await server.merchant()
    anchor = "2027-01-01T00:00:00Z"
    clock = await create_test_clock(merchant, anchor)
    sub = await create_subscription(merchant, interval="daily", test_clock=clock["id"])
    approved = await server.running.service.subscriptions.approve(sub["id"], "TEST-0001", "1234")
    assert approved.outcome == "approved"  # its first charge
    advance = f"/test_clocks/{clock['id']}/advance"

    async def ready() -> bool:
        got = await merchant.get(f"/test_clocks/{clock['id']}")
        return bool(got.json()["status"] == "ready")

    def refused_to(response: Any, left: int) -> str:
        assert response.status_code == 400, response.text
        body = response.json()
        assert body["code"] == "test_clock_advance_too_far" and body["request_id"]
        assert "at most 5 charges over its life" in body["message"]
        assert f"may bill {left} more" in body["message"] and "delete the clock" in body["message"]
        found: str = body["details"]["max_frozen_time"]
        return found

    # Ten days would be ten renewals; four are left: up to just before the fifth day's.
    furthest = refused_to(
        await merchant.post(advance, json={"frozen_time": "2027-01-11T00:00:00Z"}), 4
    )
    assert furthest == "2027-01-05T23:59:59.999Z"
    unchanged = (await merchant.get(f"/test_clocks/{clock['id']}")).json()
    assert unchanged["frozen_time"] == "2027-01-01T00:00:00.000Z"
    ok = await merchant.post(advance, json={"frozen_time": furthest})
    assert ok.status_code == 200, ok.text
    await wait_until(ready, within=60.0, what="the test clock reads ready")
    listed = await merchant.get("/transactions", params={"subscription_id": sub["id"]})
    assert len(listed.json()["data"]) == 5
    # Nothing is left: no further advance that bills, not even a day.
    assert (
        refused_to(await merchant.post(advance, json={"frozen_time": "2027-01-07T00:00:00Z"}), 0)
        == furthest
    )
    # Deleting the clock ends it; another clock starts afresh.
    assert (await merchant.delete(f"/test_clocks/{clock['id']}")).status_code == 200
    fresh = await create_test_clock(merchant, anchor)
    await create_subscription(merchant, interval="daily", test_clock=fresh["id"])
    moved = await merchant.post(
        f"/test_clocks/{fresh['id']}/advance", json={"frozen_time": "2027-01-11T00:00:00Z"}
    )
    assert moved.status_code == 200, moved.text  # nothing approved on it: nothing billed


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


KEYS = "/dashboard/api-keys"


async def test_active_api_keys_per_merchant_in_the_dashboard(
    server: Server, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(limits, "MAX_ACTIVE_API_KEYS_PER_MERCHANT", 2)
    monkeypatch.setattr(limits, "MOST_REVOKED_API_KEYS_SHOWN", 2)
    dashboard, email = await signed_up(server)
    merchant = await server.db.read(merchants.merchant_by_email, email)
    assert merchant is not None
    for name in ("one", "two"):
        await dashboard.create_key(name)
    refused = await dashboard.submit(KEYS, {"name": "three"})
    assert refused.status_code == 409, refused.text
    assert "You have 2 active keys, the most one may have: revoke one first." in refused.text
    assert 'data-testid="raw-key"' not in refused.text
    assert 'value="three"' in refused.text  # the form keeps what was typed
    keys = await server.db.read(merchants.api_keys_of, merchant.id)
    assert sorted(str(key.name) for key in keys) == ["one", "two"]
    # A revoked key frees its place; revoked keys are not bounded, but the page lists
    # only the most recently revoked ones and says how many it leaves out.
    for round_ in range(3):
        (active, *_) = [k for k in await server.db.read(merchants.api_keys_of, merchant.id)
                        if k.revoked_at is None]  # fmt: skip
        revoked = await dashboard.submit(f"{KEYS}/{active.id}/revoke", {})
        assert revoked.status_code == 303, revoked.text
        await dashboard.create_key(f"again {round_}")
    page = await dashboard.client.get(KEYS)
    assert page.status_code == 200
    rows = re.findall(r'<tr data-key-id="(key_[A-Za-z0-9_]+)">', page.text)
    assert len(rows) == 4, rows  # 2 active, the 2 most recently revoked
    assert "1 older revoked key is not shown." in page.text
    keys = await server.db.read(merchants.api_keys_of, merchant.id)
    assert len(keys) == 5 and sum(key.revoked_at is None for key in keys) == 2
    assert {k.id for k in keys if k.revoked_at is None} <= set(rows)
    await dashboard.aclose()


async def test_active_api_keys_per_merchant_by_the_operator(
    database_url: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(limits, "MAX_ACTIVE_API_KEYS_PER_MERCHANT", 2)
    async with open_database(database_url) as db:
        created = await create_merchant(db, "Acme", new_email())  # its first key
        merchant_id = created.merchant.id
        second = await create_api_key(db, merchant_id, "second")
        with pytest.raises(KeyInputError) as refused:
            await create_api_key(db, merchant_id, "third")
        assert str(refused.value) == (
            f"merchant {merchant_id} has 2 active keys, the most one may have:"
            " revoke one first (fgcpay key revoke)"
        )
        assert len(await db.read(merchants.api_keys_of, merchant_id)) == 2
        await revoke_api_key(db, merchant_id, second.key.id)
        await create_api_key(db, merchant_id, "third")
        # Another merchant has its own.
        other = await create_merchant(db, "Other", new_email())
        await create_api_key(db, other.merchant.id)


def test_key_create_at_the_bound_says_so_in_one_line_and_exits_2(
    tmp_path: Path, database_url: str
) -> None:
    """The operator's command, at the real bound: the merchant's first key and 99 more
    made in-process, then `fgcpay key create` refused."""

    async def fill() -> str:
        async with open_database(database_url) as db:
            merchant_id = (await create_merchant(db, "Acme", new_email())).merchant.id
            for n in range(limits.MAX_ACTIVE_API_KEYS_PER_MERCHANT - 1):
                await create_api_key(db, merchant_id, f"key {n}")
            return merchant_id

    merchant_id = trio.run(fill)
    env = {k: v for k, v in os.environ.items() if not k.startswith("FGCPAY_")}
    env.update({"FGCPAY_DATABASE_URL": database_url, "FGCPAY_SECRET_KEY": "s" * 40})
    result = subprocess.run(
        [sys.executable, "-m", "fgcpay.cli", "key", "create", "--merchant", merchant_id],
        cwd=tmp_path, env=env, capture_output=True, text=True, timeout=90,
    )  # fmt: skip
    assert result.returncode == 2, result.stderr
    assert result.stdout == ""
    lines = [line for line in result.stderr.splitlines() if not line.startswith("{")]
    assert lines[0].startswith("fgcpay: database "), result.stderr
    assert lines[1:] == [
        f"fgcpay: merchant {merchant_id} has 100 active keys, the most one may have:"
        " revoke one first (fgcpay key revoke)"
    ]


def _socket_url(server: Server, session_id: str) -> str:
    return server.url.replace("http://", "ws://") + f"/checkout/{session_id}/ws"


async def _refusal(server: Server, session_id: str) -> ConnectionRejected:
    try:
        async with open_websocket_url(_socket_url(server, session_id)):
            raise AssertionError("the handshake was accepted")
    except ConnectionRejected as rejected:
        return rejected


async def test_websockets_per_hosted_page(server: Server, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(limits, "MAX_STATUS_SOCKETS_PER_PAGE", 2)
    _, session = await new_session(server)
    sid = str(session["id"])
    async with AsyncExitStack() as held:
        sockets = [
            await held.enter_async_context(open_websocket_url(_socket_url(server, sid)))
            for _ in range(2)
        ]
        for ws in sockets:
            assert json.loads(await ws.get_message()) == {"id": sid, "status": "created"}
        refused = await _refusal(server, sid)
        assert refused.status_code == 429
        headers = {k.decode().lower(): v.decode() for k, v in refused.headers or []}
        assert headers["retry-after"] == "30"
        body = json.loads(refused.body or b"")
        assert body["code"] == "rate_limited" and body["request_id"]
        assert body["details"] == {"retry_after_seconds": 30}
        assert "2 live status connections" in body["message"]
        assert f"GET /checkout/{sid}/status" in body["message"]
        # Another page has its own; the refused page's status is still polled.
        _, other = await new_session(server)
        async with open_websocket_url(_socket_url(server, str(other["id"]))) as ws:
            assert json.loads(await ws.get_message())["status"] == "created"
        polled = await server.client.get(f"{server.url}/checkout/{sid}/status")
        assert polled.status_code == 200 and polled.json()["status"] == "created"
        # The held sockets still hear the payment.
        customer = Customer(server)
        assert (await customer.pay(sid)).status_code == 303
        await customer.close()
        for ws in sockets:
            assert json.loads(await ws.get_message()) == {"id": sid, "status": "paid"}
    # Closed sockets free their places: nothing is left held.
    assert server.running.service.status_hub.subscribers() == 0
    async with open_websocket_url(_socket_url(server, sid)) as ws:
        assert json.loads(await ws.get_message()) == {"id": sid, "status": "paid"}


async def test_websockets_of_all_hosted_pages(
    server: Server, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(limits, "MAX_STATUS_SOCKETS_PER_PROCESS", 2)
    sids = [str((await new_session(server))[1]["id"]) for _ in range(3)]
    async with AsyncExitStack() as held:
        for sid in sids[:2]:
            ws = await held.enter_async_context(open_websocket_url(_socket_url(server, sid)))
            assert json.loads(await ws.get_message())["status"] == "created"
        refused = await _refusal(server, sids[2])
        assert refused.status_code == 503
        headers = {k.decode().lower(): v.decode() for k, v in refused.headers or []}
        assert headers["retry-after"] == "30"
        body = json.loads(refused.body or b"")
        assert body["code"] == "service_unavailable" and body["request_id"]
        assert f"poll GET /checkout/{sids[2]}/status" in body["message"]
    async with open_websocket_url(_socket_url(server, sids[2])) as ws:
        assert json.loads(await ws.get_message())["status"] == "created"


def test_every_limit_is_in_the_api_reference() -> None:
    text = API_MD.read_text()
    section = text[text.index("\n## Limits\n") :]
    section = section[: section.find("\n## ", 1)]
    for label, value in (
        ("test clocks per merchant", limits.MAX_TEST_CLOCKS_PER_MERCHANT),
        ("subscriptions per test clock", limits.MAX_SUBSCRIPTIONS_PER_TEST_CLOCK),
        ("refunds per payment", limits.MAX_REFUNDS_PER_PAYMENT),
        ("webhook endpoints per merchant", limits.MAX_WEBHOOK_ENDPOINTS_PER_MERCHANT),
        ("charges of a test clock over its life", limits.MAX_CHARGES_PER_TEST_CLOCK),
        ("active API keys per merchant", limits.MAX_ACTIVE_API_KEYS_PER_MERCHANT),
        ("websockets per hosted page", limits.MAX_STATUS_SOCKETS_PER_PAGE),
        ("websockets of all hosted pages", limits.MAX_STATUS_SOCKETS_PER_PROCESS),
        ("live sandboxes per merchant", limits.MAX_LIVE_SANDBOXES),
    ):
        assert re.search(rf"^\| {label} \| {value:,}\b", section, re.M), label
    for code in (
        "test_clock_advance_too_far",
        "test_clock_limit_reached",
        "invalid_json",
        "sandbox_limit_reached",
    ):
        assert code in section
