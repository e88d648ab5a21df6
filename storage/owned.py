"""A merchant's own rows of one resource, read the one way every resource reads them: one
by id (an unknown id, junk, or another merchant's is the same 404, never a 403) and a
page of them, newest first after a `starting_after` cursor."""

from __future__ import annotations

from collections.abc import Callable
from typing import Generic, TypeVar

import attrs
from fgcpay.domain import errors, ids

from ._database import Database, Tx
from .paging import Positioned, cursor_position

Item = TypeVar("Item", bound=Positioned)
# A page's rows after the cursor position (None: from the newest), at most `limit` of them.
PageRows = Callable[[Tx, tuple[int, str] | None, int], list[Item]]


@attrs.frozen
class OwnedRows(Generic[Item]):
    """How one resource's rows are found for their merchant: ids are `prefix` + 24 base62,
    `lookup(tx, merchant_id, id)` reads one, and a miss is `not_found("No such <what>.")`."""

    prefix: str
    what: str  # "checkout session", as the 404's message names it
    lookup: Callable[[Tx, str, str], Item | None]
    not_found: type[errors.NotFound] = errors.NotFound

    async def get(self, db: Database, merchant_id: str, item_id: str) -> Item:
        """The merchant's item `item_id`; 404 when it has none by that id."""
        found = None
        if ids.looks_like_id(item_id, self.prefix, 24):  # junk never reaches a query
            found = await db.read(self.lookup, merchant_id, item_id)
        if found is None:
            raise self.not_found(f"No such {self.what}.", {"id": item_id[:64]})
        return found

    async def page(
        self,
        db: Database,
        merchant_id: str,
        starting_after: str | None,
        limit: int,
        rows: PageRows[Item],
    ) -> tuple[list[Item], bool]:
        """One page of the merchant's items (`rows` reads them with the list's filters),
        newest first, and whether more follow. 400 when the cursor names none of its items."""
        after = await cursor_position(db, self.lookup, merchant_id, starting_after, self.prefix)
        found = await db.read(rows, after, limit + 1)
        return found[:limit], len(found) > limit
