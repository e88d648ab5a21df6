"""Sessions expire at `expires_at`, durably, driven by trio's MockClock (no real waiting)."""

from __future__ import annotations

from typing import Any

import attrs
import trio
import trio.testing
from fgcpay.core.clock import TrioClock
from fgcpay.core.settings import Settings
from helpers import Server, create, start_server

TTL = 120


async def wait_for_status(
    server: Server, merchant: Any, session_id: str, status: str
) -> dict[str, Any]:
    """Subscribe first, then read: a change after the read is then sure to be seen."""
    with server.running.service.status_hub.subscribe(session_id) as subscription:
        while True:
            current: dict[str, Any] = (
                await merchant.get(f"/checkout/sessions/{session_id}")
            ).json()
            if current["status"] == status:
                return current
            await subscription.next()


async def test_a_session_expires_at_its_expires_at(
    nursery: trio.Nursery, settings: Settings, clock: trio.testing.MockClock
) -> None:
    server = await start_server(
        nursery, attrs.evolve(settings, checkout_ttl_seconds=TTL), clock=TrioClock()
    )
    merchant = await server.merchant()
    session = await create(merchant)
    clock.jump(TTL - 1)
    assert (await merchant.get(f"/checkout/sessions/{session['id']}")).json()["status"] == "created"
    clock.jump(1.5)
    expired = await wait_for_status(server, merchant, session["id"], "expired")
    assert expired["updated_at"] > session["updated_at"]
    assert expired["paid_at"] is None
    listed = (await merchant.get("/checkout/sessions", params={"status": "expired"})).json()["data"]
    assert [s["id"] for s in listed] == [session["id"]]
    server.stop.set()


async def test_many_sessions_expire_in_one_sweep(
    nursery: trio.Nursery, settings: Settings, clock: trio.testing.MockClock
) -> None:
    server = await start_server(
        nursery, attrs.evolve(settings, checkout_ttl_seconds=TTL), clock=TrioClock()
    )
    merchant = await server.merchant()
    ids = [(await create(merchant))["id"] for _ in range(12)]
    clock.jump(TTL + 1)
    for session_id in ids:
        await wait_for_status(server, merchant, session_id, "expired")
    server.stop.set()


async def test_expiry_is_durable_across_a_restart(
    nursery: trio.Nursery, settings: Settings, clock: trio.testing.MockClock
) -> None:
    service_clock = TrioClock()
    settings = attrs.evolve(settings, checkout_ttl_seconds=TTL)
    first = await start_server(nursery, settings, clock=service_clock)
    merchant = await first.merchant()
    session = await create(merchant)
    await first.shutdown()
    clock.jump(TTL * 10)  # the service was down when the session came due
    second = await start_server(nursery, settings, clock=service_clock)
    merchant.http = second.client
    await wait_for_status(second, merchant, session["id"], "expired")
    second.stop.set()


async def test_expiring_twice_changes_nothing(
    nursery: trio.Nursery, settings: Settings, clock: trio.testing.MockClock
) -> None:
    server = await start_server(
        nursery, attrs.evolve(settings, checkout_ttl_seconds=TTL), clock=TrioClock()
    )
    merchant = await server.merchant()
    session = await create(merchant)
    clock.jump(TTL + 1)
    expired = await wait_for_status(server, merchant, session["id"], "expired")
    again = await server.running.service.checkout.expire(session["id"])
    assert again.status == "expired"
    assert (await merchant.get(f"/checkout/sessions/{session['id']}")).json() == expired
    server.stop.set()


async def test_a_session_not_yet_due_is_left_alone(server: Server) -> None:
    merchant = await server.merchant()
    session = await create(merchant)
    result = await server.running.service.checkout.expire(session["id"])
    assert result.status == "created"
    assert (await merchant.get(f"/checkout/sessions/{session['id']}")).json()["status"] == "created"
