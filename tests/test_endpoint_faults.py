"""Fault injection per webhook endpoint (contract, "Testing tools"): the endpoint's
`faults`, validated and changed through the API, and what each fault does to the first
attempt of a delivery, seen by a receiver over HTTP and in the delivery log (`injected`),
on both backends; the same seed giving the same faults, with two processes on one
PostgreSQL too."""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
from collections import defaultdict
from pathlib import Path
from typing import Any

import httpx
import pytest
import trio
import trio.testing
from fgcpay.admin import create_merchant
from fgcpay.core.clock import TrioClock
from fgcpay.core.settings import Settings
from fgcpay.domain import faults as fault_rules
from fgcpay.webhooks import WebhookVerificationError, verify_delivery
from helpers import (
    PASSWORD,
    MerchantClient,
    Server,
    add_endpoint,
    assert_documented,
    component,
    create,
    create_subscription,
    new_email,
    open_dashboard,
    sign_in,
    start_server,
    wait_until,
)
from hosted import Customer, paid_session
from processes import ServiceProcess
from receiver import Received, Receiver, start_receiver
from standardwebhooks import Webhook
from standardwebhooks.webhooks import WebhookVerificationError as StandardRefused


async def run_cli(database_url: str, *args: str) -> subprocess.CompletedProcess[str]:
    """`fgcpay ...` as an operator runs it, against the test's database."""
    env = {k: v for k, v in os.environ.items() if not k.startswith("FGCPAY_")}
    env.update({"FGCPAY_DATABASE_URL": database_url, "FGCPAY_LOG_LEVEL": "WARNING"})
    command = [sys.executable, "-m", "fgcpay.cli", *args]
    return await trio.to_thread.run_sync(
        lambda: subprocess.run(
            command, env=env, capture_output=True, text=True, timeout=60, cwd=Path(__file__).parent
        )
    )


CLEAN = {"duplicate": 0.0, "reorder": 0.0, "bad_signature": 0.0, "stale_timestamp": 0.0,
         "delay_ms": 0, "seed": 0}  # fmt: skip


async def faulty_endpoint(
    merchant: MerchantClient, url: str, faults: dict[str, Any], events: list[str] | None = None
) -> dict[str, Any]:
    body: dict[str, Any] = {"url": url, "faults": faults}
    if events is not None:
        body["enabled_events"] = events
    created = await merchant.post("/webhook_endpoints", json=body)
    assert created.status_code == 201, created.text
    answer: dict[str, Any] = created.json()
    return answer


async def deliveries_of(merchant: MerchantClient, endpoint_id: str) -> list[dict[str, Any]]:
    """The endpoint's deliveries, oldest first."""
    page = await merchant.get(
        "/webhook_deliveries", params={"endpoint_id": endpoint_id, "limit": "100"}
    )
    assert page.status_code == 200, page.text
    assert component("WebhookDeliveryList").is_valid(page.json())
    return list(reversed(page.json()["data"]))


def injected(delivery: dict[str, Any]) -> list[str | None]:
    return [attempt["injected"] for attempt in delivery["attempts"]]


def verifying(receiver: Receiver, secret: str) -> None:
    """The receiver answers as a careful merchant's does: 204 when a Standard Webhooks
    library accepts the delivery, 400 when it refuses it."""

    def answer(n: int) -> tuple[int, dict[str, str]]:
        got = receiver.received[n]
        try:
            Webhook(secret).verify(got.body, got.headers)
        except StandardRefused:
            return 400, {}
        return 204, {}

    receiver.script = answer


async def recorded(server: Server, count: int) -> None:
    """Wait until this process has recorded `count` attempts (a duplicate's is part of
    its first attempt's record)."""
    with trio.fail_after(60):
        await server.running.service.dispatcher.wait_for_attempts(count)


# -- the field ------------------------------------------------------------------------------

BAD = [
    ({"duplicate": 1.5}, "faults.duplicate"),
    ({"reorder": True}, "faults.reorder"),
    ({"bad_signature": "0.5"}, "faults.bad_signature"),
    ({"stale_timestamp": -0.1}, "faults.stale_timestamp"),
    ({"stale_timestamp": None}, "faults.stale_timestamp"),
    ({"delay_ms": 30001}, "faults.delay_ms"),
    ({"delay_ms": 1.5}, "faults.delay_ms"),
    ({"delay_ms": False}, "faults.delay_ms"),
    ({"seed": 1.5}, "faults.seed"),
    ({"seed": True}, "faults.seed"),
    ({"seed": 2**63}, "faults.seed"),
    ({"seed": "7"}, "faults.seed"),
    ({"duplicate": 1, "drop": 0.5}, "faults.drop"),
    ([], "faults"),
    ("duplicate", "faults"),
    (1, "faults"),
]


async def test_bad_faults_are_a_400_naming_the_field_and_change_nothing(server: Server) -> None:
    merchant = await server.merchant()
    for faults, field in BAD:
        refused = await merchant.post(
            "/webhook_endpoints", json={"url": "https://hooks.example/a", "faults": faults}
        )
        assert refused.status_code == 400, (faults, refused.text)
        assert refused.json()["code"] == "validation_error"
        assert [d["field"] for d in refused.json()["details"]] == [field], faults
        assert_documented("post", "/webhook_endpoints", refused)
    assert (await merchant.get("/webhook_endpoints")).json()["data"] == []

    endpoint = await faulty_endpoint(merchant, "https://hooks.example/b", {"duplicate": 0.25})
    path = f"/webhook_endpoints/{endpoint['id']}"
    before = (await merchant.get(path)).json()
    for faults, field in BAD:
        refused = await merchant.patch(path, json={"faults": faults})
        assert refused.status_code == 400, (faults, refused.text)
        assert [d["field"] for d in refused.json()["details"]] == [field], faults
        assert_documented("patch", "/webhook_endpoints/{endpoint_id}", refused)
    assert (await merchant.get(path)).json() == before


async def test_faults_are_shown_set_and_cleared_and_only_the_fields_given_change(
    server: Server,
) -> None:
    merchant = await server.merchant()
    plain = await add_endpoint(merchant, "https://hooks.example/plain")
    assert plain["faults"] is None
    endpoint = await faulty_endpoint(
        merchant, "https://hooks.example/f", {"duplicate": 0.5, "delay_ms": 250, "seed": -7}
    )
    shown = {**CLEAN, "duplicate": 0.5, "delay_ms": 250, "seed": -7}
    assert endpoint["faults"] == shown, "omitted keys are 0"
    path = f"/webhook_endpoints/{endpoint['id']}"
    read = await merchant.get(path)
    assert read.json()["faults"] == shown
    assert component("WebhookEndpoint").is_valid(read.json())
    listed = {
        e["id"]: e["faults"] for e in (await merchant.get("/webhook_endpoints")).json()["data"]
    }
    assert listed == {plain["id"]: None, endpoint["id"]: shown}

    moved = await merchant.patch(path, json={"url": "https://hooks.example/g"})
    assert moved.status_code == 200 and moved.json()["faults"] == shown, "faults not given: kept"
    assert (await merchant.patch(path, json={"faults": {"reorder": 1}})).json()["faults"] == {
        **CLEAN,
        "reorder": 1.0,
    }, "a new object replaces the old one whole"
    cleared = await merchant.patch(path, json={"faults": None})
    assert cleared.status_code == 200 and cleared.json()["faults"] is None
    assert cleared.json()["url"] == "https://hooks.example/g"
    assert (await merchant.get(path)).json()["faults"] is None


# -- what each fault does -------------------------------------------------------------------


async def test_a_duplicate_reaches_the_receiver_twice_with_one_webhook_id_and_retries_go_clean(
    nursery: trio.Nursery, settings: Settings, clock: trio.testing.MockClock
) -> None:
    server = await start_server(nursery, settings, clock=TrioClock())
    receiver = await start_receiver(nursery)
    # The first attempt fails, its duplicate succeeds: the first alone settles the delivery.
    receiver.script = lambda n: (500, {}) if n == 0 else (204, {})
    merchant = await server.merchant()
    endpoint = await faulty_endpoint(merchant, receiver.url, {"duplicate": 1})
    await paid_session(server, merchant)
    first, again, retry = await receiver.wait_for(3)
    await recorded(server, 2)
    assert first.body == again.body == retry.body
    ids = {r.headers["webhook-id"] for r in (first, again, retry)}
    assert ids == {json.loads(first.body)["id"]}, "one webhook-id, the event's id"
    for arrival in (first, again, retry):
        Webhook(endpoint["secret"]).verify(arrival.body, arrival.headers)
    assert 5 * 0.9 - 0.5 <= retry.at - first.at <= 5 * 1.1 + 0.5, "the normal schedule"
    (delivery,) = await deliveries_of(merchant, endpoint["id"])
    assert injected(delivery) == [None, "duplicate", None], "the retry has no duplicate"
    assert [a["status_code"] for a in delivery["attempts"]] == [500, 204, 204]
    assert (delivery["status"], delivery["attempt_count"]) == ("succeeded", 3)

    # The same log through the CLI.
    printed = await run_cli(
        settings.database_url, "webhook", "deliveries", "--merchant", merchant.id,
        "--endpoint", endpoint["id"],
    )  # fmt: skip
    assert printed.returncode == 0, printed.stderr
    assert [json.loads(line) for line in printed.stdout.splitlines()] == [delivery]
    await server.shutdown()


async def test_a_bad_signature_is_refused_by_a_standard_webhooks_library_and_the_retry_accepted(
    nursery: trio.Nursery, settings: Settings, clock: trio.testing.MockClock
) -> None:
    server = await start_server(nursery, settings, clock=TrioClock())
    receiver = await start_receiver(nursery)
    merchant = await server.merchant()
    endpoint = await faulty_endpoint(merchant, receiver.url, {"bad_signature": 1})
    verifying(receiver, endpoint["secret"])
    await paid_session(server, merchant)
    first, retry = await receiver.wait_for(2)
    await recorded(server, 2)
    # Both header families are signed with the wrong secret.
    for family in ("service-", "webhook-"):
        alone = {k: v for k, v in first.headers.items() if not k.startswith(family)}
        with pytest.raises(WebhookVerificationError):
            verify_delivery(first.body, alone, endpoint["secret"])
    verify_delivery(retry.body, retry.headers, endpoint["secret"])
    (delivery,) = await deliveries_of(merchant, endpoint["id"])
    assert injected(delivery) == ["bad_signature", None]
    assert [a["status_code"] for a in delivery["attempts"]] == [400, 204]
    assert delivery["status"] == "succeeded"
    await server.shutdown()


async def test_a_stale_timestamp_is_600_seconds_old_and_validly_signed_for_it(
    nursery: trio.Nursery, settings: Settings, clock: trio.testing.MockClock
) -> None:
    server = await start_server(nursery, settings, clock=TrioClock())
    receiver = await start_receiver(nursery)
    merchant = await server.merchant()
    endpoint = await faulty_endpoint(merchant, receiver.url, {"stale_timestamp": 1})
    verifying(receiver, endpoint["secret"])
    await paid_session(server, merchant)
    first, retry = await receiver.wait_for(2)
    await recorded(server, 2)
    stamp = int(first.headers["webhook-timestamp"])
    assert first.headers["service-timestamp"] == str(stamp)
    # Signed correctly for that time: only its age is wrong.
    verify_delivery(first.body, first.headers, endpoint["secret"], now=stamp)
    gap = int(retry.headers["webhook-timestamp"]) - stamp
    assert 600 + 5 * 0.9 - 1 <= gap <= 600 + 5 * 1.1 + 1, gap
    (delivery,) = await deliveries_of(merchant, endpoint["id"])
    assert injected(delivery) == ["stale_timestamp", None]
    assert [a["status_code"] for a in delivery["attempts"]] == [400, 204]
    await server.shutdown()


async def test_a_delay_holds_the_first_attempt_and_no_other_endpoint(
    nursery: trio.Nursery, settings: Settings, clock: trio.testing.MockClock
) -> None:
    server = await start_server(nursery, settings, clock=TrioClock())
    slow, quick = await start_receiver(nursery), await start_receiver(nursery)
    merchant = await server.merchant()
    delayed = await faulty_endpoint(merchant, slow.url, {"delay_ms": 30000})
    await add_endpoint(merchant, quick.url)
    await paid_session(server, merchant)
    (fast,) = await quick.wait_for(1)
    (late,) = await slow.wait_for(1)
    assert late.at - fast.at >= 30 - 0.5, "the other endpoint's delivery did not wait"
    await recorded(server, 2)
    (delivery,) = await deliveries_of(merchant, delayed["id"])
    event = (await merchant.get(f"/events/{delivery['event_id']}")).json()
    (attempt,) = delivery["attempts"]
    assert attempt["injected"] == "delayed"
    assert attempt["at"] >= _plus(event["created_at"], 30), (attempt["at"], event["created_at"])
    await server.shutdown()


def _plus(iso: str, seconds: int) -> str:
    from datetime import datetime, timedelta

    moved = datetime.fromisoformat(iso.replace("Z", "+00:00")) + timedelta(seconds=seconds)
    return moved.strftime("%Y-%m-%dT%H:%M:%S.") + f"{moved.microsecond // 1000:03d}Z"


async def test_a_reorder_lets_a_later_event_arrive_before_an_earlier_one(
    server: Server, nursery: trio.Nursery
) -> None:
    receiver = await start_receiver(nursery)
    merchant = await server.merchant()
    # An approval causes two events in one transaction: activated, then charged.
    endpoint = await faulty_endpoint(
        merchant, receiver.url, {"reorder": 1},
        ["subscription.activated", "subscription.charged"],
    )  # fmt: skip
    subscription = await create_subscription(merchant)
    customer = Customer(server)
    assert (await customer.pay(subscription["id"])).status_code == 303
    await customer.close()
    later, earlier = await receiver.wait_for(2)
    first_sent = json.loads(later.body)
    assert first_sent["type"] == "subscription.charged"
    assert json.loads(earlier.body)["type"] == "subscription.activated"
    assert json.loads(earlier.body)["sequence"] < first_sent["sequence"], "what a receiver checks"
    assert earlier.at - later.at < 2, "released by the next delivery, not by the 2 s limit"
    await recorded(server, 2)
    shown = {d["event_type"]: injected(d) for d in await deliveries_of(merchant, endpoint["id"])}
    # The charge came while the activation was held: sent at once, not held itself.
    assert shown == {"subscription.activated": ["reordered"], "subscription.charged": [None]}


async def test_a_reorder_with_nothing_after_it_goes_after_2_seconds(
    nursery: trio.Nursery, settings: Settings, clock: trio.testing.MockClock
) -> None:
    server = await start_server(nursery, settings, clock=TrioClock())
    receiver = await start_receiver(nursery)
    merchant = await server.merchant()
    endpoint = await faulty_endpoint(merchant, receiver.url, {"reorder": 1})
    session = await create(merchant)
    customer = Customer(server)
    assert (await customer.pay(session["id"])).status_code == 303
    paid = trio.current_time()
    await customer.close()
    (arrival,) = await receiver.wait_for(1)
    assert 2 - 0.1 <= arrival.at - paid <= 2 + 0.5
    await recorded(server, 1)
    (delivery,) = await deliveries_of(merchant, endpoint["id"])
    assert injected(delivery) == ["reordered"] and delivery["status"] == "succeeded"
    await server.shutdown()


async def test_a_delivery_held_when_the_service_stops_is_sent_after_the_restart(
    nursery: trio.Nursery, settings: Settings, clock: trio.testing.MockClock
) -> None:
    server = await start_server(nursery, settings, clock=TrioClock())
    receiver = await start_receiver(nursery)
    merchant = await server.merchant()
    endpoint = await faulty_endpoint(merchant, receiver.url, {"reorder": 1})
    await paid_session(server, merchant)
    dispatcher = server.running.service.dispatcher

    async def held() -> bool:
        return bool(dispatcher._held)

    await wait_until(held, within=1, what="the delivery held back", every=0.001)
    await server.shutdown()
    assert receiver.received == []
    restarted = await start_server(nursery, settings, clock=TrioClock())
    (arrival,) = await receiver.wait_for(1)
    await recorded(restarted, 1)
    (delivery,) = await deliveries_of(
        MerchantClient(merchant.created, restarted.client), endpoint["id"]
    )
    assert delivery["status"] == "succeeded" and delivery["attempt_count"] == 1
    assert json.loads(arrival.body)["id"] == delivery["event_id"]
    await restarted.shutdown()


# -- determinism ------------------------------------------------------------------------------

SEEDED = {"duplicate": 0.5, "bad_signature": 0.3, "stale_timestamp": 0.3, "seed": 20261128}
EVENTS = 8


def predicted(faults: dict[str, Any], count: int) -> list[list[str | None]]:
    """The injected attempts of the endpoint's deliveries 1..count, as the seed decides
    them (every answer a 204: no retries)."""
    parsed = fault_rules.parse_faults(faults)
    assert parsed is not None
    shown: list[list[str | None]] = []
    for ordinal in range(1, count + 1):
        chosen = fault_rules.plan(parsed, ordinal)
        if chosen is None:
            shown.append([None])
        else:
            shown.append([chosen.injected(False)] + (["duplicate"] if chosen.duplicate else []))
    return shown


def test_the_seed_chosen_makes_a_mix_of_faults() -> None:
    shown = predicted(SEEDED, EVENTS)
    firsts = {attempts[0] for attempts in shown}
    assert firsts == {None, "bad_signature", "stale_timestamp"}, shown
    assert 0 < sum(len(attempts) == 2 for attempts in shown) < EVENTS, "some duplicated"
    assert predicted({**SEEDED, "seed": 1}, EVENTS) != shown, "another seed, other faults"


def test_a_probability_is_the_share_of_deliveries_that_get_the_fault() -> None:
    def share(faults: fault_rules.Faults, name: str) -> float:
        plans = [fault_rules.plan(faults, n) for n in range(1, 2001)]
        return sum(bool(p is not None and getattr(p, name)) for p in plans) / len(plans)

    assert share(fault_rules.Faults(duplicate=1.0), "duplicate") == 1.0
    assert share(fault_rules.Faults(duplicate=0.0, reorder=0.3), "duplicate") == 0.0
    assert 0.27 <= share(fault_rules.Faults(reorder=0.3, seed=5), "reorder") <= 0.33
    # Each fault is drawn on its own: one does not decide another.
    both = fault_rules.Faults(duplicate=0.5, reorder=0.5, seed=9)
    plans = [fault_rules.plan(both, n) for n in range(1, 2001)]
    together = sum(bool(p and p.duplicate and p.reorder) for p in plans) / len(plans)
    assert 0.22 <= together <= 0.28
    # Never both signature faults: the bad signature wins.
    signed = fault_rules.Faults(bad_signature=1.0, stale_timestamp=1.0)
    assert fault_rules.plan(signed, 1) == fault_rules.FaultPlan(bad_signature=True)
    # What a delivery stores reads back the same.
    for n in range(1, 50):
        chosen = fault_rules.plan(fault_rules.Faults(0.5, 0.5, 0.5, 0.5, 700, 3), n)
        assert chosen is not None
        assert fault_rules.decode_plan(fault_rules.encode_plan(chosen)) == chosen


async def _pay_through(servers: list[Server], merchant: MerchantClient, count: int) -> list[str]:
    """Pay `count` sessions one after another, through each server in turn; their ids."""
    paid = []
    for n in range(count):
        server = servers[n % len(servers)]
        session = await create(MerchantClient(merchant.created, server.client))
        customer = Customer(server)
        assert (await customer.pay(session["id"])).status_code == 303
        await customer.close()
        paid.append(str(session["id"]))
    return paid


async def _same_faults_twice(servers: list[Server], nursery: trio.Nursery) -> None:
    """Two endpoints with the same faults get the same events in the same order: each
    gets the faults the seed decides, by the deliveries' order alone."""
    receivers = [await start_receiver(nursery) for _ in range(2)]
    merchant = await servers[0].merchant()
    endpoints = [await faulty_endpoint(merchant, r.url, SEEDED) for r in receivers]
    sessions = await _pay_through(servers, merchant, EVENTS)
    expected = predicted(SEEDED, EVENTS)
    sends = sum(len(shown) for shown in expected)
    for receiver in receivers:
        await receiver.wait_for(sends)
    dispatchers = [server.running.service.dispatcher for server in servers]

    async def all_recorded() -> bool:
        return sum(d.attempts for d in dispatchers) >= 2 * EVENTS

    await wait_until(all_recorded, within=60, what="every delivery recorded")
    for endpoint in endpoints:
        found = await deliveries_of(merchant, endpoint["id"])
        by_session = {}
        for delivery in found:
            event = (await merchant.get(f"/events/{delivery['event_id']}")).json()
            by_session[event["data"]["object"]["id"]] = injected(delivery)
        assert [by_session[s] for s in sessions] == expected, endpoint["id"]
    arrivals: dict[str, list[Received]] = defaultdict(list)
    for r in receivers[0].received:
        arrivals[r.headers["webhook-id"]].append(r)
    assert sorted(len(a) for a in arrivals.values()) == sorted(len(s) for s in expected)


async def test_the_same_seed_and_events_give_the_same_faults(
    server: Server, nursery: trio.Nursery
) -> None:
    await _same_faults_twice([server], nursery)


async def test_the_same_seed_gives_the_same_faults_with_two_processes_on_one_postgresql(
    nursery: trio.Nursery, postgres_settings: Settings
) -> None:
    first = await start_server(nursery, postgres_settings)
    second = await start_server(nursery, postgres_settings)
    await _same_faults_twice([first, second], nursery)
    await first.shutdown()
    await second.shutdown()


async def test_a_served_fgcpay_gives_the_same_seed_the_same_faults_on_two_endpoints(
    tmp_path: Path, database_url: str, nursery: trio.Nursery
) -> None:
    """Black box: `fgcpay serve` as an operator runs it (2 workers on PostgreSQL, where
    either may write an event and either may send its deliveries), events made by the
    trigger route; two endpoints with the same seed show the same injected attempts, as
    the seed decides them, and each delivery reaches its receiver once per send."""
    workers = 1 if database_url.startswith("sqlite") else 2
    service = ServiceProcess(cwd=tmp_path, database_url=database_url, workers=workers)
    made = await service.command("merchant", "create", "--name", "S", "--email", "s@s.test")
    receivers = [await start_receiver(nursery) for _ in range(2)]
    try:
        await service.start()
        async with httpx.AsyncClient(
            base_url=service.url + "/api/v1",
            headers={"Authorization": f"Bearer {made['api_key']}"},
            timeout=30,
        ) as api:
            endpoints = []
            for receiver in receivers:
                body = {
                    "url": receiver.url,
                    "faults": SEEDED,
                    "enabled_events": ["checkout.session.paid"],
                }
                created = await api.post("/webhook_endpoints", json=body)
                assert created.status_code == 201, created.text
                endpoints.append(created.json()["id"])
            sessions = []
            for _ in range(EVENTS):
                fired = await api.post(
                    "/test_helpers/triggers", json={"event_type": "checkout.session.paid"}
                )
                assert fired.status_code == 201, fired.text
                sessions.append(fired.json()["object_id"])
            expected = predicted(SEEDED, EVENTS)
            for receiver in receivers:
                await receiver.wait_for(sum(len(shown) for shown in expected))

            async def shown_by_session(endpoint_id: str) -> dict[str, list[str | None]]:
                page = await api.get(
                    "/webhook_deliveries", params={"endpoint_id": endpoint_id, "limit": "100"}
                )
                assert page.status_code == 200, page.text
                found = {}
                for delivery in page.json()["data"]:
                    event = (await api.get(f"/events/{delivery['event_id']}")).json()
                    found[event["data"]["object"]["id"]] = injected(delivery)
                return found

            for endpoint_id in endpoints:

                async def all_recorded(endpoint_id: str = endpoint_id) -> bool:
                    shown = await shown_by_session(endpoint_id)
                    return sorted(map(len, shown.values())) == sorted(map(len, expected))

                await wait_until(all_recorded, within=60, what="every attempt recorded")
                shown = await shown_by_session(endpoint_id)
                assert [shown[s] for s in sessions] == expected, endpoint_id
        for receiver in receivers:
            sends: dict[str, int] = defaultdict(int)
            for got in receiver.received:
                sends[got.headers["webhook-id"]] += 1
            assert sorted(sends.values()) == sorted(map(len, expected))
        assert not service.errors_logged()
    finally:
        service.kill()


async def test_faults_set_again_count_the_deliveries_from_the_first_again(
    server: Server, nursery: trio.Nursery
) -> None:
    receiver = await start_receiver(nursery)
    merchant = await server.merchant()
    endpoint = await faulty_endpoint(merchant, receiver.url, SEEDED)
    await paid_session(server, merchant)
    await paid_session(server, merchant)
    again = await merchant.patch(f"/webhook_endpoints/{endpoint['id']}", json={"faults": SEEDED})
    assert again.status_code == 200
    await paid_session(server, merchant)
    expected = predicted(SEEDED, 2)
    await receiver.wait_for(sum(len(s) for s in expected) + len(expected[0]))
    await recorded(server, 3)
    found = [injected(d) for d in await deliveries_of(merchant, endpoint["id"])]
    assert found == [*expected, expected[0]]


# -- the CLI ----------------------------------------------------------------------------------


async def test_the_cli_creates_an_endpoint_with_faults_and_refuses_bad_ones(
    server: Server, settings: Settings
) -> None:
    merchant = await server.merchant()
    url = settings.database_url
    made = await run_cli(
        url, "webhook-endpoint", "create", "--merchant", merchant.id,
        "--url", "https://hooks.example/cli", "--faults", '{"duplicate": 1, "seed": 9}',
    )  # fmt: skip
    assert made.returncode == 0, made.stderr
    printed = json.loads(made.stdout)
    assert printed["faults"] == {**CLEAN, "duplicate": 1.0, "seed": 9}
    shown = (await merchant.get(f"/webhook_endpoints/{printed['id']}")).json()
    assert shown["faults"] == printed["faults"]
    for faults, says in (("{nope", "--faults must be a JSON object"),
                         ('{"duplicate": 2}', "faults.duplicate"),
                         ('{"seed": true}', "faults.seed"),
                         ("[]", '"field": "faults"')):  # fmt: skip
        refused = await run_cli(
            url, "webhook-endpoint", "create", "--merchant", merchant.id,
            "--url", "https://hooks.example/cli2", "--faults", faults,
        )  # fmt: skip
        assert refused.returncode == 2, (faults, refused.stdout)
        # One line says why (after the line naming the database).
        assert says in refused.stderr.splitlines()[-1], refused.stderr
        assert refused.stdout == ""
    listed = (await merchant.get("/webhook_endpoints")).json()["data"]
    assert [e["url"] for e in listed] == ["https://hooks.example/cli"]


# -- the dashboard ----------------------------------------------------------------------------


async def test_the_dashboard_sets_and_clears_faults_and_shows_the_injected_attempts(
    server: Server, nursery: trio.Nursery
) -> None:
    receiver = await start_receiver(nursery)
    email = new_email()
    created = await create_merchant(server.db, "Acme Coffee", email, password=PASSWORD)
    merchant = MerchantClient(created, server.client)
    dashboard = open_dashboard(server)
    assert (await sign_in(dashboard, email)).status_code == 303
    endpoint = await add_endpoint(merchant, receiver.url)
    page = f"/dashboard/webhooks/{endpoint['id']}"
    opened = await dashboard.get(page)
    assert "Fault injection" in opened.text and "Faults are off" in opened.text
    action = f"{page}/faults"

    refused = await dashboard.submit(action, {"duplicate": "2", "seed": "7"}, page=page)
    assert refused.status_code == 400
    assert 'id="fault-duplicate-problem"' in refused.text, "the field is named"
    assert "Must be a probability" in refused.text
    assert 'value="2"' in refused.text, "what was typed is kept"
    not_a_number = await dashboard.submit(action, {"seed": "seven"}, page=page)
    assert not_a_number.status_code == 400 and 'id="fault-seed-problem"' in not_a_number.text
    assert (await merchant.get(f"/webhook_endpoints/{endpoint['id']}")).json()["faults"] is None

    saved = await dashboard.submit(
        action, {"duplicate": "1", "reorder": "", "delay_ms": "0", "seed": "42"}, page=page
    )
    assert saved.status_code == 303 and saved.headers["location"] == f"{page}?done=faults"
    shown = (await merchant.get(f"/webhook_endpoints/{endpoint['id']}")).json()["faults"]
    assert shown == {**CLEAN, "duplicate": 1.0, "seed": 42}
    opened = await dashboard.get(page)
    assert "Faults are on" in opened.text and 'id="fault-seed"' in opened.text
    assert 'value="42"' in opened.text, "the form shows the faults set"

    await paid_session(server, merchant)
    await receiver.wait_for(2)
    await recorded(server, 1)
    (delivery,) = await deliveries_of(merchant, endpoint["id"])
    listing = await dashboard.get(page)
    assert re.search(r'data-testid="delivery-injected">duplicate<', listing.text), listing.text
    detail = await dashboard.get(f"{page}/deliveries/{delivery['id']}")
    assert detail.status_code == 200
    assert re.findall(r'data-testid="attempt-injected"><code>(\w+)<', detail.text) == ["duplicate"]

    cleared = await dashboard.submit(action, {"clear": "1"}, page=page)
    assert cleared.status_code == 303 and cleared.headers["location"].endswith(
        "done=faults_cleared"
    )
    assert (await merchant.get(f"/webhook_endpoints/{endpoint['id']}")).json()["faults"] is None
    # Without a form token the change is refused, as every dashboard form's.
    forged = await dashboard.client.post(action, data={"duplicate": "1"})
    assert forged.status_code == 400
    assert (await merchant.get(f"/webhook_endpoints/{endpoint['id']}")).json()["faults"] is None
