"""Triggers over HTTP and from the command line, on both backends: every event type of
the contract's list, on objects the trigger makes and on the merchant's own, each
delivered to a receiver as an event of that type about that object; the answers'
`events`, oldest first; the 400s, 404s and 409s; and `fgcpay trigger`."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from typing import Any

import trio
from fgcpay.core.settings import Settings
from fgcpay.domain.events import EVENT_TYPES
from helpers import TEST_SECRET, MerchantClient, Server, add_endpoint, create, create_subscription
from receiver import Receiver, start_receiver

FAKE = "0" * 24


async def _trigger(
    merchant: MerchantClient, event_type: str, object_id: str | None = None
) -> dict[str, Any]:
    body: dict[str, Any] = {"event_type": event_type}
    if object_id is not None:
        body["object"] = object_id
    made = await merchant.post("/test_helpers/triggers", json=body)
    assert made.status_code == 201, (event_type, made.text)
    answer: dict[str, Any] = made.json()
    assert set(answer) == {"object", "event_type", "object_id", "events"}
    assert (answer["object"], answer["event_type"]) == ("trigger", event_type)
    return answer


async def _event(merchant: MerchantClient, event_id: str) -> dict[str, Any]:
    got = await merchant.get(f"/events/{event_id}")
    assert got.status_code == 200, got.text
    found: dict[str, Any] = got.json()
    return found


async def _delivered_types(receiver: Receiver, count: int) -> dict[str, dict[str, Any]]:
    """The deliveries received, by event id."""
    return {
        body["id"]: body
        for body in (json.loads(item.body) for item in await receiver.wait_for(count))
    }


async def _check(merchant: MerchantClient, answer: dict[str, Any]) -> list[dict[str, Any]]:
    """The answer's events, as the API shows them: oldest first, the last one of the
    trigger's type about its object."""
    events = [await _event(merchant, event_id) for event_id in answer["events"]]
    assert events, answer
    stamps = [e["created_at"] for e in events]
    assert stamps == sorted(stamps), answer
    typed = [e for e in events if e["type"] == answer["event_type"]]
    assert typed, ([e["type"] for e in events], answer)
    assert typed[-1]["data"]["object"]["id"] == answer["object_id"]
    return events


async def test_every_event_type_on_new_objects_is_delivered(
    server: Server, nursery: trio.Nursery
) -> None:
    merchant = await server.merchant()
    receiver = await start_receiver(nursery)
    await add_endpoint(merchant, receiver.url)
    made: list[str] = []
    for event_type in EVENT_TYPES:
        started = time.monotonic()
        answer = await _trigger(merchant, event_type)
        assert time.monotonic() - started < 1.0, event_type  # clock-driven ones too
        await _check(merchant, answer)
        made += answer["events"]
    delivered = await _delivered_types(receiver, len(made))
    assert sorted(delivered) == sorted(made)
    for event_type in EVENT_TYPES:
        assert any(body["type"] == event_type for body in delivered.values()), event_type


async def test_clock_driven_triggers_advance_a_new_test_clock(server: Server) -> None:
    merchant = await server.merchant()
    charged = await _trigger(merchant, "subscription.charged")
    events = await _check(merchant, charged)
    assert [e["type"] for e in events] == [
        "subscription.created",
        "subscription.activated",
        "subscription.charged",
        "subscription.charged",
    ]
    sub = (await merchant.get(f"/subscriptions/{charged['object_id']}")).json()
    assert (sub["status"], sub["charge_count"]) == ("active", 2)
    test_clock = (await merchant.get(f"/test_clocks/{sub['test_clock']}")).json()
    assert test_clock["status"] == "ready"

    failed = await _trigger(merchant, "subscription.payment_failed")
    types = [e["type"] for e in await _check(merchant, failed)]
    assert types[-1] == "subscription.payment_failed"
    sub = (await merchant.get(f"/subscriptions/{failed['object_id']}")).json()
    assert sub["status"] == "past_due"

    ended = await _trigger(merchant, "subscription.ended")
    assert [e["type"] for e in await _check(merchant, ended)][-1] == "subscription.ended"
    sub = (await merchant.get(f"/subscriptions/{ended['object_id']}")).json()
    assert (sub["status"], sub["ended_reason"]) == ("ended", "end_date_reached")


async def test_triggers_on_the_merchants_own_objects(server: Server, nursery: trio.Nursery) -> None:
    merchant = await server.merchant()
    receiver = await start_receiver(nursery)
    await add_endpoint(merchant, receiver.url)
    expected: dict[str, tuple[str, str]] = {}  # event id -> (type, object id)

    async def on(event_type: str, object_id: str) -> dict[str, Any]:
        answer = await _trigger(merchant, event_type, object_id)
        await _check(merchant, answer)
        for event_id in answer["events"]:
            expected[event_id] = (event_type, answer["object_id"])
        return answer

    session = await create(merchant)
    paid = await on("checkout.session.paid", session["id"])
    assert paid["object_id"] == session["id"] and len(paid["events"]) == 1
    expired = await on("checkout.session.expired", (await create(merchant))["id"])
    assert len(expired["events"]) == 1
    refunded = await on("refund.created", session["id"])
    assert refunded["object_id"].startswith("re_test_")
    approved = await on("refund.approved", refunded["object_id"])
    assert approved["object_id"] == refunded["object_id"] and len(approved["events"]) == 1

    other = await create(merchant)
    await merchant.post(f"/test_helpers/checkout/sessions/{other['id']}/pay")
    second = await on("refund.created", other["id"])
    await on("refund.rejected", second["object_id"])

    activated = await on("subscription.activated", (await create_subscription(merchant))["id"])
    assert len(activated["events"]) == 2  # activated, then the first charge
    charged = await on("subscription.charged", (await create_subscription(merchant))["id"])
    assert len(charged["events"]) == 2
    cancelled = await on("subscription.cancelled", activated["object_id"])
    assert len(cancelled["events"]) == 1

    # Every trigger's events, beside the others made here (two subscriptions' creation, a
    # session paid by the helper).
    delivered = await _delivered_types(receiver, len(expected) + 3)
    assert set(expected) <= set(delivered)
    for event_id, (event_type, object_id) in expected.items():
        body = delivered[event_id]
        assert body["data"]["object"]["id"] == object_id or body["type"] != event_type
    for event_type, object_id in set(expected.values()):
        assert any(
            body["type"] == event_type and body["data"]["object"]["id"] == object_id
            for body in delivered.values()
        ), event_type


async def test_triggers_refuse_what_the_flow_would_refuse(server: Server) -> None:
    merchant = await server.merchant()
    other = await server.merchant("Other Shop")
    paid = await _trigger(merchant, "checkout.session.paid")
    session = paid["object_id"]
    sub = (await _trigger(merchant, "subscription.cancelled"))["object_id"]
    refund = (await _trigger(merchant, "refund.approved"))["object_id"]
    fresh = (await create(merchant))["id"]

    async def refused(body: dict[str, Any], by: MerchantClient = merchant) -> dict[str, Any]:
        answer = await by.post("/test_helpers/triggers", json=body)
        assert answer.status_code >= 400, answer.text
        found: dict[str, Any] = {"status": answer.status_code, **answer.json()}
        return found

    for event_type, object_id, code in (
        ("checkout.session.paid", session, "checkout_session_not_open"),
        ("checkout.session.expired", session, "checkout_session_not_open"),
        ("refund.created", fresh, "checkout_session_not_paid"),
        ("subscription.activated", sub, "subscription_not_approvable"),
        ("subscription.cancelled", sub, "subscription_not_cancellable"),
        ("refund.rejected", refund, "refund_already_reviewed"),
    ):
        answer = await refused({"event_type": event_type, "object": object_id})
        assert (answer["status"], answer["code"]) == (409, code), (event_type, answer)
    missing: list[dict[str, Any]] = [
        {"event_type": "checkout.session.paid", "object": f"cs_test_{FAKE}"},
        {"event_type": "refund.approved", "object": f"re_test_{FAKE}"},
        {"event_type": "subscription.activated", "object": f"sub_test_{FAKE}"},
        {"event_type": "checkout.session.paid", "object": "nothing_like_an_id"},
    ]
    for body in missing:
        assert (await refused(body))["status"] == 404, body
    answer = await refused({"event_type": "checkout.session.paid", "object": fresh}, other)
    assert answer["status"] == 404
    bad: list[tuple[dict[str, Any], str]] = [
        ({"event_type": "charge.succeeded"}, "event_type"),
        ({}, "event_type"),
        ({"event_type": "checkout.session.paid", "object": sub}, "object"),
        ({"event_type": "subscription.created", "object": sub}, "object"),
        ({"event_type": "refund.created", "object": 7}, "object"),
        ({"event_type": "refund.created", "extra": 1}, "extra"),
    ]
    for body, field in bad:
        answer = await refused(body)
        assert answer["status"] == 400, (body, answer)
        assert [d["field"] for d in answer["details"]] == [field], (body, answer)
    # Nothing refused changed the fresh session.
    assert (await merchant.get(f"/checkout/sessions/{fresh}")).json()["status"] == "created"


async def test_the_trigger_command_makes_the_events_the_service_delivers(
    server: Server, nursery: trio.Nursery, settings: Settings
) -> None:
    merchant = await server.merchant()
    receiver = await start_receiver(nursery)
    await add_endpoint(merchant, receiver.url)
    session = await create(merchant)
    env = {k: v for k, v in os.environ.items() if not k.startswith("FGCPAY_")}
    env |= {"FGCPAY_DATABASE_URL": settings.database_url, "FGCPAY_SECRET_KEY": TEST_SECRET}

    async def fgcpay(*args: str) -> subprocess.CompletedProcess[bytes]:
        return await trio.run_process(
            [sys.executable, "-m", "fgcpay.cli", "trigger", *args],
            env=env,
            capture_stdout=True,
            capture_stderr=True,
            check=False,
        )

    done = await fgcpay(
        "checkout.session.paid", "--merchant", merchant.id, "--object", session["id"]
    )
    assert done.returncode == 0, done.stderr
    (line,) = done.stdout.decode().splitlines()
    answer = json.loads(line)
    assert (answer["object"], answer["object_id"]) == ("trigger", session["id"])
    made = await fgcpay("subscription.payment_failed", "--merchant", merchant.id)
    assert made.returncode == 0, made.stderr
    failed = json.loads(made.stdout)
    await _check(merchant, failed)

    wanted = [*answer["events"], *failed["events"]]
    delivered = await _delivered_types(receiver, len(wanted))
    assert sorted(delivered) == sorted(wanted)
    assert delivered[answer["events"][0]]["type"] == "checkout.session.paid"

    again = await fgcpay(
        "checkout.session.paid", "--merchant", merchant.id, "--object", session["id"]
    )
    assert again.returncode == 2 and again.stdout == b""
    assert again.stderr.decode().splitlines()[-1].startswith("fgcpay: checkout_session_not_open: ")
    unknown = await fgcpay("charge.succeeded", "--merchant", merchant.id)
    assert unknown.returncode == 2
    assert "event_type: Must be an event type" in unknown.stderr.decode().splitlines()[-1]
    nobody = await fgcpay("checkout.session.paid", "--merchant", "mer_" + "0" * 16)
    assert nobody.returncode == 2
    assert nobody.stderr.decode().splitlines()[-1] == "fgcpay: no merchant mer_0000000000000000"


def test_the_api_reference_has_the_table_the_triggers_follow() -> None:
    """docs/api.md's trigger table: one row per event type, in the contract's order, saying
    what `PLANS` (the code's table) does."""
    from pathlib import Path

    from fgcpay.domain.test_helpers import PLANS

    api = (Path(__file__).resolve().parent.parent / "docs" / "api.md").read_text()
    rows = [line for line in api.splitlines() if line.startswith("| `") and "trigger" not in line]
    typed = [row for row in rows if row.split("`")[1] in PLANS]
    assert [row.split("`")[1] for row in typed] == list(EVENT_TYPES)
    for row, plan in zip(typed, PLANS.values(), strict=True):
        cells = [cell.strip() for cell in row.strip("|").split("|")]
        assert cells[1:3] == [plan.makes, plan.on_object or "-"], row
