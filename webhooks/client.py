"""The webhook client: one signed POST per attempt over kept-alive HTTP/1.1 connections,
lean enough that sending is not what bounds a drain (httpx on trio cost ~3 ms of CPU per
POST; docs/performance.md, "Webhooks").

- h11 frames the messages; one request in flight per connection, written with one send.
- Connections are pooled per destination: the URL's origin (scheme, name, port), each
  connection pinned to an address `destinations.checked_addresses` allowed when it was
  opened. A connection serves only its origin, so `Host`, TLS SNI and the certificate's
  name are always the URL's; a name is resolved (and checked) again for each new
  connection, and a connection lives at most `MAX_AGE_SECONDS`, so a changed address is
  picked up. At most `per_destination` connections (one attempt each) at once per
  origin; idle ones are closed after `IDLE_SECONDS`.
- Redirects are never followed: a 3xx is an answer like any other.
- One deadline per attempt covers everything: waiting for a connection, resolving,
  connecting, TLS, writing, the answer's head and its first `keep` bytes. Past those, the
  rest of the answer is read and dropped (at most `DRAIN_LIMIT`, within the same
  deadline) so the connection can serve again; else it is closed, the answer kept.
- A pooled connection the receiver closed while it sat idle is noticed before anything
  is written to it (an idle connection has nothing to read: a readable one holds an end
  of file or something never asked for) and a fresh one takes its place. Once a byte of
  the request is written, a failure is the attempt's failure and nothing is sent again
  here: the receiver may have acted on it, and the delivery's retry, on its schedule,
  sends it later (at least once; never twice at once).
"""

from __future__ import annotations

import base64
import functools
import math
import select
import socket
import ssl
from collections.abc import Iterable
from urllib.parse import unquote, urlsplit

import attrs
import certifi
import h11
import idna
import trio
from fgcpay.domain.deliveries import ATTEMPT_TIMEOUT_SECONDS, RESPONSE_KEEP_BYTES

from . import destinations

IDLE_SECONDS = 4.0
"""An idle connection is closed after this; under the 5 s of common servers' keep-alive
(hypercorn, Node), so ours is mostly the side that closes."""
MAX_AGE_SECONDS = 60.0
DRAIN_LIMIT = 64 * 1024
"""Answer bytes read past the kept ones to reuse the connection; a longer answer closes it."""
READ_SIZE = 16 * 1024
NO_ANSWER = "RemoteProtocolError: the connection closed without an answer"


class SendFailed(Exception):
    """No answer came; the message is the attempt's error as the delivery log shows it."""


@attrs.frozen
class Answer:
    status: int
    headers: list[tuple[bytes, bytes]]  # names in lower case (h11)
    body: bytes  # its first `keep` bytes

    def header(self, name: bytes) -> str | None:
        for key, value in self.headers:
            if key == name:
                return value.decode("latin-1")
        return None


@attrs.frozen
class Target:
    """A webhook URL as the client sends to it (parsed once per URL)."""

    scheme: str
    host: str  # ASCII (IDNA), without brackets
    port: int
    host_header: str
    path: str  # path and query
    authorization: str | None  # from the URL's user and password, as httpx sent it


@functools.lru_cache(maxsize=4096)
def target(url: str) -> Target:
    """Raises `SendFailed` for a URL no request can go to (registration refuses those)."""
    try:
        parts = urlsplit(url)
        scheme, name, port = parts.scheme.lower(), parts.hostname, parts.port
        if scheme not in ("http", "https") or not name:
            raise ValueError
        host = name if name.isascii() else idna.encode(name, uts46=True).decode("ascii")
    except (ValueError, UnicodeError, idna.IDNAError):
        raise SendFailed("destination refused: the URL must be absolute http or https") from None
    default = 443 if scheme == "https" else 80
    port = port or default
    shown = f"[{host}]" if ":" in host else host
    authorization = None
    if parts.username or parts.password:
        pair = f"{unquote(parts.username or '')}:{unquote(parts.password or '')}"
        authorization = "Basic " + base64.b64encode(pair.encode()).decode("ascii")
    return Target(
        scheme=scheme,
        host=host,
        port=port,
        host_header=shown if port == default else f"{shown}:{port}",
        path=(parts.path or "/") + (f"?{parts.query}" if parts.query else ""),
        authorization=authorization,
    )


@functools.cache
def default_tls() -> ssl.SSLContext:
    """The CAs httpx trusted (certifi's), loaded once per process: loading them costs tens
    of milliseconds of CPU, and one context serves every connection."""
    return ssl.create_default_context(cafile=certifi.where())


@attrs.define(eq=False)
class _Connection:
    stream: trio.abc.Stream
    sock: trio.socket.SocketType
    http: h11.Connection
    opened_at: float
    idle_since: float = 0.0
    _poll: select.poll = attrs.field(init=False, factory=select.poll)

    def __attrs_post_init__(self) -> None:
        self._poll.register(self.sock.fileno(), select.POLLIN)

    def expires_at(self) -> float:
        return min(self.idle_since + IDLE_SECONDS, self.opened_at + MAX_AGE_SECONDS)

    def readable(self) -> bool:
        return bool(self._poll.poll(0))

    def close(self) -> None:
        # The socket itself, at once and without waiting: a TLS close_notify is owed to
        # nobody whose answer we no longer want.
        self.sock.close()


@attrs.define(eq=False)
class _Destination:
    slots: trio.Semaphore
    idle: list[_Connection] = attrs.field(factory=list)  # the most recently used last
    users: int = 0


class WebhookClient:
    """POSTs to webhook targets (`post`). Its owner calls `sweep` now and then (idle
    connections) and `close_idle` when done."""

    def __init__(
        self,
        allow_private: bool,
        resolve: destinations.Resolver,
        *,
        tls: ssl.SSLContext | None = None,
        per_destination: int = 8,
        timeout: float = ATTEMPT_TIMEOUT_SECONDS,
        keep: int = RESPONSE_KEEP_BYTES,
    ) -> None:
        self.allow_private = allow_private
        self.resolve = resolve
        self.tls = tls
        self.per_destination = per_destination
        self.timeout = timeout
        self.keep = keep
        self.opened = 0  # connections opened so far (tests, benchmarks)
        self._destinations: dict[tuple[str, str, int], _Destination] = {}
        self._next_sweep = math.inf  # when the soonest idle connection expires

    async def post(self, url: str, headers: Iterable[tuple[str, str]], body: bytes) -> Answer:
        """POST `body` to `url` with `headers` (and `Host`, `Content-Length`) under one
        deadline: the answer's status, headers and first bytes. Raises `SendFailed`
        (refused destination, no connection, timeout, no or a malformed answer)."""
        aim = target(url)
        origin = (aim.scheme, aim.host, aim.port)
        deadline = trio.current_time() + self.timeout
        timed_out = SendFailed(f"timeout after {self.timeout:g} s")
        destination = self._destinations.get(origin)
        if destination is None:
            destination = self._destinations[origin] = _Destination(
                trio.Semaphore(self.per_destination)
            )
        destination.users += 1
        try:
            acquired = False
            with trio.move_on_at(deadline):
                await destination.slots.acquire()
                acquired = True
            if not acquired:
                raise timed_out
            try:
                return await self._exchange(destination, aim, headers, body, deadline, timed_out)
            finally:
                destination.slots.release()
        finally:
            destination.users -= 1
            if not destination.users and not destination.idle:
                del self._destinations[origin]

    async def _exchange(
        self,
        destination: _Destination,
        aim: Target,
        headers: Iterable[tuple[str, str]],
        body: bytes,
        deadline: float,
        timed_out: SendFailed,
    ) -> Answer:
        connection: _Connection | None = None
        answer: Answer | None = None
        complete = False
        try:
            with trio.move_on_at(deadline):
                connection = await self._connection(destination, aim)
                answer, complete = await self._ask(connection, aim, headers, body)
            if answer is None:
                raise timed_out
            assert connection is not None
            if not complete:
                # The rest of a long answer, dropped, so the connection may serve again;
                # the deadline still holds, and the answer counts whatever happens.
                with trio.move_on_at(deadline):
                    complete = await _drain(connection)
        except BaseException:
            if connection is not None:
                connection.close()
            raise
        self._done_with(destination, connection, complete)
        return answer

    async def _connection(self, destination: _Destination, aim: Target) -> _Connection:
        now = trio.current_time()
        while destination.idle:
            connection = destination.idle.pop()
            if connection.expires_at() > now and not connection.readable():
                return connection
            connection.close()  # nothing was written to it: a fresh one takes its place
        return await self._open(aim)

    async def _open(self, aim: Target) -> _Connection:
        try:
            addresses = await destinations.checked_addresses(
                aim.host, aim.port, self.allow_private, self.resolve
            )
        except destinations.DestinationRefused as refused:
            raise SendFailed(f"destination refused: {refused}") from None
        failure: OSError | None = None
        for address in addresses:  # each one checked; never a fresh lookup
            try:
                tcp = await _connect(address, aim.port)
                break
            except OSError as error:
                failure = error
        else:
            raise SendFailed(f"ConnectError: {failure}")
        stream: trio.abc.Stream = tcp
        if aim.scheme == "https":
            tls = trio.SSLStream(
                tcp, self.tls or default_tls(), server_hostname=aim.host, https_compatible=True
            )
            try:
                await tls.do_handshake()
            except trio.BrokenResourceError as error:
                tcp.socket.close()
                raise SendFailed(f"ConnectError: {error.__cause__ or error}") from None
            except BaseException:
                tcp.socket.close()
                raise
            stream = tls
        self.opened += 1
        return _Connection(stream, tcp.socket, h11.Connection(h11.CLIENT), trio.current_time())

    async def _ask(
        self,
        connection: _Connection,
        aim: Target,
        headers: Iterable[tuple[str, str]],
        body: bytes,
    ) -> tuple[Answer, bool]:
        """Send the request, read the answer's head and first bytes: the answer, and
        whether it was read to its end."""
        http = connection.http
        fields = [("Host", aim.host_header), ("Content-Length", str(len(body)))]
        if aim.authorization is not None:
            fields.append(("Authorization", aim.authorization))
        fields.extend(headers)
        request = http.send(h11.Request(method="POST", target=aim.path, headers=fields))
        assert request is not None
        data = request + (http.send(h11.Data(data=body)) or b"")
        data += http.send(h11.EndOfMessage()) or b""
        try:
            await connection.stream.send_all(data)
        except trio.BrokenResourceError as error:
            raise SendFailed(f"WriteError: {error.__cause__ or error}") from None
        while True:
            event = await _next_event(connection)
            if isinstance(event, h11.Response):
                break
            if not isinstance(event, h11.InformationalResponse):  # 100 Continue and the like
                raise SendFailed(f"RemoteProtocolError: unexpected {type(event).__name__}")
        kept = b""
        complete = False
        while len(kept) < self.keep:
            part = await _next_event(connection)
            if isinstance(part, h11.EndOfMessage):
                complete = True
                break
            if isinstance(part, h11.Data):
                kept += bytes(part.data[: self.keep - len(kept)])
        answer = Answer(status=event.status_code, headers=list(event.headers), body=kept)
        return answer, complete

    def _done_with(
        self, destination: _Destination, connection: _Connection, complete: bool
    ) -> None:
        http = connection.http
        if not (complete and http.our_state is h11.DONE and http.their_state is h11.DONE):
            connection.close()  # the receiver said `close`, or the answer was cut short
            return
        leftover, _ = http.trailing_data
        if leftover:
            connection.close()  # bytes nobody asked for: never read as the next answer
            return
        http.start_next_cycle()
        connection.idle_since = trio.current_time()
        destination.idle.append(connection)
        self._next_sweep = min(self._next_sweep, connection.expires_at())

    def sweep(self) -> None:
        """Close the idle connections past `IDLE_SECONDS` (or `MAX_AGE_SECONDS`). Cheap
        to call often: it walks the pool only once the soonest of them is due."""
        now = trio.current_time()
        if now < self._next_sweep:
            return
        self._next_sweep = math.inf
        for origin, destination in list(self._destinations.items()):
            keep = []
            for connection in destination.idle:
                if connection.expires_at() <= now:
                    connection.close()
                else:
                    keep.append(connection)
                    self._next_sweep = min(self._next_sweep, connection.expires_at())
            destination.idle = keep
            if not destination.users and not destination.idle:
                del self._destinations[origin]

    def close_idle(self) -> None:
        """Close every idle connection (those in use are closed by their attempts, when
        these end or are cancelled)."""
        for destination in self._destinations.values():
            for connection in destination.idle:
                connection.close()
            destination.idle = []


async def _connect(address: str, port: int) -> trio.SocketStream:
    family = socket.AF_INET6 if ":" in address else socket.AF_INET
    sock = trio.socket.socket(family, socket.SOCK_STREAM)
    try:
        await sock.connect((address, port))
    except BaseException:
        sock.close()
        raise
    return trio.SocketStream(sock)


async def _next_event(connection: _Connection) -> object:
    """The next thing the receiver said, reading as needed; `SendFailed` for a broken
    connection or a malformed answer."""
    http = connection.http
    try:
        while True:
            event = http.next_event()
            if event is not h11.NEED_DATA:
                if isinstance(event, h11.ConnectionClosed):
                    raise SendFailed(NO_ANSWER)
                return event
            try:
                data = await connection.stream.receive_some(READ_SIZE)
            except trio.BrokenResourceError as error:
                raise SendFailed(f"ReadError: {error.__cause__ or error}") from None
            if not data and http.their_state is h11.SEND_RESPONSE:
                raise SendFailed(NO_ANSWER)
            http.receive_data(bytes(data))
    except h11.RemoteProtocolError as error:
        raise SendFailed(f"RemoteProtocolError: {error}") from None


async def _drain(connection: _Connection) -> bool:
    """Read the rest of the answer, dropping it: True once it ended within
    `DRAIN_LIMIT` bytes. A failure only means the connection is not reused."""
    read = 0
    try:
        while read <= DRAIN_LIMIT:
            event = await _next_event(connection)
            if isinstance(event, h11.EndOfMessage):
                return True
            if isinstance(event, h11.Data):
                read += len(event.data)
    except SendFailed:
        pass
    return False
