"""A crash or a cancellation releases what was held: crash injection at each step.

A fault hook (tests/helpers/_faults.py, never the product's configuration) makes one
step raise: in the one transaction of a confirm and of an approval, the PIN attempt's
reservation, the comparison and the charge; that write before it reaches the writer, and
the commit with what follows it; a renewal's step through the subscription actor; a
webhook delivery's claim, send and record; an idempotent create's claim, write and
answer; an event stream's registration and reads. A client that goes away (a
cancellation) is tried where it can leave something held. Then the next request must be
served at once: a payment with the same customer code pays at once and is not refused
as locked, a renewal happens on the next sweep exactly once, a delivery is attempted
again and recorded once per attempt, a retry with the same `Idempotency-Key` answers,
and the merchant's streams all open.
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from contextlib import AsyncExitStack
from typing import Any

import attrs
import httpx
import pytest
import trio
import trio.testing
from fgcpay.actors import authorization
from fgcpay.actors.subscription import APPROVED
from fgcpay.core.clock import TrioClock
from fgcpay.core.settings import Settings
from fgcpay.domain import customers as customer_rules
from fgcpay.domain import event_stream as stream_rules
from fgcpay.domain import periods
from fgcpay.storage import checkout_sessions, customers
from fgcpay.storage import event_stream as stream_rows
from fgcpay.storage import idempotency as idempotency_rows
from fgcpay.storage import subscriptions as subscription_rows
from fgcpay.storage import webhooks as webhook_rows
from fgcpay.webhooks.client import WebhookClient
from fgcpay.webhooks.dispatcher import LEASE_SECONDS
from helpers import (
    Faults,
    Server,
    add_endpoint,
    add_subscription,
    charges_of,
    create,
    create_subscription,
    events_of,
    give_up_in_handshake,
    open_stream,
    start_server,
    stored,
    stream_refusal,
    valid_body,
    wait_until,
)
from hosted import Customer, message, paid_session
from receiver import start_receiver
from trio_websocket import ConnectionClosed

CRASHES = customer_rules.MAX_FAILURES  # one crash per PIN slot


async def _post(server: Server, page_id: str, pin: str = "1234") -> tuple[int, str, float]:
    """The hosted page's form posted with TEST-0001: status, message, and the (mock) time
    the answer took."""
    customer = Customer(server)
    try:
        started = trio.current_time()
        answer = await customer.pay(page_id, "TEST-0001", pin)
        return answer.status_code, message(answer) or "", trio.current_time() - started
    finally:
        await customer.close()


# A code's counter left locked (a crashed transaction not rolled back) would hold the next
# attempt with the code until the lock's holder ended: served at once means within this.
AT_ONCE_SECONDS = 5.0


async def _assert_served_at_once(server: Server, new_page: Callable[[], Any]) -> None:
    """Nothing of the crashed attempts was counted or left held: four wrong PINs are each
    told "not right" (not "locked"), then the right one pays, each at once."""
    for _ in range(customer_rules.MAX_FAILURES - 1):
        status, text, took = await _post(server, await new_page(), pin="0000")
        assert (status, "not right" in text) == (400, True), text
        assert took < AT_ONCE_SECONDS
    status, text, took = await _post(server, await new_page())
    assert status == 303, text
    assert took < AT_ONCE_SECONDS


# Steps of a confirm and of an approval, each crashed: inside its one transaction (the
# attempt's reservation, the PIN's comparison, the charge), before the write reaches the
# writer, and once it committed (publishing the change, answering).
STEPS = ["reserve", "compare", "charge", "write", "publish"]


# Every call crashes while the fault is on (for CRASHES confirms): a group whose caller
# raised runs again with each caller alone (storage/_threads.py), so a crash inside a
# transaction is met more than once per confirm.
ALWAYS = 1_000_000


def _inject(faults: Faults, server: Server, step: str, charge: tuple[Any, str]) -> None:
    if step == "reserve":
        faults.crash_calls(customers, "reserve_attempt", ALWAYS)
    elif step == "compare":
        faults.crash_calls(customer_rules, "pin_matches", ALWAYS)
    elif step == "charge":
        faults.crash_calls(*charge, ALWAYS)
    elif step == "period":  # where an approval at 9999-12-31 crashed (year 10000)
        faults.crash_calls(periods, "approve", ALWAYS)
    else:
        faults.crash_writes(server.db, customers.attempt, ALWAYS, after=step == "publish")


async def _crashes_then_served(
    server: Server, step: str, charge: tuple[Any, str], new_page: Callable[[], Any]
) -> None:
    faults = Faults(pytest.MonkeyPatch())
    _inject(faults, server, step, charge)
    try:
        for _ in range(CRASHES):
            status, text, _took = await _post(server, await new_page())
            # A crash after the charge committed still shows the payment; any other is
            # "try again" (503), never a refusal of the code.
            assert status == (303 if step == "publish" else 503), text
            assert "locked" not in text and "not right" not in text, text
    finally:
        faults.monkeypatch.undo()
    assert faults.crashed >= CRASHES
    await _assert_served_at_once(server, new_page)


@pytest.mark.parametrize("step", STEPS)
async def test_a_crashed_confirm_counts_nothing_and_holds_nothing(
    nursery: trio.Nursery, settings: Settings, clock: trio.testing.MockClock, step: str
) -> None:
    server = await start_server(nursery, settings, clock=TrioClock())
    merchant = await server.merchant()

    async def new_session() -> str:
        return str((await create(merchant))["id"])

    await _crashes_then_served(server, step, (checkout_sessions, "pay"), new_session)
    await server.shutdown()


@pytest.mark.parametrize("step", [*STEPS, "period"])
async def test_a_crashed_approval_counts_nothing_and_holds_nothing(
    nursery: trio.Nursery, settings: Settings, clock: trio.testing.MockClock, step: str
) -> None:
    server = await start_server(nursery, settings, clock=TrioClock())
    merchant = await server.merchant()

    async def new_subscription() -> str:
        return str((await create_subscription(merchant))["id"])

    charge = (subscription_rows, "approve_at_clock_time")
    await _crashes_then_served(server, step, charge, new_subscription)
    await server.shutdown()


@pytest.mark.parametrize("step", ["before", "during"])
async def test_a_cancelled_pin_attempt_is_written_whole_or_not_at_all(
    nursery: trio.Nursery,
    settings: Settings,
    clock: trio.testing.MockClock,
    monkeypatch: pytest.MonkeyPatch,
    step: str,
) -> None:
    """Five wrong PINs whose callers are cancelled (an ask's deadline, a shutdown) before
    the attempt's write reaches the writer count nothing: the code is not locked. Cancelled
    while it is under way, each is waited for and counts: a caller that gives up cannot
    get a wrong PIN uncounted, and the sixth attempt, the right PIN, is told "locked"."""
    server = await start_server(nursery, settings, clock=TrioClock())
    merchant = await server.merchant()
    db = server.db
    real_write = db.write
    entered = authorization.enter(merchant.id, "TEST-0001", "0000")
    assert isinstance(entered, authorization.Entered)

    def attempt(pin: str) -> Any:
        return authorization.charge(
            db,
            server.running.service.clock,
            settings.secret_key,
            attrs.evolve(entered, pin=pin),
            customers.by_code,  # a charge that writes nothing: the attempt is what counts
            "TEST-0001",
        )

    for _ in range(CRASHES):
        with trio.CancelScope() as scope:

            async def write(fn: Any, *args: Any, **kwargs: Any) -> Any:
                scope.cancel()
                if step == "before":
                    await trio.lowlevel.checkpoint()
                return await real_write(fn, *args, **kwargs)

            monkeypatch.setattr(db, "write", write)
            await attempt("0000")
        assert scope.cancel_called
        monkeypatch.undo()
    if step == "during":
        assert await attempt("1234") == authorization.LOCKED
        return await server.shutdown()
    for _ in range(CRASHES - 1):
        assert await attempt("0000") == authorization.WRONG_CREDENTIALS
    assert isinstance(await attempt("1234"), authorization.Charged)
    await server.shutdown()


DAY = 86_400.0  # trio seconds
RETRY_WITHIN = 10.0  # trio seconds: the sweep retries a failed ask after one


@pytest.mark.parametrize("step", ["read", "charge", "publish"])
async def test_a_crashed_renewal_happens_on_the_next_sweep_exactly_once(
    nursery: trio.Nursery, settings: Settings, clock: trio.testing.MockClock, step: str
) -> None:
    """The renewal sweep's step through the subscription actor crashes as it reads the
    customer's outcome, in the charge's write, or once the charge committed: the next
    sweep renews (or finds it renewed), and the period is charged once."""
    server = await start_server(nursery, settings, clock=TrioClock())
    merchant = await server.merchant()
    service = server.running.service
    sub = await add_subscription(service, merchant.id, interval="daily")
    assert (await service.subscriptions.approve(sub.id, "TEST-0001", "1234")).outcome == APPROVED
    faults = Faults(pytest.MonkeyPatch())
    if step == "read":
        faults.crash_reads(server.db, customers.by_code, 1)
    else:
        faults.crash_writes(server.db, subscription_rows.renew, 1, after=step == "publish")
    clock.jump(DAY)  # period 1 falls due

    async def renewed() -> bool:
        return (await stored(server.db, sub.id)).charge_count >= 2

    await wait_until(renewed, within=RETRY_WITHIN, what="the renewal after the crash", every=1.0)
    assert faults.crashed == 1
    faults.monkeypatch.undo()
    clock.jump(RETRY_WITHIN)  # more sweeps: nothing more is charged
    assert (await stored(server.db, sub.id)).charge_count == 2
    assert [charge.period for charge in await charges_of(server.db, sub.id)] == [0, 1]
    charged = [e for e in await events_of(server.db, sub.id) if e.type == "subscription.charged"]
    assert len(charged) == 2
    await server.shutdown()


@pytest.mark.parametrize("step", ["claim", "send", "record"])
async def test_a_crashed_delivery_is_released_and_attempted_again_at_once(
    nursery: trio.Nursery, settings: Settings, clock: trio.testing.MockClock, step: str
) -> None:
    """A delivery whose claim's write, sending or recording crashes is attempted again in
    about a second, not left to its lease (60 s, and this process never looks for its
    own lapsed leases), and recorded once: one attempt, succeeded. Only a crash after
    the receiver answered sends it twice (at least once)."""
    server = await start_server(nursery, settings, clock=TrioClock())
    receiver = await start_receiver(nursery)
    merchant = await server.merchant()
    await add_endpoint(merchant, receiver.url)
    faults = Faults(pytest.MonkeyPatch())
    if step == "claim":
        faults.crash_writes(server.db, webhook_rows.claim_due, 1, after=False)
    elif step == "send":
        faults.crash_calls(WebhookClient, "post", 1)
    else:
        faults.crash_writes(server.db, webhook_rows.record_attempts, 1, after=False)
    await paid_session(server, merchant)
    with trio.fail_after(LEASE_SECONDS / 4):
        await server.running.service.dispatcher.wait_for_attempts(1)
    faults.monkeypatch.undo()
    assert faults.crashed == 1
    event = (await merchant.get("/events")).json()["data"][0]
    (delivery,) = await server.db.read(webhook_rows.deliveries_of_event, event["id"])
    assert (delivery.status, delivery.attempts) == ("succeeded", 1)
    assert len(receiver.received) == (2 if step == "record" else 1)
    await server.shutdown()


CLIENT_PATIENCE = 5.0  # trio seconds: then the client gives up and its request is cancelled


@pytest.mark.parametrize("step", ["claim", "create", "answer", "cancel", "cancel-claim"])
async def test_an_idempotent_retry_after_a_crash_or_a_cancellation_answers(
    nursery: trio.Nursery, settings: Settings, clock: trio.testing.MockClock, step: str
) -> None:
    """A create with `Idempotency-Key` crashes as it claims the key, in its write, or once
    its write (with its stored answer) committed; or its client goes away mid-write, or
    while the claim is being written (the write commits all the same, as a writer thread's
    does): a retry with the same key is answered, never 409 `idempotency_key_in_use` for
    the claim's minute (only final answers are stored: a 500 is not)."""
    server = await start_server(nursery, settings, clock=TrioClock())
    merchant = await server.merchant()
    headers = {"Idempotency-Key": f"crash-{step}"}
    faults = Faults(pytest.MonkeyPatch())
    if step == "claim":
        faults.crash_writes(server.db, idempotency_rows.claim, 1, after=False)
    elif step in ("create", "answer"):
        faults.crash_writes(server.db, checkout_sessions.insert, 1, after=step == "answer")
    elif step == "cancel":
        faults.monkeypatch.setattr(
            server.db, "write", _hang_once(server.db.write, checkout_sessions.insert)
        )
    else:
        faults.monkeypatch.setattr(
            server.db, "write", _slow_once(nursery, server.db.write, idempotency_rows.claim)
        )
    if step.startswith("cancel"):
        with pytest.raises(httpx.TimeoutException):
            await merchant.post(
                "/checkout/sessions", json=valid_body(), headers=headers, timeout=CLIENT_PATIENCE
            )
    else:
        first = await merchant.post("/checkout/sessions", json=valid_body(), headers=headers)
        assert first.status_code == 500, first.text
        assert faults.crashed == 1
    retried: list[httpx.Response] = []

    async def answered() -> bool:
        retried.append(
            await merchant.post("/checkout/sessions", json=valid_body(), headers=headers)
        )
        return retried[-1].status_code != 409

    # At once, or once the write the client left is over: not after the claim's minute.
    await wait_until(answered, within=2 * CLIENT_PATIENCE, what="the retry answered", every=1.0)
    faults.monkeypatch.undo()
    retry = retried[-1]
    assert retry.status_code == 201, retry.text
    # Created once: by the retry, or by the write that committed before its crash.
    assert (retry.headers.get("Idempotent-Replayed") == "true") == (step == "answer")
    again = await merchant.post("/checkout/sessions", json=valid_body(), headers=headers)
    assert again.headers.get("Idempotent-Replayed") == "true"
    assert again.json()["id"] == retry.json()["id"]
    listed = (await merchant.get("/checkout/sessions")).json()["data"]
    assert [session["id"] for session in listed] == [retry.json()["id"]]
    await server.shutdown()


def _hang_once(real_write: Any, fn: Any) -> Any:
    """A `Database.write` whose first write of `fn` never ends (until cancelled)."""
    hung: list[object] = []

    async def write(called: Any, *args: Any, **kwargs: Any) -> Any:
        if called is fn and not hung:
            hung.append(called)
            await trio.sleep_forever()
        return await real_write(called, *args, **kwargs)

    return write


def _slow_once(nursery: trio.Nursery, real_write: Any, fn: Any) -> Any:
    """A `Database.write` whose first write of `fn` commits at once but answers only after
    the client gave up: as a writer thread's job, it runs whether or not its caller waits."""
    slowed: list[object] = []

    async def write(called: Any, *args: Any, **kwargs: Any) -> Any:
        if called is not fn or slowed:
            return await real_write(called, *args, **kwargs)
        slowed.append(called)
        done = trio.Event()
        result = []

        async def run() -> None:
            result.append(await real_write(called, *args, **kwargs))
            done.set()

        nursery.start_soon(run)
        await trio.sleep(CLIENT_PATIENCE + 1)
        await done.wait()
        return result[0]

    return write


@pytest.mark.parametrize("step", ["open", "open-cancel", "send", "disconnect"])
async def test_a_stream_ended_by_a_crash_or_its_client_frees_its_place(
    nursery: trio.Nursery,
    settings: Settings,
    clock: trio.testing.MockClock,
    caplog: pytest.LogCaptureFixture,
    step: str,
) -> None:
    """Five streams (the merchant's most) end one after another: the registration's write
    crashes, the client gives up while it is under way (it commits all the same), a read
    of events crashes mid-stream, or the client disconnects. Then five streams open at
    once: no place was left held for the minute a place lasts unrenewed."""
    if step == "open-cancel":
        # Every library's debug records made and kept until the test ends, as under
        # `--log-level=DEBUG`: the client that gives up closes its connection all the same
        # (with trio-websocket's client, whose records held its connection, it did not).
        caplog.set_level(logging.DEBUG)
    server = await start_server(nursery, settings, clock=TrioClock())
    merchant = await server.merchant()
    faults = Faults(pytest.MonkeyPatch())
    most = stream_rules.MOST_STREAMS
    if step == "open":
        faults.crash_writes(server.db, stream_rows.open_stream, most, after=False)
    elif step == "send":
        faults.crash_reads(server.db, stream_rows.read, most)
    for _ in range(most):
        if step == "open":
            assert (await stream_refusal(server.url, merchant.key)).status == 500
        elif step == "open-cancel":
            faults.monkeypatch.setattr(
                server.db, "write", _slow_once(nursery, server.db.write, stream_rows.open_stream)
            )
            with pytest.raises(trio.TooSlowError):
                await give_up_in_handshake(server.url, merchant.key, CLIENT_PATIENCE)
            faults.monkeypatch.undo()
        else:
            async with open_stream(server.url, merchant.key) as stream:
                if step == "send":
                    with pytest.raises(ConnectionClosed):
                        await stream.ws.get_message()
    faults.monkeypatch.undo()

    async def all_free() -> bool:
        now = service_clock.now_us()
        return await server.db.read(stream_rows.open_streams, merchant.id, now) == 0

    service_clock = server.running.service.clock
    # Freed, not lapsed: a place left held lasts a minute unrenewed. (Mock time moves on
    # while the service waits on its database's threads, so a loaded machine takes more
    # of it than a quiet one: 5 s of it was too few at load 7.)
    await wait_until(all_free, within=30, what="every place free", every=1.0)
    async with AsyncExitStack() as streams:
        for _ in range(most):
            await streams.enter_async_context(open_stream(server.url, merchant.key))
    await server.shutdown()
