"""Sandboxes: a merchant's disposable merchants of its own (contract, "Sandboxes"):
creating one with its key, reading and listing them, and deleting one with every row of
it (`storage.sandboxes` says in which order, and why a crash leaves a state `finish`
completes). The durable timer (`fgcpay.timers.sandboxes`) calls `finish` for expired
sandboxes and for deletions a process did not finish."""

from __future__ import annotations

import logging
from collections.abc import Callable

import attrs
import trio
from fgcpay.actors import ActorHost
from fgcpay.actors import checkout_session as checkout_session_actor
from fgcpay.actors import subscription as subscription_actor
from fgcpay.core.clock import Clock
from fgcpay.core.logs import log_event
from fgcpay.domain import errors, ids, limits
from fgcpay.domain import sandboxes as rules
from fgcpay.domain.idempotency import Completion
from fgcpay.domain.merchants import Merchant, new_api_key
from fgcpay.domain.sandboxes import Sandbox, SandboxRequest
from fgcpay.storage import Database
from fgcpay.storage import sandboxes as rows
from fgcpay.storage.owned import OwnedRows

# Rows one delete statement removes at most (each batch its own transaction): on
# PostgreSQL a batch's row locks (this sandbox's rows only) are held for one short
# transaction; on SQLite the writer is held for one batch at a time, other merchants'
# writes going in between, so a batch is what another merchant's write may wait behind.
# Deleting 10,000 sessions, 1,000 subscriptions, 11,000 events and as many pending
# deliveries (storage alone, this machine): 1,000 rows a batch, 0.37 s SQLite / 0.34 s
# PostgreSQL, the longest batch 15 ms; 200: 1.05 s / 0.60 s, the longest 5.9 / 8.7 ms;
# 100: 0.92 s / 0.71 s, 2.6 / 8.2 ms. SQLite's one writer makes the longest batch what
# another merchant's write waits behind: at 200 a neighbour's create p99 doubled during a
# deletion (bench sandboxes: 2.33x), so SQLite takes 100; PostgreSQL gains nothing below
# 200 (its batches hold only the sandbox's rows).
BATCHES = {"sqlite": 100, "postgresql": 200}
# Passes over the tables before leaving the rest to the timer: a pass finds rows again
# only when something of the sandbox was written while it ran (a customer paying on a
# hosted page of it, a renewal already under way); a write racing a batch may also fail
# a batch on a foreign key, and the next pass takes it.
PASSES = 5
# How long a DELETE request removes rows before leaving the rest to the timer.
FINISH_SECONDS = 30.0

Answer = Callable[[Sandbox, str], Completion | None]


def _found(sandbox_id: str) -> errors.NotFound:
    return errors.NotFound("No such sandbox.", {"id": sandbox_id[:64]})


@attrs.define(eq=False)
class Sandboxes:
    db: Database
    clock: Clock
    host: ActorHost | None = None  # its actors are told to forget a deleted sandbox's
    # Called with a sandbox's `expires_at` when one is made: the timer wakes for it.
    on_created: Callable[[int], None] = lambda expires_at: None
    # Rows one delete statement removes at most: 0 for the database's own (BATCHES).
    batch: int = 0
    # Called when a deletion is left unfinished: the timer wakes to finish it.
    on_unfinished: Callable[[], None] = lambda: None
    _rows: OwnedRows[Sandbox] = attrs.field(
        init=False, factory=lambda: OwnedRows(rules.SANDBOX_PREFIX, "sandbox", rows.of_parent)
    )

    async def check_allowed(self, merchant_id: str) -> None:
        """403 `sandboxes_not_allowed` when the merchant is a sandbox's own."""
        if await self.db.read(rows.is_sandbox, merchant_id):
            raise _not_allowed()

    async def create(
        self, parent: Merchant, request: SandboxRequest, answer: Answer | None = None
    ) -> tuple[Sandbox, str]:
        """A new sandbox of `parent` and its raw API key (shown this once), with
        `answer(sandbox, key)` (the request's idempotent answer, if any) stored in the same
        transaction. 403 when `parent` is itself a sandbox's merchant, 409
        `sandbox_limit_reached` when it has `limits.MAX_LIVE_SANDBOXES` live ones (nothing written)."""
        most = limits.MAX_LIVE_SANDBOXES  # read at each create (a test may lower it)
        now = self.clock.now_us()
        merchant_id = ids.merchant_id()
        sandbox = rules.new_sandbox(
            request,
            sandbox_id=ids.sandbox_id(),
            parent_id=parent.id,
            merchant_id=merchant_id,
            now_us=now,
        )
        # Its hosted pages show the parent's business name, as the parent's own would.
        merchant = Merchant(
            id=merchant_id, name=parent.name, email=rules.sandbox_email(merchant_id), created_at=now
        )
        key = new_api_key(merchant_id, now, name="sandbox")
        completion = answer(sandbox, key.raw) if answer is not None else None
        refused = await self.db.write(
            rows.insert_within, sandbox, merchant, key.record, completion, most
        )
        if refused == rows.NOT_ALLOWED:
            raise _not_allowed()
        if refused == rows.LIMIT_REACHED:
            raise errors.SandboxLimitReached(
                f"You have {most:,} live sandboxes, the most one merchant may have:"
                " delete one you no longer need (or let one expire), then try again.",
                {"limit": most},
            )
        if sandbox.expires_at is not None:
            self.on_created(sandbox.expires_at)
        return sandbox, key.raw

    async def get(self, parent_id: str, sandbox_id: str) -> Sandbox:
        """The parent's live sandbox; 404 for an unknown id, another's, a deleted one, or
        one past its `expires_at` (the timer deletes it within a minute)."""
        sandbox = await self._rows.get(self.db, parent_id, sandbox_id)
        if rules.expired(sandbox, self.clock.now_us()):
            raise _found(sandbox_id)
        return sandbox

    async def page(
        self, parent_id: str, starting_after: str | None, limit: int
    ) -> tuple[list[Sandbox], bool]:
        """One page of the parent's live sandboxes, newest first, and whether more follow."""
        now = self.clock.now_us()
        return await self._rows.page(
            self.db,
            parent_id,
            starting_after,
            limit,
            lambda tx, after, n: rows.page(tx, parent_id, after, n, now),
        )

    async def delete(self, parent_id: str, sandbox_id: str) -> Sandbox:
        """Delete the parent's sandbox with every row of it; the sandbox as it was. 404
        as `get`. From the first write on its key is refused in every process; once this
        returns none of its rows remain (unless a database failure cut it short: the
        timer then finishes it)."""
        if not ids.looks_like_id(sandbox_id, rules.SANDBOX_PREFIX, 24):
            raise _found(sandbox_id)
        sandbox = await self.db.write(
            rows.begin_delete, sandbox_id, parent_id, self.clock.now_us(), True
        )
        if sandbox is None:
            raise _found(sandbox_id)
        log_event("sandbox deleting", sandbox=sandbox.id, merchant=sandbox.merchant_id)
        # Shielded: a client gone mid-way does not leave the rows to the timer; bounded, so
        # a shutdown waits for it only so long (the timer finishes what is left).
        finished = False
        with trio.move_on_after(FINISH_SECONDS, shield=True):
            try:
                finished = await self.finish(sandbox.id, sandbox.parent_id, sandbox.merchant_id)
            except Exception as error:  # marked deleted: the timer finishes it
                log_event(
                    "a sandbox's deletion is left to the timer",
                    logging.WARNING,
                    sandbox=sandbox.id,
                    error_type=type(error).__name__,
                )
        if not finished:
            self.on_unfinished()
        return sandbox

    async def expire(self, due: rows.Due) -> bool:
        """The timer's step for one due sandbox: mark it deleted if still live (it
        expired), then remove its rows; whether it is gone."""
        await self.db.write(rows.begin_delete, due.id, due.parent_id, self.clock.now_us(), False)
        return await self.finish(due.id, due.parent_id, due.merchant_id)

    async def finish(self, sandbox_id: str, parent_id: str, merchant_id: str) -> bool:
        """Remove every row of a sandbox marked deleted, table by table in batches, then
        its merchant and sandbox rows; whether it is gone (False: rows were written
        meanwhile pass after pass, left to the timer). Its live actors in this process
        are told to read storage again, so none answers from memory afterwards."""
        forget = await self._live_actors(merchant_id)
        size = self.batch or BATCHES[self.db.dialect]
        try:
            for attempt in range(PASSES):
                try:
                    for step in rows.STEPS:
                        while await self.db.write(rows.delete_batch, merchant_id, step, size):
                            pass
                except Exception as error:  # a foreign key raced by a write: pass again
                    if attempt == PASSES - 1:
                        raise
                    log_event(
                        "a sandbox's deletion pass failed; passing again",
                        logging.WARNING,
                        sandbox=sandbox_id,
                        error_type=type(error).__name__,
                    )
                    continue
                if await self.db.write(rows.finish, sandbox_id, parent_id, merchant_id):
                    log_event("sandbox deleted", sandbox=sandbox_id, merchant=merchant_id)
                    return True
            return False
        finally:
            await self._forget(forget)

    async def _live_actors(self, merchant_id: str) -> dict[str, list[str]]:
        """The merchant's sessions' and subscriptions' actors live in this process now."""
        if self.host is None:
            return {}
        found = {}
        for kind, table in _ACTOR_TABLES:
            live = self.host.live_ids(kind)
            if live:
                found[kind] = await self.db.read(rows.owned, table, merchant_id, live)
        return found

    async def _forget(self, live: dict[str, list[str]]) -> None:
        # A live actor of a deleted row would answer from memory: it reads storage again,
        # finds nothing, and passivates. (In other processes, an actor's next write is
        # conditional on its row and fails cleanly; its next start finds nothing.)
        if self.host is None:
            return
        for kind, actor_ids in live.items():
            await self.host.reread_live(kind, actor_ids)


_ACTOR_TABLES = (
    (checkout_session_actor.KIND, "checkout_sessions"),
    (subscription_actor.KIND, "subscriptions"),
)


def _not_allowed() -> errors.SandboxesNotAllowed:
    return errors.SandboxesNotAllowed(
        "A sandbox's API key cannot make or manage sandboxes: use its parent merchant's key."
    )
