"""The test helpers and a trigger served by `fgcpay serve --workers 2` on PostgreSQL:
the same session paid, and the same subscription approved, by helpers racing on
connections of their own (the kernel hands each to whichever worker accepts, so one
worker answers for an object whose actor lives in the other) changes it once: one 200,
the others 409, one event, one ledger row, each event delivered to the receiver."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import httpx
import trio
from helpers import TEST_SECRET, subscription_body, valid_body
from processes import ServiceProcess
from receiver import start_receiver

RACERS = 8
SESSIONS = 3


async def test_racing_helpers_in_two_workers_change_each_object_once(
    tmp_path: Path, postgres_url: str, nursery: trio.Nursery
) -> None:
    service = ServiceProcess(
        cwd=tmp_path, database_url=postgres_url, workers=2,
        settings={"SECRET_KEY": TEST_SECRET, "RATE_LIMIT_BURST": "1000000"},
    )  # fmt: skip
    created = await service.command("merchant", "create", "--name", "M", "--email", "m@m.test")
    headers = {"Authorization": f"Bearer {created['api_key']}"}
    receiver = await start_receiver(nursery)
    try:
        await service.start()
        api = httpx.AsyncClient(base_url=service.url + "/api/v1", headers=headers, timeout=30)
        endpoint = await api.post("/webhook_endpoints", json={"url": receiver.url})
        assert endpoint.status_code == 201, endpoint.text

        async def race(path: str, body: dict[str, Any]) -> list[int]:
            statuses: list[int] = []

            async def one() -> None:
                # A connection of its own: whichever worker accepts it answers.
                async with httpx.AsyncClient(timeout=30) as client:
                    answer = await client.post(
                        service.url + "/api/v1" + path, json=body, headers=headers
                    )
                statuses.append(answer.status_code)

            async with trio.open_nursery() as racing:
                for _ in range(RACERS):
                    racing.start_soon(one)
            return sorted(statuses)

        sessions = []
        for _ in range(SESSIONS):
            made = await api.post("/checkout/sessions", json=valid_body(amount_fgc="5.00"))
            assert made.status_code == 201, made.text
            sessions.append(made.json()["id"])
        for session_id in sessions:
            path = f"/test_helpers/checkout/sessions/{session_id}/pay"
            assert await race(path, {}) == [200] + [409] * (RACERS - 1)
        sub = await api.post("/subscriptions", json=subscription_body())
        assert sub.status_code == 201, sub.text
        sub_id = sub.json()["id"]
        path = f"/test_helpers/subscriptions/{sub_id}/approve"
        assert await race(path, {"customer_code": "TEST-0001"}) == [200] + [409] * (RACERS - 1)

        # A clock-driven trigger, answered by either worker, its advance run there.
        triggered = await api.post(
            "/test_helpers/triggers", json={"event_type": "subscription.charged"}
        )
        assert triggered.status_code == 201, triggered.text

        ledger = (await api.get("/transactions", params={"limit": "100"})).json()["data"]
        paid = sorted(t["checkout_session_id"] for t in ledger if t["type"] == "payment")
        assert paid == sorted(sessions)
        assert len([t for t in ledger if t["subscription_id"] == sub_id]) == 1
        balance = (await api.get("/balance")).json()
        assert balance["paid_total_fgc"] == "47.50"  # 3 x 5.00, 12.50, 2 x 10.00
        events = (await api.get("/events", params={"limit": "100"})).json()["data"]
        kinds = sorted(
            e["type"] for e in events if e["data"]["object"]["id"] in (*sessions, sub_id)
        )
        assert kinds == sorted(
            ["checkout.session.paid"] * SESSIONS
            + ["subscription.created", "subscription.activated", "subscription.charged"]
        )
        wanted = {e["id"] for e in events}
        assert set(triggered.json()["events"]) <= wanted
        arrived = await receiver.wait_for(len(wanted))
        assert {json.loads(item.body)["id"] for item in arrived} >= wanted
        await api.aclose()
        assert await service.stop() == 0
        assert service.errors_logged() == []
    finally:
        service.kill()
