"""The durable expiry timer: checkout sessions past `expires_at` are handed to their actors
(`Expire`), which expire each once, whichever process sweeps."""

from __future__ import annotations

from fgcpay.actors import checkout_session
from fgcpay.storage import checkout_sessions

from ._sweep import Sweeper


class ExpirySweeper(Sweeper):
    """Expires checkout sessions past `expires_at` through their actors."""

    name = "expiry sweep"
    kind = checkout_session.KIND
    message = checkout_session.Expire()

    async def due(self, now_us: int, limit: int, offset: int) -> list[str]:
        return await self.db.read(checkout_sessions.due_for_expiry, now_us, limit, offset)

    async def next_due(self) -> int | None:
        return await self.db.read(checkout_sessions.next_expiry)
