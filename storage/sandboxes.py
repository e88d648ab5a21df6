"""SQL for sandboxes: create (the sandbox, its merchant row and key, counted against the
parent's bound in one transaction), reads, the parent's list, and deletion that leaves
nothing of the sandbox's merchant.

Deletion, in the order a crash anywhere leaves a state a retry finishes:
1. `begin_delete`: the sandbox is marked deleted and, in the same transaction, its keys
   (and their rate-limit buckets) are deleted, so every process refuses them from the
   commit on (keys are read from the database per request), and its subscriptions' due
   times are cleared, so no sweep renews them meanwhile.
2. `delete_batch` for each of `STEPS`, in order (children before the rows they name), a
   batch at a time, each its own transaction: PostgreSQL locks a batch of this merchant's
   rows for one short transaction, never another merchant's.
3. `finish`: when no row of the merchant is left in any table, its merchant row and the
   sandbox row go (else False: something was written meanwhile; run the steps again).
A sandbox marked deleted but not finished stays `deleting` (`due`) for the durable timer.
"""

from __future__ import annotations

from collections.abc import Sequence

import attrs
from fgcpay.domain.idempotency import Completion
from fgcpay.domain.merchants import ApiKey, Merchant
from fgcpay.domain.sandboxes import Sandbox, expired

from . import idempotency, merchants
from ._database import LockKey, Row, Tx, locks

COLUMNS = "id, parent_id, merchant_id, name, created_at, expires_at"


def from_row(row: Row) -> Sandbox:
    return Sandbox(
        id=row["id"],
        parent_id=row["parent_id"],
        merchant_id=row["merchant_id"],
        name=row["name"],
        created_at=row["created_at"],
        expires_at=row["expires_at"],
    )


def is_sandbox(tx: Tx, merchant_id: str) -> bool:
    """Whether the merchant is a sandbox's own (whose key may not make sandboxes)."""
    return tx.fetchval("SELECT sandbox_of FROM merchants WHERE id = ?", merchant_id) is not None


# Live: not deleted and not past its `expires_at` (the timer deletes one that is within a
# minute; meanwhile it is neither shown nor counted). Parameter: now.
_LIVE = "deleted_at IS NULL AND (expires_at IS NULL OR expires_at > ?)"


def live_count(tx: Tx, parent_id: str, now_us: int) -> int:
    return int(
        tx.fetchval(
            f"SELECT COUNT(*) FROM sandboxes WHERE parent_id = ? AND {_LIVE}", parent_id, now_us
        )
    )


def _create_keys(sandbox: Sandbox, completion: Completion | None) -> list[LockKey]:
    return [("sandboxes", sandbox.parent_id), *idempotency.completion_keys(completion)]


NOT_ALLOWED = "not_allowed"
LIMIT_REACHED = "limit_reached"


@locks(_create_keys)
def insert_within(
    tx: Tx,
    sandbox: Sandbox,
    merchant: Merchant,
    key: ApiKey,
    completion: Completion | None,
    most: int,
) -> str | None:
    """Insert the sandbox, its merchant row and its key, and the request's idempotent
    answer, in one transaction; None when done, else why not (`NOT_ALLOWED`: the parent is
    a sandbox's merchant; `LIMIT_REACHED`: it has `most` live sandboxes), nothing written.

    Creates racing for the parent's last places must not both count one free: on
    PostgreSQL the writer takes the parent's key (declared with `locks`) before the group
    runs, so the second waits and then counts (as `merchants.insert_api_key_within`);
    SQLite has one writer."""
    if is_sandbox(tx, sandbox.parent_id):
        return NOT_ALLOWED
    if live_count(tx, sandbox.parent_id, sandbox.created_at) >= most:
        return LIMIT_REACHED
    tx.execute(
        "INSERT INTO merchants (id, name, email, password_hash, created_at, sandbox_of)"
        " VALUES (?, ?, ?, NULL, ?, ?)",
        merchant.id,
        merchant.name,
        merchant.email,
        merchant.created_at,
        sandbox.parent_id,
    )
    merchants.insert_api_key(tx, key)
    s = sandbox
    tx.execute(
        f"INSERT INTO sandboxes ({COLUMNS}, deleted_at) VALUES (?, ?, ?, ?, ?, ?, NULL)",
        s.id, s.parent_id, s.merchant_id, s.name, s.created_at, s.expires_at,
    )  # fmt: skip
    if completion is not None:
        idempotency.complete(tx, completion)
    return None


def of_parent(tx: Tx, parent_id: str, sandbox_id: str) -> Sandbox | None:
    """The parent's sandbox `sandbox_id` not deleted, expired or not (None: unknown,
    another's, or deleted): a list's cursor may name one that expired since."""
    row = tx.fetchrow(
        f"SELECT {COLUMNS} FROM sandboxes WHERE id = ? AND parent_id = ? AND deleted_at IS NULL",
        sandbox_id,
        parent_id,
    )
    return None if row is None else from_row(row)


def page(
    tx: Tx, parent_id: str, after: tuple[int, str] | None, limit: int, now_us: int
) -> list[Sandbox]:
    """The parent's live sandboxes newest first, after the cursor position `after`."""
    where = f"parent_id = ? AND {_LIVE}"
    args: list[object] = [parent_id, now_us]
    if after is not None:
        where += " AND (created_at, id) < (?, ?)"
        args += [after[0], after[1]]
    rows = tx.fetch(
        f"SELECT {COLUMNS} FROM sandboxes WHERE {where} ORDER BY created_at DESC, id DESC LIMIT ?",
        *args,
        limit,
    )
    return [from_row(row) for row in rows]


def begin_delete(
    tx: Tx, sandbox_id: str, parent_id: str, now_us: int, by_parent: bool
) -> Sandbox | None:
    """Mark the parent's sandbox deleted, delete its keys and their rate-limit buckets,
    and clear its subscriptions' due times; the sandbox, or None when the parent has no
    such sandbox not yet deleted (nothing written). `by_parent` (its DELETE): only a live
    one, as one past `expires_at` is the timer's."""
    row = tx.fetchrow(
        f"SELECT {COLUMNS} FROM sandboxes WHERE id = ? AND parent_id = ?", sandbox_id, parent_id
    )
    if row is None:
        return None
    sandbox = from_row(row)
    if by_parent and expired(sandbox, now_us):
        return None
    marked = tx.execute(
        "UPDATE sandboxes SET deleted_at = ? WHERE id = ? AND parent_id = ? AND deleted_at IS NULL",
        now_us,
        sandbox_id,
        parent_id,
    )
    if not marked:
        return None
    _drop_keys(tx, sandbox.merchant_id)
    tx.execute(
        "UPDATE subscriptions SET next_action_at = NULL"
        " WHERE merchant_id = ? AND next_action_at IS NOT NULL",
        sandbox.merchant_id,
    )
    return sandbox


def _drop_keys(tx: Tx, merchant_id: str) -> None:
    # Each key's bucket by its own bucket key (the limiter's "key:" + the key's id): the
    # buckets are keyed by what they count, not by merchant, so on a distributed
    # database each such statement routes by itself (docs/scaling.md). A sandbox has one.
    for row in tx.fetch("SELECT id FROM api_keys WHERE merchant_id = ?", merchant_id):
        tx.execute("DELETE FROM rate_limit_buckets WHERE bucket_key = ?", "key:" + row["id"])
    tx.execute("DELETE FROM api_keys WHERE merchant_id = ?", merchant_id)


@attrs.frozen
class Step:
    """One table's rows of a merchant: `table` rows whose `key` (a column list; one
    column where there are `children`) is among those `select` finds (`select` takes the
    merchant id, `?`, and ends before LIMIT)."""

    table: str
    key: str
    select: str
    column: str  # the column holding the merchant id
    # Rows of child tables that name these rows and carry no merchant id themselves,
    # deleted first in the same transaction: (table, its column naming our key).
    children: tuple[tuple[str, str], ...] = ()


def _own(table: str, key: str = "id", column: str = "merchant_id", more: str = "") -> Step:
    return Step(table, key, f"SELECT {key} FROM {table} WHERE {column} = ?{more}", column)


# Children before the rows they name (the foreign keys of storage/migrations): deliveries
# (with their attempts) before events and endpoints; refund entries of the ledger before
# refunds before the payments and charges refunded; charges before subscriptions before
# test clocks; payments before checkout sessions.
STEPS: tuple[Step, ...] = (
    Step(
        "deliveries",
        "id",
        "SELECT id FROM deliveries WHERE merchant_id = ?",
        "merchant_id",
        children=(("delivery_attempts", "delivery_id"),),
    ),
    _own("events"),
    _own("event_streams"),
    _own("webhook_endpoints"),
    _own("transactions", more=" AND refund_id IS NOT NULL"),
    _own("refunds"),
    _own("transactions"),
    _own("subscriptions"),
    _own("test_clocks"),
    _own("checkout_sessions"),
    _own("balance_shards", "merchant_id, shard"),
    _own("idempotency_keys", "merchant_id, method, path, idempotency_key"),
    _own("pin_failures", "scope, customer_code", column="scope"),
    _own("dashboard_sessions", "id_hash"),
    _own("api_keys"),
)


def delete_batch(tx: Tx, merchant_id: str, step: Step, most: int) -> int:
    """Delete at most `most` of the merchant's rows of `step` (and their children); how
    many. Where children are deleted first, on PostgreSQL the rows are locked before
    (FOR UPDATE), so a writer settling one of them now (a delivery's attempt) either
    committed first, its new child deleted with them, or finds the row gone afterwards."""
    if not step.children:
        # The outer statement names the merchant too: on a distributed database each
        # statement must route to its shard by itself (docs/scaling.md).
        return tx.execute(
            f"DELETE FROM {step.table} WHERE ({step.key}) IN ({step.select} LIMIT ?)"
            f" AND {step.column} = ?",
            merchant_id,
            most,
            merchant_id,
        )
    lock = " FOR UPDATE" if tx.dialect == "postgresql" else ""
    rows = tx.fetch(f"{step.select} LIMIT ?{lock}", merchant_id, most)
    keys = [row[step.key] for row in rows]
    for child, column in step.children:
        _delete_in(tx, child, column, keys)
    return _delete_in(tx, step.table, step.key, keys, (step.column, merchant_id))


def _delete_in(
    tx: Tx,
    table: str,
    column: str,
    values: Sequence[object],
    owner: tuple[str, str] | None = None,
) -> int:
    """Delete the rows of `table` whose `column` is among `values`, and whose `owner`
    column holds the merchant, when the table has one (a child table has none)."""
    where = "" if owner is None else f" AND {owner[0]} = ?"
    deleted = 0
    for start in range(0, len(values), 500):  # well within SQLite's bound on parameters
        chunk = values[start : start + 500]
        marks = ", ".join("?" * len(chunk))
        args = [*chunk] if owner is None else [*chunk, owner[1]]
        deleted += tx.execute(f"DELETE FROM {table} WHERE {column} IN ({marks}){where}", *args)
    return deleted


def left(tx: Tx, merchant_id: str) -> list[str]:
    """The tables still holding a row of the merchant (by `STEPS`), none when all gone."""
    found = []
    for step in STEPS:
        if tx.fetchrow(f"{step.select} LIMIT 1", merchant_id) is not None:
            found.append(step.table)
    return found


def finish(tx: Tx, sandbox_id: str, parent_id: str, merchant_id: str) -> bool:
    """Delete the sandbox's merchant row and its sandbox row once nothing else of the
    merchant is left; False (nothing written) while something is."""
    if left(tx, merchant_id):
        return False
    _drop_keys(tx, merchant_id)  # made meanwhile by no one, but the merchant row needs none
    tx.execute("DELETE FROM merchants WHERE id = ? AND sandbox_of IS NOT NULL", merchant_id)
    tx.execute(
        "DELETE FROM sandboxes WHERE id = ? AND parent_id = ? AND deleted_at IS NOT NULL",
        sandbox_id,
        parent_id,
    )
    return True


@attrs.frozen
class Due:
    """A sandbox the timer should delete (or finish deleting)."""

    id: str
    parent_id: str
    merchant_id: str


def due(tx: Tx, now_us: int, deleting_before_us: int, limit: int) -> list[Due]:
    """Live sandboxes past `expires_at`, and sandboxes marked deleted before
    `deleting_before_us` and not finished, earliest first, at most `limit` of each."""
    expired = tx.fetch(
        "SELECT id, parent_id, merchant_id FROM sandboxes"
        " WHERE deleted_at IS NULL AND expires_at IS NOT NULL AND expires_at <= ?"
        " ORDER BY expires_at LIMIT ?",
        now_us,
        limit,
    )
    unfinished = tx.fetch(
        "SELECT id, parent_id, merchant_id FROM sandboxes"
        " WHERE deleted_at IS NOT NULL AND deleted_at < ?"
        " ORDER BY deleted_at LIMIT ?",
        deleting_before_us,
        limit,
    )
    return [Due(row["id"], row["parent_id"], row["merchant_id"]) for row in [*expired, *unfinished]]


def next_due(tx: Tx) -> tuple[int | None, int | None]:
    """The nearest `expires_at` of a live sandbox, and the earliest `deleted_at` of one not
    finished (None for none of either)."""
    expires = tx.fetchval(
        "SELECT MIN(expires_at) FROM sandboxes WHERE deleted_at IS NULL AND expires_at IS NOT NULL"
    )
    deleting = tx.fetchval("SELECT MIN(deleted_at) FROM sandboxes WHERE deleted_at IS NOT NULL")
    return (
        None if expires is None else int(expires),
        None if deleting is None else int(deleting),
    )


def merchant_of(tx: Tx, sandbox_id: str) -> str | None:
    """The merchant id of a sandbox, live or being deleted."""
    found = tx.fetchval("SELECT merchant_id FROM sandboxes WHERE id = ?", sandbox_id)
    return None if found is None else str(found)


def owned(tx: Tx, table: str, merchant_id: str, item_ids: Sequence[str]) -> list[str]:
    """Those of `item_ids` that are the merchant's rows of `table` (by id)."""
    found: list[str] = []
    for start in range(0, len(item_ids), 500):
        chunk = item_ids[start : start + 500]
        marks = ", ".join("?" * len(chunk))
        rows = tx.fetch(
            f"SELECT id FROM {table} WHERE merchant_id = ? AND id IN ({marks})",
            merchant_id,
            *chunk,
        )
        found += [row["id"] for row in rows]
    return found
