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
- Supervision, as OTP does it (`fgcpay.core.supervision`): an actor that raises, handling a
  message or loading its state, is restarted from storage at once; the message it was
  handling is answered 503. Each kind has a restart budget (`restart_limit` crashes
  within `restart_period` seconds, in this process); past it the kind escalates
  (`/readyz` names it, a metric counts it, one ERROR line lists the ids that crashed and
  why) and recovers by itself once it has been quiet. An escalated kind keeps activating
  on demand: its crashes are most often one bad record, and refusing every id of the kind
  would turn that into an outage for every merchant; readiness tells the operator.
- Quarantine: an id that crashes `quarantine_after` times within `restart_period` is not
  restarted but quarantined for a cool-off that doubles with each quarantine from
  `backoff_seconds` up to `max_backoff_seconds`, and is forgotten once the id has not
  crashed for `forget_seconds`. Meanwhile its asks are answered at once with 503 and a
  `Retry-After`, so a poison id never restarts in a loop.
- A database outage (`DatabaseUnavailable`, handling a message or loading) is not a
  crash: no budget is spent, the asker gets the outage itself (503 with `Retry-After`),
  and the actor ends; the next ask loads it from storage. A restart of PostgreSQL thus
  never escalates a kind, nor loops an actor against a database that is down.
- An ask's deadline (`ask_timeout`): an ask that gets no reply in time is answered 503
  with a `Retry-After`, and the message is abandoned: skipped if not begun, its handler
  cancelled if it runs. A write already handed to the database is never abandoned (the
  storage layer waits for its commit, shielded); the cancellation takes effect after it,
  and the actor reloads its state from storage. A retry with the same `Idempotency-Key`
  then answers the final outcome (docs/architecture.md, "An ask's deadline").
  `trio.Cancelled` always passes through, and every actor task lives in the host's
  nursery under the root.

A message names its reply: its class derives from `Message[R]`, R the type of what its
actor answers (`class Confirm(Message[ConfirmResult])`), so `ask(kind, id, Confirm(...))`
is typed `ConfirmResult` and mypy checks what each caller does with the reply; `ask_all`
and `tell` take any message and drop the reply. A `ServiceError` the actor raises is
raised by `ask` instead (R is only what is answered). Inside the runtime replies are
untyped: a behaviour's `receive` dispatches on the message's class and must answer the R
that class names (the actor's side of the contract, which its tests check).
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from typing import Any, Generic, Protocol, TypeVar, cast

import attrs
import trio
from fgcpay.core.supervision import Backoff, Budget, Supervised, Supervisor
from fgcpay.domain import errors
from fgcpay.storage import DatabaseUnavailable

S = TypeVar("S")
R = TypeVar("R")
R_co = TypeVar("R_co", covariant=True)

NOT_LOADED: Any = object()
"""`loaded` when the asker has no state to hand over: the actor's `activate` reads it."""


class Message(Generic[R_co]):
    """A message to an actor whose reply is an `R_co` (see the module docstring): the base
    of every message class, named as `Message[ReplyType]`. It holds nothing (no slots),
    so a frozen, slotted attrs message stays one."""

    __slots__ = ()


class Reread(Message[None]):
    """The runtime's own message: read the actor's state from storage again (its rows
    were deleted under it: a sandbox's), and passivate if it then rests. Sent only to
    actors live now (`reread_live`)."""

    __slots__ = ()


# Ids whose crashes are remembered, at most (but those quarantined now): see `_forget_quiet`.
MAX_CRASH_RECORDS = 10_000


class Behaviour(Protocol[S]):
    """One kind of actor: how to load its state and how it handles a message."""

    kind: str

    async def activate(self, actor_id: str) -> S:
        """Load the actor's state from storage (called on start and after a crash)."""
        ...

    async def receive(self, actor_id: str, state: S, message: Any) -> tuple[S, Any]:
        """Handle one message; return the new state and the reply, of the type the
        message's class names (`Message[R]`: an R).

        Raising a `ServiceError` answers the asker with it and keeps the actor as it was;
        any other exception is a crash. It may be cancelled (its asker's deadline passed)
        at any checkpoint but inside a database write; the actor then reloads its state.
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
    message: Message[object]
    reply: _Reply | None
    passivate: bool = False  # the sender asks for passivation right after it
    # Set by `_deliver` when this message started the actor (and so comes first).
    activated: bool = False
    # Its asker stopped waiting (the deadline passed): not begun, or cancelled if running.
    abandoned: bool = False
    handling: trio.CancelScope | None = None  # while its handler runs

    def abandon(self) -> None:
        self.abandoned = True
        if self.handling is not None:
            self.handling.cancel()


@attrs.define
class _Crashes:
    """One id's crashes: its own budget (crashes before quarantine) and its quarantines."""

    budget: Budget
    quarantines: int = 0
    until: float = -math.inf  # quarantined until (trio time)


@attrs.frozen
class Quarantined:
    """An id quarantined now: its asks are answered 503 until `until` (trio time)."""

    kind: str
    actor_id: str
    until: float

    def as_json(self) -> dict[str, Any]:
        seconds = max(1, math.ceil(self.until - trio.current_time()))
        return {"kind": self.kind, "id": self.actor_id, "retry_after_seconds": seconds}


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
    """Runs actors of the registered kinds. Start it with `nursery.start(host.run)`.

    Supervision (see the module docstring): per kind at most `restart_limit` crashes in
    `restart_period` seconds, or the kind escalates to `supervisor`; an id crashing
    `quarantine_after` times within `restart_period` is quarantined for a cool-off
    doubling from `backoff_seconds` to `max_backoff_seconds`, forgotten after
    `forget_seconds` without a crash. The defaults suit a service (5 in 10 s: a burst of
    bad records escalates, one poison id does not, being quarantined after two)."""

    def __init__(
        self,
        *,
        idle_seconds: float = 60.0,
        ask_timeout: float = 10.0,
        mailbox_size: int = 16,
        restart_limit: int = 5,
        restart_period: float = 10.0,
        quarantine_after: int = 2,
        backoff_seconds: float = 0.5,
        max_backoff_seconds: float = 30.0,
        forget_seconds: float = 300.0,
        supervisor: Supervisor | None = None,
    ) -> None:
        self.idle_seconds = idle_seconds
        self.ask_timeout = ask_timeout
        self.mailbox_size = mailbox_size
        self.restart_limit = restart_limit
        self.restart_period = restart_period
        self.quarantine_after = quarantine_after
        self.cool_off = Backoff(backoff_seconds, max_backoff_seconds)
        self.max_backoff_seconds = max_backoff_seconds
        self.forget_seconds = forget_seconds
        self.supervisor = supervisor or Supervisor()
        self._kinds: dict[str, Supervised] = {}
        self._crashes: dict[tuple[str, str], _Crashes] = {}
        self._behaviours: dict[str, Behaviour[Any]] = {}
        self._actors: dict[tuple[str, str], _Actor[Any]] = {}
        self._nursery: trio.Nursery | None = None

    def register(self, behaviour: Behaviour[Any]) -> None:
        self._behaviours[behaviour.kind] = behaviour
        self._kinds[behaviour.kind] = self.supervisor.child(
            f"actor kind {behaviour.kind}", self.restart_limit, self.restart_period
        )

    @property
    def live(self) -> int:
        """How many actors are active now."""
        return len(self._actors)

    def live_ids(self, kind: str) -> list[str]:
        """The ids of the actors of `kind` active now."""
        return [actor_id for (of_kind, actor_id) in self._actors if of_kind == kind]

    async def reread_live(self, kind: str, actor_ids: list[str]) -> None:
        """Have each of these actors that is live now read its state from storage again
        (after its rows were deleted: it then finds none, rests and passivates, so none
        answers from memory or writes afterwards); starts none that is not live."""
        for actor_id in actor_ids:
            actor = self._actors.get((kind, actor_id))
            if actor is None:
                continue
            try:
                await actor.send.send(_Envelope(Reread(), None))
            except (trio.BrokenResourceError, trio.ClosedResourceError):
                pass  # it passivated meanwhile: its next start reads storage anyway

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

    def quarantined(self, kind: str, actor_id: str) -> bool:
        """Whether the id is quarantined now (its asks answered 503 at once)."""
        crashes = self._crashes.get((kind, actor_id))
        return crashes is not None and crashes.until > trio.current_time()

    def quarantine(self, limit: int) -> tuple[list[Quarantined], int]:
        """The ids quarantined now, the latest to end first, at most `limit` of them; and
        how many there are (for `/readyz`)."""
        now = trio.current_time()
        found = [
            Quarantined(kind, actor_id, crashes.until)
            for (kind, actor_id), crashes in self._crashes.items()
            if crashes.until > now
        ]
        found.sort(key=lambda q: (-q.until, q.kind, q.actor_id))
        return found[:limit], len(found)

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
        message: Message[R],
        *,
        passivate: bool = False,
        loaded: object = NOT_LOADED,
    ) -> R:
        """Send `message` and wait for its reply (the R of its `Message[R]`); 503 with a
        `Retry-After` when none comes within `ask_timeout`, the message then abandoned (see
        the module docstring).

        `passivate`: if this message starts the actor and nothing else is waiting once it
        is handled, the actor ends at once rather than after `idle_seconds` (for work that
        touches many ids once; never for a customer's or a merchant's requests, whose next
        message is likely to follow). `loaded`: the actor's state as the caller has just
        read it from storage, used instead of `activate` if this message starts the actor.
        """
        reply = _Reply()
        envelope = _Envelope(message, reply, passivate)
        try:
            with trio.move_on_after(self.ask_timeout):
                await self._deliver(kind, actor_id, envelope, loaded)
                await reply.done.wait()
        finally:
            if not reply.done.is_set():
                envelope.abandon()  # nobody waits for its answer any more (a deadline, a cancel)
        if not reply.done.is_set():
            raise errors.Unavailable(
                "The service did not answer in time; please retry (with the same"
                " Idempotency-Key, a retry answers what was done)."
            )
        if reply.error is not None:
            raise reply.error
        # The one step from the untyped inside to the typed boundary: a behaviour answers
        # a `Message[R]` with an R (see `Behaviour.receive`).
        return cast(R, reply.value)

    async def ask_all(
        self,
        kind: str,
        actor_ids: Sequence[str],
        message: Message[object],
        concurrency: int,
        *,
        passivate: bool = False,
        loaded: Mapping[str, object] | None = None,
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

    async def tell(self, kind: str, actor_id: str, message: Message[object]) -> None:
        """Queue `message` without waiting for it to be handled (waits for mailbox room)."""
        await self._deliver(kind, actor_id, _Envelope(message, None))

    async def _deliver(
        self, kind: str, actor_id: str, envelope: _Envelope, loaded: object = NOT_LOADED
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

    def _activate(self, key: tuple[str, str], loaded: object = NOT_LOADED) -> _Actor[Any]:
        if key[0] not in self._behaviours:
            raise LookupError(f"no actor kind {key[0]!r}")
        if self._nursery is None:
            raise errors.Unavailable("The service is shutting down.")
        crashes = self._crashes.get(key)
        if crashes is not None and trio.current_time() < crashes.until:
            raise _unavailable(crashes.until)
        send, mailbox = trio.open_memory_channel[_Envelope](self.mailbox_size)
        actor: _Actor[Any] = _Actor(key=key, send=send, mailbox=mailbox, loaded=loaded)
        self._actors[key] = actor
        self._nursery.start_soon(self._live, actor, name=f"actor {key[0]} {key[1]}")
        return actor

    async def _live(self, actor: _Actor[Any]) -> None:
        """The actor's life: (re)load its state, then handle messages until it passivates
        or is quarantined; a crash restarts it from storage."""
        behaviour = self._behaviours[actor.key[0]]
        actor_id = actor.key[1]
        try:
            while True:
                try:
                    if actor.loaded is not NOT_LOADED:
                        # Handed over by the asker that started it; a restart reads storage.
                        state, actor.loaded = actor.loaded, NOT_LOADED
                    else:
                        state = await behaviour.activate(actor_id)
                except DatabaseUnavailable:
                    return  # an outage (see below): a later ask activates it again
                except Exception as crash:
                    if self._crashed(actor, crash, "activate"):
                        return  # quarantined: `_retire` answers what waits with Retry-After
                    continue
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
                        if current.abandoned:
                            continue  # its asker gave up before it began: nothing to do
                        if isinstance(current.message, Reread):
                            state = await behaviour.activate(actor_id)
                            if behaviour.resting(state) and _empty(actor):
                                return  # passivate; `finally` closes the mailbox at once
                            continue
                        state, finished = await self._handle(behaviour, actor_id, state, current)
                        if _done_with(actor, current) or (
                            finished and behaviour.resting(state) and _empty(actor)
                        ):
                            return  # passivate; `finally` closes the mailbox at once
                        if not finished:
                            break  # cancelled mid-way: reload what storage holds
                except DatabaseUnavailable as outage:
                    # The database is down or restarting: not the actor's fault, so no
                    # budget is spent (a restart of PostgreSQL would otherwise escalate
                    # every kind with live actors, and readiness would answer 503 for a
                    # minute). Its asker hears the outage as it is (503 with Retry-After);
                    # the actor ends, its state unknown, and the next ask loads it again.
                    if current is not None and current.reply is not None:
                        current.reply.fail(outage)
                    return
                except Exception as crash:
                    # One message crashed it: restart from storage at once, that message
                    # answered 503 (it is not retried, so this cannot loop by itself).
                    if current is not None and current.reply is not None:
                        current.reply.fail(errors.Unavailable("The service is busy; please retry."))
                    message = "receive" if current is None else type(current.message).__name__
                    if self._crashed(actor, crash, message) or (
                        current is not None and _done_with(actor, current)
                    ):
                        return
        finally:
            self._retire(actor)

    async def _handle(
        self, behaviour: Behaviour[Any], actor_id: str, state: Any, current: _Envelope
    ) -> tuple[Any, bool]:
        """Handle one message under a cancel scope its asker's deadline may cancel; the
        new state, and False when it was cancelled (the state is then unknown)."""
        with trio.CancelScope() as scope:
            current.handling = scope
            try:
                state, value = await behaviour.receive(actor_id, state, current.message)
            except errors.ServiceError as refusal:
                if current.reply is not None:
                    current.reply.fail(refusal)
            else:
                if current.reply is not None:
                    current.reply.answer(value)
        current.handling = None
        return state, not scope.cancelled_caught

    def _crashed(self, actor: _Actor[Any], crash: Exception, step: str) -> bool:
        """Count a crash against the id's and the kind's budgets; True when the id is now
        quarantined (its task ends), False to restart it at once."""
        now = trio.current_time()
        crashes = self._crashes.get(actor.key)
        if crashes is None or crashes.budget.last <= now - self.forget_seconds:
            self._forget_quiet(now)
            crashes = self._crashes[actor.key] = _Crashes(
                Budget(self.quarantine_after - 1, self.restart_period)
            )
        quarantine = crashes.budget.spend(now)
        if quarantine:
            crashes.quarantines += 1
            crashes.until = now + self.cool_off.delay(crashes.quarantines)
        kind = self._kinds[actor.key[0]]
        kind.failed(
            crash,
            actor.key[1],
            step=step,
            quarantined_seconds=round(crashes.until - now, 3) if quarantine else 0,
        )
        if quarantine:
            kind.quarantined()
        return quarantine

    def _forget_quiet(self, now: float) -> None:
        """Keep the records bounded: past `MAX_CRASH_RECORDS` (a long outage touching many
        ids), only the ids quarantined now are kept; the others start afresh."""
        if len(self._crashes) > MAX_CRASH_RECORDS:
            for key in [key for key, crashes in self._crashes.items() if crashes.until <= now]:
                del self._crashes[key]

    def _retire(self, actor: _Actor[Any]) -> None:
        # No checkpoint in here: leaving the registry and closing the mailbox happen
        # together, so a sender either got in before (and we answer it) or finds it closed.
        if self._actors.get(actor.key) is actor:
            del self._actors[actor.key]
        crashes = self._crashes.get(actor.key)
        refusal = (
            _unavailable(crashes.until)
            if crashes is not None and crashes.until > trio.current_time()
            else errors.Unavailable("The service is busy; please retry.")
        )
        while True:
            try:
                left = actor.mailbox.receive_nowait()
            except (trio.WouldBlock, trio.EndOfChannel, trio.ClosedResourceError):
                break
            if left.reply is not None:
                left.reply.fail(refusal)
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
    """503 for a quarantined id (it crashed repeatedly, or its state cannot be loaded),
    saying when it will be tried again."""
    seconds = max(1, math.ceil(until - trio.current_time()))
    return errors.Unavailable(
        "The service cannot handle this right now; please retry.",
        retry_after_seconds=seconds,
    )
