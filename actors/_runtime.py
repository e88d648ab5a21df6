"""The actor runtime: virtual actors on trio, one task per live actor id.

- Activation on demand: the first message to an id starts its task, which loads the
  actor's state from storage. Each actor handles one message at a time, so its state
  transitions are serialized; storage still decides with conditional writes.
- Bounded mailboxes (`trio.open_memory_channel`); `ask` waits for a reply with a timeout
  (503 `service_unavailable` when it lapses), `tell` does not wait for one.
- Passivation: an actor idle for `idle_seconds` with an empty mailbox ends and leaves the
  registry, in one step with no checkpoint in between, closing its mailbox; at once when
  its mailbox is empty, if its behaviour says its state is `resting` (a paid session, an
  id that does not exist). A sender that raced it finds the mailbox closed and delivers
  to a fresh activation instead, so a message is never lost and never delivered twice.
  An ask with `passivate=True` (a timer's sweep, a test clock's advance: thousands of ids
  touched once) ends the actor the same way right after that message, when the message
  started it and nothing else is waiting, so a sweep leaves no idle actors behind to
  hold memory for `idle_seconds`.
- An asker that has just read the actor's state from storage (a sweep reads its due rows
  whole) may hand it over (`loaded`): an activation by that ask starts from it instead of
  reading it again. A state that is stale by then is harmless, as any state held in
  memory is: storage decides with conditional writes, and the actor reloads on a refusal.
- Supervision: an actor that raises is restarted from storage, at most `max_restarts`
  times in a row; the message it was handling is answered 503. An actor whose state
  cannot be loaded (`activate` fails: the database is down) is restarted after a backoff
  that doubles with each failed activation up to `max_backoff_seconds`, on trio time.
  While it backs off, and for one more backoff after it gave up, asks are answered at
  once with 503 and a `Retry-After` instead of hammering the database in a tight loop.
  `trio.Cancelled` always passes through, and every actor task lives in the host's
  nursery under the root.
"""

from __future__ import annotations

import logging
import math
from collections.abc import Hashable, Mapping, Sequence
from typing import Any, Generic, Protocol, TypeVar

import attrs
import trio
from fgcpay.domain import errors
from fgcpay.logs import log_event

S = TypeVar("S")

NOT_LOADED: Any = object()
"""`loaded` when the asker has no state to hand over: the actor's `activate` reads it."""


class Behaviour(Protocol[S]):
    """One kind of actor: how to load its state and how it handles a message."""

    kind: str

    async def activate(self, actor_id: str) -> S:
        """Load the actor's state from storage (called on start and after a crash)."""
        ...

    async def receive(self, actor_id: str, state: S, message: Any) -> tuple[S, Any]:
        """Handle one message; return the new state and the reply.

        Raising a `ServiceError` answers the asker with it and keeps the actor as it was;
        any other exception is a crash.
        """
        ...

    def resting(self, state: S) -> bool:
        """True when nothing is expected to follow for an actor in `state` (a final state,
        an id that does not exist): it ends as soon as its mailbox is empty rather than
        after `idle_seconds`, so that ids paid or ended once hold no memory. A later
        message activates it again from storage."""
        ...


@attrs.define(eq=False)
class _Reply:
    done: trio.Event = attrs.field(factory=trio.Event)
    value: Any = None
    error: BaseException | None = None

    def answer(self, value: Any) -> None:
        if not self.done.is_set():
            self.value = value
            self.done.set()

    def fail(self, error: BaseException) -> None:
        if not self.done.is_set():
            self.error = error
            self.done.set()


@attrs.define(eq=False)
class _Envelope:
    message: Any
    reply: _Reply | None
    passivate: bool = False  # the sender asks for passivation right after it
    # Set by `_deliver` when this message started the actor (and so comes first).
    activated: bool = False


@attrs.frozen
class _Cooling:
    """An actor that gave up after failed activations: not restarted before `until`."""

    until: float  # trio time
    failed_activations: int


@attrs.frozen
class ActorLoad:
    """What a host's actors hold at one instant (for the metrics)."""

    live: dict[str, int]  # active actors by kind, every registered kind included
    messages: int  # waiting in all their mailboxes
    deepest: int  # waiting in the fullest mailbox


@attrs.define(eq=False)
class _Actor(Generic[S]):
    key: tuple[str, str]
    send: trio.MemorySendChannel[_Envelope]
    mailbox: trio.MemoryReceiveChannel[_Envelope]
    loaded: Any = NOT_LOADED  # the state its first activation starts from, if handed over


class ActorHost:
    """Runs actors of the registered kinds. Start it with `nursery.start(host.run)`."""

    def __init__(
        self,
        *,
        idle_seconds: float = 60.0,
        ask_timeout: float = 10.0,
        mailbox_size: int = 16,
        max_restarts: int = 3,
        backoff_seconds: float = 0.5,
        max_backoff_seconds: float = 30.0,
    ) -> None:
        self.idle_seconds = idle_seconds
        self.ask_timeout = ask_timeout
        self.mailbox_size = mailbox_size
        self.max_restarts = max_restarts
        self.backoff_seconds = backoff_seconds
        self.max_backoff_seconds = max_backoff_seconds
        self._cooling: dict[tuple[str, str], _Cooling] = {}
        self._behaviours: dict[str, Behaviour[Any]] = {}
        self._actors: dict[tuple[str, str], _Actor[Any]] = {}
        self._nursery: trio.Nursery | None = None

    def register(self, behaviour: Behaviour[Any]) -> None:
        self._behaviours[behaviour.kind] = behaviour

    @property
    def live(self) -> int:
        """How many actors are active now."""
        return len(self._actors)

    def load(self) -> ActorLoad:
        """Active actors by kind and the messages waiting for them, now."""
        live = dict.fromkeys(self._behaviours, 0)
        messages = deepest = 0
        for (kind, _), actor in self._actors.items():
            live[kind] = live.get(kind, 0) + 1
            waiting = actor.send.statistics().current_buffer_used
            messages += waiting
            deepest = max(deepest, waiting)
        return ActorLoad(live=live, messages=messages, deepest=deepest)

    async def run(self, *, task_status: trio.TaskStatus[None] = trio.TASK_STATUS_IGNORED) -> None:
        async with trio.open_nursery() as nursery:
            self._nursery = nursery
            task_status.started()
            try:
                await trio.sleep_forever()
            finally:
                self._nursery = None

    async def ask(
        self,
        kind: str,
        actor_id: str,
        message: Hashable,
        *,
        passivate: bool = False,
        loaded: Any = NOT_LOADED,
    ) -> Any:
        """Send `message` and wait for the reply; 503 when none comes within the timeout.

        `passivate`: if this message starts the actor and nothing else is waiting once it
        is handled, the actor ends at once rather than after `idle_seconds` (for work that
        touches many ids once; never for a customer's or a merchant's requests, whose next
        message is likely to follow). `loaded`: the actor's state as the caller has just
        read it from storage, used instead of `activate` if this message starts the actor.
        """
        reply = _Reply()
        with trio.move_on_after(self.ask_timeout):
            await self._deliver(kind, actor_id, _Envelope(message, reply, passivate), loaded)
            await reply.done.wait()
        if not reply.done.is_set():
            raise errors.Unavailable("The service is busy; please retry.")
        if reply.error is not None:
            raise reply.error
        return reply.value

    async def ask_all(
        self,
        kind: str,
        actor_ids: Sequence[str],
        message: Hashable,
        concurrency: int,
        *,
        passivate: bool = False,
        loaded: Mapping[str, Any] | None = None,
    ) -> bool:
        """`ask` each actor `message`, `concurrency` at a time (`passivate` and, per id,
        `loaded` as `ask` takes them); True when any ask failed with a `ServiceError` (the
        caller tries again later: its work is still due)."""
        failed = False
        pending = iter(actor_ids)
        states = loaded or {}

        async def worker() -> None:
            nonlocal failed
            for actor_id in pending:  # shared: each id taken by one worker
                try:
                    await self.ask(
                        kind,
                        actor_id,
                        message,
                        passivate=passivate,
                        loaded=states.get(actor_id, NOT_LOADED),
                    )
                except errors.ServiceError:
                    failed = True

        async with trio.open_nursery() as nursery:
            for _ in range(min(concurrency, len(actor_ids))):
                nursery.start_soon(worker)
        return failed

    async def tell(self, kind: str, actor_id: str, message: Hashable) -> None:
        """Queue `message` without waiting for it to be handled (waits for mailbox room)."""
        await self._deliver(kind, actor_id, _Envelope(message, None))

    async def _deliver(
        self, kind: str, actor_id: str, envelope: _Envelope, loaded: Any = NOT_LOADED
    ) -> None:
        key = (kind, actor_id)
        while True:
            actor = self._actors.get(key)
            envelope.activated = actor is None
            if actor is None:
                actor = self._activate(key, loaded)
            try:
                await actor.send.send(envelope)
                return
            except (trio.BrokenResourceError, trio.ClosedResourceError):
                # It passivated or gave up after we looked it up: the message never
                # entered its mailbox, so a fresh activation takes it.
                continue

    def _activate(self, key: tuple[str, str], loaded: Any = NOT_LOADED) -> _Actor[Any]:
        if key[0] not in self._behaviours:
            raise LookupError(f"no actor kind {key[0]!r}")
        if self._nursery is None:
            raise errors.Unavailable("The service is shutting down.")
        cooling = self._cooling.get(key)
        if cooling is not None and trio.current_time() < cooling.until:
            raise _unavailable(cooling.until)
        send, mailbox = trio.open_memory_channel[_Envelope](self.mailbox_size)
        actor: _Actor[Any] = _Actor(key=key, send=send, mailbox=mailbox, loaded=loaded)
        self._actors[key] = actor
        self._nursery.start_soon(self._live, actor, name=f"actor {key[0]} {key[1]}")
        return actor

    async def _live(self, actor: _Actor[Any]) -> None:
        behaviour = self._behaviours[actor.key[0]]
        actor_id = actor.key[1]
        failures = 0  # crashes in a row, against `max_restarts`
        cooled = self._cooling.pop(actor.key, None)
        # Failed activations in a row (kept across a give-up), for the backoff's length.
        failed_activations = cooled.failed_activations if cooled else 0
        try:
            while True:
                try:
                    if actor.loaded is not NOT_LOADED:
                        # Handed over by the asker that started it; a restart reads storage.
                        state, actor.loaded = actor.loaded, NOT_LOADED
                    else:
                        state = await behaviour.activate(actor_id)
                except Exception as crash:
                    failures += 1
                    failed_activations += 1
                    delay = self._backoff(failed_activations)
                    self._log_crash(actor, crash, failures, delay)
                    if failures > self.max_restarts:
                        until = trio.current_time() + delay
                        self._cool(actor.key, _Cooling(until, failed_activations))
                        return
                    await self._refuse_until(actor, trio.current_time() + delay)
                    continue
                failed_activations = 0
                current: _Envelope | None = None
                try:
                    while True:
                        current = None
                        try:
                            # Most often one is waiting already (the message that started
                            # it): no cancel scope to set up for that.
                            current = actor.mailbox.receive_nowait()
                        except trio.WouldBlock:
                            with trio.move_on_after(self.idle_seconds):
                                current = await actor.mailbox.receive()
                        if current is None:
                            if _empty(actor):
                                return  # passivate; `finally` closes the mailbox at once
                            continue
                        try:
                            state, value = await behaviour.receive(actor_id, state, current.message)
                        except errors.ServiceError as refusal:
                            if current.reply is not None:
                                current.reply.fail(refusal)
                        else:
                            if current.reply is not None:
                                current.reply.answer(value)
                            failures = 0
                        if _done_with(actor, current) or (
                            behaviour.resting(state) and _empty(actor)
                        ):
                            return  # passivate; `finally` closes the mailbox at once
                except Exception as crash:
                    # One message crashed it: restart from storage at once, that message
                    # answered 503 (it is not retried, so this cannot loop by itself).
                    failures += 1
                    self._log_crash(actor, crash, failures, 0.0)
                    if current is not None and current.reply is not None:
                        current.reply.fail(errors.Unavailable("The service is busy; please retry."))
                    if failures > self.max_restarts or (
                        current is not None and _done_with(actor, current)
                    ):
                        return
        finally:
            self._retire(actor)

    def _backoff(self, failed_activations: int) -> float:
        exponent = min(failed_activations - 1, 30)
        return float(min(self.backoff_seconds * 2**exponent, self.max_backoff_seconds))

    def _log_crash(self, actor: _Actor[Any], crash: Exception, failures: int, delay: float) -> None:
        log_event(
            "actor crashed",
            logging.ERROR,
            kind=actor.key[0],
            actor_id=actor.key[1],
            error_type=type(crash).__name__,
            error=str(crash)[:300],
            restarts_left=max(0, self.max_restarts - failures + 1),
            restart_in_seconds=round(delay, 3),
        )

    def _cool(self, key: tuple[str, str], cooling: _Cooling) -> None:
        self._cooling[key] = cooling
        if len(self._cooling) > 10_000:
            # Keep the map bounded during a long outage touching many ids.
            now = trio.current_time()
            for stale in [k for k, c in self._cooling.items() if c.until <= now]:
                del self._cooling[stale]

    async def _refuse_until(self, actor: _Actor[Any], deadline: float) -> None:
        """Back off until `deadline`, answering every ask meanwhile with 503 and when to
        retry (a `tell` in that time is dropped, as when an actor gives up)."""
        with trio.move_on_at(deadline):
            while True:
                envelope = await actor.mailbox.receive()
                if envelope.reply is not None:
                    envelope.reply.fail(_unavailable(deadline))

    def _retire(self, actor: _Actor[Any]) -> None:
        # No checkpoint in here: leaving the registry and closing the mailbox happen
        # together, so a sender either got in before (and we answer it) or finds it closed.
        if self._actors.get(actor.key) is actor:
            del self._actors[actor.key]
        cooling = self._cooling.get(actor.key)
        while True:
            try:
                left = actor.mailbox.receive_nowait()
            except (trio.WouldBlock, trio.EndOfChannel, trio.ClosedResourceError):
                break
            if left.reply is not None:
                left.reply.fail(
                    _unavailable(cooling.until)
                    if cooling is not None
                    else errors.Unavailable("The service is busy; please retry.")
                )
        actor.mailbox.close()


def _done_with(actor: _Actor[Any], handled: _Envelope) -> bool:
    """Whether the actor passivates right after `handled`: the message started it, its
    sender asked for that, and nothing else waits in the mailbox (no sender is blocked
    either: one blocks only on a full mailbox). The caller returns at once, so with no
    checkpoint in between, `_retire` closes the mailbox: a later sender activates afresh."""
    return handled.passivate and handled.activated and _empty(actor)


def _empty(actor: _Actor[Any]) -> bool:
    """Nothing waits in the mailbox (and no sender is blocked: one blocks only on a full
    mailbox)."""
    return actor.mailbox.statistics().current_buffer_used == 0


def _unavailable(until: float) -> errors.Unavailable:
    """503 for an actor that cannot be loaded now, saying when it will try again."""
    seconds = max(1, math.ceil(until - trio.current_time()))
    return errors.Unavailable(
        "The service cannot reach its data right now; please retry.",
        retry_after_seconds=seconds,
    )
