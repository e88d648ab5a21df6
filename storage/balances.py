"""SQL for the balance's running totals (`balance_shards`): adding to them in the
transaction that changes the ledger or a refund, reading them, and recomputing them from
the ledger and the refunds (`fgcpay ledger verify`).

A merchant's totals are split over `SHARDS` rows, and a process adds only to its own
(`shard()`): one row per merchant that every ledger write updated would make two
processes' writers wait on each other for every renewal of a burst, each holding the row
until its group commits. The balance sums at most `SHARDS` rows of the primary key.
"""

from __future__ import annotations

import os
from collections.abc import Mapping, Sequence

import attrs
from fgcpay.domain import balances
from fgcpay.domain.balances import Totals
from fgcpay.domain.refunds import PENDING_REVIEW, REJECTED
from fgcpay.domain.transactions import REFUND, Transaction

from ._database import Row, Tx

SHARDS = 64
_TOTALS = ("paid_minor", "refunded_minor", "pending_minor", "transaction_count")
_ADD = ", ".join(f"{name} = b.{name} + excluded.{name}" for name in _TOTALS)


def shard() -> int:
    """This process's shard: fixed for its life, so that its writes never wait on another
    process's (worker processes' ids are mostly consecutive, so they differ here too; two
    that share one are still correct, and only wait on each other)."""
    return os.getpid() % SHARDS


def add(tx: Tx, changes: Mapping[str, Totals]) -> None:
    """Add each merchant's change to its totals (in this process's shard)."""
    # Merchants in id order: two transactions adding to the same rows lock them in one order.
    for merchant_id in sorted(changes):
        change = changes[merchant_id]
        if change.is_zero:
            continue
        tx.execute(
            f"INSERT INTO balance_shards AS b (merchant_id, shard, {', '.join(_TOTALS)})"
            f" VALUES (?, ?, ?, ?, ?, ?) ON CONFLICT (merchant_id, shard) DO UPDATE SET {_ADD}",
            merchant_id,
            shard(),
            *(getattr(change, name) for name in _TOTALS),
        )


def record_ledger(tx: Tx, rows: Sequence[Transaction]) -> None:
    """What ledger rows add to their merchants' totals, in one statement per merchant:
    `transactions.insert_all` calls it for every ledger write (a batch of rows once)."""
    add(tx, balances.of_ledger(rows))


def _totals(row: Row, prefix: str = "") -> Totals:
    return Totals(*(int(row[prefix + name] or 0) for name in _TOTALS))


def of_merchant(tx: Tx, merchant_id: str) -> Totals:
    """The merchant's running totals: the sum of its shards."""
    sums = ", ".join(f"SUM({name}) AS {name}" for name in _TOTALS)
    row = tx.fetchrow(f"SELECT {sums} FROM balance_shards WHERE merchant_id = ?", merchant_id)
    return Totals() if row is None else _totals(row)


# -- verification ---------------------------------------------------------------------------


@attrs.frozen
class Recount:
    """A merchant's running totals beside the same totals recomputed from its ledger rows
    and its refunds pending review."""

    merchant_id: str
    running: Totals
    recomputed: Totals


@attrs.frozen
class Reservation:
    """A payment or charge whose reserved amount disagrees with its refunds not rejected."""

    merchant_id: str
    transaction_id: str
    reserved_minor: int
    refunds_minor: int


def recount(tx: Tx, merchant_id: str | None) -> list[Recount]:
    """Every merchant's (or one's) totals, running and recomputed, by merchant id. One
    statement, so on PostgreSQL both sides are read in one snapshot even while the ledger
    grows."""
    # The first part names the columns: l_ for the recomputed side, r_ for the running one.
    ledger = (
        f"SELECT merchant_id, CASE WHEN kind = '{REFUND}' THEN 0 ELSE amount_minor END AS"
        f" l_paid_minor, CASE WHEN kind = '{REFUND}' THEN -amount_minor ELSE 0 END AS"
        " l_refunded_minor, 0 AS l_pending_minor, 1 AS l_transaction_count,"
        " 0 AS r_paid_minor, 0 AS r_refunded_minor, 0 AS r_pending_minor,"
        " 0 AS r_transaction_count FROM transactions"
    )
    pending = (
        "SELECT merchant_id, 0, 0, amount_minor, 0, 0, 0, 0, 0 FROM refunds"
        f" WHERE status = '{PENDING_REVIEW}'"
    )
    running = f"SELECT merchant_id, 0, 0, 0, 0, {', '.join(_TOTALS)} FROM balance_shards"
    merchants = "SELECT id, 0, 0, 0, 0, 0, 0, 0, 0 FROM merchants"
    sums = ", ".join(
        f"SUM({side}_{name}) AS {side}_{name}" for side in ("l", "r") for name in _TOTALS
    )
    where, args = ("WHERE merchant_id = ?", [merchant_id]) if merchant_id else ("", [])
    rows = tx.fetch(
        f"SELECT merchant_id, {sums} FROM ("
        f"{ledger} UNION ALL {pending} UNION ALL {running} UNION ALL {merchants}"
        f") AS parts {where} GROUP BY merchant_id ORDER BY merchant_id",
        *args,
    )
    return [Recount(row["merchant_id"], _totals(row, "r_"), _totals(row, "l_")) for row in rows]


def reservations_off(tx: Tx, merchant_id: str | None) -> list[Reservation]:
    """The payments and charges whose `refund_reserved_minor` is not the sum of their
    refunds not rejected (none, when all is well)."""
    where, args = ("AND t.merchant_id = ?", [merchant_id]) if merchant_id else ("", [])
    rows = tx.fetch(
        "SELECT t.merchant_id, t.id, t.refund_reserved_minor,"
        " COALESCE(SUM(r.amount_minor), 0) AS refunds_minor"
        " FROM transactions t LEFT JOIN refunds r"
        f" ON r.transaction_id = t.id AND r.status <> '{REJECTED}'"
        f" WHERE t.kind <> '{REFUND}' {where}"
        " GROUP BY t.merchant_id, t.id, t.refund_reserved_minor"
        " HAVING t.refund_reserved_minor <> COALESCE(SUM(r.amount_minor), 0)"
        " ORDER BY t.merchant_id, t.id",
        *args,
    )
    return [
        Reservation(
            row["merchant_id"],
            row["id"],
            int(row["refund_reserved_minor"]),
            int(row["refunds_minor"]),
        )
        for row in rows
    ]
