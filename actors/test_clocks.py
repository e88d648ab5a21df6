"""Test clocks: creating, reading, listing and deleting them, and beginning their advance.
The advance's run, which hands everything due on a clock up to its new time to the
subscriptions' actors, is a durable timer (`fgcpay.timers.test_clock_advances`), started
through `on_advance_begun`."""

from __future__ import annotations

from collections.abc import Callable

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
from fgcpay.storage import test_clocks as clock_rows
from fgcpay.storage.owned import OwnedRows

from ._runtime import ActorHost
from .subscription import KIND, Reload

ROWS = OwnedRows(clock_rules.TEST_CLOCK_PREFIX, "test clock", clock_rows.of_merchant)


@attrs.define
class TestClocks:
    """Test clocks: creating, reading, listing, deleting, and beginning an advance, whose
    run `on_advance_begun` starts."""

    __test__ = False  # not a test class for pytest to collect

    db: Database
    host: ActorHost
    clock: Clock
    nursery: trio.Nursery
    # Runs the advance begun, as `begin_advance` wrote the clock, in the background.
    on_advance_begun: Callable[[TestClock], None]

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
                self.on_advance_begun(started)
                return started
            # Moved on meanwhile (another advance, a delete): decide again on what is stored.
            current = await self.get(merchant_id, clock_id)
