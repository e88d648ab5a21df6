"""The durable renewal timer: subscriptions whose renewal, retry or end is due
(`next_action_at`) are handed to their actors (`Act`).

Missed periods are charged when the service returns. Every process may sweep: the actors'
conditional writes and the ledger's unique (subscription, period) key make each period
charged once. Subscriptions on a test clock are the clock's advance's work.
"""

from __future__ import annotations

from fgcpay.actors import subscription
from fgcpay.domain.subscriptions import Subscription
from fgcpay.storage import subscriptions

from ._sweep import Sweeper


class RenewalSweeper(Sweeper):
    """Hands due subscriptions to their actors (`Act`)."""

    name = "renewal sweep"
    kind = subscription.KIND
    message = subscription.Act()

    async def due(self, now_us: int, limit: int, offset: int) -> dict[str, Subscription]:
        records = await self.db.read(subscriptions.due, now_us, limit, offset)
        return {record.id: record for record in records}

    async def next_due(self) -> int | None:
        return await self.db.read(subscriptions.next_due)
