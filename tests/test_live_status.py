"""Live status over the websocket (trio-websocket as the client)."""

from __future__ import annotations

import json

import attrs
import trio
import trio.testing
from fgcpay.core.clock import TrioClock
from fgcpay.core.settings import Settings
from helpers import Server, start_server, subscription_to_approve
from hosted import Customer, new_session
from trio_websocket import ConnectionClosed, ConnectionRejected, open_websocket_url


def ws_url(server: Server, session_id: str) -> str:
    return server.url.replace("http://", "ws://") + f"/checkout/{session_id}/ws"


async def test_sends_the_status_at_once_and_after_payment(server: Server) -> None:
    _, session = await new_session(server)
    sid = str(session["id"])
    async with open_websocket_url(ws_url(server, sid)) as ws:
        assert json.loads(await ws.get_message()) == {"id": sid, "status": "created"}
        customer = Customer(server)
        assert (await customer.pay(sid)).status_code == 303
        assert json.loads(await ws.get_message()) == {"id": sid, "status": "paid"}
        await customer.close()
        try:
            await ws.get_message()
        except ConnectionClosed as closed:
            assert closed.reason is not None and closed.reason.code == 1000
        else:
            raise AssertionError("the socket stayed open after a final status")


async def test_every_subscriber_hears_the_change(server: Server) -> None:
    _, session = await new_session(server)
    sid = str(session["id"])
    received: list[dict[str, str]] = []
    connected = trio.Semaphore(0)

    async def listen() -> None:
        async with open_websocket_url(ws_url(server, sid)) as ws:
            json.loads(await ws.get_message())
            connected.release()
            received.append(json.loads(await ws.get_message()))

    async with trio.open_nursery() as nursery:
        for _ in range(5):
            nursery.start_soon(listen)
        for _ in range(5):
            await connected.acquire()
        customer = Customer(server)
        await customer.pay(sid)
        await customer.close()
    assert received == [{"id": sid, "status": "paid"}] * 5
    assert server.running.service.status_hub.resource_ids() == []  # nothing left behind


async def test_a_paid_session_reads_paid_at_once(server: Server) -> None:
    _, session = await new_session(server)
    sid = str(session["id"])
    customer = Customer(server)
    await customer.pay(sid)
    await customer.close()
    async with open_websocket_url(ws_url(server, sid)) as ws:
        assert json.loads(await ws.get_message()) == {"id": sid, "status": "paid"}


async def test_expiry_reaches_the_socket(
    nursery: trio.Nursery, settings: Settings, clock: trio.testing.MockClock
) -> None:
    server = await start_server(
        nursery, attrs.evolve(settings, checkout_ttl_seconds=120), clock=TrioClock()
    )
    _, session = await new_session(server)
    sid = str(session["id"])
    async with open_websocket_url(ws_url(server, sid)) as ws:
        assert json.loads(await ws.get_message()) == {"id": sid, "status": "created"}
        clock.jump(121)
        assert json.loads(await ws.get_message()) == {"id": sid, "status": "expired"}
    await server.shutdown()


async def test_unknown_session_socket_is_refused_with_404(server: Server) -> None:
    try:
        async with open_websocket_url(ws_url(server, "cs_test_" + "Z" * 24)):
            raise AssertionError("the handshake was accepted")
    except ConnectionRejected as rejected:
        assert rejected.status_code == 404


async def test_slow_subscriber_gets_the_latest_not_a_backlog() -> None:
    from fgcpay.live_status import StatusHub

    hub = StatusHub()
    with hub.subscribe("x") as subscription:
        for status in ("created", "paid", "expired"):
            hub.publish("x", {"status": status})
        assert await subscription.next() == {"status": "expired"}
        with trio.move_on_after(0.01) as nothing_more:
            await subscription.next()
        assert nothing_more.cancelled_caught
    assert hub.resource_ids() == []


async def test_a_payment_in_one_process_reaches_a_socket_held_by_another(
    nursery: trio.Nursery, postgres_settings: Settings
) -> None:
    settings = postgres_settings
    # Two services on one database share nothing but PostgreSQL, like two workers.
    first = await start_server(nursery, settings)
    second = await start_server(nursery, settings)
    _, session = await new_session(first)
    sid = str(session["id"])
    async with open_websocket_url(ws_url(second, sid)) as ws:
        assert json.loads(await ws.get_message()) == {"id": sid, "status": "created"}
        customer = Customer(first)
        assert (await customer.pay(sid)).status_code == 303
        await customer.close()
        with trio.fail_after(30):
            assert json.loads(await ws.get_message()) == {"id": sid, "status": "paid"}
    await first.shutdown()
    await second.shutdown()


async def test_a_cancel_in_one_process_reaches_an_active_subscriptions_socket_in_another(
    nursery: trio.Nursery, postgres_settings: Settings
) -> None:
    first = await start_server(nursery, postgres_settings)
    second = await start_server(nursery, postgres_settings)
    merchant, sub = await subscription_to_approve(first)
    await first.running.service.subscriptions.approve(sub.id, "TEST-0001", "1234")
    async with open_websocket_url(ws_url(second, sub.id)) as ws:
        assert json.loads(await ws.get_message()) == {"id": sub.id, "status": "active"}
        cancelled = await merchant.post(f"/subscriptions/{sub.id}/cancel")
        assert cancelled.status_code == 200, cancelled.text
        # The first process's commit reaches the second through PostgreSQL's notifications.
        with trio.fail_after(30):
            assert json.loads(await ws.get_message()) == {"id": sub.id, "status": "cancelled"}
    await first.shutdown()
    await second.shutdown()
