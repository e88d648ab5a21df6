"""The delivery log as merchants read it: the one place the API, the CLI and the dashboard
get deliveries and their attempts from."""

from __future__ import annotations

import attrs
from fgcpay.domain import errors, ids
from fgcpay.domain.webhooks import DELIVERY_PREFIX, Delivery, DeliveryQuery
from fgcpay.storage import Database
from fgcpay.storage import webhooks as webhook_rows
from fgcpay.storage.paging import cursor_position


@attrs.frozen
class DeliveryLog:
    db: Database

    async def get(self, merchant_id: str, delivery_id: str) -> Delivery:
        """One of the merchant's deliveries; another merchant's id is as unknown as junk."""
        found = None
        if ids.looks_like_id(delivery_id, DELIVERY_PREFIX, 24):
            found = await self.db.read(webhook_rows.delivery_of, merchant_id, delivery_id)
        if found is None:
            raise errors.NotFound("No such webhook delivery.")
        return found

    async def page(self, merchant_id: str, query: DeliveryQuery) -> tuple[list[Delivery], bool]:
        """A page of the merchant's deliveries, newest first, and whether more follow."""
        after = await cursor_position(
            self.db,
            webhook_rows.delivery_of,
            merchant_id,
            query.page.starting_after,
            DELIVERY_PREFIX,
        )
        limit = query.page.limit
        rows = await self.db.read(
            webhook_rows.deliveries_page,
            merchant_id,
            query.endpoint_id,
            query.event_id,
            query.page.status,
            after,
            limit + 1,
        )
        return rows[:limit], len(rows) > limit
