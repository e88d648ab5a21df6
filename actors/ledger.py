"""The ledger as merchants read it: its transactions and the balance's running totals
(reads only: every ledger row is written by the change that makes it)."""

from __future__ import annotations

import attrs
from fgcpay.domain import transactions, volume
from fgcpay.domain.balances import Totals
from fgcpay.domain.transactions import Transaction
from fgcpay.domain.volume import DayVolume
from fgcpay.storage import Database
from fgcpay.storage import balances as balance_rows
from fgcpay.storage import transactions as transaction_rows
from fgcpay.storage.owned import OwnedRows

ROWS = OwnedRows(transactions.TRANSACTION_PREFIX, "transaction", transaction_rows.shown_of_merchant)


@attrs.define
class Ledger:
    db: Database

    async def get(self, merchant_id: str, transaction_id: str) -> Transaction:
        """The merchant's transaction; 404 for an unknown id or another merchant's."""
        return await ROWS.get(self.db, merchant_id, transaction_id)

    async def page(
        self,
        merchant_id: str,
        kind: str | None,
        starting_after: str | None,
        limit: int,
        checkout_session_id: str | None = None,
        subscription_id: str | None = None,
    ) -> tuple[list[Transaction], bool]:
        """One page of the merchant's ledger (of one `kind`, of one checkout session or
        subscription, when given), newest first, and whether more follow."""
        return await ROWS.page(
            self.db,
            merchant_id,
            starting_after,
            limit,
            lambda tx, after, n: transaction_rows.page(
                tx, merchant_id, kind, after, n, checkout_session_id, subscription_id
            ),
        )

    async def totals(self, merchant_id: str) -> Totals:
        """The merchant's running totals: a few rows, however long its ledger."""
        return await self.db.read(balance_rows.of_merchant, merchant_id)

    async def daily_volume(self, merchant_id: str, now_us: int) -> list[DayVolume]:
        """The merchant's paid volume and refunds per UTC day of the chart's window (30
        days up to today), oldest first: one bounded read of the ledger's index."""
        since, until = volume.window(now_us)
        sums = await self.db.read(transaction_rows.daily_volume, merchant_id, since, until)
        return volume.every_day(now_us, sums)
