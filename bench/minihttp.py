"""A minimal HTTP/1.1 client and server over trio sockets, for the benchmark drivers.

Why not httpx: the drivers share two cores with the service, so the load generator and
the webhook receiver must cost as little CPU as possible per request (httpx + h11 costs
about as much per request as a small handler), and the timestamps must be taken at the
socket: `Response.sent_at` is taken just before the request's bytes are written and
`Response.headers_at` as soon as the status line and headers have been read.

Only what the drivers need: keep-alive, Content-Length or chunked bodies, no TLS.
"""

from __future__ import annotations

import time
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field

import trio

clock = time.perf_counter  # CLOCK_MONOTONIC on Linux: comparable across processes


@dataclass
class Response:
    status: int
    headers: list[tuple[str, str]]  # lower-cased names, in order
    body: bytes
    sent_at: float
    headers_at: float
    done_at: float

    def header(self, name: str) -> str | None:
        for key, value in self.headers:
            if key == name:
                return value
        return None

    def cookies(self) -> dict[str, str]:
        out = {}
        for key, value in self.headers:
            if key == "set-cookie":
                pair = value.split(";", 1)[0]
                if "=" in pair:
                    k, v = pair.split("=", 1)
                    out[k.strip()] = v.strip()
        return out


class HttpError(Exception):
    pass


@dataclass
class Connection:
    """One keep-alive connection to 127.0.0.1:port; reconnects when the server closed it."""

    host: str
    port: int
    stream: trio.SocketStream | None = None
    _buf: bytearray = field(default_factory=bytearray)
    requests: int = 0

    async def _connect(self) -> None:
        self.stream = await trio.open_tcp_stream(self.host, self.port)
        self._buf.clear()

    async def aclose(self) -> None:
        if self.stream is not None:
            await self.stream.aclose()
            self.stream = None

    async def _fill(self) -> None:
        assert self.stream is not None
        data = await self.stream.receive_some(65536)
        if not data:
            raise HttpError("connection closed by the server")
        self._buf += data

    async def _read_until(self, marker: bytes) -> bytes:
        while True:
            at = self._buf.find(marker)
            if at >= 0:
                out = bytes(self._buf[:at])
                del self._buf[: at + len(marker)]
                return out
            await self._fill()

    async def _read_exactly(self, n: int) -> bytes:
        while len(self._buf) < n:
            await self._fill()
        out = bytes(self._buf[:n])
        del self._buf[:n]
        return out

    async def request(
        self, method: str, path: str, headers: dict[str, str] | None = None, body: bytes = b""
    ) -> Response:
        if self.stream is None:
            await self._connect()
        assert self.stream is not None
        lines = [f"{method} {path} HTTP/1.1", f"Host: {self.host}:{self.port}"]
        for key, value in (headers or {}).items():
            lines.append(f"{key}: {value}")
        if body or method in ("POST", "PUT", "PATCH"):
            lines.append(f"Content-Length: {len(body)}")
        raw = ("\r\n".join(lines) + "\r\n\r\n").encode("latin-1") + body
        sent_at = clock()
        await self.stream.send_all(raw)
        head = await self._read_until(b"\r\n\r\n")
        headers_at = clock()
        status_line, *header_lines = head.decode("latin-1").split("\r\n")
        status = int(status_line.split(" ", 2)[1])
        parsed = []
        for line in header_lines:
            key, _, value = line.partition(":")
            parsed.append((key.strip().lower(), value.strip()))
        length = next((v for k, v in parsed if k == "content-length"), None)
        chunked = any(k == "transfer-encoding" and "chunked" in v.lower() for k, v in parsed)
        if method == "HEAD" or status in (204, 304):
            data = b""
        elif length is not None:
            data = await self._read_exactly(int(length))
        elif chunked:
            parts = []
            while True:
                size = int((await self._read_until(b"\r\n")).split(b";")[0], 16)
                if size == 0:
                    await self._read_until(b"\r\n")  # no trailers expected
                    break
                parts.append(await self._read_exactly(size))
                await self._read_exactly(2)
            data = b"".join(parts)
        else:
            raise HttpError("response without Content-Length or chunked body")
        self.requests += 1
        if any(k == "connection" and v.lower() == "close" for k, v in parsed):
            await self.aclose()
        return Response(status, parsed, data, sent_at, headers_at, clock())


# -- a receiver -----------------------------------------------------------------------------

Handler = Callable[[str, str, list[tuple[bytes, bytes]], bytes, float], Awaitable[None] | None]

_OK = b"HTTP/1.1 200 OK\r\nContent-Length: 2\r\nContent-Type: text/plain\r\n\r\nok"


async def _serve_connection(stream: trio.SocketStream, on_request: Handler) -> None:
    buf = bytearray()
    try:
        while True:
            while (at := buf.find(b"\r\n\r\n")) < 0:
                data = await stream.receive_some(65536)
                if not data:
                    return
                buf += data
            arrived = clock()
            head = bytes(buf[:at])
            del buf[: at + 4]
            request_line, *lines = head.split(b"\r\n")
            method, target, _ = request_line.decode("latin-1").split(" ", 2)
            headers = []
            length = 0
            for line in lines:
                key, _, value = line.partition(b":")
                key, value = key.strip().lower(), value.strip()
                headers.append((key, value))
                if key == b"content-length":
                    length = int(value)
            while len(buf) < length:
                data = await stream.receive_some(65536)
                if not data:
                    return
                buf += data
            body = bytes(buf[:length])
            del buf[:length]
            await stream.send_all(_OK)
            result = on_request(method, target, headers, body, arrived)
            if result is not None:
                await result
    except (trio.BrokenResourceError, trio.ClosedResourceError, ConnectionError):
        return
    finally:
        await trio.aclose_forcefully(stream)


async def serve_ok(
    port: int, on_request: Handler, *, task_status: trio.TaskStatus[None] = trio.TASK_STATUS_IGNORED
) -> None:
    """Answer every request on 127.0.0.1:port with 200 at once (keep-alive); call
    `on_request(method, target, headers, body, arrived_at)` after each answer, where
    `arrived_at` is when the request's headers were complete."""

    async def handler(stream: trio.SocketStream) -> None:
        await _serve_connection(stream, on_request)

    listeners = await trio.open_tcp_listeners(port, host="127.0.0.1", backlog=1024)
    async with trio.open_nursery() as nursery:
        await nursery.start(trio.serve_listeners, handler, listeners)
        task_status.started()
