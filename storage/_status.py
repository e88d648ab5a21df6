"""Conditional writes: the status condition built from a state machine's table, and the
guarded update every transition of a resource is written with (one row, or many in one
statement)."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from fgcpay.domain.states import Transition

from ._bulk import Column, arrays, unnest
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
    guard_values: tuple[Any, ...], *, give_way: bool, key: str = "id",
    merchant_id: str | None = None,
) -> int:  # fmt: skip
    """`UPDATE table SET assignments WHERE id = row_id AND guard`: how many rows changed
    (0 when the row moved on meanwhile). `key` names the table's key column, if not `id`.
    `merchant_id`, where the caller has it: the row's merchant, named in the statement so
    that it routes to one shard with the tables distributed by merchant (docs/scaling.md).

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
    it waits for waits on it, since the timers never wait. So do the writes that only
    record a use (an API key's, a dashboard session's), which every process makes for the
    same rows once a minute: one another transaction holds is already being recorded.
    (SQLite has one writer.)
    """
    owner, owners = ("", ()) if merchant_id is None else (" AND merchant_id = ?", (merchant_id,))
    if give_way and tx.dialect == "postgresql":
        where = (
            f"{key} = (SELECT {key} FROM {table} WHERE {key} = ?{owner} AND {guard}"
            f" FOR UPDATE SKIP LOCKED){owner}"
        )
        keys = (row_id, *owners, *guard_values, *owners)
    else:
        where = f"{key} = ?{owner} AND {guard}"
        keys = (row_id, *owners, *guard_values)
    return tx.execute(f"UPDATE {table} SET {assignments} WHERE {where}", *values, *keys)


def update_versioned(
    tx: Tx,
    table: str,
    columns: Sequence[Column],
    rows: Sequence[tuple[str, str, int, Sequence[Any]]],
    guard: str,
    *,
    give_way: bool,
) -> set[str]:
    """Many `guarded_update`s of versioned rows in one statement. Each row is `(id,
    merchant_id, version, values)`: where the row `id` of that merchant still has that
    `version` and `guard` holds, set `columns` to `values` and the version to the next;
    the ids changed. `give_way` as for `guarded_update`: on PostgreSQL a row another
    transaction holds is left as it is. The ids must be distinct (one change per row per
    statement)."""
    if not rows:
        return set()
    if tx.dialect != "postgresql" or len(rows) == 1:
        # SQLite, in process, loses nothing to a statement per row; nor does one row.
        assignments = ", ".join(["version = version + 1", *(f"{name} = ?" for name, _ in columns)])
        return {
            row_id
            for row_id, merchant_id, version, values in rows
            if guarded_update(tx, table, assignments, tuple(values), row_id,
                              f"{guard} AND version = ?", (version,), give_way=give_way,
                              merchant_id=merchant_id)
        }  # fmt: skip
    if give_way:
        # The rows no other transaction holds, locked first, in a statement of their own:
        # as a subquery or a CTE joined to the arrays, the planner compared every row with
        # every other (measured: 90,000 comparisons for a batch of 300).
        held = tx.fetch(
            f"SELECT id FROM {table} WHERE id = ANY(?::text[]) AND {guard} FOR UPDATE SKIP LOCKED",
            [row_id for row_id, _, _, _ in rows],
        )
        free = {row["id"] for row in held}
        rows = [row for row in rows if row[0] in free]
        if not rows:
            return set()
    given = [("id", "text"), ("merchant_id", "text"), ("version", "bigint"), *columns]
    flat = [(row_id, merchant, version, *values) for row_id, merchant, version, values in rows]
    # The arrays' columns are named apart from the table's, so the guard's bare column
    # names (`status = 'active'`) can only mean the table's.
    aliases = [
        "given_id", "given_merchant", "given_version", *(f"given_{i}" for i in range(len(columns)))
    ]  # fmt: skip
    assignments = ", ".join(
        [f"version = {table}.version + 1"]
        + [f"{name} = {alias}" for (name, _), alias in zip(columns, aliases[3:], strict=True)]
    )
    changed = tx.fetch(
        f"UPDATE {table} SET {assignments} FROM {unnest(given)} AS given({', '.join(aliases)})"
        f" WHERE {table}.id = given_id AND {table}.merchant_id = given_merchant"
        f" AND {table}.version = given_version AND {guard} RETURNING {table}.id",
        *arrays(given, flat),
    )
    return {row["id"] for row in changed}
