"""SQL for the events a trigger caused (`fgcpay.testing.triggers`)."""

from __future__ import annotations

from collections.abc import Sequence

from fgcpay.domain.events import Event

from ._database import Tx
from .event_stream import event_from_row

_COLUMNS = "id, merchant_id, type, resource_id, sequence, body, created_at"


def events_after(tx: Tx, merchant_id: str, marks: Sequence[tuple[str, int]]) -> list[Event]:
    """The merchant's events of each resource in `marks` with a sequence above the one
    given with it (its version before the trigger; 0 for a resource the trigger made),
    oldest first."""
    if not marks:
        return []
    ours = " OR ".join("(resource_id = ? AND sequence > ?)" for _ in marks)
    values = [value for mark in marks for value in mark]
    rows = tx.fetch(
        f"SELECT {_COLUMNS} FROM events WHERE merchant_id = ? AND ({ours})"
        " ORDER BY created_at, sequence, id",
        merchant_id,
        *values,
    )
    return [event_from_row(row) for row in rows]
