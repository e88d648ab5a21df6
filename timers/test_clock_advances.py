"""The test clocks' durable timers: an advance's run, which hands everything due on the
clock up to its new time to the subscriptions' actors until nothing is left, then sets
the clock `ready`; and the look for advances nobody runs, so a clock a dead process left
`advancing` is finished by any process.

Both are `DurableTimer`s: a failed round is retried after a backoff growing to half a
minute and, past its budget, escalates as the loop `test clock advance` (the advances
share one budget, each backing off on its own) or `test clock resume`, retries quietly and
recovers at its next success. `TestClocks` (`fgcpay.actors.test_clocks`) begins an
advance and hands it to `TestClockAdvances.start`.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable

import trio
from fgcpay.actors import ActorHost
from fgcpay.actors.subscription import KIND, Act
from fgcpay.core.clock import Clock
from fgcpay.domain.test_clocks import TestClock
from fgcpay.storage import Database
from fgcpay.storage import subscriptions as subscription_rows
from fgcpay.storage import test_clocks as clock_rows

from ._sweep import MAX_SLEEP_SECONDS, DurableTimer

ADVANCE_BATCH = 500
ADVANCE_CONCURRENCY = 32
ADVANCE_RETRY_SECONDS = 1.0  # when an actor could not answer (a quarantined id): still due
ADVANCE_GIVE_WAY_SECONDS = 0.05
# Clocks left advancing that one check resumes (longest first); more are unlikely.
RESUME_BATCH = 1000


class TestClockAdvances(DurableTimer):
    """Runs the advances begun here (`start`) in the service's nursery and, as the timer
    `test clock resume`, at start and every `resume_seconds` after, every clock
    `advancing` that this process is not advancing (a process died mid-advance, while the
    others keep running).

    "Nobody runs it" is judged as "this process does not": a clock another live process
    is advancing is joined too, once its advance outlasts the interval. That is harmless,
    since every step is a subscription actor's conditional write, the ledger's key
    charges each period once and `finish_advance` is guarded by the clock's version, and
    it costs only repeated reads and lost write races. A heartbeat (a column each batch
    writes, stale after a while) would save that, for a write per batch, a migration, and
    a dead process's clock waiting out the staleness as well.
    """

    __test__ = False  # not a test class for pytest to collect
    name = "test clock resume"

    def __init__(
        self,
        db: Database,
        host: ActorHost,
        clock: Clock,
        nursery: trio.Nursery,
        resume_seconds: float = MAX_SLEEP_SECONDS,
    ) -> None:
        super().__init__(host.supervisor, clock, resume_seconds)
        self.db = db
        self.host = host
        self.nursery = nursery
        # For tests: awaited by every advance before its first batch, so a test holds a
        # clock `advancing` exactly as long as it needs (see `tests/helpers`'
        # `advances_held`).
        self.before_advance: Callable[[TestClock], Awaitable[None]] | None = None
        # The advances this process runs, by clock id and the version `begin_advance` wrote.
        self._running: set[tuple[str, int]] = set()

    @property
    def resume_seconds(self) -> float:
        """How often it looks for advances nobody runs (the durable timers' poll interval)."""
        return self.max_sleep

    def start(self, test_clock: TestClock) -> None:
        """Run the advance `begin_advance` wrote as `test_clock`, unless this process
        runs it already."""
        # Keyed by the version too: an advance begun here while this process still winds
        # down the run of the previous one (which another process finished first) is a new
        # run, not that one.
        key = (test_clock.id, test_clock.version)
        if key not in self._running:
            self._running.add(key)
            self.nursery.start_soon(self._run_advance, test_clock, key)

    async def round(self) -> float:
        for test_clock in await self.db.read(clock_rows.advancing, RESUME_BATCH):
            self.start(test_clock)
        return self.resume_seconds

    def backoff(self, error: Exception) -> float:
        # The database is down: look again soon, at the latest when the next look is due.
        return min(super().backoff(error), self.resume_seconds)

    async def _run_advance(self, test_clock: TestClock, key: tuple[str, int]) -> None:
        try:
            if self.before_advance is not None:
                await self.before_advance(test_clock)
            await ClockAdvance(self.db, self.host, self.clock, test_clock).run()
        finally:
            self._running.discard(key)


class ClockAdvance(DurableTimer):
    """One advance's run: rounds of one batch each until the clock is `ready` (or gone, or
    another process finished it). Each advance backs off on its own; the advances share
    one budget."""

    name = "test clock advance"

    def __init__(self, db: Database, host: ActorHost, clock: Clock, test_clock: TestClock) -> None:
        super().__init__(host.supervisor, clock)
        self.db = db
        self.host = host
        self.test_clock = test_clock
        self._seen: list[tuple[str, int]] = []  # the batch the last round found

    def backoff(self, error: Exception) -> float:
        return self.retries.failed(error, self.test_clock.id)

    async def round(self) -> float | None:
        """One batch of the advance; None once the clock is `ready` (or gone, or another
        process finished it)."""
        test_clock = self.test_clock
        due = await self.db.read(
            subscription_rows.due_on_clock,
            test_clock.merchant_id,
            test_clock.id,
            test_clock.frozen_time,
            ADVANCE_BATCH,
        )
        batch = [(record.id, record.version) for record in due]
        if due and batch == self._seen:
            # Nothing moved since the last round: another process holds these rows (its
            # group commit is taking the same steps; ours gave way). Its commit moves
            # them on; asking again at once would only spin until it does.
            await trio.sleep(ADVANCE_GIVE_WAY_SECONDS)
        self._seen = batch
        if due:
            # As the renewal sweep: the records read are the actors' states, and each
            # actor ends right after its step (see `ActorHost.ask`).
            loaded = {record.id: record for record in due}
            if await self.host.ask_all(
                KIND, list(loaded), Act(), ADVANCE_CONCURRENCY, passivate=True, loaded=loaded
            ):
                return ADVANCE_RETRY_SECONDS
            return 0.0
        if await self.db.write(clock_rows.finish_advance, test_clock, self.clock.now_us()):
            return None
        stored = await self.db.read(clock_rows.of_merchant, test_clock.merchant_id, test_clock.id)
        return None if stored is None or stored.version != test_clock.version else 0.0
