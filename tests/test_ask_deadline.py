"""An ask's deadline, as a merchant sees it, on both backends: a refund whose owner's actor
does not answer in time is answered 503 with `Retry-After`; its handler is cancelled if
its write was not yet handed to the database, and awaited whole if it was; either way a
retry with the same `Idempotency-Key` answers the final outcome, and exactly one refund
exists. The same holds for the POSTs that change a resource through its actor (a
subscription's cancel, a refund's review): a retry with the key replays the 200 the first
earned (docs/architecture.md, "An ask's deadline")."""

from __future__ import annotations

import threading
from collections.abc import Awaitable, Callable
from functools import wraps
from typing import Any

import attrs
import httpx
import pytest
import trio
import trio.testing
from fgcpay.core.clock import TrioClock
from fgcpay.core.settings import Settings
from fgcpay.storage import checkout_sessions as session_rows
from fgcpay.storage import idempotency as idempotency_rows
from fgcpay.storage import refunds as refund_rows
from fgcpay.storage import subscriptions as subscription_rows
from helpers import MerchantClient, Server, create, create_subscription, start_server
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


# A POST changing a resource through its actor: the storage write it makes, the path of
# the POST for a new resource of the merchant's, and the code of its refusal once done.
Change = tuple[Any, Callable[[Server, MerchantClient], Awaitable[str]], str]


async def _subscription(server: Server, merchant: MerchantClient) -> str:
    sub = await create_subscription(merchant)
    return f"/subscriptions/{sub['id']}"


async def _pending_refund(server: Server, merchant: MerchantClient) -> str:
    session = await paid_session(server, merchant)
    made = await merchant.post("/refunds", json=_refund(session))
    assert made.status_code == 201, made.text
    return f"/refunds/{made.json()['id']}"


async def _session(server: Server, merchant: MerchantClient) -> str:
    return f"/checkout/sessions/{(await create(merchant))['id']}"


CHANGES: dict[str, Change] = {
    "cancel": (subscription_rows.cancel, _subscription, "subscription_not_cancellable"),
    "approve": (refund_rows.approve, _pending_refund, "refund_already_reviewed"),
    "reject": (refund_rows.reject, _pending_refund, "refund_already_reviewed"),
    # The test helpers driving the hosted page's flows.
    "pay": (session_rows.pay_answered, _session, "checkout_session_not_open"),
    "expire": (session_rows.expire_early, _session, "checkout_session_not_open"),
    "approve_subscription": (
        subscription_rows.approve_answered,
        _subscription,
        "subscription_not_approvable",
    ),
}
STATUS_AFTER = {
    "cancel": "cancelled",
    "approve": "approved",
    "reject": "rejected",
    "pay": "paid",
    "expire": "expired",
    "approve_subscription": "active",
}


def _post_path(change: str, resource: str) -> str:
    if change == "cancel":
        return f"{resource}/cancel"
    return f"/test_helpers{resource}/{change.removesuffix('_subscription')}"


async def _committed_after_the_deadline(
    server: Server,
    merchant: MerchantClient,
    monkeypatch: pytest.MonkeyPatch,
    write: Any,
    path: str,
    headers: dict[str, str],
) -> httpx.Response:
    """POST `path` while its actor's `write` commits only after the ask's deadline passed:
    the answer the caller got."""
    in_writer = threading.Event()
    gate = threading.Event()
    real_write = server.db.write

    @wraps(write)
    def slow(*args: Any, **kwargs: Any) -> Any:
        # On the writer's thread, inside its transaction: a commit slower than the ask.
        in_writer.set()
        gate.wait(30)
        return write(*args, **kwargs)

    committed = trio.Event()

    async def write_slowly(fn: Any, *args: Any, **kwargs: Any) -> Any:
        if fn is not write:
            return await real_write(fn, *args, **kwargs)
        try:
            return await real_write(slow, *args, **kwargs)
        finally:
            committed.set()  # storage waits for a write handed over, even when cancelled

    monkeypatch.setattr(server.db, "write", write_slowly)
    answers: list[httpx.Response] = []
    answered = trio.Event()

    async def ask() -> None:
        answers.append(await merchant.post(path, headers=headers))
        answered.set()

    async with trio.open_nursery() as asking:
        asking.start_soon(ask)
        await trio.to_thread.run_sync(in_writer.wait, 30)
        await trio.sleep(ASK_TIMEOUT + 1)  # the deadline passes while the writer holds it
        # With a key, the 503 waits for the claim's release, behind the write; without
        # one, nothing waits for the write.
        assert len(answers) == (0 if headers else 1)
        gate.set()
        with trio.fail_after(30):
            await answered.wait()
            await committed.wait()
    monkeypatch.undo()
    return answers[0]


@pytest.mark.parametrize("change", list(CHANGES))
async def test_a_change_committed_after_the_deadline_is_replayed_to_a_retry_with_its_key(
    nursery: trio.Nursery,
    settings: Settings,
    clock: trio.testing.MockClock,
    monkeypatch: pytest.MonkeyPatch,
    change: str,
) -> None:
    server, merchant = await _started(nursery, settings)
    write, make, refusal = CHANGES[change]
    resource = await make(server, merchant)
    path = _post_path(change, resource)
    first = await _committed_after_the_deadline(server, merchant, monkeypatch, write, path, KEY)
    _asks_to_retry(first)
    stored = await merchant.get(resource)  # committed whole, answer and all
    assert stored.status_code == 200, stored.text
    retried = await merchant.post(path, headers=KEY)
    assert retried.status_code == 200, retried.text
    assert retried.headers["Idempotent-Replayed"] == "true"
    assert retried.content == stored.content  # the 200 the first earned, byte for byte
    again = await merchant.post(path, headers=KEY)
    assert (again.status_code, again.content) == (200, retried.content)
    for other in ({"Idempotency-Key": "another"}, {}):
        refused = await merchant.post(path, headers=other)
        assert refused.status_code == 409, refused.text
        assert refused.json()["code"] == refusal
    await server.shutdown()


@pytest.mark.parametrize("change", list(CHANGES))
async def test_without_a_key_a_change_committed_after_the_deadline_is_done_and_a_retry_409(
    nursery: trio.Nursery,
    settings: Settings,
    clock: trio.testing.MockClock,
    monkeypatch: pytest.MonkeyPatch,
    change: str,
) -> None:
    server, merchant = await _started(nursery, settings)
    write, make, refusal = CHANGES[change]
    resource = await make(server, merchant)
    path = _post_path(change, resource)
    _asks_to_retry(
        await _committed_after_the_deadline(server, merchant, monkeypatch, write, path, {})
    )
    stored = (await merchant.get(resource)).json()
    assert stored["status"] == STATUS_AFTER[change]
    retried = await merchant.post(path)
    assert retried.status_code == 409, retried.text
    assert retried.json()["code"] == refusal
    await server.shutdown()


EVENT_OF = {
    "cancel": "subscription.cancelled",
    "approve": "refund.approved",
    "reject": "refund.rejected",
    "pay": "checkout.session.paid",
    "expire": "checkout.session.expired",
    "approve_subscription": "subscription.activated",
}


@pytest.mark.parametrize("change", list(CHANGES))
async def test_a_change_whose_claim_was_taken_over_writes_nothing_and_is_answered_in_use(
    nursery: trio.Nursery,
    settings: Settings,
    clock: trio.testing.MockClock,
    monkeypatch: pytest.MonkeyPatch,
    change: str,
) -> None:
    # An ask that outlives its claim (made to lapse after 1 s, inside the ask's deadline):
    # the retry that took the key over decides.
    monkeypatch.setattr(idempotency_rows, "LOCK_US", 1_000_000)
    server, merchant = await _started(nursery, settings)
    write, make, _ = CHANGES[change]
    resource = await make(server, merchant)
    path = _post_path(change, resource)
    held, writing, taken_over = trio.Event(), trio.Event(), trio.Event()
    claims = 0
    real_write = server.db.write

    async def write_when_let(fn: Any, *args: Any, **kwargs: Any) -> Any:
        nonlocal claims
        if fn is write and not held.is_set():
            writing.set()
            await held.wait()  # the first request's write, not yet handed over
        result = await real_write(fn, *args, **kwargs)
        if fn is idempotency_rows.claim:
            claims += 1
            if claims == 2:
                taken_over.set()
        return result

    monkeypatch.setattr(server.db, "write", write_when_let)
    answers: dict[str, httpx.Response] = {}

    async def post(name: str) -> None:
        answers[name] = await merchant.post(path, headers=KEY)

    async with trio.open_nursery() as asking:
        asking.start_soon(post, "first")
        await writing.wait()
        await trio.sleep(1)  # the first's claim lapses: the retry takes the key over
        asking.start_soon(post, "retry")
        await taken_over.wait()
        held.set()
    lost, retried = answers["first"], answers["retry"]
    assert lost.status_code == 409, lost.text
    assert lost.json()["code"] == "idempotency_key_in_use"
    assert retried.status_code == 200, retried.text  # the actor carried on: no crash
    assert "Idempotent-Replayed" not in retried.headers
    replayed = await merchant.post(path, headers=KEY)
    assert replayed.headers["Idempotent-Replayed"] == "true"
    assert replayed.content == retried.content
    events = await merchant.get("/events", params={"type": EVENT_OF[change]})
    assert len(events.json()["data"]) == 1  # the first wrote nothing
    await server.shutdown()
