"""`GET /api/v1/events/stream`: the merchant's events over a websocket, as they commit.

The handshake is authenticated and rate limited as every API request is (`plumbing`'s
`before_websocket`: the `Authorization` header only). Refusals are the handshake's HTTP
answer, an ApiError: 401, 400 (a bad `after` or `types`), 429 (`rate_limited`, or
`too_many_streams`), 503. Once accepted, the frames are text, one JSON object each: a
hello (`object: "stream"`), then each event exactly as `GET /events/{id}` and its
webhooks carry it, and a `ping` at least every 20 seconds. The stream ends with a close
code: 1001 at shutdown, 1013 while the database cannot answer, 4401 once the key is
revoked. A plain HTTP GET (no upgrade) is answered 426. docs/api.md, "The event stream".
"""

from __future__ import annotations

import json

import trio
from fgcpay.domain import errors
from fgcpay.domain import event_stream as rules
from fgcpay.domain.event_stream import StreamHelloWire, StreamPingWire, parse_stream_query
from fgcpay.domain.events import EventWire
from fgcpay.storage import DatabaseUnavailable
from fgcpay.web.errors import api_error_response, database_unavailable
from fgcpay.web.plumbing import current_service, handshake_headers, log_request, principal
from quart import Blueprint, Response, g, request, websocket

from .operations import operation

blueprint = Blueprint("event_stream", __name__, url_prefix="/api/v1")

_STREAM = {
    "operation_id": "streamEvents",
    "summary": "Stream your events over a websocket, as they commit (resumable)",
    "description": (
        "A websocket (`GET` with `Upgrade: websocket`; `wss://` over TLS). Authenticate "
        "with the `Authorization: Bearer` header of the handshake, as every request (a key "
        "in the URL is not accepted: URLs end up in logs). Frames are text, one JSON "
        "object each: first a hello (StreamHello), then each event exactly as "
        "`GET /events/{event_id}` and its webhooks carry it (Event), as they commit, in "
        "an order that never changes behind you (an event is sent once every write that "
        "began before its own has ended), and a StreamPing at least every "
        "`ping_seconds`. To resume "
        "without missing anything, reconnect with `after` = the id of the last event you "
        f"received (within {rules.RESUME_DAYS} days). Close codes: 1001 the server is "
        "shutting down, 1013 the database cannot answer now (reconnect with `after` in "
        "either case), 4401 the key was revoked. At most "
        f"{rules.MOST_STREAMS} streams per merchant at once (429 `too_many_streams`). A "
        "request without the upgrade is answered 426 `upgrade_required`."
    ),
    "tag": "Events",
    "query": rules.EventStreamQuery,
    "status": 101,
    "answer": "Switching Protocols: the stream is open.",
    "schema": StreamHelloWire,
    "websocket": (StreamHelloWire, EventWire, StreamPingWire),
}


@blueprint.get("/events/stream")
@operation(**_STREAM)
async def event_stream_over_http() -> Response:
    """Without the websocket upgrade: what to do instead (after the same checks)."""
    parse_stream_query(request.args.to_dict(flat=False))
    raise errors.UpgradeRequired(
        "This is a websocket: open it with the Upgrade: websocket handshake"
        " (wss:// or ws://), e.g. fgcpay listen, or any websocket client."
    )


@blueprint.websocket("/events/stream")
@operation(**_STREAM)
async def event_stream() -> Response | None:
    service = current_service()
    caller = principal()
    try:
        query = parse_stream_query(websocket.args.to_dict(flat=False))
        stream = await service.event_streams.open(
            caller.merchant.id, caller.api_key.id, query.after, query.types
        )
    except DatabaseUnavailable as error:
        return api_error_response(database_unavailable(error))
    except errors.ServiceError as error:
        return api_error_response(error)
    sent = 0
    ending: tuple[int, str] | None = None  # None: the client left first

    async def send_event(body: str) -> None:
        nonlocal sent
        await websocket.send(body)
        sent += 1

    try:
        await websocket.accept(headers=handshake_headers())
        hello = rules.hello(g.request_id, stream.after, stream.types)
        await websocket.send(json.dumps(hello, separators=(",", ":")))
        async with trio.open_nursery() as nursery:
            nursery.start_soon(_ignore_messages)
            ended = await service.event_streams.send_events(stream, send_event, websocket.send)
            nursery.cancel_scope.cancel()
        ending = ended.code, ended.reason
        await websocket.close(*ending)
    except* trio.BusyResourceError:
        # The client closed while a frame of ours was on its way (hypercorn shuts the
        # socket down outside the lock its frames are sent under): it has gone. (`except*`:
        # a send in the nursery's body reaches here in an exception group.)
        pass
    finally:
        await service.event_streams.close(stream)
        code = None if ending is None else ending[0]
        log_request(101, websocket.path, "GET", events_sent=sent, close_code=code)
    return None


async def _ignore_messages() -> None:
    """The stream takes no messages; reading (and dropping) them keeps the connection's
    inbox from filling, so that a close from the client is always heard."""
    while True:
        await websocket.receive()
