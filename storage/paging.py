"""Keyset pagination, newest first, shared by every list: a `starting_after` cursor read
as its position, and the page of rows after that position."""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from typing import Protocol

from fgcpay.domain import ids, lists
from fgcpay.domain.errors import FieldError

from ._database import Database, Row, Tx


class Positioned(Protocol):
    @property
    def created_at(self) -> int: ...

    @property
    def id(self) -> str: ...


async def cursor_position(
    db: Database,
    lookup: Callable[[Tx, str, str], Positioned | None],
    merchant_id: str,
    starting_after: str | None,
    prefix: str,
) -> tuple[int, str] | None:
    """(created_at, id) of the merchant's item named by the cursor, read with
    `lookup(tx, merchant_id, item_id)`; 400 when it names none of the merchant's items
    (so a page can never be anchored on another merchant's data)."""
    if starting_after is None:
        return None
    anchor = None
    if ids.looks_like_id(starting_after, prefix, 24):
        anchor = await db.read(lookup, merchant_id, starting_after)
    if anchor is None:
        raise lists.query_error([FieldError("starting_after", lists.BAD_CURSOR)])
    return anchor.created_at, anchor.id


def newest_first(
    tx: Tx,
    select: str,
    merchant_id: str,
    conditions: Mapping[str, object | None],
    after: tuple[int, str] | None,
    limit: int,
) -> Sequence[Row]:
    """`select` rows of the merchant, each condition of `conditions` (`"status = ?"`: the
    value) holding, except those whose value is None (a filter not asked for), ordered
    `created_at` desc then `id` desc, strictly after the cursor position `after` =
    (created_at, id) of the previous page's last row.

    A row-value comparison, so both databases range-scan the (created_at, id) index, and
    rows created meanwhile (newer) never shift a later page.
    """
    where: list[str] = ["merchant_id = ?"]
    args: list[object] = [merchant_id]
    for condition, value in conditions.items():
        if value is not None:
            where.append(condition)
            args.append(value)
    if after is not None:
        where.append("(created_at, id) < (?, ?)")
        args += [after[0], after[1]]
    return tx.fetch(
        f"{select} WHERE {' AND '.join(where)} ORDER BY created_at DESC, id DESC LIMIT ?",
        *args,
        limit,
    )
