"""An ask's deadline, as a merchant sees it, on both backends: a refund whose owner's actor
does not answer in time is answered 503 with `Retry-After`; its handler is cancelled if
its write was not yet handed to the database, and awaited whole if it was; either way a
retry with the same `Idempotency-Key` answers the final outcome, and exactly one refund
exists (docs/architecture.md, "An ask's deadline")."""

from __future__ import annotations

import threading
from functools import wraps
from typing import Any

import attrs
import httpx
import pytest
import trio
import trio.testing
from fgcpay.clock import TrioClock
from fgcpay.settings import Settings
from fgcpay.storage import refunds as refund_rows
from helpers import MerchantClient, Server, start_server
from hosted import paid_session

ASK_TIMEOUT = 5.0
KEY = {"Idempotency-Key": "refund-once"}


async def _started(nursery: trio.Nursery, settings: Settings) -> tuple[Server, MerchantClient]:
    server = await start_server(
        nursery, attrs.evolve(settings, actor_ask_timeout_seconds=ASK_TIMEOUT), clock=TrioClock()
    )
    return server, await server.merchant()


def _refund(session: dict[str, Any]) -> dict[str, Any]:
    return {"checkout_session_id": session["id"], "amount_fgc": "1.00"}


async def _refunds(merchant: MerchantClient) -> list[dict[str, Any]]:
    listed = await merchant.get("/refunds")
    assert listed.status_code == 200, listed.text
    found: list[dict[str, Any]] = listed.json()["data"]
    return found


def _asks_to_retry(answer: httpx.Response) -> None:
    assert answer.status_code == 503, answer.text
    assert answer.json()["code"] == "service_unavailable"
    assert int(answer.headers["Retry-After"]) >= 1


async def test_a_handler_past_its_deadline_before_writing_is_cancelled_and_a_retry_runs_it(
    nursery: trio.Nursery,
    settings: Settings,
    clock: trio.testing.MockClock,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    server, merchant = await _started(nursery, settings)
    session = await paid_session(server, merchant)
    held = trio.Event()  # set once the ask gave up: its write was never handed over
    real_write = server.db.write

    async def held_write(fn: Any, *args: Any, **kwargs: Any) -> Any:
        if fn is refund_rows.create:
            await held.wait()
        return await real_write(fn, *args, **kwargs)

    monkeypatch.setattr(server.db, "write", held_write)
    # Without a key: the 503 is the whole story, no refund appears after it.
    _asks_to_retry(await merchant.post("/refunds", json=_refund(session)))
    held.set()
    await trio.testing.wait_all_tasks_blocked()
    assert await _refunds(merchant) == []  # cancelled: it never wrote
    held = trio.Event()
    _asks_to_retry(await merchant.post("/refunds", json=_refund(session), headers=KEY))
    held.set()
    await trio.testing.wait_all_tasks_blocked()
    assert await _refunds(merchant) == []
    monkeypatch.undo()
    retried = await merchant.post("/refunds", json=_refund(session), headers=KEY)
    assert retried.status_code == 201, retried.text
    assert "Idempotent-Replayed" not in retried.headers  # run afresh: nothing was done
    again = await merchant.post("/refunds", json=_refund(session), headers=KEY)
    assert again.headers["Idempotent-Replayed"] == "true"
    assert [refund["id"] for refund in await _refunds(merchant)] == [retried.json()["id"]]
    await server.shutdown()


async def test_a_write_handed_over_before_the_deadline_commits_and_a_retry_replays_it(
    nursery: trio.Nursery,
    settings: Settings,
    clock: trio.testing.MockClock,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    server, merchant = await _started(nursery, settings)
    session = await paid_session(server, merchant)
    in_writer = threading.Event()
    gate = threading.Event()
    real_create = refund_rows.create

    @wraps(real_create)
    def slow_create(*args: Any, **kwargs: Any) -> Any:
        # On the writer's thread, inside its transaction: a commit slower than the ask.
        in_writer.set()
        gate.wait(30)
        return real_create(*args, **kwargs)

    monkeypatch.setattr(refund_rows, "create", slow_create)
    answers: list[httpx.Response] = []
    answered = trio.Event()

    async def ask() -> None:
        answers.append(await merchant.post("/refunds", json=_refund(session), headers=KEY))
        answered.set()

    nursery.start_soon(ask)
    await trio.to_thread.run_sync(in_writer.wait, 30)
    await trio.sleep(ASK_TIMEOUT + 1)  # the deadline passes while the writer holds it
    assert answers == []  # the asker's 503 waits for the claim's release, behind the write
    gate.set()
    with trio.fail_after(30):
        await answered.wait()
    _asks_to_retry(answers[0])
    monkeypatch.undo()
    (stored,) = await _refunds(merchant)  # committed whole, answer and all
    retried = await merchant.post("/refunds", json=_refund(session), headers=KEY)
    assert retried.status_code == 201, retried.text
    assert retried.headers["Idempotent-Replayed"] == "true"
    assert retried.json()["id"] == stored["id"]
    assert len(await _refunds(merchant)) == 1
    await server.shutdown()
