"""Conditional writes: the status condition built from a state machine's table, and the
guarded update every transition of a resource is written with."""

from __future__ import annotations

from typing import Any

from fgcpay.domain.states import Transition

from ._database import Tx


def status_in(transition: Transition) -> str:
    """`status IN (...)` over the statuses `transition` leaves from.

    The names are written as literals, not parameters: they are the table's own
    lower-case words (checked when it is declared), and a literal lets a partial index
    on that status (`WHERE status = 'created'`) serve the query.
    """
    sources = sorted(transition.sources)
    if len(sources) == 1:
        return f"status = '{sources[0]}'"
    return "status IN (" + ", ".join(f"'{source}'" for source in sources) + ")"


def guarded_update(
    tx: Tx, table: str, assignments: str, values: tuple[Any, ...], row_id: str, guard: str,
    guard_values: tuple[Any, ...], *, give_way: bool,
) -> int:  # fmt: skip
    """`UPDATE table SET assignments WHERE id = row_id AND guard`: how many rows changed
    (0 when the row moved on meanwhile).

    `give_way` is for the timers' steps (an expiry, a renewal): on PostgreSQL a row
    another transaction holds then counts as moved on (`SKIP LOCKED`) instead of being
    waited for. That holder is another process's actor taking the same step (every
    process sweeps every due row), and waiting would happen inside a group commit whose
    transaction already holds the rows of the callers before this one: two processes'
    groups, stepping through the same rows in different orders, wait on each other, a
    deadlock PostgreSQL breaks only after `deadlock_timeout` (1 s) each time (2,560
    renewals: 3 s in one process, 40-60 s in two, approvals and cancels in the same groups
    timing out). The caller re-reads and the row stays due until that holder commits.
    A customer's or a merchant's step (pay, approve, cancel) waits for the lock: nothing
    it waits for waits on it, since the timers never wait. (SQLite has one writer.)
    """
    if give_way and tx.dialect == "postgresql":
        where = f"id = (SELECT id FROM {table} WHERE id = ? AND {guard} FOR UPDATE SKIP LOCKED)"
    else:
        where = f"id = ? AND {guard}"
    return tx.execute(
        f"UPDATE {table} SET {assignments} WHERE {where}", *values, row_id, *guard_values
    )
