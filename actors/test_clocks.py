"""Test clocks: creating, reading, listing and deleting them, and their advance, which
runs everything due on a clock up to its new time through the subscriptions' actors.

An advance's step that fails, or a look for advances nobody runs, is retried after a
backoff growing to half a minute; past their budget the loops `test clock advance` and
`test clock resume` escalate to the service's supervisor (`fgcpay.core.supervision`), retry
quietly and recover at their next success."""

from __future__ import annotations

from collections.abc import Awaitable, Callable

import attrs
import trio
from fgcpay.core.clock import Clock
from fgcpay.domain import advance_bounds, errors, ids, limits
from fgcpay.domain import test_clocks as clock_rules
from fgcpay.domain.advance_bounds import TooFar
from fgcpay.domain.idempotency import Completion
from fgcpay.domain.test_clocks import TestClock, TestClockRequest
from fgcpay.domain.times import iso_ms
from fgcpay.storage import Database
from fgcpay.storage import subscriptions as subscription_rows
from fgcpay.storage import test_clocks as clock_rows
from fgcpay.storage.owned import OwnedRows

from ._runtime import ActorHost
from .subscription import KIND, Act, Reload

ROWS = OwnedRows(clock_rules.TEST_CLOCK_PREFIX, "test clock", clock_rows.of_merchant)
ADVANCE_BATCH = 500
ADVANCE_CONCURRENCY = 32
ADVANCE_RETRY_SECONDS = 1.0  # when an actor could not answer (a quarantined id): still due
ADVANCE_GIVE_WAY_SECONDS = 0.05
# Clocks left advancing that one check resumes (longest first); more are unlikely.
RESUME_BATCH = 1000


@attrs.define
class TestClocks:
    """Test clocks: creating, reading, listing, deleting, and advancing, which runs what
    falls due on the clock in the service's nursery."""

    __test__ = False  # not a test class for pytest to collect

    db: Database
    host: ActorHost
    clock: Clock
    nursery: trio.Nursery
    # How often `resume` looks for advances nobody runs (the durable timers' poll interval).
    resume_seconds: float = 30.0
    # For tests: awaited by every advance before its first batch, so a test holds a clock
    # `advancing` exactly as long as it needs (see `tests/helpers`' `advances_held`).
    before_advance: Callable[[TestClock], Awaitable[None]] | None = None
    # The advances this process runs, by clock id and the version `begin_advance` wrote.
    _running: set[tuple[str, int]] = attrs.field(factory=set)

    def build(self, request: TestClockRequest, merchant_id: str) -> TestClock:
        return clock_rules.new_test_clock(
            request,
            clock_id=ids.test_clock_id(),
            merchant_id=merchant_id,
            now_us=self.clock.now_us(),
        )

    async def create(self, test_clock: TestClock, completion: Completion | None) -> None:
        """Store a new clock (and its idempotent answer) in one transaction; 409
        `test_clock_limit_reached` when the merchant has as many as one may."""
        most = limits.MAX_TEST_CLOCKS_PER_MERCHANT
        if not await self.db.write(clock_rows.insert_within, test_clock, completion, most):
            raise errors.TestClockLimitReached(
                f"You have {most} test clocks, the most one merchant may have: delete one"
                " you no longer need (its subscriptions go with it), then try again.",
                {"limit": most},
            )

    async def get(self, merchant_id: str, clock_id: str) -> TestClock:
        """The merchant's clock; 404 for an unknown id or another merchant's."""
        return await ROWS.get(self.db, merchant_id, clock_id)

    async def page(
        self, merchant_id: str, starting_after: str | None, limit: int, status: str | None = None
    ) -> tuple[list[TestClock], bool]:
        """One page of the merchant's clocks (those in `status` when given), newest first,
        and whether more follow."""
        return await ROWS.page(
            self.db,
            merchant_id,
            starting_after,
            limit,
            lambda tx, after, n: clock_rows.page(tx, merchant_id, after, n, status),
        )

    async def delete(self, merchant_id: str, clock_id: str) -> TestClock:
        """Delete the merchant's clock with its subscriptions; the clock as it was. 404
        for an unknown id or another merchant's."""
        found = await self.get(merchant_id, clock_id)
        deleted = await self.db.write(clock_rows.delete, merchant_id, clock_id)
        if deleted is None:
            raise errors.NotFound("No such test clock.", {"id": clock_id[:64]})
        if deleted:
            self.nursery.start_soon(self._forget, deleted)
        return found

    async def _forget(self, subscription_ids: list[str]) -> None:
        # Live actors of deleted subscriptions would answer from memory: make them re-read.
        for subscription_id in subscription_ids:
            try:
                await self.host.tell(KIND, subscription_id, Reload())
            except errors.ServiceError:
                pass  # shutting down: nothing left to answer from memory

    async def advance(self, merchant_id: str, clock_id: str, frozen_time: int) -> TestClock:
        """Move the clock forward to `frozen_time` and run, in the background, everything
        due on it up to then; the clock as written (`advancing`). 404 for an unknown clock,
        400 unless later than its time, 400 `test_clock_advance_too_far` past the bounds of
        one advance (nothing changes), 409 `test_clock_advancing` while an advance runs."""
        current = await self.get(merchant_id, clock_id)
        while True:
            if current.status == clock_rules.ADVANCING:
                raise errors.TestClockAdvancing(
                    "The test clock is still advancing; try again once it is ready.",
                    {"id": clock_id},
                )
            clock_rules.check_advance(current, frozen_time)
            started = await self.db.write(
                clock_rows.begin_bounded_advance, current, frozen_time, self.clock.now_us()
            )
            if isinstance(started, TooFar) and started.charges_left is not None:
                raise errors.TestClockAdvanceTooFar(
                    "A test clock's subscriptions may be billed at most "
                    f"{limits.MAX_CHARGES_PER_TEST_CLOCK:,} charges over its life; this one"
                    f" may bill {started.charges_left:,} more. Advance to max_frozen_time or"
                    " earlier, or delete the clock and make another.",
                    {"max_frozen_time": iso_ms(started.max_frozen_time)},
                )
            if isinstance(started, TooFar):
                raise errors.TestClockAdvanceTooFar(
                    "One advance may bill at most "
                    f"{advance_bounds.MAX_PERIODS_PER_SUBSCRIPTION:,} periods of a subscription"
                    f" and {advance_bounds.MAX_CHARGES_PER_ADVANCE:,} charges in all; advance"
                    " to max_frozen_time or earlier, then again.",
                    {"max_frozen_time": iso_ms(started.max_frozen_time)},
                )
            if started is not None:
                self._start(started)
                return started
            # Moved on meanwhile (another advance, a delete): decide again on what is stored.
            current = await self.get(merchant_id, clock_id)

    def _start(self, test_clock: TestClock) -> None:
        # Keyed by the version too: an advance begun here while this process still winds
        # down the run of the previous one (which another process finished first) is a new
        # run, not that one.
        key = (test_clock.id, test_clock.version)
        if key not in self._running:
            self._running.add(key)
            self.nursery.start_soon(self._run_advance, test_clock, key)

    async def resume(
        self, *, task_status: trio.TaskStatus[None] = trio.TASK_STATUS_IGNORED
    ) -> None:
        """Run the advances nobody runs: at start, and every `resume_seconds` after, every
        clock `advancing` that this process is not advancing (a process died mid-advance,
        while the others keep running).

        "Nobody runs it" is judged as "this process does not": a clock another live
        process is advancing is joined too, once its advance outlasts the interval. That
        is harmless, since every step is a subscription actor's conditional write, the
        ledger's key charges each period once and `finish_advance` is guarded by the
        clock's version, and it costs only repeated reads and lost write races. A
        heartbeat (a column each batch writes, stale after a while) would save that, for
        a write per batch, a migration, and a dead process's clock waiting out the
        staleness as well.
        """
        task_status.started()
        retries = self.host.supervisor.loop("test clock resume")
        while True:
            try:
                left = await self.db.read(clock_rows.advancing, RESUME_BATCH)
            except Exception as error:  # the database is down: look again soon
                await trio.sleep(min(retries.failed(error), self.resume_seconds))
                continue
            retries.succeeded()
            for test_clock in left:
                self._start(test_clock)
            await trio.sleep(self.resume_seconds)

    async def _run_advance(self, test_clock: TestClock, key: tuple[str, int]) -> None:
        try:
            if self.before_advance is not None:
                await self.before_advance(test_clock)
            seen: list[tuple[str, int]] = []
            # Each advance backs off on its own; the advances share one budget.
            retries = self.host.supervisor.loop("test clock advance")
            while True:
                try:
                    finished = await self._advance_step(test_clock, seen)
                except Exception as error:  # trio.Cancelled is no Exception: it passes
                    await trio.sleep(retries.failed(error, test_clock.id))
                    continue
                retries.succeeded()
                if finished:
                    break
        finally:
            self._running.discard(key)

    async def _advance_step(self, test_clock: TestClock, seen: list[tuple[str, int]]) -> bool:
        """One batch of the advance; True once the clock is `ready` (or gone, or another
        process finished it). `seen`: the batch the last step found, updated. Raises
        what failed (`_run_advance` retries)."""
        due = await self.db.read(
            subscription_rows.due_on_clock, test_clock.id, test_clock.frozen_time, ADVANCE_BATCH
        )
        batch = [(record.id, record.version) for record in due]
        if due and batch == seen:
            # Nothing moved since the last step: another process holds these rows (its
            # group commit is taking the same steps; ours gave way). Its commit moves
            # them on; asking again at once would only spin until it does.
            await trio.sleep(ADVANCE_GIVE_WAY_SECONDS)
        seen[:] = batch
        if due:
            # As the renewal sweep: the records read are the actors' states, and each
            # actor ends right after its step (see `ActorHost.ask`).
            loaded = {record.id: record for record in due}
            if await self.host.ask_all(
                KIND, list(loaded), Act(), ADVANCE_CONCURRENCY, passivate=True, loaded=loaded
            ):
                await trio.sleep(ADVANCE_RETRY_SECONDS)
            return False
        if await self.db.write(clock_rows.finish_advance, test_clock, self.clock.now_us()):
            return True
        stored = await self.db.read(clock_rows.by_id, test_clock.id)
        return stored is None or stored.version != test_clock.version
