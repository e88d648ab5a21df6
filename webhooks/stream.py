"""The event stream (`GET /api/v1/events/stream`): a merchant's events read from the events
table in an order that never changes behind a reader (storage/event_stream.py), sent as
they commit, woken by the database's notifications.

It is a read of the table, never a second delivery queue: nothing is written per event or
per stream but the stream's place among its merchant's open streams. A client resumes
after the last event it saw; the table's order (storage/event_stream.py) makes that miss
nothing. The HTTP side (the websocket, its frames and close codes) is
`fgcpay.http.event_stream`.
"""

from __future__ import annotations

import json
import logging
import os
from collections.abc import Awaitable, Callable

import attrs
import trio
from fgcpay.core.clock import Clock
from fgcpay.core.logs import log_event
from fgcpay.domain import errors, ids
from fgcpay.domain import event_stream as rules
from fgcpay.domain.errors import FieldError
from fgcpay.domain.events import EVENT_RETENTION_US, Event
from fgcpay.domain.lists import query_error
from fgcpay.live_status import EventBells
from fgcpay.storage import Database, DatabaseUnavailable, StorageError, event_stream
from fgcpay.storage.event_stream import START, Position

Send = Callable[[str], Awaitable[None]]


@attrs.frozen
class Stream:
    """One open stream: whose, with which key, from where, which types."""

    id: str
    merchant_id: str
    key_id: str
    position: Position
    after: str | None  # the event it resumes after, as its hello says
    types: tuple[str, ...] | None
    since_us: int | None = None  # from the start: only events made since (the window)


@attrs.frozen
class Ending:
    """Why a stream ended: its close code and reason."""

    code: int
    reason: str


@attrs.define(eq=False)
class EventStreams:
    """The event streams of this process: opened (with the per-merchant limit over every
    process), followed, and closed; at shutdown all of them end with 1001."""

    db: Database
    clock: Clock
    bells: EventBells
    most: int = rules.MOST_STREAMS
    poll_seconds: float = rules.POLL_SECONDS
    # This process, in the registry of open streams.
    owner: str = attrs.field(factory=lambda: f"{os.getpid()}-{ids.random_base62(8)}")
    _open: set[str] = attrs.field(factory=set)
    _opened: trio.Event = attrs.field(factory=trio.Event)  # set when a stream opens
    _closing: bool = False

    async def open(
        self, merchant_id: str, key_id: str, after: str | None, types: tuple[str, ...] | None
    ) -> Stream:
        """A stream of the merchant's events after event `after` (None: after its newest
        one now; `rules.FROM_START`: every event of the resume window first). 400 when
        `after` is not one of its events, or is past the resume window with events after
        it; 429 `too_many_streams` at the limit; 503 at shutdown."""
        if self._closing:
            raise errors.Unavailable("The server is shutting down; reconnect shortly.")
        now = self.clock.now_us()
        since_us = None
        if after == rules.FROM_START:
            anchor, since_us = None, now - EVENT_RETENTION_US
        elif after is not None:
            anchor = await self.db.read(event_stream.anchor_of, merchant_id, after)
            if anchor is None:  # another merchant's too: the same answer
                raise query_error([FieldError("after", rules.NO_SUCH_AFTER)])
            if rules.too_old(anchor.created_at, now) and await self.db.read(
                event_stream.any_after, merchant_id, anchor.position
            ):
                # Events after it may be past the window too: resuming could skip some.
                raise query_error([FieldError("after", rules.TOO_OLD_AFTER)])
        else:
            anchor = await self.db.read(event_stream.newest_anchor, merchant_id)
        stream = Stream(
            id="est_" + ids.random_base62(24),
            merchant_id=merchant_id,
            key_id=key_id,
            position=START if anchor is None else anchor.position,
            after=None if anchor is None else anchor.event_id,
            types=types,
            since_us=since_us,
        )
        expires = now + int(rules.REGISTRATION_SECONDS * 1_000_000)
        # Shielded: a registration under way commits whether or not its caller waits, and
        # a place nobody knows of would count against the merchant for a minute. Once it
        # answers, a cancellation (the client gone in the handshake) frees the place.
        with trio.CancelScope(shield=True):
            open_before = await self.db.write(
                event_stream.open_stream,
                stream.id,
                merchant_id,
                self.owner,
                now,
                expires,
                self.most,
            )
        if open_before >= self.most:
            raise errors.TooManyStreams(self.most, int(rules.REGISTRATION_SECONDS))
        self._open.add(stream.id)
        self._opened.set()
        try:
            await trio.lowlevel.checkpoint_if_cancelled()
        except BaseException:
            await self.close(stream)
            raise
        return stream

    async def close(self, stream: Stream) -> None:
        """Free the stream's place, however the stream ended (an error, the client gone, a
        cancellation): shielded, as it runs while the connection ends, bounded, and never
        raising over what ended it."""
        self._open.discard(stream.id)
        with trio.move_on_after(5, shield=True):
            try:
                await self.db.write(event_stream.close_stream, stream.merchant_id, stream.id)
            except Exception as error:  # unrenewed, its place lapses within a minute
                log_event("could not close a stream", logging.WARNING, error=type(error).__name__)

    async def send_events(self, stream: Stream, send: Send, send_ping: Send) -> Ending:
        """Send the stream's events with `send` (each the exact body of the event), in
        stream order, as they commit, and a ping with `send_ping` every
        `rules.PING_SECONDS`; return why it ended.

        `send` waits while the client is slow to read: at most a page of events is held.
        Woken by its merchant's bell, else every `poll_seconds`; the key is checked at each
        read, so a revoked one ends the stream within a poll."""
        position = stream.position
        next_ping = trio.current_time() + rules.PING_SECONDS
        held_wait = rules.HELD_BACK_SECONDS
        with self.bells.bell(stream.merchant_id) as bell:
            while not self._closing:
                bell.arm()  # a commit during the read rings for the wait below
                try:
                    read = await self.db.read(
                        event_stream.read, stream.merchant_id, stream.key_id, position, rules.PAGE
                    )
                except DatabaseUnavailable:
                    return Ending(rules.CLOSE_TRY_AGAIN_LATER, "database unavailable")
                if not read.key_valid:
                    return Ending(rules.CLOSE_KEY_REVOKED, "the API key was revoked")
                for event, at in read.events:
                    if _wanted(stream, event):
                        await send(event.body)
                    position = at
                if trio.current_time() >= next_ping:
                    await send_ping(_dumps(rules.ping(self.clock.now_us())))
                    next_ping = trio.current_time() + rules.PING_SECONDS
                if len(read.events) == rules.PAGE:
                    continue  # more waiting: read on at once
                wait = self.poll_seconds
                if read.held_back:
                    # Soon (a group commit lasts milliseconds), then less often: a long
                    # transaction elsewhere may hold them back for a while.
                    wait, held_wait = min(held_wait, wait), held_wait * 2
                else:
                    held_wait = rules.HELD_BACK_SECONDS
                with trio.move_on_after(min(wait, max(0.0, next_ping - trio.current_time()))):
                    await bell.wait()
        return Ending(rules.CLOSE_GOING_AWAY, "the server is shutting down")

    def close_all(self) -> None:
        """At shutdown: every stream ends (1001) at its next wake, which is now; none opens."""
        self._closing = True
        self.bells.ring_all()

    async def run(self, *, task_status: trio.TaskStatus[None] = trio.TASK_STATUS_IGNORED) -> None:
        """Renew this process's places among the open streams while they are open (and
        drop its others, whose closing failed), every `rules.RENEW_SECONDS`; a place not
        renewed lapses after `rules.REGISTRATION_SECONDS`."""
        task_status.started()
        while True:
            if not self._open:
                # No timer while no stream is open: a test's MockClock (and an idle
                # process) is not woken every 20 s for nothing.
                self._opened = trio.Event()
                await self._opened.wait()
            await trio.sleep(rules.RENEW_SECONDS)
            if not self._open:
                continue
            expires = self.clock.now_us() + int(rules.REGISTRATION_SECONDS * 1_000_000)
            try:
                await self.db.write(
                    event_stream.keep_streams, self.owner, sorted(self._open), expires
                )
            except StorageError as error:
                log_event("could not renew streams", logging.WARNING, error=type(error).__name__)


def _wanted(stream: Stream, event: Event) -> bool:
    if stream.since_us is not None and event.created_at < stream.since_us:
        return False
    return stream.types is None or event.type in stream.types


def _dumps(frame: object) -> str:
    return json.dumps(frame, separators=(",", ":"))
