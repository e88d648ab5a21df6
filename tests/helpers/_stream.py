"""The event stream (`GET /api/v1/events/stream`) as a client sees it: open it with a key,
read its frames, or be refused."""

from __future__ import annotations

import base64
import json
import secrets
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from typing import Any
from urllib.parse import urlencode, urlsplit

import attrs
import trio
from trio_websocket import ConnectionRejected, WebSocketConnection, open_websocket_url

FRAME_WITHIN = 10.0  # seconds a test waits for a frame the service owes it


def stream_url(base_url: str, **query: str) -> str:
    """The stream's ws:// URL on a service at `base_url` (http://host:port)."""
    url = base_url.replace("http://", "ws://", 1) + "/api/v1/events/stream"
    return url + ("?" + urlencode(query) if query else "")


def bearer(key: str | None) -> list[tuple[bytes, bytes]]:
    """The handshake's headers for `key` (none without one)."""
    return [] if key is None else [(b"Authorization", f"Bearer {key}".encode())]


@attrs.define
class EventStream:
    """An open stream and its hello."""

    ws: WebSocketConnection
    hello: dict[str, Any]

    async def next(self, within: float = FRAME_WITHIN) -> dict[str, Any]:
        """The next frame that is not a ping."""
        with trio.fail_after(within):
            while True:
                frame: dict[str, Any] = json.loads(await self.ws.get_message())
                if frame["object"] != "ping":
                    return frame

    async def raw(self, within: float = FRAME_WITHIN) -> str:
        """The next frame, as sent."""
        with trio.fail_after(within):
            message = await self.ws.get_message()
        assert isinstance(message, str)
        return message


@asynccontextmanager
async def open_stream(base_url: str, key: str, **query: str) -> AsyncIterator[EventStream]:
    async with open_websocket_url(stream_url(base_url, **query), extra_headers=bearer(key)) as ws:
        with trio.fail_after(FRAME_WITHIN):
            hello = json.loads(await ws.get_message())
        assert hello["object"] == "stream", hello
        yield EventStream(ws, hello)


@attrs.frozen
class Refusal:
    status: int
    headers: dict[str, str]
    body: dict[str, Any]


async def stream_refusal(base_url: str, key: str | None, **query: str) -> Refusal:
    """The handshake's answer to a stream the service must refuse."""
    try:
        async with open_websocket_url(stream_url(base_url, **query), extra_headers=bearer(key)):
            pass
    except ConnectionRejected as rejected:
        assert rejected.status_code is not None and rejected.body is not None
        headers = {name.decode().lower(): value.decode() for name, value in rejected.headers or ()}
        return Refusal(rejected.status_code, headers, json.loads(rejected.body))
    raise AssertionError(f"the stream opened: {query}")


async def give_up_in_handshake(base_url: str, key: str, patience: float) -> None:
    """Ask for a stream, and give up if its handshake is not answered within `patience`
    seconds: the connection closes then, and trio.TooSlowError is raised.

    Written by hand, not with trio-websocket: cancelled in its handshake, that leaves its
    socket open until nothing refers to its connection any more, and a DEBUG log record
    (which pytest keeps until the test ends) does: the service, still connected, then
    rightly opened the stream of a client that had given up."""
    url = urlsplit(stream_url(base_url))
    assert url.hostname is not None and url.port is not None
    handshake = "\r\n".join(
        [
            f"GET {url.path} HTTP/1.1",
            f"Host: {url.netloc}",
            "Upgrade: websocket",
            "Connection: Upgrade",
            f"Sec-WebSocket-Key: {base64.b64encode(secrets.token_bytes(16)).decode()}",
            "Sec-WebSocket-Version: 13",
            f"Authorization: Bearer {key}",
            "",
            "",
        ]
    )
    async with await trio.open_tcp_stream(url.hostname, url.port) as connection:
        await connection.send_all(handshake.encode())
        with trio.fail_after(patience):
            answer = await connection.receive_some()
    raise AssertionError(f"the handshake was answered in time: {answer[:80]!r}")
