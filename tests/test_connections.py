"""Connections on the wire: early answers, stalled and idle clients, protocol errors.

Over real loopback HTTP, with httpx and with raw sockets where a client must misbehave
in ways httpx will not (a body sent after the answer, headers never finished). Time is
trio's MockClock wherever the server's timeouts are what is tested.
"""

from __future__ import annotations

import json
from typing import Any
from urllib.parse import urlsplit

import attrs
import httpx
import pytest
import trio
import trio.testing
from fgcpay.core.clock import TrioClock
from fgcpay.core.settings import Settings
from fgcpay.web.limits import BODY_TIMEOUT_SECONDS, KEEP_ALIVE_SECONDS, LINGER_SECONDS
from helpers import Server, start_server

API_ERROR_FIELDS = {"code", "message", "details", "request_id"}
# Real seconds a loopback exchange may take; the deadlines below are not waits.
DEADLINE = 10.0
VALID_BODY = {
    "amount_fgc": "10.00",
    "currency": "FGC",
    "description": "Two coffees",
    "success_url": "https://shop.example/ok",
    "cancel_url": "https://shop.example/cancel",
}


@attrs.frozen
class RawResponse:
    status: int
    headers: dict[str, str]
    body: bytes

    def api_error(self, status: int, code: str) -> dict[str, object]:
        """The ApiError body, after checking it is one with a matching Request-Id."""
        assert self.status == status, (self.status, self.body[:300])
        assert self.headers["content-type"].startswith("application/json")
        parsed: dict[str, Any] = json.loads(self.body)
        assert set(parsed) == API_ERROR_FIELDS
        assert parsed["code"] == code
        assert parsed["request_id"].startswith("req_")
        assert parsed["request_id"] == self.headers["request-id"]
        return parsed


class RawConnection:
    """A client that writes bytes as given and reads answers by Content-Length."""

    def __init__(self, stream: trio.SocketStream) -> None:
        self.stream = stream
        self.buffer = b""

    async def send(self, data: bytes) -> None:
        await self.stream.send_all(data)

    async def _more(self) -> bool:
        chunk = await self.stream.receive_some(65536)
        self.buffer += chunk
        return chunk != b""

    async def response(self) -> RawResponse:
        while b"\r\n\r\n" not in self.buffer:
            assert await self._more(), f"closed before an answer: {self.buffer[:200]!r}"
        head, _, self.buffer = self.buffer.partition(b"\r\n\r\n")
        status_line, *lines = head.decode("latin-1").split("\r\n")
        headers = {}
        for line in lines:
            name, _, value = line.partition(":")
            headers[name.strip().lower()] = value.strip()
        length = int(headers["content-length"])
        while len(self.buffer) < length:
            assert await self._more(), "closed inside an answer"
        body, self.buffer = self.buffer[:length], self.buffer[length:]
        return RawResponse(int(status_line.split(" ")[1]), headers, body)

    async def closed_by_server(self) -> None:
        """Read until the server closes; a reset instead of a close fails the test."""
        while await self._more():
            pass

    async def healthz(self) -> None:
        """One request answered on this connection: `GET /healthz`, 200."""
        await self.send(request_head("GET", "/healthz", {}))
        assert (await self.response()).status == 200

    async def closed_after_the_keep_alive(self) -> None:
        """Closed by the server, a whole keep-alive from now (the MockClock's time)."""
        started = trio.current_time()
        with trio.fail_after(KEEP_ALIVE_SECONDS + 5):
            await self.closed_by_server()
        assert trio.current_time() - started >= KEEP_ALIVE_SECONDS


async def open_raw(url: str) -> RawConnection:
    parts = urlsplit(url)
    assert parts.hostname and parts.port
    return RawConnection(await trio.open_tcp_stream(parts.hostname, parts.port))


def request_head(method: str, path: str, headers: dict[str, str]) -> bytes:
    lines = [
        f"{method} {path} HTTP/1.1",
        "Host: 127.0.0.1",
        *(f"{k}: {v}" for k, v in headers.items()),
    ]
    return ("\r\n".join(lines) + "\r\n\r\n").encode("latin-1")


def assert_rate_limit_headers(headers: httpx.Headers | dict[str, str]) -> None:
    assert headers["ratelimit-policy"].startswith('"default";q=')
    assert headers["ratelimit"].startswith('"default";r=')


# --- early answers (item 2) ---


async def test_a_10_mb_post_gets_413_then_the_next_request_on_the_client_works(
    server: Server,
) -> None:
    merchant = await server.merchant()
    with trio.fail_after(DEADLINE):
        big = await merchant.post(
            "/checkout/sessions",
            content=b"x" * 10_000_000,
            headers={"Content-Type": "application/json"},
        )
        assert big.status_code == 413
        after = await merchant.post("/checkout/sessions", json=VALID_BODY)
    assert after.status_code == 201, after.text
    assert big.json()["code"] == "payload_too_large"
    assert big.json()["request_id"] == big.headers["Request-Id"]
    assert_rate_limit_headers(big.headers)
    # Whether the answer says `Connection: close` depends on whether the whole body had
    # arrived before it went out (a loaded machine may read all 10 MB first, and then the
    # connection is rightly kept): the raw-socket test below sends the head alone, and
    # checks the close where it is certain.


async def test_a_401_with_a_body_keeps_the_httpx_connection(server: Server) -> None:
    merchant = await server.merchant()
    async with httpx.AsyncClient(
        base_url=server.url + "/api/v1", limits=httpx.Limits(max_connections=1)
    ) as client:
        with trio.fail_after(DEADLINE):
            for _ in range(3):
                refused = await client.post(
                    "/checkout/sessions", json=VALID_BODY, headers={"Authorization": "Bearer nope"}
                )
                assert refused.status_code == 401
                assert "Connection" not in refused.headers
            listed = await client.get("/checkout/sessions", headers=merchant.headers())
    assert listed.status_code == 200, listed.text


async def test_a_body_sent_after_the_headers_is_drained_and_the_connection_goes_on(
    server: Server,
) -> None:
    merchant = await server.merchant()
    connection = await open_raw(server.url)
    body = json.dumps(VALID_BODY).encode()
    with trio.fail_after(DEADLINE):
        await connection.send(
            request_head(
                "POST",
                "/api/v1/checkout/sessions",
                {
                    "Authorization": "Bearer fp_test_" + "a" * 32,
                    "Content-Type": "application/json",
                    "Content-Length": str(len(body)),
                },
            )
        )
        await connection.send(body)
        (await connection.response()).api_error(401, "invalid_api_key")
        await connection.send(
            request_head(
                "GET", "/api/v1/checkout/sessions", {"Authorization": f"Bearer {merchant.key}"}
            )
        )
        listed = await connection.response()
    assert listed.status == 200, listed.body


async def test_a_declared_large_body_gets_413_and_a_graceful_close(server: Server) -> None:
    merchant = await server.merchant()
    connection = await open_raw(server.url)
    with trio.fail_after(DEADLINE):
        await connection.send(
            request_head(
                "POST",
                "/api/v1/checkout/sessions",
                {
                    "Authorization": f"Bearer {merchant.key}",
                    "Content-Type": "application/json",
                    "Content-Length": str(10_000_000),
                },
            )
        )
        answer = await connection.response()
        answer.api_error(413, "payload_too_large")
        assert answer.headers["connection"] == "close"
        assert_rate_limit_headers(answer.headers)
        # The server reads and drops what is still coming instead of resetting it.
        for _ in range(8):
            await connection.send(b"x" * 131072)
        await connection.stream.send_eof()
        await connection.closed_by_server()


# --- stalled and idle connections (item 2), on the MockClock ---


@pytest.fixture
async def slow_server(
    nursery: trio.Nursery, settings: Settings, clock: trio.testing.MockClock
) -> Server:
    """A server whose time is the MockClock: each test using it also asks for `clock`,
    which is how pytest-trio makes that clock the run's clock."""
    return await start_server(nursery, settings, clock=TrioClock())


async def test_an_idle_connection_is_closed_after_the_keep_alive_timeout(
    slow_server: Server,
    clock: trio.testing.MockClock,
) -> None:
    connection = await open_raw(slow_server.url)
    await connection.closed_after_the_keep_alive()


async def test_a_connection_idle_after_an_answer_is_closed(
    slow_server: Server, clock: trio.testing.MockClock
) -> None:
    connection = await open_raw(slow_server.url)
    await connection.healthz()
    await connection.closed_after_the_keep_alive()


async def test_each_answer_gives_a_kept_alive_connection_the_whole_keep_alive_again(
    slow_server: Server, clock: trio.testing.MockClock
) -> None:
    connection = await open_raw(slow_server.url)
    for _ in range(3):  # 2.4 timeouts in all: each answer starts the timer anew
        await connection.healthz()
        clock.jump(KEEP_ALIVE_SECONDS * 0.8)
        await trio.testing.wait_all_tasks_blocked()  # a timer that was due has fired
    await connection.healthz()
    await connection.closed_after_the_keep_alive()


async def test_a_request_slower_than_the_keep_alive_is_answered_on_a_kept_alive_connection(
    slow_server: Server, clock: trio.testing.MockClock
) -> None:
    connection = await open_raw(slow_server.url)
    await connection.healthz()
    rest = await _post_in_flight(slow_server, connection)
    clock.jump(KEEP_ALIVE_SECONDS + 1)  # the rest of the body comes late, within 30 s
    await trio.testing.wait_all_tasks_blocked()
    await connection.send(rest)
    created = await connection.response()
    assert created.status == 201, created.body
    await connection.healthz()


async def _post_in_flight(server: Server, connection: RawConnection) -> bytes:
    """A create sent on `connection` but for its body's end (returned): in flight."""
    merchant = await server.merchant()
    body = json.dumps(VALID_BODY).encode()
    await connection.send(
        request_head(
            "POST",
            "/api/v1/checkout/sessions",
            {
                "Authorization": f"Bearer {merchant.key}",
                "Content-Type": "application/json",
                "Content-Length": str(len(body)),
            },
        )
        + body[:10]
    )
    await trio.testing.wait_all_tasks_blocked()  # the server has the head: the request is on
    return body[10:]


async def test_a_stopping_server_answers_a_request_in_flight_on_a_kept_alive_connection(
    slow_server: Server, clock: trio.testing.MockClock
) -> None:
    connection = await open_raw(slow_server.url)
    await connection.healthz()
    rest = await _post_in_flight(slow_server, connection)
    slow_server.stop.set()
    await trio.testing.wait_all_tasks_blocked()
    await connection.send(rest)
    with trio.fail_after(KEEP_ALIVE_SECONDS + 5):
        created = await connection.response()
        assert created.status == 201, created.body
        await connection.closed_by_server()  # then closed: the server is stopping


async def test_a_stopping_server_closes_its_idle_kept_alive_connections_at_once(
    slow_server: Server, clock: trio.testing.MockClock
) -> None:
    connections = [await open_raw(slow_server.url) for _ in range(3)]
    for connection in connections:
        await connection.healthz()
    stopping = trio.current_time()
    slow_server.stop.set()
    with trio.fail_after(KEEP_ALIVE_SECONDS + 5):
        for connection in connections:
            await connection.closed_by_server()
        await slow_server.stopped.wait()
    assert trio.current_time() - stopping < KEEP_ALIVE_SECONDS


class _Tasks(trio.abc.Instrument):
    """The names of the tasks spawned while installed; whether a keep-alive timer ended."""

    def __init__(self) -> None:
        self.spawned: list[str] = []
        self.keep_alive_ended = trio.Event()

    def task_spawned(self, task: trio.lowlevel.Task) -> None:
        self.spawned.append(task.name)

    def task_exited(self, task: trio.lowlevel.Task) -> None:
        if "_KeepAlive" in task.name:
            self.keep_alive_ended.set()


async def test_a_kept_alive_connection_times_its_keep_alive_with_one_task(
    server: Server,
) -> None:
    # Hypercorn's own timer is a task cancelled at each request and started anew after
    # each answer: that was work on every request (fgcpay.server, 5.).
    connection = await open_raw(server.url)
    spawned = _Tasks()
    with trio.fail_after(DEADLINE):
        await connection.healthz()  # the timers start
        trio.lowlevel.add_instrument(spawned)
        try:
            for _ in range(20):
                await connection.healthz()
        finally:
            trio.lowlevel.remove_instrument(spawned)
    assert len(spawned.spawned) >= 20  # each request's own task at least: the count works
    timers = [name for name in spawned.spawned if "idle" in name.lower() or "keep" in name.lower()]
    assert timers == []


async def test_a_kept_alive_connection_upgraded_to_h2c_leaves_no_timer_behind(
    server: Server,
) -> None:
    tasks = _Tasks()
    trio.lowlevel.add_instrument(tasks)
    try:
        connection = await open_raw(server.url)
        with trio.fail_after(DEADLINE):
            await connection.healthz()
            assert sum("_KeepAlive" in name for name in tasks.spawned) == 1
            upgrade = {
                "Connection": "Upgrade, HTTP2-Settings",
                "Upgrade": "h2c",
                "HTTP2-Settings": "AAMAAABkAARAAAAAAAIAAAAA",
            }
            await connection.send(request_head("GET", "/healthz", upgrade))
            while b"\r\n\r\n" not in connection.buffer:
                assert await connection._more()
            assert connection.buffer.startswith(b"HTTP/1.1 101 ")
            await connection.stream.aclose()
            # HTTP/2 has the connection now; once it closes, its HTTP/1.1 timer ends too.
            await tasks.keep_alive_ended.wait()
    finally:
        trio.lowlevel.remove_instrument(tasks)


async def test_headers_never_finished_are_closed_after_the_keep_alive_timeout(
    slow_server: Server,
    clock: trio.testing.MockClock,
) -> None:
    connection = await open_raw(slow_server.url)
    await connection.send(b"POST /api/v1/checkout/sessions HTTP/1.1\r\nHost: 127.0.0.1\r\nX-Slow: ")
    with trio.fail_after(KEEP_ALIVE_SECONDS + 5):
        await connection.closed_by_server()


async def test_a_body_never_finished_gets_408_and_the_connection_is_closed(
    slow_server: Server,
    clock: trio.testing.MockClock,
) -> None:
    merchant = await slow_server.merchant()
    connection = await open_raw(slow_server.url)
    await connection.send(
        request_head(
            "POST",
            "/api/v1/checkout/sessions",
            {
                "Authorization": f"Bearer {merchant.key}",
                "Content-Type": "application/json",
                "Content-Length": "100",
            },
        )
        + b'{"amount_fgc": '
    )
    started = trio.current_time()
    with trio.fail_after(BODY_TIMEOUT_SECONDS + LINGER_SECONDS + 5):
        answer = await connection.response()
        answer.api_error(408, "request_timeout")
        assert answer.headers["connection"] == "close"
        await connection.closed_by_server()
    assert trio.current_time() - started >= BODY_TIMEOUT_SECONDS


async def test_an_unread_body_on_a_page_that_ignores_it_closes_the_connection(
    slow_server: Server,
    clock: trio.testing.MockClock,
) -> None:
    connection = await open_raw(slow_server.url)
    await connection.send(request_head("GET", "/healthz", {"Content-Length": "100"}))
    answer = await connection.response()
    assert answer.status == 200
    assert answer.headers["connection"] == "close"
    with trio.fail_after(LINGER_SECONDS + 5):
        await connection.closed_by_server()


# --- two Authorization headers (item 9) ---


async def test_two_authorization_headers_are_refused(server: Server) -> None:
    first = await server.merchant("A")
    second = await server.merchant("B")
    response = await server.client.get(
        "/checkout/sessions",
        headers=[
            ("Authorization", f"Bearer {first.key}"),
            ("Authorization", f"Bearer {second.key}"),
        ],
    )
    assert response.status_code == 401
    body = response.json()
    assert body["code"] == "invalid_api_key"
    assert "one authorization header" in body["message"].lower()
    assert first.key not in response.text and second.key not in response.text
    assert (await first.get("/checkout/sessions")).status_code == 200


# --- error answers in the ApiError shape (item 11) ---


@pytest.mark.parametrize(
    "headers",
    [
        {"X-Pad": "a" * 70_000},
        {f"X-Pad-{n}": "a" * 1000 for n in range(70)},
        {"X-Pad": "a" * 2_000_000},
    ],
    ids=["one-70kb-header", "70-headers-of-1kb", "one-2mb-header"],
)
async def test_headers_over_64_kib_get_a_json_431(server: Server, headers: dict[str, str]) -> None:
    merchant = await server.merchant()
    with trio.fail_after(DEADLINE):
        response = await merchant.get("/checkout/sessions", headers=headers)
    assert response.status_code == 431, response.text
    body = response.json()
    assert set(body) == API_ERROR_FIELDS
    assert body["code"] == "request_header_fields_too_large"
    assert body["request_id"] == response.headers["Request-Id"]
    assert_rate_limit_headers(response.headers)
    # The client goes on (on a new connection if this one was closed).
    with trio.fail_after(DEADLINE):
        assert (await merchant.get("/checkout/sessions")).status_code == 200


async def test_headers_under_the_limit_are_served(server: Server) -> None:
    merchant = await server.merchant()
    response = await merchant.get("/checkout/sessions", headers={"X-Pad": "a" * 60_000})
    assert response.status_code == 200, response.text


async def test_a_2_mb_header_on_a_raw_socket_gets_431_not_a_reset(server: Server) -> None:
    connection = await open_raw(server.url)
    with trio.fail_after(DEADLINE):
        async with trio.open_nursery() as nursery:
            # Written while the answer is read, as a client that does not wait would.
            nursery.start_soon(
                connection.send,
                request_head("GET", "/api/v1/checkout/sessions", {"X-Pad": "a" * 2_000_000}),
            )
            answer = await connection.response()
        answer.api_error(431, "request_header_fields_too_large")
        assert answer.headers["connection"] == "close"
        assert_rate_limit_headers(answer.headers)
        await connection.stream.send_eof()
        await connection.closed_by_server()


@pytest.mark.parametrize(
    ("raw", "under_api"),
    [
        (b"GARBAGE\r\n\r\n", False),
        (
            b"GET /api/v1/checkout/sessions HTTP/1.1\r\nHost: 127.0.0.1\r\nno colon here\r\n\r\n",
            True,
        ),
        (b"GET /health/live HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Length: x\r\n\r\n", False),
    ],
    ids=["not-http", "bad-header-under-api", "bad-content-length"],
)
async def test_a_malformed_request_gets_a_json_400(
    server: Server, raw: bytes, under_api: bool
) -> None:
    connection = await open_raw(server.url)
    with trio.fail_after(DEADLINE):
        await connection.send(raw)
        answer = await connection.response()
        answer.api_error(400, "validation_error")
        assert answer.headers["connection"] == "close"
        assert ("ratelimit" in answer.headers) is under_api
        await connection.stream.send_eof()
        await connection.closed_by_server()
