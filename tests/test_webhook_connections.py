"""The webhook client's kept-alive connections, as a receiver sees them, on both backends:
deliveries reuse connections; a kept connection the receiver closed while it was idle is
replaced before anything is sent on it; a request the receiver read and dropped without
an answer is a failed attempt, sent again only on the retry's schedule; an answer past
the 2 KiB kept is cut, and its connection serves again or is closed."""

from __future__ import annotations

import math

import trio
import trio.testing
from fgcpay.core.clock import TrioClock
from fgcpay.core.settings import Settings
from fgcpay.webhooks.client import DRAIN_LIMIT, NO_ANSWER
from helpers import MerchantClient, Server, add_endpoint, queue_events, start_server
from receiver import RawReceiver, Reply, start_raw_receiver

REAL_LIMIT = 30.0  # real seconds: a deadline for what takes milliseconds, not a pace


async def _deliver(server: Server, merchant: MerchantClient, receiver: RawReceiver, n: int) -> None:
    """Queue `n` more deliveries and wait until every attempt so far is recorded."""
    dispatcher = server.running.service.dispatcher
    total = dispatcher.attempts + n
    # Due a moment ago, each later than the last (so the log's order is the queue's).
    at_us = server.running.service.clock.now_us() - 1_000_000 + len(receiver.requests)
    await queue_events(server, merchant.id, n, at_us)
    await receiver.wait_until(lambda r: len(r.requests) >= total)
    await dispatcher.wait_for_attempts(total)


async def _log(merchant: MerchantClient) -> list[tuple[str, list[tuple[int | None, str | None]]]]:
    """Each delivery, oldest first: its status and its attempts' (status code, error)."""
    page = (await merchant.get("/webhook_deliveries", params={"limit": 100})).json()["data"]
    return [
        (d["status"], [(a["status_code"], a["error"]) for a in d["attempts"]])
        for d in reversed(page)
    ]


async def test_deliveries_to_one_endpoint_reuse_kept_connections(
    server: Server, nursery: trio.Nursery
) -> None:
    receiver = await start_raw_receiver(nursery)
    merchant = await server.merchant()
    await add_endpoint(merchant, receiver.url)
    dispatcher = server.running.service.dispatcher
    with trio.fail_after(REAL_LIMIT):
        await _deliver(server, merchant, receiver, 30)
        opened = receiver.connections
        # At most one connection per attempt at once, each kept for the next ones.
        assert opened <= dispatcher.per_endpoint < 30
        assert {r.connection for r in receiver.requests} == set(range(opened))
        for _ in range(3):  # later ones, one at a time: a kept connection takes each
            await _deliver(server, merchant, receiver, 1)
    assert receiver.connections == opened and len(receiver.requests) == 33
    assert await _log(merchant) == [("succeeded", [(200, None)])] * 33


async def test_a_kept_connection_the_receiver_closed_is_replaced_before_sending(
    server: Server, nursery: trio.Nursery
) -> None:
    receiver = await start_raw_receiver(nursery)
    # The first answer is the connection's last, as when a receiver's keep-alive runs out.
    receiver.script = lambda n: Reply(close=n == 0)
    merchant = await server.merchant()
    await add_endpoint(merchant, receiver.url)
    with trio.fail_after(REAL_LIMIT):
        await _deliver(server, merchant, receiver, 1)
        await receiver.wait_until(lambda r: r.closed == 1)
        await _deliver(server, merchant, receiver, 1)
    # Nothing was sent on the closed one: the second went once, on a fresh connection,
    # and no attempt failed.
    assert [r.connection for r in receiver.requests] == [0, 1]
    assert await _log(merchant) == [("succeeded", [(200, None)])] * 2


async def test_a_request_read_and_dropped_unanswered_is_a_failed_attempt_sent_once(
    nursery: trio.Nursery, settings: Settings, clock: trio.testing.MockClock
) -> None:
    server = await start_server(nursery, settings, clock=TrioClock())
    receiver = await start_raw_receiver(nursery)
    # The second request is read, then its connection closed without an answer.
    receiver.script = lambda n: None if n == 1 else Reply()
    merchant = await server.merchant()
    await add_endpoint(merchant, receiver.url)
    clock.autojump_threshold = math.inf  # service time moves only when the test says
    await _deliver(server, merchant, receiver, 1)
    await _deliver(server, merchant, receiver, 1)
    # Sent on the kept connection, where the receiver may have acted on it: a failure,
    # not sent again at once on another connection.
    assert [r.connection for r in receiver.requests] == [0, 0]
    assert await _log(merchant) == [
        ("succeeded", [(200, None)]),
        ("pending", [(None, NO_ANSWER)]),
    ]
    clock.jump(5.6)  # the retry, on its schedule (5 s, jittered)
    await server.running.service.dispatcher.wait_for_attempts(3)
    assert [r.connection for r in receiver.requests] == [0, 0, 1]
    assert len({r.body for r in receiver.requests[1:]}) == 1, "the same delivery again"
    assert (await _log(merchant))[1] == ("succeeded", [(None, NO_ANSWER), (200, None)])
    clock.autojump_threshold = 0.5
    await server.shutdown()


async def test_an_answer_past_2_kib_is_cut_and_its_connection_serves_again_or_is_closed(
    server: Server, nursery: trio.Nursery
) -> None:
    receiver = await start_raw_receiver(nursery)
    bodies = [b"a" * 3000, b"b" * (2 * DRAIN_LIMIT), b"c" * 10]
    receiver.script = lambda n: Reply(body=bodies[n])
    merchant = await server.merchant()
    await add_endpoint(merchant, receiver.url)
    with trio.fail_after(REAL_LIMIT):
        for _ in bodies:
            await _deliver(server, merchant, receiver, 1)
        await receiver.wait_until(lambda r: r.closed == 1)
    # Read to its end, the first answer left its connection ready for the second; the
    # second, too long to read through, had its connection closed.
    assert [r.connection for r in receiver.requests] == [0, 0, 1]
    page = (await merchant.get("/webhook_deliveries")).json()["data"]
    shown = [(d["status"], d["attempts"][0]["response_body"]) for d in reversed(page)]
    assert shown == [("succeeded", "a" * 2048), ("succeeded", "b" * 2048), ("succeeded", "c" * 10)]
