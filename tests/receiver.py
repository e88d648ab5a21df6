"""A merchant's webhook receiver for the tests: real HTTP on 127.0.0.1 (hypercorn),
answering as each test scripts it, and recording what arrived."""

from __future__ import annotations

import math
import socket
from collections.abc import Callable
from typing import Any

import attrs
import trio
from hypercorn.config import Config
from quart import Response, request
from quart_trio import QuartTrio
from trio.testing import MockClock

# Longer than any real-time wait for a delivery in the tests (a 20 s lease, then a retry).
REAL_TIME_LIMIT = 120.0


@attrs.frozen
class Received:
    body: bytes
    headers: dict[str, str]
    at: float  # trio time


@attrs.define(eq=False)
class Receiver:
    url: str
    received: list[Received] = attrs.field(factory=list)
    # Decides each answer: (number of this delivery, 0-based) -> (status, headers) or "hang".
    script: Callable[[int], Any] = lambda n: (200, {})
    _arrived: trio.Event = attrs.field(factory=trio.Event)
    stop: trio.Event = attrs.field(factory=trio.Event)

    async def wait_for(self, count: int) -> list[Received]:
        """Wait until `count` deliveries have arrived.

        On the real clock for REAL_TIME_LIMIT seconds at most: a delivery that never comes
        fails the test rather than hanging it. On a MockClock the scenario's own timers set
        the pace (retries days apart), so no limit is imposed here.
        """
        limit = (
            math.inf if isinstance(trio.lowlevel.current_clock(), MockClock) else REAL_TIME_LIMIT
        )
        with trio.move_on_after(limit):
            while len(self.received) < count:
                await self._arrived.wait()
            return self.received
        raise AssertionError(
            f"not within {limit:g} s: {count} deliveries ({len(self.received)} came)"
        )

    def _note(self, item: Received) -> None:
        self.received.append(item)
        self._arrived.set()
        self._arrived = trio.Event()


def reserve_port() -> socket.socket:
    """A bound, not yet listening socket: connections to it are refused until served."""
    sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    sock.bind(("127.0.0.1", 0))
    return sock


def url_of(sock: socket.socket) -> str:
    return f"http://127.0.0.1:{sock.getsockname()[1]}/hooks"


async def start_receiver(nursery: trio.Nursery, sock: socket.socket | None = None) -> Receiver:
    """Serve a receiver (on `sock` if given) until `receiver.stop` is set."""
    sock = sock or reserve_port()
    receiver = Receiver(url=url_of(sock))
    app = QuartTrio(__name__)

    @app.post("/hooks")
    async def hooks() -> Response:
        body = await request.get_data(cache=True, as_text=False, parse_form_data=False)
        number = len(receiver.received)
        headers = {key.lower(): value for key, value in request.headers.items()}
        receiver._note(Received(body, headers, trio.current_time()))
        answer = receiver.script(number)
        if answer == "hang":
            await trio.sleep_forever()
        status, headers = answer
        return Response("ok" if status < 300 else "nope", status=status, headers=headers)

    config = Config()
    config.accesslog = None
    config.errorlog = None
    config.keep_alive_timeout = 3600
    # Hypercorn takes the bound socket over by its descriptor (and closes it when done).
    config.bind = [f"fd://{sock.detach()}"]
    from hypercorn.trio import serve

    await nursery.start(
        lambda task_status: serve(
            app, config, shutdown_trigger=receiver.stop.wait, task_status=task_status, mode="asgi"
        )
    )

    return receiver


# -- a receiver on raw sockets --------------------------------------------------------------


@attrs.frozen
class Reply:
    """How `RawReceiver` answers one request: a status and a body (with Content-Length,
    kept alive), then, with `close`, the connection closed without a word said about it
    (as a server whose keep-alive ran out)."""

    status: int = 200
    body: bytes = b"ok"
    close: bool = False


@attrs.frozen
class RawRequest:
    connection: int  # the receiver's count of its connections, 0-based
    headers: dict[str, str]
    body: bytes
    at: float  # trio time


@attrs.define(eq=False)
class RawReceiver:
    """A receiver on trio sockets, for what a framework hides: which connection each
    request came on, and answers a framework would not give (a long body; a request read
    and the connection closed with no answer)."""

    url: str
    # (number of the request, 0-based) -> its Reply, or None: read, then closed unanswered.
    script: Callable[[int], Reply | None] = lambda n: Reply()
    requests: list[RawRequest] = attrs.field(factory=list)
    connections: int = 0
    closed: int = 0  # connections this side closed
    _changed: trio.Event = attrs.field(factory=trio.Event)

    async def wait_until(self, done: Callable[[RawReceiver], bool]) -> None:
        """Wait until `done(self)` holds; the caller bounds the wait."""
        while not done(self):
            await self._changed.wait()

    def _note(self) -> None:
        self._changed.set()
        self._changed = trio.Event()

    async def _serve(self, stream: trio.SocketStream) -> None:
        number = self.connections
        self.connections += 1
        buffer = b""
        try:
            while True:
                while b"\r\n\r\n" not in buffer:
                    data = await stream.receive_some(65536)
                    if not data:
                        return
                    buffer += data
                head, buffer = buffer.split(b"\r\n\r\n", 1)
                lines = head.decode("latin-1").split("\r\n")[1:]
                headers = {}
                for line in lines:
                    name, _, value = line.partition(":")
                    headers[name.strip().lower()] = value.strip()
                length = int(headers.get("content-length", "0"))
                while len(buffer) < length:
                    data = await stream.receive_some(65536)
                    if not data:
                        return
                    buffer += data
                body, buffer = buffer[:length], buffer[length:]
                reply = self.script(len(self.requests))
                self.requests.append(RawRequest(number, headers, body, trio.current_time()))
                self._note()
                if reply is None:
                    return
                await stream.send_all(
                    b"HTTP/1.1 %d X\r\nContent-Length: %d\r\n\r\n" % (reply.status, len(reply.body))
                    + reply.body
                )
                if reply.close:
                    return
        except (trio.BrokenResourceError, trio.ClosedResourceError):
            pass
        finally:
            await trio.aclose_forcefully(stream)
            self.closed += 1
            self._note()


async def start_raw_receiver(nursery: trio.Nursery) -> RawReceiver:
    """Serve a `RawReceiver` on 127.0.0.1 until the nursery ends."""
    listeners = await trio.open_tcp_listeners(0, host="127.0.0.1")
    port = listeners[0].socket.getsockname()[1]
    receiver = RawReceiver(url=f"http://127.0.0.1:{port}/hooks")
    nursery.start_soon(trio.serve_listeners, receiver._serve, listeners)
    return receiver
