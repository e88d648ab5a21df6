"""The loop every durable timer shares (`DurableTimer`): rounds that read what is due from
the database and hand it to its owners, each followed by a sleep until the next is due,
woken early by a doorbell; a round that fails is retried under supervision. Three timers
share it: the expiry sweep (`expiry`), the renewal sweep (`renewals`), and a test clock's
advance with the look for advances nobody runs (`test_clock_advances`).

The due time lives in the database, so a restart forgets nothing; waking in memory is only
an optimization. `Sweeper` is the sweeps' round: the due ids (indexed) handed to their
actors. Every process may sweep: the actors' conditional writes make each change happen
once. So that processes sweeping a large backlog at once (after downtime, or many
renewals falling due together) mostly take different rows rather than racing for the same
ones, once a batch comes back full each next one is read from a random offset into the
first `SPREAD` batches due.

A round that fails (the database is down, a bug) is retried after a backoff that grows to
half a minute, and past its budget escalates to the service's supervisor
(`fgcpay.core.supervision`) as the loop `<name>`: one ERROR line, `/readyz` 503 naming it,
a metric. It keeps retrying quietly and recovers at its first round that goes through.
"""

from __future__ import annotations

import random
from collections.abc import Mapping, Sequence
from typing import Any

import trio
from fgcpay.actors import ActorHost, Message
from fgcpay.core.clock import Clock
from fgcpay.core.supervision import Supervisor
from fgcpay.storage import Database

# Asks in flight per process: their writes share the writer's group commits, so many at
# once means one fsync (SQLite) or WAL flush (PostgreSQL) for up to this many renewals
# (bench/renewals.py, SQLite, renewals/s: 32 -> 981, 128 -> 1,431, 256 -> 1,767 in one
# sitting; 256 -> 1,948, 384 -> 2,138, 512 -> 2,157 in another). 512 held more memory
# after a burst (1.17x against 1.14x) and makes writes queued behind a group wait longer.
CONCURRENCY = 384
BATCH = 2 * CONCURRENCY  # read per due query; handed over in two waves
SPREAD = 8
# Work made due by other processes is seen at most this late.
MAX_SLEEP_SECONDS = 30.0
RETRY_SECONDS = 1.0


class DurableTimer:
    """One durable timer: `round` hands over what is due and says how long to sleep until
    the next round; `run` repeats it, supervised as the loop `<name>`. Subclasses name it
    and write the round."""

    name = "timer"  # supervised as the loop `<name>` (its lines, /readyz, the metric)

    def __init__(
        self, supervisor: Supervisor, clock: Clock, max_sleep: float = MAX_SLEEP_SECONDS
    ) -> None:
        self.clock = clock
        self.max_sleep = max_sleep
        self._wake_at_us: int | None = None
        self._doorbell = trio.Event()
        self.retries = supervisor.loop(self.name)

    async def round(self) -> float | None:
        """Hand over what is due; return how long to sleep until the next round (woken
        early by `schedule`), or None once the timer has nothing left to do (`run`
        returns). Raises what failed (`run` retries)."""
        raise NotImplementedError

    def backoff(self, error: Exception) -> float:
        """Count a failed round against the loop's budget; the seconds to wait."""
        return self.retries.failed(error)

    def schedule(self, due_at_us: int) -> None:
        """Something is now due at `due_at_us`: wake earlier if needed."""
        if self._wake_at_us is None or due_at_us < self._wake_at_us:
            self._doorbell.set()

    async def run(self, *, task_status: trio.TaskStatus[None] = trio.TASK_STATUS_IGNORED) -> None:
        task_status.started()
        while True:
            try:
                sleep_for = await self.round()
            except Exception as error:  # trio.Cancelled is no Exception: it passes
                # Not cut short by the doorbell: the next round hands over whatever rang.
                await trio.sleep(self.backoff(error))
                continue
            self.retries.succeeded()
            if sleep_for is None:
                return
            self._doorbell = trio.Event()
            self._wake_at_us = self.clock.now_us() + int(sleep_for * 1_000_000)
            with trio.move_on_after(sleep_for):
                await self._doorbell.wait()


class Sweeper(DurableTimer):
    """A sweep: `due` and `next_due` read the database, and each due id's actor of `kind`
    is asked `message`. Subclasses name the three."""

    name = "sweep"
    kind = ""
    message: Message[object]

    def __init__(
        self, db: Database, host: ActorHost, clock: Clock, max_sleep: float = MAX_SLEEP_SECONDS
    ) -> None:
        super().__init__(host.supervisor, clock, max_sleep)
        self.db = db
        self.host = host

    async def due(self, now_us: int, limit: int, offset: int) -> Sequence[str] | Mapping[str, Any]:
        """Up to `limit` ids due at `now_us`, the earliest first after skipping `offset`;
        or, read whole, each id with its actor's state as stored (handed over: no read on
        activation)."""
        raise NotImplementedError

    async def next_due(self) -> int | None:
        """The nearest due time, or None when nothing is waiting."""
        raise NotImplementedError

    async def round(self) -> float:
        return await self.sweep_once()

    async def sweep_once(self) -> float:
        """Hand over what is due; return how long to sleep until the next is due."""
        window = 1  # batches the next read may start in (SPREAD once a backlog shows)
        while True:
            offset = random.randrange(window) * BATCH
            due = await self.due(self.clock.now_us(), BATCH, offset)
            loaded = due if isinstance(due, Mapping) else None
            # Each id is touched once: its actor ends right after (unless it was live
            # already), so a sweep of many ids leaves no idle actors holding memory.
            if await self.host.ask_all(
                self.kind, list(due), self.message, CONCURRENCY, passivate=True, loaded=loaded
            ):
                return RETRY_SECONDS  # an actor could not answer: still due, try again soon
            if len(due) == BATCH:
                window = SPREAD  # a backlog: spread the next reads over it
            elif offset == 0:
                break  # all that was due has been handed over
            else:
                window = offset // BATCH  # fewer than `offset + BATCH` were due: start lower
        next_due = await self.next_due()
        if next_due is None:
            return self.max_sleep
        return min(self.max_sleep, max(0.0, (next_due - self.clock.now_us()) / 1_000_000))
