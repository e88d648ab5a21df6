"""Supervision as an operator and a merchant see it, on both backends: a poison id
quarantined with `Retry-After`, an actor kind and a background loop past their budget
escalated (in `/readyz`, in `GET /metrics`, in exactly one ERROR line), the rest of the
service serving meanwhile, and both recovering by themselves. (The budget and quarantine
rules in isolation: test_actor_runtime.py.)"""

from __future__ import annotations

import logging
from collections.abc import Awaitable, Callable
from typing import Any

import httpx
import pytest
import trio
import trio.testing
from fgcpay.actors.subscription import SubscriptionActor
from fgcpay.core.clock import TrioClock
from fgcpay.core.settings import Settings
from fgcpay.timers.expiry import ExpirySweeper
from fgcpay.timers.test_clock_advances import ClockAdvance
from fgcpay.webhooks.dispatcher import WebhookDispatcher
from helpers import (
    CLIENT_TLS,
    MerchantClient,
    Server,
    create,
    create_subscription,
    create_test_clock,
    scrape,
    wait_until,
)
from helpers import start_server as start

KIND_ESCALATED = "actor kind subscription"
LOOP_ESCALATED = "loop expiry sweep"


async def _readyz(server: Server) -> httpx.Response:
    async with httpx.AsyncClient(timeout=30, verify=CLIENT_TLS) as client:
        return await client.get(server.url + "/readyz")


def _lines(caplog: pytest.LogCaptureFixture, level: int) -> list[logging.LogRecord]:
    return [r for r in caplog.records if r.name == "fgcpay" and r.levelno == level]


def _fields(record: logging.LogRecord) -> dict[str, Any]:
    fields: dict[str, Any] = record.fields  # type: ignore[attr-defined]
    return fields


async def _still_serving(merchant: MerchantClient) -> None:
    """A merchant's create and read answer 2xx."""
    session = await create(merchant)
    read = await merchant.get(f"/checkout/sessions/{session['id']}")
    assert read.status_code == 200, read.text


async def _idle_for(server: Server, clock: trio.testing.MockClock, seconds: float) -> None:
    """Let `seconds` of service time pass while no real I/O is under way (the failing loop
    touches no database): the clock jumps at once rather than after a real half second
    per wake-up of the loop.

    First the service's own database calls end: its loops' first rounds, begun as it
    started, may still be under way on a loaded machine (a new PostgreSQL connection
    takes a while), and one waiting for a free connection meanwhile is bounded by 5 s of
    service time, which a clock that jumps at once runs out: it failed as if the database
    were down, every retry alike, and its loop escalated too."""
    await wait_until(
        lambda: _at_rest(server), within=5, what="the service's database calls ended", every=0.01
    )
    threshold, clock.autojump_threshold = clock.autojump_threshold, 0.0
    try:
        await trio.sleep(seconds)
    finally:
        clock.autojump_threshold = threshold


async def _at_rest(server: Server) -> bool:
    """No task can run, and no database connection is in use (one a call waits for is)."""
    await trio.testing.wait_all_tasks_blocked()
    return all(use.in_use == 0 for use in server.db.connection_use())


async def _escalations(server: Server, supervised: str) -> tuple[float, float]:
    """The escalation counter and the escalated gauge of `supervised`, as scraped (the
    counter goes on across the tests of one process: a test compares with its start)."""
    found = await scrape(server.url)
    return (
        found.value("fgcpay_supervision_escalations_total", supervised=supervised),
        found.value("fgcpay_supervision_escalated", supervised=supervised),
    )


async def test_a_poison_subscription_is_quarantined_and_a_crashing_kind_escalates_once(
    nursery: trio.Nursery,
    settings: Settings,
    clock: trio.testing.MockClock,
    monkeypatch: pytest.MonkeyPatch,
    caplog: pytest.LogCaptureFixture,
) -> None:
    server = await start(nursery, settings, clock=TrioClock())
    merchant = await server.merchant()
    subscriptions = [(await create_subscription(merchant))["id"] for _ in range(6)]
    poison, others, healthy = subscriptions[0], subscriptions[1:5], subscriptions[5]
    received: list[str] = []
    real_receive = SubscriptionActor.receive

    async def crashing(self: SubscriptionActor, actor_id: str, state: Any, message: Any) -> Any:
        if actor_id != healthy:
            received.append(actor_id)
            raise RuntimeError(f"cannot handle {actor_id}")
        return await real_receive(self, actor_id, state, message)

    monkeypatch.setattr(SubscriptionActor, "receive", crashing)
    caplog.set_level(logging.INFO, logger="fgcpay")
    counted, _ = await _escalations(server, KIND_ESCALATED)
    quarantines = (await scrape(server.url)).value(
        "fgcpay_supervision_quarantines_total", supervised=KIND_ESCALATED
    )

    async def cancel(subscription_id: str) -> httpx.Response:
        return await merchant.post(f"/subscriptions/{subscription_id}/cancel")

    # The poison id: its second crash within the period quarantines it.
    for _ in range(2):
        assert (await cancel(poison)).status_code == 503
    asked = trio.current_time()
    quarantined = await cancel(poison)
    assert trio.current_time() - asked < 1  # answered at once, not restarted
    assert quarantined.status_code == 503
    assert quarantined.json()["code"] == "service_unavailable"
    assert int(quarantined.headers["Retry-After"]) >= 1
    assert received == [poison, poison]
    # Shown to the operator without failing readiness (2 crashes: within the kind's
    # budget): in /readyz, in the metrics, in one line saying it is quarantined.
    ready = await _readyz(server)
    assert ready.status_code == 200
    assert ready.json()["quarantined_count"] == 1
    (shown,) = ready.json()["quarantined"]
    assert shown["kind"] == "subscription" and shown["id"] == poison
    assert shown["retry_after_seconds"] >= 1
    found = await scrape(server.url)
    assert (
        found.value("fgcpay_supervision_quarantines_total", supervised=KIND_ESCALATED)
        == quarantines + 1
    )
    said = [
        _fields(r)
        for r in _lines(caplog, logging.WARNING)
        if _fields(r).get("id") == poison and _fields(r).get("quarantined_seconds")
    ]
    assert len(said) == 1 and said[0]["error"] == f"cannot handle {poison}"
    assert _lines(caplog, logging.ERROR) == []

    # Four more ids crash once each: 6 crashes within 10 s, past the kind's 5.
    for subscription_id in others:
        assert (await cancel(subscription_id)).status_code == 503
    ready = await _readyz(server)
    assert ready.status_code == 503
    assert KIND_ESCALATED in ready.json()["message"]
    assert ready.json()["details"]["escalated"] == [KIND_ESCALATED]
    assert ready.json()["details"]["quarantined_count"] >= 1
    assert await _escalations(server, KIND_ESCALATED) == (counted + 1, 1)
    (escalation,) = _lines(caplog, logging.ERROR)
    crashed = _fields(escalation)["failures"]
    assert {failure["id"] for failure in crashed} == {poison, *others}
    assert {failure["error_type"] for failure in crashed} == {"RuntimeError"}
    assert f"cannot handle {others[0]}" in {failure["error"] for failure in crashed}

    # More crashes while escalated: no second ERROR line, no second escalation.
    await trio.sleep(2)
    assert (await cancel(others[0])).status_code == 503
    assert len(_lines(caplog, logging.ERROR)) == 1
    assert (await _escalations(server, KIND_ESCALATED))[0] == counted + 1

    # The rest serves meanwhile, this kind's healthy ids included.
    await _still_serving(merchant)
    assert (await cancel(healthy)).status_code == 200

    # Quiet for a minute: it recovers by itself.
    await trio.sleep(server.running.service.supervisor.quiet_seconds + 1)
    assert (await _readyz(server)).status_code == 200
    assert await _escalations(server, KIND_ESCALATED) == (counted + 1, 0)
    recovered = [r for r in _lines(caplog, logging.INFO) if r.getMessage().endswith("recovered")]
    assert [_fields(r)["supervised"] for r in recovered] == [KIND_ESCALATED]
    assert len(_lines(caplog, logging.ERROR)) == 1
    await server.shutdown()


async def test_a_failing_sweep_backs_off_escalates_once_and_recovers_at_its_next_success(
    nursery: trio.Nursery,
    settings: Settings,
    clock: trio.testing.MockClock,
    monkeypatch: pytest.MonkeyPatch,
    caplog: pytest.LogCaptureFixture,
) -> None:
    server = await start(nursery, settings, clock=TrioClock())
    merchant = await server.merchant()
    sweeper = server.running.service.sweeper
    failures: list[float] = []
    failed = trio.Event()

    async def failing(self: ExpirySweeper, now_us: int, limit: int, offset: int) -> Any:
        failures.append(trio.current_time())
        failed.set()
        raise RuntimeError("the due query failed")

    monkeypatch.setattr(ExpirySweeper, "due", failing)
    caplog.set_level(logging.INFO, logger="fgcpay")
    counted, _ = await _escalations(server, LOOP_ESCALATED)
    sweeper.schedule(0)  # wake it now
    await _first_failure(failed)
    await _idle_for(server, clock, 60 - (trio.current_time() - failures[0]))
    # Bounded exponential backoff: at most 1, 2, 4, 8, 16, 30, 30 s apart (jitter shortens).
    gaps = [later - earlier for earlier, later in zip(failures, failures[1:], strict=False)]
    assert 6 <= len(failures) <= 12
    assert all(gap <= 30.0 + 1e-6 for gap in gaps)
    assert gaps[4] >= 8  # the fifth wait is 16 s, less at most half
    ready = await _readyz(server)
    assert ready.status_code == 503
    assert ready.json()["details"] == {"escalated": [LOOP_ESCALATED]}
    assert await _escalations(server, LOOP_ESCALATED) == (counted + 1, 1)
    (escalation,) = _lines(caplog, logging.ERROR)
    assert _fields(escalation)["supervised"] == LOOP_ESCALATED
    assert {f["error"] for f in _fields(escalation)["failures"]} == {"the due query failed"}
    await _still_serving(merchant)

    # Escalated, it keeps retrying quietly at the capped backoff: no line per failure.
    warnings = len(_lines(caplog, logging.WARNING))
    before = len(failures)
    await _idle_for(server, clock, 300)
    assert 300 / 30 <= len(failures) - before <= 300 / 15 + 1
    assert len(_lines(caplog, logging.WARNING)) == warnings
    assert len(_lines(caplog, logging.ERROR)) == 1

    monkeypatch.undo()
    await trio.sleep(31)  # its next retry goes through
    assert (await _readyz(server)).status_code == 200
    assert await _escalations(server, LOOP_ESCALATED) == (counted + 1, 0)
    (recovered,) = [r for r in _lines(caplog, logging.INFO) if r.getMessage().endswith("recovered")]
    assert _fields(recovered) == {"supervised": LOOP_ESCALATED, "reason": "succeeded"}
    await server.shutdown()


async def _first_failure(failed: trio.Event) -> None:
    """Wait for the injected fault's first failure (see `_failing`). The loops the tests
    break poll at least weekly (`start_server`'s settings), so one whose doorbell went
    unheard still fails within a week of service time: beyond it, fail here rather than
    wait for pytest's timeout."""
    with trio.fail_after(8 * 86400):
        await failed.wait()


def _failing(failed: trio.Event) -> Callable[..., Awaitable[Any]]:
    """A step that always fails, setting `failed` at its first call: a test waits for it
    before it lets service time run (`_idle_for`), since the loop may still be in a real
    database call made before the fault was injected, and time would run past it."""

    async def failing(*args: Any, **kwargs: Any) -> Any:
        failed.set()
        raise RuntimeError("injected failure")

    return failing


async def test_the_dispatchers_claims_escalate_and_recover(
    nursery: trio.Nursery,
    settings: Settings,
    clock: trio.testing.MockClock,
    monkeypatch: pytest.MonkeyPatch,
    caplog: pytest.LogCaptureFixture,
) -> None:
    server = await start(nursery, settings, clock=TrioClock())
    merchant = await server.merchant()
    failed = trio.Event()
    monkeypatch.setattr(WebhookDispatcher, "_claim", _failing(failed))
    caplog.set_level(logging.INFO, logger="fgcpay")
    server.running.service.dispatcher.ring()
    await _first_failure(failed)
    await _idle_for(server, clock, 120)
    ready = await _readyz(server)
    assert ready.json()["details"] == {"escalated": ["loop webhook claims"]}
    (escalation,) = _lines(caplog, logging.ERROR)
    assert _fields(escalation)["supervised"] == "loop webhook claims"
    await _still_serving(merchant)
    monkeypatch.undo()
    await trio.sleep(31)
    assert (await _readyz(server)).status_code == 200
    await server.shutdown()


async def test_a_failing_test_clock_advance_escalates_then_finishes_once_the_fault_passes(
    nursery: trio.Nursery,
    settings: Settings,
    clock: trio.testing.MockClock,
    monkeypatch: pytest.MonkeyPatch,
    caplog: pytest.LogCaptureFixture,
) -> None:
    server = await start(nursery, settings, clock=TrioClock())
    merchant = await server.merchant()
    test_clock = await create_test_clock(merchant, "2026-01-01T00:00:00Z")
    failed = trio.Event()
    monkeypatch.setattr(ClockAdvance, "round", _failing(failed))
    caplog.set_level(logging.INFO, logger="fgcpay")
    path = f"/test_clocks/{test_clock['id']}"
    advanced = await merchant.post(f"{path}/advance", json={"frozen_time": "2026-02-01T00:00:00Z"})
    assert advanced.status_code == 200, advanced.text
    await _first_failure(failed)
    await _idle_for(server, clock, 120)
    ready = await _readyz(server)
    assert ready.json()["details"] == {"escalated": ["loop test clock advance"]}
    (escalation,) = _lines(caplog, logging.ERROR)
    assert {f["id"] for f in _fields(escalation)["failures"]} == {test_clock["id"]}
    assert (await merchant.get(path)).json()["status"] == "advancing"
    await _still_serving(merchant)
    monkeypatch.undo()
    await trio.sleep(31)
    assert (await merchant.get(path)).json()["status"] == "ready"
    assert (await _readyz(server)).status_code == 200
    await server.shutdown()
