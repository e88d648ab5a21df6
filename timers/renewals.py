"""The durable renewal timer: a sweeper that finds subscriptions whose renewal, retry or end
is due and asks their actors to act, sleeping until the nearest one is due.

The due time (`next_action_at`) lives in the database, indexed, so a restart forgets
nothing and missed periods are charged when the service returns. Every process may sweep:
the actors' conditional writes and the ledger's unique (subscription, period) key make
each period charged once. Subscriptions on a test clock are the clock's advance's work.
"""

from __future__ import annotations

import logging

import trio
from fgcpay.actors import ActorHost
from fgcpay.actors.subscription import act_all
from fgcpay.clock import Clock
from fgcpay.logs import log_event
from fgcpay.storage import Database, subscriptions

BATCH = 500
CONCURRENCY = 32
# Subscriptions approved in other processes are seen at most this late.
MAX_SLEEP_SECONDS = 30.0
RETRY_SECONDS = 1.0


class RenewalSweeper:
    """Hands due subscriptions to their actors (`Act`)."""

    def __init__(
        self, db: Database, host: ActorHost, clock: Clock, max_sleep: float = MAX_SLEEP_SECONDS
    ) -> None:
        self.db = db
        self.host = host
        self.clock = clock
        self.max_sleep = max_sleep
        self._wake_at_us: int | None = None
        self._doorbell = trio.Event()

    def schedule(self, due_at_us: int) -> None:
        """Something is now due at `due_at_us` (an approval): wake earlier if needed."""
        if self._wake_at_us is None or due_at_us < self._wake_at_us:
            self._doorbell.set()

    async def run(self, *, task_status: trio.TaskStatus[None] = trio.TASK_STATUS_IGNORED) -> None:
        task_status.started()
        while True:
            try:
                sleep_for = await self.sweep_once()
            except Exception as error:
                log_event("renewal sweep failed", logging.ERROR, error_type=type(error).__name__)
                sleep_for = RETRY_SECONDS
            self._doorbell = trio.Event()
            self._wake_at_us = self.clock.now_us() + int(sleep_for * 1_000_000)
            with trio.move_on_after(sleep_for):
                await self._doorbell.wait()

    async def sweep_once(self) -> float:
        """Act on what is due; return how long to sleep until the next is due."""
        while True:
            due = await self.db.read(subscriptions.due, self.clock.now_us(), BATCH)
            if not due:
                break
            if await act_all(self.host, due, CONCURRENCY):
                return RETRY_SECONDS  # an actor could not answer: still due, try again soon
            if len(due) < BATCH:
                break
        next_due = await self.db.read(subscriptions.next_due)
        if next_due is None:
            return self.max_sleep
        return min(self.max_sleep, max(0.0, (next_due - self.clock.now_us()) / 1_000_000))
