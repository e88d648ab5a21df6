"""Turning a list's `starting_after` cursor into a position, the same way for every list."""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from typing import Protocol

from fgcpay.domain import ids, lists
from fgcpay.domain.errors import FieldError


class Positioned(Protocol):
    @property
    def created_at(self) -> int: ...

    @property
    def id(self) -> str: ...


async def cursor_position(
    starting_after: str | None,
    prefix: str,
    lookup: Callable[[str], Awaitable[Positioned | None]],
) -> tuple[int, str] | None:
    """(created_at, id) of the item named by the cursor; 400 when it names none of the
    caller's items (so a page can never be anchored on another merchant's data)."""
    if starting_after is None:
        return None
    anchor = None
    if ids.looks_like_id(starting_after, prefix, 24):
        anchor = await lookup(starting_after)
    if anchor is None:
        raise lists.query_error([FieldError("starting_after", lists.BAD_CURSOR)])
    return anchor.created_at, anchor.id
