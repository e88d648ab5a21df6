"""The event stream's rules (`GET /api/v1/events/stream`, a websocket): its query, its
limits, the frames it sends besides the events, and the codes it closes with."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Annotated, Any, Literal

import attrs
from pydantic import BaseModel, ConfigDict, Field
from typing_extensions import TypedDict

from . import ids
from .events import EVENT_RETENTION_US, EVENT_TYPES, EventTypeName, Time
from .fields import Rule, fail, once
from .lists import parse_query
from .times import iso_ms

MOST_STREAMS = 5
"""Streams one merchant may hold open at once, over every process."""
POLL_SECONDS = 1.0
"""A stream reads again at least this often, notified or not: a lost notification only
delays, and a revoked key ends the stream within it."""
HELD_BACK_SECONDS = 0.05
"""How soon a stream reads again when committed events wait behind a transaction that
has not ended (PostgreSQL): group commits last milliseconds."""
PING_SECONDS = 20.0
"""A `ping` frame at least this often: proxies keep the connection, and a client that
hears nothing for three of these knows it is gone (a laptop woken from sleep)."""
PAGE = 100
"""Events read at once: what a stream holds in memory at most while its client reads."""
REGISTRATION_SECONDS = 60.0
"""A stream's place among its merchant's lapses this long after its process last renewed
it (a process that died frees its places)."""
RENEW_SECONDS = 20.0
RESUME_DAYS = EVENT_RETENTION_US // (24 * 3600 * 1_000_000)

# Close codes (RFC 6455 ones, and 4401 of the private range for a revoked key, after HTTP's
# 401): a client reconnects after 1001 and 1013, resuming after the last event it saw.
CLOSE_GOING_AWAY = 1001
CLOSE_KEY_REVOKED = 4401
CLOSE_TRY_AGAIN_LATER = 1013
CLOSE_CODES: Mapping[int, str] = {
    CLOSE_GOING_AWAY: "The server is shutting down (or restarting): reconnect with `after`.",
    CLOSE_TRY_AGAIN_LATER: (
        "The service cannot reach its database right now: reconnect with `after` in a few seconds."
    ),
    CLOSE_KEY_REVOKED: "The API key was revoked: do not reconnect with it.",
}

FROM_START = "start"
"""`after=start`: every event of the resume window, oldest first, then the live ones."""
AFTER_FORM = f"Must be an event id (evt_ and 24 letters or digits), or {FROM_START}."
NO_SUCH_AFTER = (
    "No event of yours has this id (unknown, or purged): resume after the last event the "
    f"stream sent you, within {RESUME_DAYS} days, or reconcile with GET /events and "
    "connect without after."
)
TOO_OLD_AFTER = (
    f"This event is older than {RESUME_DAYS} days: the stream cannot resume after it. "
    "Reconcile with GET /events, then connect without after."
)


@attrs.frozen
class AfterEvent(Rule):
    """`after`: an event id; whose it is and how old is checked against storage."""

    required: bool = False

    def check(self, values: Any) -> str:
        raw = once(values)
        if raw != FROM_START and not ids.looks_like_id(raw, "evt_", 24):
            raise fail(AFTER_FORM)
        return raw

    def schema(self) -> dict[str, Any]:
        return {
            "type": "string",
            "pattern": f"^(evt_[0-9A-Za-z]{{24}}|{FROM_START})$",
            "description": (
                "Resume after this event: the last one the stream sent you, or the `after` "
                f"of its hello. One of your events of the last {RESUME_DAYS} days, else "
                f"400. `{FROM_START}`: every event of the last {RESUME_DAYS} days first (what "
                "to resume with when the hello's `after` was null). Without it the stream "
                "starts with the events that follow the connection."
            ),
        }


@attrs.frozen
class EventTypes(Rule):
    """`types`: comma-separated event types."""

    required: bool = False

    def check(self, values: Any) -> tuple[str, ...]:
        raw = once(values)
        chosen = raw.split(",")
        if not all(chosen):
            raise fail("Must be event types separated by commas, e.g. checkout.session.paid.")
        unknown = sorted(set(chosen) - set(EVENT_TYPES))
        if unknown:
            raise fail("Unknown event types: " + ", ".join(t[:64] for t in unknown[:5]) + ".")
        return tuple(sorted(set(chosen)))

    def schema(self) -> dict[str, Any]:
        return {
            "type": "string",
            "pattern": "^[a-z_.]+(,[a-z_.]+)*$",
            "description": (
                "Only these event types, separated by commas (see EventType); all when omitted."
            ),
        }


class EventStreamQuery(BaseModel):
    """`GET /events/stream`: where to resume, and which types."""

    model_config = ConfigDict(extra="forbid")

    after: Annotated[str | None, AfterEvent()] = None
    types: Annotated[tuple[str, ...] | None, EventTypes()] = None


def parse_stream_query(args: Mapping[str, Sequence[str]]) -> EventStreamQuery:
    """The query string; every bad parameter named in one 400."""
    return parse_query(EventStreamQuery, args)


class StreamHelloWire(TypedDict):
    """The stream's first frame, once it is open."""

    object: Literal["stream"]
    request_id: Annotated[str, Field(pattern="^req_[0-9A-Za-z]{16}$")]
    after: Annotated[
        str | None,
        Field(
            description=(
                "Where the stream starts: the event it resumes after (yours, or, without "
                "`after`, your newest event now). Keep it as your resume point until an "
                f"event comes. Null when it starts before every event (`after={FROM_START}`, "
                f"or you had no events yet): resume with `after={FROM_START}` then."
            )
        ),
    ]
    types: Annotated[
        list[EventTypeName] | None,
        Field(description="The event types sent; null for all."),
    ]
    ping_seconds: Annotated[float, Field(description="A ping frame comes at least this often.")]


class StreamPingWire(TypedDict):
    """Sent at least every `ping_seconds`; nothing to answer."""

    object: Literal["ping"]
    at: Time


def hello(request_id: str, after: str | None, types: tuple[str, ...] | None) -> StreamHelloWire:
    return {
        "object": "stream",
        "request_id": request_id,
        "after": after,
        "types": list(types) if types is not None else None,
        "ping_seconds": PING_SECONDS,
    }


def ping(now_us: int) -> StreamPingWire:
    return {"object": "ping", "at": iso_ms(now_us)}


def too_old(created_at_us: int, now_us: int) -> bool:
    """Whether an event is past the window a stream resumes from."""
    return created_at_us < now_us - EVENT_RETENTION_US
