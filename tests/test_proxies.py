"""Limits per client address behind trusted proxies (FGCPAY_TRUSTED_PROXY_HOPS), with a
real reverse proxy in front (tests/proxy.py), as a Procfile host's router is.

Clients connect from distinct loopback addresses (Linux routes all of 127.0.0.0/8 to
loopback): 127.0.0.2 and 127.0.0.3, while the proxy reaches the service from 127.0.0.1.
"""

from __future__ import annotations

import logging
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import attrs
import httpx
import hypercorn.protocol
import hypercorn.trio
import pytest
import trio
import trio.testing
from fgcpay.asgi import ServiceApp
from fgcpay.core.clock import TrioClock
from fgcpay.core.logs import logger
from fgcpay.core.settings import ConfigError, Settings, load_settings
from fgcpay.web.proxies import behind_proxies, client_address
from helpers import CLIENT_TLS, TEST_SECRET, Dashboard, Server, new_email, sign_in, start_server
from helpers._dashboard import PASSWORD
from hypercorn.config import Config
from hypercorn.protocol.h11 import H11Protocol
from proxy import ReverseProxy

ALICE = "127.0.0.2"
BOB = "127.0.0.3"
WRONG = "not the password at all"


def browser(base_url: str, address: str) -> Dashboard:
    """A dashboard browser whose connections come from `address` (one per request: the
    tests run on a MockClock, see start_server)."""
    transport = httpx.AsyncHTTPTransport(
        local_address=address, verify=CLIENT_TLS, limits=httpx.Limits(max_keepalive_connections=0)
    )
    return Dashboard(httpx.AsyncClient(base_url=base_url, transport=transport, timeout=30))


async def behind_proxy(
    nursery: trio.Nursery, settings: Settings, hops: int
) -> tuple[Server, ReverseProxy]:
    server = await start_server(
        nursery, attrs.evolve(settings, trusted_proxy_hops=hops), clock=TrioClock()
    )
    host, port = server.url.removeprefix("http://").rsplit(":", 1)
    proxy = ReverseProxy(host, int(port))
    await nursery.start(proxy.run)
    return server, proxy


async def sign_up(dashboard: Dashboard) -> str:
    email = new_email()
    answer = await dashboard.submit(
        "/dashboard/sign-up", {"name": "Acme Coffee", "email": email, "password": PASSWORD}
    )
    assert answer.status_code == 303, answer.text
    return email


async def lock_out(dashboard: Dashboard) -> None:
    """Twenty wrong sign-ins (each with another email) lock sign-in from the address."""
    for attempt in range(20):
        answer = await sign_in(dashboard, new_email(), WRONG)
        assert answer.status_code == (400 if attempt < 19 else 429), answer.text
    assert "locked" in answer.text


def logged_clients(caplog: pytest.LogCaptureFixture, path: str) -> set[Any]:
    return {
        record.fields.get("client")  # type: ignore[attr-defined]
        for record in caplog.records
        if record.getMessage() == "request" and record.fields.get("path") == path  # type: ignore[attr-defined]
    }


async def test_two_clients_behind_the_proxy_are_locked_out_separately(
    nursery: trio.Nursery,
    settings: Settings,
    clock: trio.testing.MockClock,
    caplog: pytest.LogCaptureFixture,
) -> None:
    server, proxy = await behind_proxy(nursery, settings, hops=1)
    alice, bob = browser(proxy.url, ALICE), browser(proxy.url, BOB)
    email = await sign_up(bob)
    bob.client.cookies.clear()  # signed out again
    with caplog.at_level(logging.INFO, logger="fgcpay"):
        await lock_out(alice)
        answer = await sign_in(alice, email)
        assert answer.status_code == 429 and "locked" in answer.text, "Alice's address is"
        answer = await sign_in(bob, email)
        assert answer.status_code == 303, "Bob's address is not locked"
    assert proxy.forwarded_for[-1] == BOB
    assert logged_clients(caplog, "/dashboard/sign-in") == {ALICE, BOB}, "logs show them"
    for dashboard in (alice, bob):
        await dashboard.aclose()
    await server.shutdown()


async def test_failed_authentication_is_limited_per_client_behind_the_proxy(
    nursery: trio.Nursery, settings: Settings, clock: trio.testing.MockClock
) -> None:
    limited = attrs.evolve(settings, rate_limit_per_second=1.0, rate_limit_burst=2)
    server, proxy = await behind_proxy(nursery, limited, hops=1)
    bad = {"Authorization": "Bearer fp_test_" + "q" * 32}
    for address in (ALICE, BOB):
        client = browser(proxy.url, address).client
        # A leftmost X-Forwarded-For the client wrote itself changes nothing.
        codes = [
            (
                await client.get(
                    "/api/v1/checkout/sessions",
                    headers={**bad, "X-Forwarded-For": f"10.0.0.{n}"},
                )
            ).status_code
            for n in range(3)
        ]
        assert codes == [401, 401, 429], address
        await client.aclose()
    assert proxy.forwarded_for[-1] == f"10.0.0.2, {BOB}"
    await server.shutdown()


async def test_without_trusted_proxies_a_spoofed_header_is_ignored(
    nursery: trio.Nursery,
    settings: Settings,
    clock: trio.testing.MockClock,
    caplog: pytest.LogCaptureFixture,
) -> None:
    server = await start_server(nursery, settings, clock=TrioClock())
    alice = browser(server.url, ALICE)
    with caplog.at_level(logging.INFO, logger="fgcpay"):
        for attempt in range(20):
            # Another address claimed each time: the limit keys on the socket's.
            alice.client.headers["X-Forwarded-For"] = f"10.1.2.{attempt}"
            answer = await sign_in(alice, new_email(), WRONG)
        assert answer.status_code == 429 and "locked" in answer.text
    assert logged_clients(caplog, "/dashboard/sign-in") == {ALICE}
    bob = browser(server.url, BOB)
    assert (await sign_in(bob, new_email(), WRONG)).status_code == 400, "Bob is not locked"
    for dashboard in (alice, bob):
        await dashboard.aclose()
    await server.shutdown()


async def test_the_forwarded_scheme_is_used_only_without_a_public_url(
    nursery: trio.Nursery, settings: Settings, clock: trio.testing.MockClock
) -> None:
    """The router ends TLS: without FGCPAY_PUBLIC_URL, the scheme it forwards says whether
    the dashboard's cookies are Secure; with it, the public URL says."""
    for public_url_set, secure in ((False, True), (True, False)):
        server, proxy = await behind_proxy(
            nursery, attrs.evolve(settings, public_url_set=public_url_set), hops=1
        )
        proxy.forwarded_proto = "https"
        client = browser(proxy.url, ALICE).client
        answer = await client.get("/dashboard/sign-in")
        cookies = answer.headers.get_list("set-cookie")
        assert cookies and all(("; Secure" in cookie) is secure for cookie in cookies), cookies
        await client.aclose()
        await server.shutdown()


@pytest.fixture
def fgcpay_logger_kept() -> Iterator[None]:
    """The ASGI lifespan sends fgcpay's log lines to stderr: put them back after."""
    kept = (logger.handlers[:], logger.level, logger.propagate)
    yield
    logger.handlers[:], level, logger.propagate = kept
    logger.setLevel(level)


@pytest.mark.usefixtures("fgcpay_logger_kept")
async def test_plain_hypercorn_behind_the_proxy_limits_each_client(
    nursery: trio.Nursery,
    database_url: str,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """`hypercorn fgcpay.asgi:app` (in process, hypercorn's own config) reads the setting
    from the environment as `fgcpay serve` does; its protocol is installed only while
    it serves."""
    monkeypatch.chdir(tmp_path)
    for name, value in {
        "DATABASE_URL": database_url,
        "SECRET_KEY": TEST_SECRET,
        "TRUSTED_PROXY_HOPS": "1",
        "RATE_LIMIT_BURST": "2",
        "RATE_LIMIT_PER_SECOND": "0.001",
    }.items():
        monkeypatch.setenv("FGCPAY_" + name, value)
    config = Config()
    config.bind = ["127.0.0.1:0"]
    stop = trio.Event()
    stopped = trio.Event()

    async def serve_app(task_status: trio.TaskStatus[list[str]]) -> None:
        try:
            await hypercorn.trio.serve(
                ServiceApp(), config, shutdown_trigger=stop.wait, task_status=task_status
            )
        finally:
            stopped.set()

    urls: list[str] = await nursery.start(serve_app)
    assert vars(hypercorn.protocol)["H11Protocol"] is not H11Protocol, "installed while serving"
    host, port = urls[0].removeprefix("http://").rsplit(":", 1)
    proxy = ReverseProxy(host, int(port))
    await nursery.start(proxy.run)
    bad = {"Authorization": "Bearer fp_test_" + "q" * 32}
    for address in (ALICE, BOB):
        client = browser(proxy.url, address).client
        codes = [
            (await client.get("/api/v1/checkout/sessions", headers=bad)).status_code
            for _ in range(3)
        ]
        assert codes == [401, 401, 429], address
        await client.aclose()
    stop.set()
    await stopped.wait()
    assert vars(hypercorn.protocol)["H11Protocol"] is H11Protocol, "and undone after"


def scope(forwarded_for: list[bytes], peer: str = "127.0.0.1") -> dict[str, Any]:
    return {
        "type": "http",
        "client": (peer, 5000),
        "headers": [(b"x-forwarded-for", value) for value in forwarded_for],
    }


@pytest.mark.parametrize(
    ("hops", "headers", "client"),
    [
        (0, [b"10.0.0.1"], "127.0.0.1"),  # forwarding headers ignored
        (1, [b"10.0.0.1"], "10.0.0.1"),
        (1, [b"6.6.6.6, 10.0.0.1"], "10.0.0.1"),  # the client's own value ignored
        (1, [b"6.6.6.6", b"10.0.0.1"], "10.0.0.1"),  # several headers: one list, in order
        (2, [b"6.6.6.6, 10.0.0.1, 10.0.0.2"], "10.0.0.1"),
        (2, [b"10.0.0.2"], "127.0.0.1"),  # fewer than hops: the peer's, never a guess
        (1, [], "127.0.0.1"),
        (1, [b"not an address"], "127.0.0.1"),
        (1, [b"10.0.0.1:4711"], "10.0.0.1"),  # a proxy that adds the port
        (1, [b"[2001:db8::1]:4711"], "2001:db8::1"),
        (1, [b"2001:db8::1"], "2001:db8::1"),
    ],
)
def test_the_client_is_the_hops_th_address_from_the_right(
    hops: int, headers: list[bytes], client: str
) -> None:
    assert client_address(scope(headers), hops) == client


@pytest.mark.parametrize("value", ["-1", "one", "1.5", "33", "١"])
def test_a_bad_hops_setting_is_refused_in_one_line(value: str) -> None:
    with pytest.raises(ConfigError) as refused:
        load_settings({"FGCPAY_TRUSTED_PROXY_HOPS": value, "FGCPAY_SECRET_KEY": "k" * 32})
    message = str(refused.value)
    assert message.startswith("FGCPAY_TRUSTED_PROXY_HOPS must be a whole number from 0 to 32")
    assert "\n" not in message


def test_hops_default_to_none_and_read_as_set() -> None:
    secret = {"FGCPAY_SECRET_KEY": "k" * 32}
    assert load_settings(secret).trusted_proxy_hops == 0
    assert load_settings({**secret, "FGCPAY_TRUSTED_PROXY_HOPS": "1"}).trusted_proxy_hops == 1


@pytest.mark.parametrize(
    ("public_url_set", "proto", "host", "seen"),
    [
        (False, b"https", b"pay.example.com", ("https", b"pay.example.com")),
        (False, b"HTTPS", b"pay.example.com:8443", ("https", b"pay.example.com:8443")),
        (False, b"http", b"[2001:db8::1]:8080", ("http", b"[2001:db8::1]:8080")),
        # Anything else is not a scheme or a host: the connection's own are kept.
        (False, b"javascript", b"evil.example/path", ("http", b"service:8000")),
        (False, b"https", b"a b", ("https", b"service:8000")),
        (False, b"https", b"evil.example@x", ("https", b"service:8000")),
        # With FGCPAY_PUBLIC_URL set, they are ignored.
        (True, b"https", b"pay.example.com", ("http", b"service:8000")),
    ],
)
async def test_the_forwarded_scheme_and_host_are_validated_and_only_without_a_public_url(
    public_url_set: bool, proto: bytes, host: bytes, seen: tuple[str, bytes]
) -> None:
    got: list[Any] = []

    async def app(scope: Any, receive: Any, send: Any) -> None:
        got.append(scope)

    asked: Any = {
        **scope([b"6.6.6.6, 10.0.0.1"]),
        "scheme": "http",
    }
    asked["headers"] += [
        (b"host", b"service:8000"),
        (b"x-forwarded-proto", proto),
        (b"x-forwarded-host", host),
    ]
    await behind_proxies(app, 1, public_url_set)(asked, _nothing, _nothing)
    (resolved,) = got
    hosts = [value for name, value in resolved["headers"] if name == b"host"]
    assert (resolved["scheme"], *hosts) == seen
    assert resolved["client"] == ("10.0.0.1", 0)
    assert asked["client"] == ("127.0.0.1", 5000), "the server's own scope is left as it is"


async def _nothing(*_: Any) -> Any:
    return None
