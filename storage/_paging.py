"""Keyset pagination, newest first, shared by every list."""

from __future__ import annotations

from collections.abc import Sequence

from ._database import Row, Tx


def newest_first(
    tx: Tx,
    select: str,
    where: list[str],
    args: list[object],
    after: tuple[int, str] | None,
    limit: int,
) -> Sequence[Row]:
    """`select` rows matching `where`, ordered `created_at` desc then `id` desc, strictly
    after the cursor position `after` = (created_at, id) of the previous page's last row.

    A row-value comparison, so both databases range-scan the (created_at, id) index, and
    rows created meanwhile (newer) never shift a later page.
    """
    if after is not None:
        where = [*where, "(created_at, id) < (?, ?)"]
        args = [*args, after[0], after[1]]
    return tx.fetch(
        f"{select} WHERE {' AND '.join(where)} ORDER BY created_at DESC, id DESC LIMIT ?",
        *args,
        limit,
    )
