"""How connections are served on the wire: hypercorn's HTTP/1.1 protocol, adjusted.

Hypercorn 0.18 (trio worker, h11) gets three things wrong for us, and offers no hook for
them, so while fgcpay serves (`installed()`, entered where the server is built, never on
import) a subclass of its `H11Protocol` is built for the connections that serve fgcpay
(it also writes each answer in one piece: 4. below): the server runs with a
`ServerConfig` (`fgcpay serve`), or its application is a `ServedApp` (`fgcpay.asgi:app`
under plain hypercorn, with the operator's own config); other hypercorn servers in the
process (test receivers) get hypercorn's own class. The subclass overrides private
methods of hypercorn 0.18 (pinned: `hypercorn==0.18.*`); tests/test_hypercorn_pin.py
fails when they change. The upstream bug behind 1. is reproduced in docs/operations.md.
Only HTTP/1.1 is adjusted: HTTP/2 connections (TLS with ALPN `h2`) and HTTP/3 keep
hypercorn's own protocol, so a request hypercorn's h2 cannot parse gets its own answer.

1. Hypercorn recycles or closes the connection from inside the ASGI app's own `send`
   call (the last body message leads to `_maybe_recycle`), and quart-trio cancels that
   task as soon as it has handed over the answer. The cancellation lands mid-way: the
   socket is neither closed nor made ready for the next request, and the keep-alive timer
   is not restarted, so a connection whose request body was not read when the answer
   went out hangs with its descriptor for good. Our `stream_send` finishes that
   bookkeeping under a shield (hypercorn already shields the socket write itself).
2. An answer that goes out while the request body is still arriving says
   `Connection: close`, and the close then lingers: what the client still sends is read
   and dropped until it closes, or for `LINGER_SECONDS` at most. Closing at once, with
   unread data, makes the kernel answer with a reset, which can destroy the answer
   before the client reads it (a 413 for a 10 MB body, a 431 for a 2 MB header).
3. Requests h11 cannot parse (a malformed request, headers over `MAX_HEADER_BYTES`) get
   hypercorn's empty answer; ours is the ApiError JSON with a `Request-Id` (and the
   RateLimit headers under /api/v1), built by `ServerConfig.protocol_error_answer` or
   `ServedApp.protocol_error_answer`.
4. Hypercorn writes an answer in three sends: its head, its body, and the (empty) end of
   its body, each through the connection's send lock, a shielded cancel scope and a
   system call, and the client reads it in two packets. The head is held until its body
   comes (at once: Quart hands over an answer's start and body together) and goes out
   with it in one send, and an empty end sends nothing: on the create path this was
   a tenth of the server's CPU per request.
5. Hypercorn times a connection's keep-alive with a task of its own, cancelled when a
   request arrives and started anew when its answer has gone out: two tasks' lives,
   a lock and a cancellation for every request. From a connection's first request on,
   one task per connection does it, with a deadline that moves (`_KeepAlive`).

Timeouts: a connection that sends no complete request head within `KEEP_ALIVE_SECONDS`
(idle between requests, or headers never finished) is closed: by hypercorn's keep-alive
timer until its first request, by `_KeepAlive` (5.) after it. A request body that does
not arrive within `BODY_TIMEOUT_SECONDS` is answered 408 by the app
(`fgcpay.web.plumbing`), then closed as above.
"""

from __future__ import annotations

import dataclasses
import math
import time
from abc import ABC, abstractmethod
from collections.abc import Awaitable, Callable, Iterator
from contextlib import contextmanager
from typing import Any
from urllib.parse import urlsplit

import h11
import hypercorn.protocol
import trio
from fgcpay.web.limits import (
    LINGER_SECONDS,
)
from hypercorn.config import Config
from hypercorn.events import Closed, Event, RawData, Updated
from hypercorn.protocol.events import Body, EndBody, Response
from hypercorn.protocol.events import Event as StreamEvent
from hypercorn.protocol.h11 import H2CProtocolRequiredError, H2ProtocolAssumedError, H11Protocol
from hypercorn.typing import (
    AppWrapper,
    ConnectionState,
    H11SendableEvent,
    TaskGroup,
    WorkerContext,
)

# Enough of a request line to find its path in a request h11 refused.
_MAX_REQUEST_LINE = 8192

# (h11's status hint, the request's path if one could be read, the client's address)
# -> (status, headers, body) of the answer to a request that could not be parsed, or
# None for hypercorn's own answer.
ProtocolErrorAnswer = Callable[
    [int, "str | None", str], Awaitable["tuple[int, list[tuple[str, str]], bytes] | None"]
]


class ServerConfig(Config):
    """Hypercorn's config, plus what our protocol needs to answer protocol errors."""

    protocol_error_answer: ProtocolErrorAnswer | None = None
    # (protocol, second) -> the headers every answer carries (`Date` changes once a
    # second: hypercorn formats it anew for each answer).
    _common_headers: tuple[tuple[str, int], list[tuple[bytes, bytes]]] = (("", -1), [])

    def response_headers(self, protocol: str) -> list[tuple[bytes, bytes]]:
        key = (protocol, int(time.time()))
        cached, headers = self._common_headers
        if cached != key:
            headers = super().response_headers(protocol)
            self._common_headers = (key, headers)
        return list(headers)


class ServedApp(ABC):
    """An ASGI application that is fgcpay (`fgcpay.asgi`): served under any hypercorn
    config, its connections get the adjustments of this module, and it answers protocol
    errors itself."""

    @abstractmethod
    async def protocol_error_answer(
        self, status: int, path: str | None, client: str
    ) -> tuple[int, list[tuple[str, str]], bytes] | None:
        """See `ProtocolErrorAnswer`."""


def _served_by_us(app: AppWrapper, config: Config) -> tuple[bool, ProtocolErrorAnswer | None]:
    """Whether a connection serves fgcpay, and what answers its protocol errors."""
    if isinstance(config, ServerConfig):
        return True, config.protocol_error_answer
    # Under plain hypercorn the config is the operator's; hypercorn's ASGIWrapper holds
    # the application it loaded (`fgcpay.asgi:app`) as `app`.
    served = getattr(app, "app", None)
    if isinstance(served, ServedApp):
        return True, served.protocol_error_answer
    return False, None


# The module whose name `H11Protocol` hypercorn's `ProtocolWrapper` calls for each new
# connection (a name it does not export: typed as Any to be rebound).
_LOOKED_UP_IN: Any = hypercorn.protocol
# How many servers of this process serve with `installed()` now: hypercorn's own class is
# put back when the last one stops.
_serving = 0


@contextmanager
def installed() -> Iterator[None]:
    """While the block runs, hypercorn builds `FgcpayH11Protocol` for the HTTP/1.1
    connections that serve fgcpay, and its own `H11Protocol` for any other.

    Hypercorn offers no hook for its protocol: its `ProtocolWrapper` calls the name
    `H11Protocol` of `hypercorn.protocol` for each new connection, so that name is
    pointed at `_h11_protocol` for the block, and back at hypercorn's class once the
    last block in the process has ended (blocks may nest or overlap: several servers in
    one process). Entered where the server is built, around all its connections: by
    `fgcpay serve` (`fgcpay.service.serve`) around hypercorn's serve, and by the ASGI
    lifespan of `fgcpay.asgi:app` from before its startup completes (hypercorn accepts
    connections only then) until its shutdown (hypercorn has drained them). Importing
    fgcpay changes nothing in hypercorn.

    This relies on hypercorn 0.18's internals (pinned in pyproject.toml);
    tests/test_hypercorn_pin.py says which, and fails when they change.
    """
    global _serving
    _serving += 1
    _LOOKED_UP_IN.H11Protocol = _h11_protocol
    try:
        yield
    finally:
        _serving -= 1
        if _serving == 0:
            _LOOKED_UP_IN.H11Protocol = H11Protocol


def _h11_protocol(
    app: AppWrapper,
    config: Config,
    context: WorkerContext,
    task_group: TaskGroup,
    connection_state: ConnectionState,
    ssl: bool,
    client: tuple[str, int] | None,
    server: tuple[str, int] | None,
    send: Callable[[Event], Awaitable[None]],
) -> H11Protocol:
    """The protocol of a new HTTP/1.1 connection, called as `ProtocolWrapper` calls
    hypercorn's class."""
    chosen = FgcpayH11Protocol if _served_by_us(app, config)[0] else H11Protocol
    return chosen(app, config, context, task_group, connection_state, ssl, client, server, send)


class FgcpayH11Protocol(H11Protocol):
    """Hypercorn's HTTP/1.1 protocol with the changes in the module docstring."""

    def __init__(
        self,
        app: AppWrapper,
        config: Config,
        context: WorkerContext,
        task_group: TaskGroup,
        connection_state: ConnectionState,
        ssl: bool,
        client: tuple[str, int] | None,
        server: tuple[str, int] | None,
        send: Callable[[Event], Awaitable[None]],
    ) -> None:
        super().__init__(
            app, config, context, task_group, connection_state, ssl, client, server, send
        )
        self._ours, self._answer = _served_by_us(app, config)
        self._server_send = send
        self._lingering = False
        self._peer_done = trio.Event()
        self._held = b""  # an answer's head, until its body goes out with it
        # The start of the request head being received, to name its path in an error
        # answer: h11 drops a complete head it could not parse from its buffer.
        self._head_start = b""
        self._keep_alive: _KeepAlive | None = None  # from the first request on
        if self._ours:
            self.send = self._send_or_linger

    async def handle(self, event: Event) -> None:
        if self._ours:
            if isinstance(event, Closed) or (isinstance(event, RawData) and not event.data):
                self._peer_done.set()
                if isinstance(event, Closed) and self._keep_alive is not None:
                    self._keep_alive.end()
            if self._lingering and isinstance(event, RawData):
                return  # the rest of a request already answered: read and dropped
            if isinstance(event, RawData):
                if getattr(self.connection, "their_state", None) is h11.IDLE:
                    self._head_start = (self._head_start + event.data)[:_MAX_REQUEST_LINE]
                else:
                    self._head_start = b""
        try:
            await super().handle(event)
        except (H2CProtocolRequiredError, H2ProtocolAssumedError):
            # HTTP/2 takes the connection over, timed by hypercorn's own timer again (its
            # protocol tells the server when it is idle): this one has nothing left to do.
            if self._keep_alive is not None:
                self._keep_alive.end()
            raise

    async def _maybe_recycle(self) -> None:
        await super()._maybe_recycle()
        self._head_start = b""

    async def stream_send(self, event: StreamEvent) -> None:
        if not self._ours:
            await super().stream_send(event)
            return
        if isinstance(event, Response) and event.status_code >= 200:
            if self._peer_sending() and not any(
                name.lower() == b"connection" for name, _ in event.headers
            ):
                event = dataclasses.replace(
                    event, headers=[*event.headers, (b"connection", b"close")]
                )
            # Only held (`_send_h11_event`): nothing here waits, so nothing to shield.
            await super().stream_send(event)
            return
        if isinstance(event, (Body, EndBody)):
            # Their bytes go out through `_write`, shielded there; nothing else waits.
            await super().stream_send(event)
            return
        with trio.CancelScope(shield=True):
            if self._held:
                await self._write(b"")  # a head whose body never came: as it is
            await super().stream_send(event)

    async def _send_h11_event(self, event: H11SendableEvent) -> None:
        if not self._ours:
            await super()._send_h11_event(event)
            return
        try:
            data = self.connection.send(event)
        except h11.LocalProtocolError:
            if self.connection.their_state != h11.ERROR:
                raise
            return
        if isinstance(event, h11.Response):
            self._held += data or b""
            return
        await self._write(data or b"")

    async def _write(self, data: bytes) -> None:
        """The held head (if any) and `data` in one send; nothing for nothing. Shielded:
        h11 has counted the bytes as sent (see 1. in the module docstring)."""
        data, self._held = self._held + data, b""
        if data:
            with trio.CancelScope(shield=True):
                await self.send(RawData(data=data))

    async def _send_error_response(self, status_code: int) -> None:
        if self._answer is None:
            await super()._send_error_response(status_code)
            return
        received, _ = self.connection.trailing_data
        client = self.client[0] if self.client else "unknown"
        path = request_path(self._head_start or received)
        try:
            answered = await self._answer(status_code, path, client)
        except Exception:
            # An exception here would end the whole worker (hypercorn does not catch it).
            await self.config.log.exception("could not build the answer to a protocol error")
            answered = None
        if answered is None:
            await super()._send_error_response(status_code)
            return
        status, headers, body = answered
        await self._send_h11_event(
            h11.Response(
                status_code=status,
                headers=[
                    (b"content-length", str(len(body)).encode()),
                    (b"connection", b"close"),
                    *((name.encode("latin-1"), value.encode("latin-1")) for name, value in headers),
                    *self.config.response_headers("h11"),
                ],
            )
        )
        await self._send_h11_event(h11.Data(data=body))
        await self._send_h11_event(h11.EndOfMessage())

    def _peer_sending(self) -> bool:
        """Whether the client may still be sending the request we answer (or garbage)."""
        state = getattr(self.connection, "their_state", None)
        return state is h11.SEND_BODY or state is h11.ERROR

    async def _send_or_linger(self, event: Event) -> None:
        if isinstance(event, Updated):
            await self._keep_alive_update(event.idle)
            return
        if isinstance(event, Closed) and self._peer_sending() and not self._peer_done.is_set():
            if not self._lingering:
                self._lingering = True
                self.task_group.spawn(self._linger_then_close)
            return
        await self._server_send(event)

    async def _linger_then_close(self) -> None:
        with trio.move_on_after(LINGER_SECONDS):
            await self._peer_done.wait()
        await self._server_send(Closed())

    async def _keep_alive_update(self, idle: bool) -> None:
        """The connection is idle (its answer went out) or busy (a request came)."""
        timer = self._keep_alive
        if timer is None:
            # The server's own timer runs from the connection's start until its first
            # request; this one takes over from there.
            await self._server_send(Updated(idle=idle))
            if idle:
                return
            timer = self._keep_alive = _KeepAlive(self.config.keep_alive_timeout)
            self.task_group.spawn(timer.run, self.context, self._server_send)
        timer.set_idle(idle)


class _KeepAlive:
    """Closes a connection idle for `seconds`, or idle when the worker is stopping: one
    task for the connection's life, whose deadline each request and answer move (an
    attribute write; hypercorn's own timer is a new task each time)."""

    def __init__(self, seconds: float) -> None:
        self.seconds = seconds
        self.idle = False
        self.ended = False  # the connection is closed: nothing left to time
        self._scope = trio.CancelScope()

    def set_idle(self, idle: bool) -> None:
        self.idle = idle
        self._scope.deadline = trio.current_time() + self.seconds if idle else math.inf

    def end(self) -> None:
        self.ended = True
        self._scope.cancel()

    async def run(self, context: WorkerContext, send: Callable[[Event], Awaitable[None]]) -> None:
        while True:
            with self._scope:
                await context.terminated.wait()
            if self.ended:
                return
            if self.idle:  # past the deadline, or the worker is stopping
                with trio.CancelScope(shield=True):
                    await send(Closed())
                return
            if context.terminated.is_set():
                return  # busy: closed after its answer (hypercorn recycles none now)
            # The deadline passed as a request came, before this task ran: time anew.
            self._scope = trio.CancelScope()


def request_path(received: bytes) -> str | None:
    """The path of the request line at the start of `received`, if it has one."""
    line = received[:_MAX_REQUEST_LINE].split(b"\n", 1)[0]
    parts = line.split(b" ")
    if len(parts) < 2:
        return None
    try:
        return urlsplit(parts[1].decode("latin-1")).path or None
    except ValueError:
        return None
