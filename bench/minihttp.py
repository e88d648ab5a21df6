"""A minimal HTTP/1.1 client and server over trio sockets, for the drivers.

Why not httpx: the drivers share two cores with the service, so the load generator and
the webhook receiver must cost as little CPU as possible per request (httpx + h11 costs
about as much as a small handler), and the timestamps must be taken at the socket:
`sent_at` just before the request's bytes are written, `headers_at` as soon as the status
line and headers have been read. Only what the drivers need: keep-alive, bodies with a
Content-Length, no TLS.
"""

from __future__ import annotations

import time
from collections.abc import Callable
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

    def cookies(self) -> dict[str, str]:
        pairs = (v.split(";", 1)[0].partition("=") for k, v in self.headers if k == "set-cookie")
        return {name.strip(): value.strip() for name, _, value in pairs}


@dataclass
class Connection:
    """One keep-alive connection to host:port; connects again when the server closed it."""

    host: str
    port: int
    stream: trio.SocketStream | None = None
    _buf: bytearray = field(default_factory=bytearray)

    async def aclose(self) -> None:
        if self.stream is not None:
            await self.stream.aclose()
            self.stream = None

    async def _until(self, marker: bytes) -> bytes:
        while (at := self._buf.find(marker)) < 0:
            await self._fill()
        out = bytes(self._buf[:at])
        del self._buf[: at + len(marker)]
        return out

    async def _exactly(self, n: int) -> bytes:
        while len(self._buf) < n:
            await self._fill()
        out = bytes(self._buf[:n])
        del self._buf[:n]
        return out

    async def _fill(self) -> None:
        assert self.stream is not None
        data = await self.stream.receive_some(65536)
        if not data:
            raise ConnectionError("connection closed by the server")
        self._buf += data

    async def request(
        self, method: str, path: str, headers: dict[str, str] | None = None, body: bytes = b""
    ) -> Response:
        if self.stream is None:
            self.stream = await trio.open_tcp_stream(self.host, self.port)
            self._buf.clear()
        lines = [f"{method} {path} HTTP/1.1", f"Host: {self.host}:{self.port}"]
        lines += [f"{k}: {v}" for k, v in (headers or {}).items()]
        if body or method in ("POST", "PUT", "PATCH"):
            lines.append(f"Content-Length: {len(body)}")
        sent_at = clock()
        await self.stream.send_all(("\r\n".join(lines) + "\r\n\r\n").encode("latin-1") + body)
        status_line, *rest = (await self._until(b"\r\n\r\n")).decode("latin-1").split("\r\n")
        headers_at = clock()
        parsed = [(k.strip().lower(), v.strip()) for k, _, v in (x.partition(":") for x in rest)]
        status, found = int(status_line.split(" ", 2)[1]), dict(parsed)
        if method == "HEAD" or status in (204, 304):
            data = b""
        elif "content-length" in found:
            data = await self._exactly(int(found["content-length"]))
        else:  # the service answers with a Content-Length
            raise ConnectionError("response without Content-Length")
        if found.get("connection", "").lower() == "close":
            await self.aclose()
        return Response(status, parsed, data, sent_at, headers_at, clock())


# -- a receiver that answers 200 at once --------------------------------------------------

Handler = Callable[[str, str, list[tuple[bytes, bytes]], bytes, float], object]
# (headers, body) -> the whole raw answer to send
Responder = Callable[[list[tuple[bytes, bytes]], bytes], bytes]
_OK = b"HTTP/1.1 200 OK\r\nContent-Length: 2\r\nContent-Type: text/plain\r\n\r\nok"


async def _serve_connection(
    stream: trio.SocketStream, on_request: Handler, respond: Responder | None
) -> None:
    buf = bytearray()
    try:
        while True:
            while (at := buf.find(b"\r\n\r\n")) < 0:
                if not (data := await stream.receive_some(65536)):
                    return
                buf += data
            arrived, head = clock(), bytes(buf[:at])
            del buf[: at + 4]
            request_line, *lines = head.split(b"\r\n")
            method, target, _ = request_line.decode("latin-1").split(" ", 2)
            headers = [
                (k.strip().lower(), v.strip()) for k, _, v in (x.partition(b":") for x in lines)
            ]
            length = int(dict(headers).get(b"content-length", b"0"))
            while len(buf) < length:
                if not (data := await stream.receive_some(65536)):
                    return
                buf += data
            body = bytes(buf[:length])
            del buf[:length]
            await stream.send_all(_OK if respond is None else respond(headers, body))
            on_request(method, target, headers, body, arrived)
    except (trio.BrokenResourceError, trio.ClosedResourceError, ConnectionError):
        return
    finally:
        await trio.aclose_forcefully(stream)


async def serve_ok(
    port: int,
    on_request: Handler,
    *,
    respond: Responder | None = None,
    task_status: trio.TaskStatus[None] = trio.TASK_STATUS_IGNORED,
) -> None:
    """Answer every request on 127.0.0.1:port at once (keep-alive): 200, or what
    `respond(headers, body)` makes; then call `on_request(method, target, headers, body,
    arrived_at)`, `arrived_at` being when the request's headers were complete."""

    async def handler(stream: trio.SocketStream) -> None:
        await _serve_connection(stream, on_request, respond)

    listeners = await trio.open_tcp_listeners(port, host="127.0.0.1", backlog=1024)
    async with trio.open_nursery() as nursery:
        await nursery.start(trio.serve_listeners, handler, listeners)
        task_status.started()
