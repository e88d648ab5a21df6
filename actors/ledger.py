"""The ledger as merchants read it: its transactions and the balance's running totals
(reads only: every ledger row is written by the change that makes it)."""

from __future__ import annotations

import attrs
from fgcpay.domain import transactions
from fgcpay.domain.balances import Totals
from fgcpay.domain.transactions import Transaction
from fgcpay.storage import Database
from fgcpay.storage import balances as balance_rows
from fgcpay.storage import transactions as transaction_rows
from fgcpay.storage.owned import OwnedRows

ROWS = OwnedRows(transactions.TRANSACTION_PREFIX, "transaction", transaction_rows.of_merchant)


@attrs.define
class Ledger:
    db: Database

    async def get(self, merchant_id: str, transaction_id: str) -> Transaction:
        """The merchant's transaction; 404 for an unknown id or another merchant's."""
        return await ROWS.get(self.db, merchant_id, transaction_id)

    async def page(
        self, merchant_id: str, kind: str | None, starting_after: str | None, limit: int
    ) -> tuple[list[Transaction], bool]:
        """One page of the merchant's ledger (of one `kind` when given), newest first, and
        whether more follow."""
        return await ROWS.page(
            self.db,
            merchant_id,
            starting_after,
            limit,
            lambda tx, after, n: transaction_rows.page(tx, merchant_id, kind, after, n),
        )

    async def totals(self, merchant_id: str) -> Totals:
        """The merchant's running totals: a few rows, however long its ledger."""
        return await self.db.read(balance_rows.of_merchant, merchant_id)
