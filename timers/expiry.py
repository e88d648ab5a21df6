"""The durable expiry timer: a sweeper that finds sessions past `expires_at` and tells
their actors, sleeping until the nearest one is due.

The due time lives in the database (indexed), so a restart forgets nothing; waking in
memory is only an optimization. Every process may sweep: the actors' conditional writes
make a session expire once.
"""

from __future__ import annotations

import logging

import trio
from fgcpay.actors import ActorHost, checkout_session
from fgcpay.clock import Clock
from fgcpay.domain import errors
from fgcpay.logs import log_event
from fgcpay.storage import Database, checkout_sessions

BATCH = 500
CONCURRENCY = 32
# Sessions created by other processes are seen at most this late.
MAX_SLEEP_SECONDS = 30.0
RETRY_SECONDS = 1.0


class ExpirySweeper:
    """Expires checkout sessions past `expires_at` through their actors."""

    def __init__(
        self, db: Database, host: ActorHost, clock: Clock, max_sleep: float = MAX_SLEEP_SECONDS
    ) -> None:
        self.db = db
        self.host = host
        self.clock = clock
        self.max_sleep = max_sleep
        self._wake_at_us: int | None = None
        self._doorbell = trio.Event()

    def schedule(self, expires_at_us: int) -> None:
        """A session now exists that expires at `expires_at_us`: wake earlier if needed."""
        if self._wake_at_us is None or expires_at_us < self._wake_at_us:
            self._doorbell.set()

    async def run(self, *, task_status: trio.TaskStatus[None] = trio.TASK_STATUS_IGNORED) -> None:
        task_status.started()
        while True:
            try:
                sleep_for = await self.sweep_once()
            except Exception as error:
                log_event("expiry sweep failed", logging.ERROR, error_type=type(error).__name__)
                sleep_for = RETRY_SECONDS
            self._doorbell = trio.Event()
            self._wake_at_us = self.clock.now_us() + int(sleep_for * 1_000_000)
            with trio.move_on_after(sleep_for):
                await self._doorbell.wait()

    async def sweep_once(self) -> float:
        """Expire what is due; return how long to sleep until the next is due."""
        failed = False
        while True:
            now = self.clock.now_us()
            due = await self.db.read(checkout_sessions.due_for_expiry, now, BATCH)
            if not due:
                break
            failed = await self._expire_all(due) or failed
            if failed or len(due) < BATCH:
                break
        if failed:
            return RETRY_SECONDS
        next_due = await self.db.read(checkout_sessions.next_expiry)
        if next_due is None:
            return self.max_sleep
        return min(self.max_sleep, max(0.0, (next_due - self.clock.now_us()) / 1_000_000))

    async def _expire_all(self, session_ids: list[str]) -> bool:
        failed = False
        limiter = trio.CapacityLimiter(CONCURRENCY)

        async def expire(session_id: str) -> None:
            nonlocal failed
            async with limiter:
                try:
                    await self.host.ask(
                        checkout_session.KIND, session_id, checkout_session.Expire()
                    )
                except errors.ServiceError:
                    failed = True

        async with trio.open_nursery() as nursery:
            for session_id in session_ids:
                nursery.start_soon(expire, session_id)
        return failed
