"""The delivery log as merchants read it: the one place the API, the CLI and the dashboard
get deliveries and their attempts from."""

from __future__ import annotations

import attrs
from fgcpay.domain import errors, ids
from fgcpay.domain.webhooks import DELIVERY_PREFIX, Delivery, DeliveryQuery
from fgcpay.storage import Storage

from .paging import cursor_position


@attrs.frozen
class DeliveryLog:
    storage: Storage

    async def get(self, merchant_id: str, delivery_id: str) -> Delivery:
        """One of the merchant's deliveries; another merchant's id is as unknown as junk."""
        found = None
        if ids.looks_like_id(delivery_id, DELIVERY_PREFIX, 24):
            found = await self.storage.webhook_delivery(merchant_id, delivery_id)
        if found is None:
            raise errors.NotFound("No such webhook delivery.")
        return found

    async def page(self, merchant_id: str, query: DeliveryQuery) -> tuple[list[Delivery], bool]:
        """A page of the merchant's deliveries, newest first, and whether more follow."""
        after = await cursor_position(
            query.page.starting_after,
            DELIVERY_PREFIX,
            lambda anchor_id: self.storage.webhook_delivery(merchant_id, anchor_id),
        )
        limit = query.page.limit
        rows = await self.storage.webhook_deliveries_page(
            merchant_id, query.endpoint_id, query.event_id, query.page.status, after, limit + 1
        )
        return rows[:limit], len(rows) > limit
