"""The webhook delivery log: `GET /webhook_deliveries`, `GET /webhook_deliveries/{id}`,
`fgcpay webhook deliveries`, and the warning line per failed attempt, on both backends."""

from __future__ import annotations

import json
import logging
import os
import re
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
import trio
import trio.testing
from fgcpay.core.clock import TrioClock
from fgcpay.core.logs import JsonFormatter
from fgcpay.core.settings import Settings
from fgcpay.storage import Database, Tx, open_database
from fgcpay.storage import _open as storage_module
from fgcpay.storage import webhooks as webhook_rows
from fgcpay.storage._migrations import load_migrations
from helpers import (
    MerchantClient,
    Server,
    add_endpoint,
    assert_documented,
    component,
    parameter,
    schema_validator,
    start_server,
)
from hosted import paid_session
from receiver import reserve_port, start_receiver, url_of

FGCPAY = [sys.executable, "-m", "fgcpay.cli"]
DELIVERY_ID = re.compile(r"^whd_[0-9A-Za-z]{24}$")
TIME = re.compile(r"^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z$")
FAKE = "A" * 24


def cli(database_url: str, *args: str) -> subprocess.CompletedProcess[str]:
    """`fgcpay ...` as an operator runs it, against the test's database."""
    env = {k: v for k, v in os.environ.items() if not k.startswith("FGCPAY_")}
    env.update({"FGCPAY_DATABASE_URL": database_url, "FGCPAY_LOG_LEVEL": "WARNING"})
    return subprocess.run(
        [*FGCPAY, *args],
        env=env,
        capture_output=True,
        text=True,
        timeout=60,
        cwd=Path(__file__).parent,
    )


async def run_cli(database_url: str, *args: str) -> subprocess.CompletedProcess[str]:
    return await trio.to_thread.run_sync(lambda: cli(database_url, *args))


async def event_ids(merchant: MerchantClient) -> list[str]:
    return [e["id"] for e in (await merchant.get("/events")).json()["data"]]


async def deliveries(merchant: MerchantClient, **params: Any) -> dict[str, Any]:
    response = await merchant.get("/webhook_deliveries", params=params)
    assert response.status_code == 200, response.text
    return response.json()  # type: ignore[no-any-return]


async def test_a_500_then_a_200_is_one_delivery_with_two_attempts_in_the_api_and_the_cli(
    nursery: trio.Nursery, settings: Settings, clock: trio.testing.MockClock
) -> None:
    server = await start_server(nursery, settings, clock=TrioClock())
    receiver = await start_receiver(nursery)
    receiver.script = lambda n: (500, {}) if n == 0 else (200, {})
    merchant = await server.merchant()
    endpoint = await add_endpoint(merchant, receiver.url)
    await paid_session(server, merchant)
    (event_id,) = await event_ids(merchant)

    await server.running.service.dispatcher.wait_for_attempts(1)
    pending = (await deliveries(merchant, event_id=event_id))["data"]
    assert [(d["status"], d["attempt_count"]) for d in pending] == [("pending", 1)]
    assert TIME.match(pending[0]["next_attempt_at"])
    first, second = await receiver.wait_for(2)
    assert 5 * 0.9 - 0.5 <= second.at - first.at <= 5 * 1.1 + 0.5  # the retry, on schedule
    await server.running.service.dispatcher.wait_for_attempts(2)

    page = await deliveries(merchant, event_id=event_id)
    assert (page["object"], page["has_more"], page["next_cursor"]) == ("list", False, None)
    (delivery,) = page["data"]
    assert DELIVERY_ID.match(delivery["id"])
    assert {k: v for k, v in delivery.items() if k not in ("id", "created_at", "attempts")} == {
        "object": "webhook_delivery",
        "event_id": event_id,
        "event_type": "checkout.session.paid",
        "endpoint_id": endpoint["id"],
        "status": "succeeded",
        "attempt_count": 2,
        "next_attempt_at": None,
    }
    failed, succeeded = delivery["attempts"]
    assert (failed["status_code"], failed["error"], failed["response_body"]) == (500, None, "nope")
    assert (succeeded["status_code"], succeeded["error"], succeeded["response_body"]) == (
        200,
        None,
        "ok",
    )
    assert failed["at"] < succeeded["at"]  # oldest first (same-width ISO strings sort by time)
    assert all(
        isinstance(a["latency_ms"], int) and a["latency_ms"] >= 0 for a in delivery["attempts"]
    )
    assert component("WebhookDeliveryList").is_valid(page)
    one = await merchant.get(f"/webhook_deliveries/{delivery['id']}")
    assert one.status_code == 200 and one.json() == delivery

    printed = await run_cli(
        settings.database_url,
        "webhook",
        "deliveries",
        "--merchant",
        merchant.id,
        "--event",
        event_id,
    )
    assert printed.returncode == 0, printed.stderr
    assert [json.loads(line) for line in printed.stdout.splitlines()] == [delivery]
    await server.shutdown()


async def test_each_failed_attempt_logs_one_warning_without_body_or_secret(
    nursery: trio.Nursery,
    settings: Settings,
    clock: trio.testing.MockClock,
    caplog: pytest.LogCaptureFixture,
) -> None:
    server = await start_server(nursery, settings, clock=TrioClock())
    receiver = await start_receiver(nursery)
    receiver.script = lambda n: (503, {}) if n == 0 else (200, {})
    refused = reserve_port()  # bound, not listening: no answer comes
    merchant = await server.merchant()
    answering = await add_endpoint(merchant, receiver.url)
    silent = await add_endpoint(merchant, url_of(refused))
    with caplog.at_level(logging.WARNING, logger="fgcpay"):
        await paid_session(server, merchant)
        dispatcher = server.running.service.dispatcher
        await dispatcher.wait_for_attempts(2)
    (event_id,) = await event_ids(merchant)
    lines = [r for r in caplog.records if r.getMessage() == "webhook delivery attempt failed"]
    assert len(lines) == 2
    fields = {r.fields["endpoint_id"]: r.fields for r in lines}  # type: ignore[attr-defined]
    assert set(fields) == {answering["id"], silent["id"]}
    for record in lines:
        entry = record.fields  # type: ignore[attr-defined]
        assert record.levelno == logging.WARNING
        assert entry["event_id"] == event_id and entry["attempt"] == 1
        assert TIME.match(entry["next_attempt_at"])
    assert (fields[answering["id"]]["status_code"], fields[answering["id"]]["error"]) == (503, None)
    assert (
        fields[silent["id"]]["status_code"] is None and "Connect" in fields[silent["id"]]["error"]
    )
    body = receiver.received[0].body.decode()
    for record in lines:
        shown = JsonFormatter().format(record)
        for secret in (answering["secret"], silent["secret"], body, "nope", merchant.key):
            assert secret not in shown
    # The next attempt's time in the line is the one the log shows.
    shown_next = {
        d["endpoint_id"]: d["next_attempt_at"] for d in (await deliveries(merchant))["data"]
    }
    assert shown_next == {e: f["next_attempt_at"] for e, f in fields.items()}
    await server.shutdown()


async def test_filters_select_by_endpoint_event_and_status(
    server: Server, nursery: trio.Nursery
) -> None:
    receiver = await start_receiver(nursery)
    merchant = await server.merchant()
    good = await add_endpoint(merchant, receiver.url)
    bad = await add_endpoint(merchant, url_of(reserve_port()))
    await paid_session(server, merchant)
    await paid_session(server, merchant)
    await server.running.service.dispatcher.wait_for_attempts(4)
    newer, older = await event_ids(merchant)

    listed = await deliveries(merchant)
    assert component("WebhookDeliveryList").is_valid(listed)  # pending, no answer: nulls
    everything = listed["data"]
    assert len(everything) == 4
    assert [d["created_at"] for d in everything] == sorted(
        (d["created_at"] for d in everything), reverse=True
    )
    by_endpoint = (await deliveries(merchant, endpoint_id=bad["id"]))["data"]
    assert {d["endpoint_id"] for d in by_endpoint} == {bad["id"]} and len(by_endpoint) == 2
    assert all(
        d["status"] == "pending" and d["attempts"][0]["status_code"] is None for d in by_endpoint
    )
    by_event = (await deliveries(merchant, event_id=older))["data"]
    assert {d["event_id"] for d in by_event} == {older} and len(by_event) == 2
    succeeded = (await deliveries(merchant, status="succeeded"))["data"]
    assert {(d["endpoint_id"], d["status"]) for d in succeeded} == {(good["id"], "succeeded")}
    assert len(succeeded) == 2
    both = (await deliveries(merchant, endpoint_id=good["id"], event_id=newer, status="succeeded"))[
        "data"
    ]
    assert [(d["endpoint_id"], d["event_id"]) for d in both] == [(good["id"], newer)]
    assert (await deliveries(merchant, status="failed"))["data"] == []
    assert (await deliveries(merchant, endpoint_id="we_" + FAKE))["data"] == []

    # The command takes the same filters and prints the same objects, newest first.
    for options, params in (
        (["--endpoint", bad["id"]], {"endpoint_id": bad["id"]}),
        (["--event", older, "--status", "succeeded"], {"event_id": older, "status": "succeeded"}),
    ):
        api = (await deliveries(merchant, **params))["data"]
        done = await run_cli(
            _database_url(server), "webhook", "deliveries", "--merchant", merchant.id, *options
        )
        assert done.returncode == 0, done.stderr
        assert [json.loads(line)["id"] for line in done.stdout.splitlines()] == [
            d["id"] for d in api
        ]


def _database_url(server: Server) -> str:
    url: str = server.running.service.settings.database_url
    return url


@pytest.mark.parametrize(
    ("name", "value"),
    [
        ("limit", "0"), ("limit", "101"), ("limit", "x"), ("status", "done"), ("status", ""),
        ("event_id", "evt_short"), ("event_id", "cs_test_" + FAKE), ("endpoint_id", "we_x"),
        ("endpoint_id", ""), ("starting_after", ""), ("starting_after", "whd_" + FAKE),
        ("starting_after", "evt_" + FAKE), ("colour", "red"),
    ],
)  # fmt: skip
async def test_a_bad_query_value_is_a_400_naming_the_parameter(
    server: Server, name: str, value: str
) -> None:
    merchant = await server.merchant()
    response = await merchant.get("/webhook_deliveries", params={name: value})
    assert response.status_code == 400, response.text
    body = response.json()
    assert body["code"] == "validation_error"
    assert [d["field"] for d in body["details"]] == [name]
    assert_documented("get", "/webhook_deliveries", response)
    if name != "colour" and value != "whd_" + FAKE:  # a well-formed cursor of nothing: 400 too
        schema = parameter("get", "/webhook_deliveries", name)["schema"]
        typed: Any = int(value) if value.isdigit() else value
        assert not schema_validator(schema).is_valid(typed), (name, value)


async def test_several_bad_parameters_are_named_at_once_and_a_repeat_is_refused(
    server: Server,
) -> None:
    merchant = await server.merchant()
    response = await merchant.get("/webhook_deliveries?status=x&event_id=y&endpoint_id=z&limit=0")
    assert response.status_code == 400
    assert sorted(d["field"] for d in response.json()["details"]) == [
        "endpoint_id",
        "event_id",
        "limit",
        "status",
    ]
    repeated = await merchant.get(f"/webhook_deliveries?event_id=evt_{FAKE}&event_id=evt_{FAKE}")
    assert repeated.status_code == 400
    assert [d["field"] for d in repeated.json()["details"]] == ["event_id"]


async def test_pages_are_newest_first_and_never_repeat_or_skip(
    server: Server, nursery: trio.Nursery
) -> None:
    receiver = await start_receiver(nursery)
    merchant = await server.merchant()
    await add_endpoint(merchant, receiver.url)
    await paid_session(server, merchant)
    (event_id,) = await event_ids(merchant)
    for _ in range(4):  # each redelivery is a new delivery of the same event
        assert (await merchant.post(f"/events/{event_id}/redeliver")).status_code == 202
    everything = (await deliveries(merchant))["data"]
    assert len(everything) == 5

    seen: list[str] = []
    page = await deliveries(merchant, limit=2)
    assert page["has_more"] and page["next_cursor"] == page["data"][-1]["id"]
    seen += [d["id"] for d in page["data"]]
    # A delivery created between pages is newer: it never shifts the next page.
    assert (await merchant.post(f"/events/{event_id}/redeliver")).status_code == 202
    while page["has_more"]:
        page = await deliveries(merchant, limit=2, starting_after=page["next_cursor"])
        seen += [d["id"] for d in page["data"]]
    assert seen == [d["id"] for d in everything]
    assert page["next_cursor"] is None


async def test_another_merchants_delivery_is_not_found_and_not_listed(
    server: Server, nursery: trio.Nursery
) -> None:
    receiver = await start_receiver(nursery)
    owner = await server.merchant()
    stranger = await server.merchant("Someone Else")
    await add_endpoint(owner, receiver.url)
    await paid_session(server, owner)
    (event_id,) = await event_ids(owner)
    (delivery,) = (await deliveries(owner))["data"]

    for path in (
        f"/webhook_deliveries/{delivery['id']}",
        "/webhook_deliveries/whd_" + FAKE,
        "/webhook_deliveries/junk",
    ):
        response = await stranger.get(path)
        assert response.status_code == 404, path
        assert response.json()["code"] == "not_found"
    assert (await deliveries(stranger))["data"] == []
    assert (await deliveries(stranger, event_id=event_id))["data"] == []
    cursor = await stranger.get("/webhook_deliveries", params={"starting_after": delivery["id"]})
    assert cursor.status_code == 400
    assert [d["field"] for d in cursor.json()["details"]] == ["starting_after"]
    unauthenticated = await server.client.get(f"/webhook_deliveries/{delivery['id']}")
    assert unauthenticated.status_code == 401

    done = await run_cli(_database_url(server), "webhook", "deliveries", "--merchant", stranger.id)
    assert (done.returncode, done.stdout) == (0, "")


@pytest.mark.parametrize(
    ("options", "words"),
    [
        (["--merchant", "mer_" + "A" * 16], "no merchant mer_"),
        (["--status", "done"], "--status: Must be one of: pending, succeeded, failed."),
        (["--event", "evt_short"], "--event: Must be an event id"),
        (["--endpoint", "nope"], "--endpoint: Must be a webhook endpoint id"),
    ],
)
async def test_the_command_refuses_bad_options_in_one_line(
    db: Database, database_url: str, options: list[str], words: str
) -> None:
    from fgcpay.admin import create_merchant

    created = await create_merchant(db, "Acme", "ops@example.com")
    argv = ["webhook", "deliveries", "--merchant", created.merchant.id, *options]
    done = await run_cli(database_url, *argv)
    assert done.returncode == 2, done.stderr
    last = done.stderr.strip().splitlines()[-1]
    assert last.startswith("fgcpay:") and words in last, done.stderr
    assert "Traceback" not in done.stderr and done.stdout == ""


NOW_US = 1_900_000_000_000_000


def _old_delivery(tx: Tx) -> None:
    """A merchant, an endpoint, an event and a delivery with one attempt, as written
    before the delivery log (a `dlv_` id)."""
    tx.execute(
        "INSERT INTO merchants (id, name, email, created_at) VALUES (?, ?, ?, ?)",
        "mer_" + "M" * 16, "Old", "old@example.com", NOW_US,
    )  # fmt: skip
    tx.execute(
        "INSERT INTO webhook_endpoints (id, merchant_id, url, enabled_events, secret_sealed,"
        " created_at) VALUES (?, ?, ?, ?, ?, ?)",
        "we_" + "W" * 24, "mer_" + "M" * 16, "https://hooks.example/in", "*", "sealed", NOW_US,
    )  # fmt: skip
    tx.execute(
        "INSERT INTO events (id, merchant_id, type, resource_id, sequence, body, created_at)"
        " VALUES (?, ?, ?, ?, ?, ?, ?)",
        "evt_" + "E" * 24, "mer_" + "M" * 16, "checkout.session.paid", "cs_test_" + "C" * 24,
        2, "{}", NOW_US,
    )  # fmt: skip
    tx.execute(
        "INSERT INTO deliveries (id, event_id, endpoint_id, merchant_id, status, attempts,"
        " next_attempt_at, created_at, updated_at) VALUES (?, ?, ?, ?, 'pending', 1, ?, ?, ?)",
        "dlv_" + "D" * 24, "evt_" + "E" * 24, "we_" + "W" * 24, "mer_" + "M" * 16,
        NOW_US + 5_000_000, NOW_US, NOW_US,
    )  # fmt: skip
    tx.execute(
        "INSERT INTO delivery_attempts (id, delivery_id, attempted_at, response_status,"
        " latency_ms, error, response_body) VALUES (?, ?, ?, ?, ?, ?, ?)",
        "att_" + "T" * 24, "dlv_" + "D" * 24, NOW_US, 500, 12, None, "nope",
    )  # fmt: skip


async def test_deliveries_written_before_the_log_keep_working(
    empty_database_url: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    before = [m for m in load_migrations() if "delivery_ids" not in m.name]
    with monkeypatch.context() as patch:
        patch.setattr(storage_module, "load_migrations", lambda: before)
        async with open_database(empty_database_url, 3) as old:
            await old.write(_old_delivery)
    async with open_database(empty_database_url, 3) as db:
        found = await db.read(webhook_rows.delivery_of, "mer_" + "M" * 16, "whd_" + "D" * 24)
        assert found is not None
        assert (found.status, found.event_type, len(found.attempts)) == (
            "pending",
            "checkout.session.paid",
            1,
        )
        assert (found.attempts[0].status_code, found.attempts[0].response_body) == (500, "nope")
        # Still pending: the dispatcher claims it under its new id.
        assert await db.read(webhook_rows.next_due, _no_limits()) == NOW_US + 5_000_000


def _no_limits() -> Any:
    from fgcpay.domain.deliveries import SenderLimits

    return SenderLimits(8, 8)
