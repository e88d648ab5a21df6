"""The durable timer of sandboxes: a sandbox past `expires_at` is deleted with all its
rows, and so is one marked deleted whose deletion a process did not finish (it died, or
the database failed mid-way). The due times are columns (`sandboxes.expires_at`,
`deleted_at`), so a restart loses none; every process sweeps, and deleting twice at once
is harmless (each batch deletes what is still there; the last rows go once)."""

from __future__ import annotations

from collections.abc import Awaitable, Callable

from fgcpay.core.clock import Clock
from fgcpay.core.supervision import Supervisor
from fgcpay.storage import Database
from fgcpay.storage import sandboxes as rows

from ._sweep import MAX_SLEEP_SECONDS, DurableTimer

# A deletion under way in a request is left to it this long before the timer takes it up.
FINISH_AFTER_US = 30 * 1_000_000
RETRY_SECONDS = 5.0
BATCH = 50  # sandboxes read per round (each deletion runs its own batches)

# A due sandbox -> whether it is gone
Expire = Callable[[rows.Due], Awaitable[bool]]


class SandboxExpiry(DurableTimer):
    """Deletes expired sandboxes and finishes unfinished deletions, through `expire`
    (`fgcpay.accounts.sandboxes.Sandboxes.expire`)."""

    name = "sandbox expiry"

    def __init__(
        self,
        db: Database,
        clock: Clock,
        supervisor: Supervisor,
        expire: Expire,
        max_sleep: float = MAX_SLEEP_SECONDS,
    ) -> None:
        super().__init__(supervisor, clock, max_sleep)
        self.db = db
        self.expire = expire

    def unfinished(self) -> None:
        """A deletion was left unfinished: finish it once it is due (`FINISH_AFTER_US`)."""
        self.schedule(self.clock.now_us() + FINISH_AFTER_US)

    async def round(self) -> float:
        while True:
            now = self.clock.now_us()
            due = await self.db.read(rows.due, now, now - FINISH_AFTER_US, BATCH)
            gone = [await self.expire(sandbox) for sandbox in due]
            if not all(gone):
                return RETRY_SECONDS  # written to meanwhile, pass after pass: soon again
            if len(due) < BATCH:
                break
        expires, deleting = await self.db.read(rows.next_due)
        now = self.clock.now_us()
        waits = [self.max_sleep]
        if expires is not None:
            waits.append((expires - now) / 1_000_000)
        if deleting is not None:
            waits.append((deleting + FINISH_AFTER_US - now) / 1_000_000)
        return max(0.0, min(waits))
