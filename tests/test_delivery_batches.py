"""Deliveries claimed and recorded in batches, on both backends: one claim takes a batch
within the sender limits (with what it takes to send each), any number of claimers never
take one delivery twice, a claim never recorded lapses to another claimer, a batch of
attempts with every kind of outcome is recorded each as it went, and a stuck endpoint
holds its own slots while another merchant's backlog drains."""

from __future__ import annotations

import json
import math
from datetime import datetime
from typing import Any

import pytest
import trio
import trio.testing
from fgcpay.admin import create_merchant
from fgcpay.core.clock import TrioClock
from fgcpay.core.settings import Settings
from fgcpay.domain import ids
from fgcpay.domain.deliveries import SenderLimits
from fgcpay.domain.endpoints import WebhookEndpoint
from fgcpay.domain.events import new_event
from fgcpay.storage import Database, Tx, open_database
from fgcpay.storage import webhooks as webhook_rows
from fgcpay.storage.webhooks import AttemptRecord, DeliveryJob
from helpers import NOW_US, SECOND, add_endpoint, queue_events, start_server
from hosted import paid_session
from receiver import reserve_port, start_receiver, url_of

LEASE_US = 60 * SECOND
NO_LIMITS = SenderLimits(1000, 1000)


async def _merchant(db: Database) -> str:
    return (await create_merchant(db, "Acme", f"{ids.random_base62(8)}@acme.test")).merchant.id


async def _endpoint(db: Database, merchant_id: str, events: tuple[str, ...]) -> WebhookEndpoint:
    endpoint = WebhookEndpoint(
        id="we_" + ids.random_base62(24), merchant_id=merchant_id,
        url=f"https://{ids.random_base62(6).lower()}.example/hooks", enabled_events=events,
        secret_sealed="sealed-" + ids.random_base62(6), previous_secret_sealed=None,
        previous_secret_expires_at=None, created_at=NOW_US, deleted_at=None,
    )  # fmt: skip
    await db.write(webhook_rows.insert_endpoint, endpoint)
    return endpoint


async def _queue(db: Database, merchant_id: str, kind: str, count: int, at_us: int) -> list[str]:
    """`count` events of `kind` (each queued to the merchant's endpoints taking it), due a
    microsecond apart from `at_us`; their bodies, oldest first."""
    events = [
        new_event(
            "evt_" + ids.random_base62(24),
            merchant_id,
            kind,
            "cs_test_" + ids.random_base62(24),
            2,
            {"n": i},
            at_us + i,
        )  # fmt: skip
        for i in range(count)
    ]
    await db.write(webhook_rows.record_events, events)
    return [event.body for event in events]


def _leases(tx: Tx) -> dict[str, str | None]:
    rows = tx.fetch("SELECT id, lease_owner FROM deliveries")
    return {row["id"]: row["lease_owner"] for row in rows}


async def _claim(
    db: Database, owner: str, now_us: int, limit: int, limits: SenderLimits = NO_LIMITS
) -> tuple[list[DeliveryJob], bool]:
    return await db.write(webhook_rows.claim_due, owner, now_us, LEASE_US, limit, limits)


async def test_one_claim_takes_a_batch_within_the_limits_with_what_sending_needs(
    db: Database,
) -> None:
    first, second = await _merchant(db), await _merchant(db)
    a = await _endpoint(db, first, ("checkout.session.paid",))
    b = await _endpoint(db, first, ("checkout.session.expired",))
    c = await _endpoint(db, second, ("*",))
    bodies = await _queue(db, first, "checkout.session.paid", 10, NOW_US - 100)  # to a
    await _queue(db, first, "checkout.session.expired", 3, NOW_US - 50)  # to b
    await _queue(db, second, "checkout.session.paid", 2, NOW_US - 20)  # to c
    await _queue(db, second, "checkout.session.paid", 1, NOW_US + 1)  # not due yet
    # One attempt to `a` (and so to the first merchant) is under way already.
    limits = SenderLimits(4, 6, {a.id: 1}, {first: 1})

    jobs, passed_over = await _claim(db, "owner-1", NOW_US, 20, limits)

    # Oldest due first, each while its endpoint and its merchant have room: 3 of a's (4
    # less the one under way), 2 of b's (the first merchant's 6, less 1, less a's 3), c's 2.
    assert [job.endpoint_id for job in jobs] == [a.id] * 3 + [b.id] * 2 + [c.id] * 2
    assert passed_over, "a's and b's other due deliveries were passed over"
    assert [job.body for job in jobs[:3]] == bodies[:3]
    for job, endpoint in zip(jobs, [a] * 3 + [b] * 2 + [c] * 2, strict=True):
        assert (job.url, job.secret_sealed, job.attempts) == (
            endpoint.url,
            endpoint.secret_sealed,
            0,
        )
        assert (
            job.merchant_id == endpoint.merchant_id and json.loads(job.body)["id"] == job.event_id
        )
    leases = await db.read(_leases)
    assert {d for d, owner in leases.items() if owner == "owner-1"} == {j.delivery_id for j in jobs}

    # Another claimer at the same moment takes none of those: the next 4 of a's and b's last.
    more, passed_over = await _claim(db, "owner-2", NOW_US, 20, SenderLimits(4, 6))
    assert [job.endpoint_id for job in more] == [a.id] * 4 + [b.id]
    assert passed_over and not {j.delivery_id for j in more} & {j.delivery_id for j in jobs}
    # Nothing passed over when nothing due was left out.
    rest, passed_over = await _claim(db, "owner-3", NOW_US, 20)
    assert [job.endpoint_id for job in rest] == [a.id] * 3 and not passed_over
    assert await _claim(db, "owner-3", NOW_US, 20) == ([], False)


async def test_claimers_at_once_never_take_one_delivery_twice(database_url: str) -> None:
    async with open_database(database_url, 5) as one, open_database(database_url, 5) as other:
        merchant = await _merchant(one)
        await _endpoint(one, merchant, ("*",))
        await _endpoint(one, merchant, ("*",))
        await _queue(one, merchant, "checkout.session.paid", 60, NOW_US - 1000)
        taken: dict[str, list[str]] = {}

        async def claim_all(db: Database, owner: str) -> None:
            taken[owner] = []
            while True:
                jobs, _ = await _claim(db, owner, NOW_US, 7)
                if not jobs:
                    return
                taken[owner] += [job.delivery_id for job in jobs]

        async with trio.open_nursery() as both:
            for n, db in enumerate((one, other, one, other)):
                both.start_soon(claim_all, db, f"owner-{n}")
        every = [delivery for claimed in taken.values() for delivery in claimed]
        assert len(every) == len(set(every)) == 120


def _attempt(job: DeliveryJob, at: int, outcome: str, **fields: Any) -> AttemptRecord:
    values: dict[str, Any] = {"response_status": None, "latency_ms": 3, "error": None,
                              "response_body": None, "next_attempt_at": None}  # fmt: skip
    values.update(fields)
    return AttemptRecord(delivery_id=job.delivery_id, attempted_at=at, outcome=outcome, **values)


async def test_a_batch_of_attempts_is_recorded_in_one_write_each_as_it_went(db: Database) -> None:
    merchant = await _merchant(db)
    await _endpoint(db, merchant, ("*",))
    await _queue(db, merchant, "checkout.session.paid", 6, NOW_US - 100)
    (lost,), _ = await _claim(db, "dispatcher-x", NOW_US, 1)
    later = NOW_US + LEASE_US  # x's first lease has lapsed: another process claims it
    (taken,), _ = await _claim(db, "dispatcher-y", later, 1)
    assert taken.delivery_id == lost.delivery_id
    jobs, _ = await _claim(db, "dispatcher-x", later, 10)
    at = later + SECOND
    retry = at + 5 * SECOND
    records = [
        _attempt(jobs[0], at, "succeeded", response_status=200, response_body="ok"),
        _attempt(jobs[1], at, "pending", response_status=500, response_body="nope",
                 next_attempt_at=retry),
        _attempt(jobs[2], at, "pending", error="timeout after 10 s", latency_ms=10_000,
                 next_attempt_at=retry),
        _attempt(jobs[3], at, "pending", error="ConnectError: [Errno 111] Connection refused",
                 next_attempt_at=retry),
        _attempt(jobs[4], at, "pending", response_status=429, next_attempt_at=at + 900 * SECOND),
        _attempt(lost, at, "succeeded", response_status=200, response_body="late"),
    ]  # fmt: skip

    recorded = await db.write(webhook_rows.record_attempts, "dispatcher-x", records)

    assert recorded == [True, True, True, True, True, False]
    seen = [await db.read(webhook_rows.delivery_of, merchant, j.delivery_id) for j in [*jobs, lost]]
    shown = [(d.status, d.next_attempt_at, [(a.at, a.status_code, a.error, a.response_body)
              for a in d.attempts]) for d in seen if d is not None]  # fmt: skip
    assert shown == [
        ("succeeded", at, [(at, 200, None, "ok")]),
        ("pending", retry, [(at, 500, None, "nope")]),
        ("pending", retry, [(at, None, "timeout after 10 s", None)]),
        ("pending", retry, [(at, None, "ConnectError: [Errno 111] Connection refused", None)]),
        ("pending", at + 900 * SECOND, [(at, 429, None, None)]),
        ("pending", NOW_US - 100, []),  # y's now: x's late word about it is not recorded
    ]
    assert (await db.read(_leases))[lost.delivery_id] == "dispatcher-y"
    assert await db.write(webhook_rows.record_attempts, "dispatcher-y", records[5:]) == [True]


async def test_a_claim_never_recorded_lapses_to_another_claimer(db: Database) -> None:
    merchant = await _merchant(db)
    await _endpoint(db, merchant, ("*",))
    await _queue(db, merchant, "checkout.session.paid", 5, NOW_US - 100)
    killed, _ = await _claim(db, "killed-mid-batch", NOW_US, 3)
    before_lapse, _ = await _claim(db, "survivor", NOW_US + LEASE_US - 1, 10)
    assert {j.delivery_id for j in before_lapse}.isdisjoint(j.delivery_id for j in killed)
    after_lapse, _ = await _claim(db, "survivor", NOW_US + LEASE_US, 10)
    assert [j.delivery_id for j in after_lapse] == [j.delivery_id for j in killed]


async def test_a_batch_with_every_kind_of_outcome_is_recorded_each_as_it_went(
    nursery: trio.Nursery,
    settings: Settings,
    clock: trio.testing.MockClock,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    server = await start_server(nursery, settings, clock=TrioClock())
    dispatcher = server.running.service.dispatcher
    scripts: list[Any] = [
        lambda n: (200, {}),
        lambda n: (500, {}),
        lambda n: (429, {"Retry-After": "900"}),
        lambda n: "hang",
    ]
    receivers = [await start_receiver(nursery) for _ in scripts]
    merchant = await server.merchant()
    endpoints = []
    for receiver, script in zip(receivers, scripts, strict=True):
        receiver.script = script
        endpoints.append((await add_endpoint(merchant, receiver.url))["id"])
    refusing = reserve_port()  # bound, not listening: connections are refused
    endpoints.append((await add_endpoint(merchant, url_of(refusing)))["id"])
    claimed: list[int] = []
    claim_due = webhook_rows.claim_due

    def spy(*args: Any) -> Any:
        jobs, passed_over = claim_due(*args)
        if jobs:
            claimed.append(len(jobs))
        return jobs, passed_over

    monkeypatch.setattr(webhook_rows, "claim_due", spy)
    clock.autojump_threshold = math.inf  # service time moves only when the test says
    await paid_session(server, merchant)
    await dispatcher.wait_for_attempts(4)  # all but the hanging one's
    assert claimed == [5], "the payment's five deliveries were claimed together"
    clock.jump(5.6)  # the 500 and the refusal are retried: due 4.5-5.5 s after
    await dispatcher.wait_for_attempts(6)
    clock.jump(4.4)  # the hanging one's 10 s deadline
    await dispatcher.wait_for_attempts(7)

    page = (await merchant.get("/webhook_deliveries")).json()["data"]
    by_endpoint = {d["endpoint_id"]: d for d in page}
    ok, error_500, too_many, hanging, refused = (by_endpoint[e] for e in endpoints)
    first = [d["attempts"][0] for d in (ok, error_500, too_many, hanging, refused)]
    assert [(a["status_code"], a["error"], a["response_body"]) for a in first[:4]] == [
        (200, None, "ok"),
        (500, None, "nope"),
        (429, None, "nope"),
        (None, "timeout after 10 s", None),
    ]
    assert first[4]["status_code"] is None and first[4]["error"].startswith("ConnectError")
    assert [(d["status"], d["attempt_count"]) for d in (ok, error_500, too_many, hanging, refused)] == [
        ("succeeded", 1), ("pending", 2), ("pending", 1), ("pending", 1), ("pending", 2)
    ]  # fmt: skip
    assert ok["next_attempt_at"] is None
    for retried in (error_500, refused):  # the first retry, on schedule
        assert 4.5 <= _at(retried["attempts"][1]["at"]) - _at(retried["attempts"][0]["at"]) < 5.7
    assert 4.5 <= _at(hanging["next_attempt_at"]) - _at(first[3]["at"]) <= 5.5
    assert _at(too_many["next_attempt_at"]) - _at(first[2]["at"]) >= 900, "Retry-After honoured"
    clock.autojump_threshold = 0.5
    await server.shutdown()


def _at(iso: str) -> float:
    return datetime.fromisoformat(iso).timestamp()


async def test_a_stuck_endpoint_holds_its_own_slots_while_another_merchants_backlog_drains(
    nursery: trio.Nursery, settings: Settings, clock: trio.testing.MockClock
) -> None:
    server = await start_server(nursery, settings, clock=TrioClock())
    dispatcher = server.running.service.dispatcher
    stuck, fast = await start_receiver(nursery), await start_receiver(nursery)
    stuck.script = lambda n: "hang"  # answers after the attempt's 10 s: never
    slow_merchant, fast_merchant = await server.merchant("Slow"), await server.merchant("Fast")
    await add_endpoint(slow_merchant, stuck.url)
    await add_endpoint(fast_merchant, fast.url)
    # Service time stands still from here: no attempt times out unless the test says so.
    clock.autojump_threshold = math.inf
    now = server.running.service.clock.now_us()
    # The stuck endpoint's backlog is the older: oldest-first alone would serve it first.
    await queue_events(server, slow_merchant.id, 20, now - 60 * SECOND)
    fast_ids = await queue_events(server, fast_merchant.id, 40, now - 30 * SECOND)

    await fast.wait_for(40)
    await dispatcher.wait_for_attempts(40)
    assert sorted(json.loads(r.body)["id"] for r in fast.received) == sorted(fast_ids)
    # The stuck one holds its own slots, no more, and none of its attempts has ended.
    assert len(stuck.received) == dispatcher.per_endpoint
    assert dispatcher.attempts == 40
    slow = (await slow_merchant.get("/webhook_deliveries", params={"limit": 100})).json()["data"]
    assert len(slow) == 20 and all(d["attempt_count"] == 0 for d in slow)
    fast_log = (await fast_merchant.get("/webhook_deliveries", params={"limit": 100})).json()
    assert [d["status"] for d in fast_log["data"]] == ["succeeded"] * 40

    clock.jump(10)  # the stuck attempts' deadline: each recorded as a timeout
    await dispatcher.wait_for_attempts(40 + dispatcher.per_endpoint)
    clock.autojump_threshold = 0.5
    await server.shutdown()
