"""The delivery log as merchants read it: the one place the API, the CLI and the dashboard
get deliveries and their attempts from."""

from __future__ import annotations

import attrs
from fgcpay.domain.deliveries import DELIVERY_PREFIX, Delivery, DeliveryQuery
from fgcpay.storage import Database
from fgcpay.storage import webhooks as webhook_rows
from fgcpay.storage.owned import OwnedRows

ROWS = OwnedRows(DELIVERY_PREFIX, "webhook delivery", webhook_rows.delivery_of)


@attrs.frozen
class DeliveryLog:
    db: Database

    async def get(self, merchant_id: str, delivery_id: str) -> Delivery:
        """One of the merchant's deliveries; another merchant's id is as unknown as junk."""
        return await ROWS.get(self.db, merchant_id, delivery_id)

    async def page(self, merchant_id: str, query: DeliveryQuery) -> tuple[list[Delivery], bool]:
        """A page of the merchant's deliveries, newest first, and whether more follow."""
        return await ROWS.page(
            self.db,
            merchant_id,
            query.page.starting_after,
            query.page.limit,
            lambda tx, after, n: webhook_rows.deliveries_page(
                tx, merchant_id, query.endpoint_id, query.event_id, query.page.status, after, n
            ),
        )
