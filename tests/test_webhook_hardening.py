"""Webhook delivery under hostile or slow receivers: one deadline per attempt, no merchant
starving another, registration without DNS and the guard at delivery time, and
`Retry-After` dates read on the service's clock. On both backends."""

from __future__ import annotations

import json
from datetime import UTC, datetime
from email.utils import format_datetime
from typing import Any

import attrs
import pytest
import trio
import trio.testing
from fgcpay.core.clock import SystemClock, TrioClock
from fgcpay.core.settings import ConfigError, Settings, load_settings
from fgcpay.domain.secret_box import SecretBox
from fgcpay.storage import webhooks as webhook_rows
from fgcpay.webhooks.dispatcher import WebhookDispatcher
from helpers import TEST_SECRET, add_endpoint, start_server
from hosted import paid_session
from receiver import start_receiver


@attrs.define(eq=False)
class Connection:
    opened: float
    closed: float | None = None
    ended: trio.Event = attrs.field(factory=trio.Event)


@attrs.define(eq=False)
class Dripper:
    """A receiver that answers `200` headers at once, then its body one byte a second."""

    port: int
    connections: list[Connection] = attrs.field(factory=list)
    _arrived: trio.Event = attrs.field(factory=trio.Event)

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}/hooks"

    @property
    def open_connections(self) -> int:
        return sum(1 for c in self.connections if c.closed is None)

    async def wait_for(self, count: int) -> None:
        while len(self.connections) < count:
            await self._arrived.wait()

    async def _serve(self, stream: trio.SocketStream) -> None:
        connection = Connection(opened=trio.current_time())
        self.connections.append(connection)
        self._arrived.set()
        self._arrived = trio.Event()
        try:
            received = b""
            while b"\r\n\r\n" not in received:
                chunk = await stream.receive_some(65536)
                if not chunk:
                    return
                received += chunk
            await stream.send_all(
                b"HTTP/1.1 200 OK\r\nContent-Type: text/plain\r\nContent-Length: 100000\r\n\r\n"
            )
            async with trio.open_nursery() as both:

                async def drip() -> None:
                    try:
                        while True:
                            await trio.sleep(1)
                            await stream.send_all(b".")
                    except (trio.BrokenResourceError, trio.ClosedResourceError):
                        both.cancel_scope.cancel()

                async def until_closed() -> None:
                    try:
                        while await stream.receive_some(65536):
                            pass  # the rest of the request body
                    except (trio.BrokenResourceError, trio.ClosedResourceError):
                        pass
                    both.cancel_scope.cancel()

                both.start_soon(drip)
                both.start_soon(until_closed)
        except (trio.BrokenResourceError, trio.ClosedResourceError):
            pass
        finally:
            connection.closed = trio.current_time()
            connection.ended.set()


async def start_dripper(nursery: trio.Nursery) -> Dripper:
    listeners = await trio.open_tcp_listeners(0, host="127.0.0.1")
    dripper = Dripper(port=listeners[0].socket.getsockname()[1])
    nursery.start_soon(trio.serve_listeners, dripper._serve, listeners)
    return dripper


async def test_a_dripping_receiver_is_cut_off_at_10_seconds_as_a_timeout(
    nursery: trio.Nursery, settings: Settings, clock: trio.testing.MockClock
) -> None:
    server = await start_server(nursery, settings, clock=TrioClock())
    dripper = await start_dripper(nursery)
    merchant = await server.merchant()
    await add_endpoint(merchant, dripper.url)
    await paid_session(server, merchant)
    dispatcher = server.running.service.dispatcher
    with trio.fail_after(40):
        await dripper.wait_for(1)
        # Until the attempt ends, only the dripper's timers and loopback sockets are at
        # work, no database thread for the clock to wait out: it may jump the drips at
        # once instead of after half a real second each.
        idle, clock.autojump_threshold = clock.autojump_threshold, 0
        await dripper.connections[0].ended.wait()
        clock.autojump_threshold = idle
        await dispatcher.wait_for_attempts(1)
    first = dripper.connections[0]
    assert first.closed is not None
    assert 10 <= first.closed - first.opened <= 10.5, "one deadline for the whole attempt"
    event = (await merchant.get("/events")).json()["data"][0]
    (delivery,) = await server.db.read(webhook_rows.deliveries_of_event, event["id"])
    assert (delivery.status, delivery.attempts, delivery.last_status) == ("pending", 1, None)
    assert delivery.last_error is not None and "timeout" in delivery.last_error
    await server.shutdown()


async def test_slow_endpoints_of_one_merchant_do_not_starve_another(
    nursery: trio.Nursery, settings: Settings, clock: trio.testing.MockClock
) -> None:
    server = await start_server(nursery, settings, clock=TrioClock())
    dispatcher = server.running.service.dispatcher
    drippers = [await start_dripper(nursery) for _ in range(4)]
    slow = await server.merchant("Slow Merchant")
    for dripper in drippers:
        await add_endpoint(slow, dripper.url)
    for _ in range(dispatcher.senders // len(drippers)):  # enough to occupy every sender
        await paid_session(server, slow)
    with trio.fail_after(5):
        while sum(d.open_connections for d in drippers) < dispatcher.senders // 2:
            async with trio.open_nursery() as any_arrival:
                for dripper in drippers:

                    async def one(d: Dripper = dripper) -> None:
                        await d.wait_for(len(d.connections) + 1)
                        any_arrival.cancel_scope.cancel()

                    any_arrival.start_soon(one)
    receiver = await start_receiver(nursery)
    fast = await server.merchant("Fast Merchant")
    await add_endpoint(fast, receiver.url)
    paid_at = trio.current_time()
    await paid_session(server, fast)
    with trio.fail_after(5):  # well before the slow attempts' 10 s deadline frees a sender
        (delivery,) = await receiver.wait_for(1)
    assert delivery.at - paid_at < 2
    assert sum(d.open_connections for d in drippers) <= dispatcher.per_merchant
    assert all(d.open_connections <= dispatcher.per_endpoint for d in drippers)
    await server.shutdown()


class NameResolver:
    """A resolver that knows a few names (the test's DNS)."""

    def __init__(self, names: dict[str, list[str]]) -> None:
        self.names = names
        self.calls: list[str] = []

    async def __call__(self, host: str, port: int) -> list[str]:
        self.calls.append(host)
        if host not in self.names:
            raise OSError(f"{host} does not resolve")
        return self.names[host]


async def test_registration_needs_no_dns(nursery: trio.Nursery, settings: Settings) -> None:
    server = await start_server(nursery, attrs.evolve(settings, webhook_allow_private=False))
    merchant = await server.merchant()
    for url in ("https://0.com/hooks", "https://hooks.not-live-yet.example/fgc"):
        created = await merchant.post("/webhook_endpoints", json={"url": url})
        assert created.status_code == 201, created.text
    refused = await merchant.post("/webhook_endpoints", json={"url": "http://[2002:7f00:1::]/h"})
    assert refused.status_code == 400
    (detail,) = refused.json()["details"]
    assert detail["field"] == "url" and "FGCPAY_WEBHOOK_ALLOW_PRIVATE" in detail["message"]
    await server.shutdown()


async def test_private_or_unresolvable_targets_are_refused_at_delivery_and_retried(
    nursery: trio.Nursery, settings: Settings, clock: trio.testing.MockClock
) -> None:
    strict = attrs.evolve(settings, webhook_allow_private=False)
    server = await start_server(nursery, strict, clock=TrioClock())
    receiver = await start_receiver(nursery)
    port = receiver.url.split(":")[2].split("/")[0]
    dispatcher = server.running.service.dispatcher
    dispatcher.resolver = NameResolver({"hooks.test": ["127.0.0.1"]})
    merchant = await server.merchant()
    private = await add_endpoint(merchant, f"http://hooks.test:{port}/hooks")
    missing = await add_endpoint(merchant, "https://not-yet.test/hooks")
    await paid_session(server, merchant)
    event = (await merchant.get("/events")).json()["data"][0]
    await dispatcher.wait_for_attempts(2)
    clock.jump(5 * 1.1 + 1)  # the first retry, on schedule
    await dispatcher.wait_for_attempts(4)
    deliveries = await server.db.read(webhook_rows.deliveries_of_event, event["id"])
    by_endpoint = {d.endpoint_id: d for d in deliveries}
    refused, unresolved = by_endpoint[private["id"]], by_endpoint[missing["id"]]
    for delivery in (refused, unresolved):
        assert (delivery.status, delivery.attempts, delivery.last_status) == ("pending", 2, None)
    assert refused.last_error and "destination refused" in refused.last_error
    assert "FGCPAY_WEBHOOK_ALLOW_PRIVATE" in refused.last_error
    assert unresolved.last_error and "does not resolve" in unresolved.last_error
    assert receiver.received == []
    await server.shutdown()


async def test_retry_after_as_an_http_date_is_read_on_the_service_clock(
    nursery: trio.Nursery, settings: Settings, clock: trio.testing.MockClock
) -> None:
    server = await start_server(nursery, settings, clock=TrioClock())
    clock.jump(3 * 86400)  # service time is now three days ahead of the host's clock
    service_clock = server.running.service.clock

    def answer(number: int) -> object:
        if number:
            return (200, {})
        when = datetime.fromtimestamp(service_clock.now_us() / 1e6 + 900, tz=UTC)
        return (503, {"Retry-After": format_datetime(when, usegmt=True)})

    receiver = await start_receiver(nursery)
    receiver.script = answer
    merchant = await server.merchant()
    await add_endpoint(merchant, receiver.url)
    await paid_session(server, merchant)
    first, second = await receiver.wait_for(2)
    assert 895 <= second.at - first.at <= 905, "900 s of service time, not of the host's"
    assert json.loads(first.body)["id"] == json.loads(second.body)["id"]
    await server.shutdown()


def test_the_lease_must_comfortably_outlast_one_attempt() -> None:
    base = {"FGCPAY_ENV": "test", "FGCPAY_SECRET_KEY": TEST_SECRET}
    with pytest.raises(ConfigError, match="FGCPAY_WEBHOOK_LEASE_SECONDS"):
        load_settings({**base, "FGCPAY_WEBHOOK_LEASE_SECONDS": "11"})
    assert load_settings({**base, "FGCPAY_WEBHOOK_LEASE_SECONDS": "20"}).webhook_lease_seconds == 20
    no_storage: Any = None  # refused before storage is touched
    with pytest.raises(ValueError, match="lease"):
        WebhookDispatcher(
            no_storage,
            SystemClock(),
            SecretBox(TEST_SECRET),
            allow_private=False,
            lease_seconds=15,
        )
