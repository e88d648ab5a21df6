"""The event stream (`GET /api/v1/events/stream`) as a client sees it: open it with a key,
read its frames, or be refused."""

from __future__ import annotations

import json
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from typing import Any
from urllib.parse import urlencode

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
