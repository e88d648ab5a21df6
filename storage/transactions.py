"""SQL for the test transaction ledger: every ledger write (with the balance's running
totals in the same transaction), the reads and lists, and the refund reservation on a
payment that keeps refunds from ever passing what was paid."""

from __future__ import annotations

from collections.abc import Sequence

import attrs
from fgcpay.domain import balances as totals
from fgcpay.domain.balances import Totals
from fgcpay.domain.periods import DAY_US
from fgcpay.domain.refunds import PENDING_REVIEW
from fgcpay.domain.transactions import REFUND, Transaction

from . import balances
from ._bulk import Column, insert_rows
from ._database import Row, Tx
from .paging import newest_first

# What an insert writes, with each column's type; a new row holds no refund yet
# (`refund_reserved_minor` keeps its default).
_INSERTED: list[Column] = [
    ("id", "text"), ("merchant_id", "text"), ("kind", "text"), ("checkout_session_id", "text"),
    ("customer_code", "text"), ("amount_minor", "bigint"), ("currency", "text"),
    ("mode", "text"), ("created_at", "bigint"), ("subscription_id", "text"),
    ("period", "bigint"), ("refund_id", "text"),
]  # fmt: skip
COLUMNS = ", ".join(name for name, _ in _INSERTED) + ", refund_reserved_minor"


def from_row(row: Row) -> Transaction:
    return Transaction(
        id=row["id"],
        merchant_id=row["merchant_id"],
        kind=row["kind"],
        checkout_session_id=row["checkout_session_id"],
        customer_code=row["customer_code"],
        amount_minor=row["amount_minor"],
        currency=row["currency"],
        mode=row["mode"],
        created_at=row["created_at"],
        subscription_id=row["subscription_id"],
        period=row["period"],
        refund_id=row["refund_id"],
        refund_reserved_minor=row["refund_reserved_minor"],
    )


def insert(tx: Tx, t: Transaction) -> None:
    """Insert one ledger row (see `insert_all`)."""
    insert_all(tx, [t])


def insert_all(tx: Tx, rows: Sequence[Transaction]) -> None:
    """Insert ledger rows and add them to the balance's running totals, in the caller's
    transaction: every ledger write comes through here, so the totals agree with the
    ledger at every commit. A second payment of a checkout session, a second charge of a
    subscription's period or a second entry of a refund violates a unique key and raises:
    never two. Several rows go in one statement (a batched write's charges)."""
    insert_rows(
        tx,
        "transactions",
        _INSERTED,
        [(t.id, t.merchant_id, t.kind, t.checkout_session_id, t.customer_code, t.amount_minor,
          t.currency, t.mode, t.created_at, t.subscription_id, t.period, t.refund_id)
         for t in rows],
    )  # fmt: skip
    balances.record_ledger(tx, rows)


def delete_charges_on_clock(tx: Tx, merchant_id: str, clock_id: str) -> None:
    """Delete the charges of the merchant's test clock's subscriptions with the refunds of
    those charges and their entries, taking all of it off the balance's totals (a deleted
    clock takes what lives on it along)."""
    # Every table named with the merchant: each statement keeps to one merchant's rows
    # (one shard with the tables distributed by merchant: docs/scaling.md). Arguments of
    # `charges`: the merchant, the clock, the merchant; of `refunds`: the merchant, then
    # those of `charges`.
    charges = (
        "SELECT id FROM transactions WHERE merchant_id = ? AND subscription_id IN"
        " (SELECT id FROM subscriptions WHERE test_clock_id = ? AND merchant_id = ?)"
    )
    refunds = f"SELECT id FROM refunds WHERE merchant_id = ? AND transaction_id IN ({charges})"
    on_clock = (merchant_id, clock_id, merchant_id)
    of_refunds = (merchant_id, *on_clock)
    if tx.dialect == "postgresql":
        # Another process may be renewing these subscriptions, refunding their charges or
        # reviewing those refunds, each in its own transaction. Lock all of it first, in
        # the order those writes take their rows (subscription, charge, refund), so that
        # what is read below is what is deleted: a write in flight is waited for and then
        # seen; one that comes later waits, then finds its row gone and writes nothing.
        # (SQLite has one writer.)
        tx.fetch(
            "SELECT id FROM subscriptions WHERE test_clock_id = ? AND merchant_id = ?"
            " ORDER BY id FOR UPDATE",
            clock_id,
            merchant_id,
        )
        tx.fetch(
            f"SELECT id FROM transactions WHERE merchant_id = ? AND id IN ({charges})"
            " ORDER BY id FOR UPDATE",
            merchant_id,
            *on_clock,
        )
        tx.fetch(
            f"SELECT id FROM refunds WHERE merchant_id = ? AND id IN ({refunds})"
            " ORDER BY id FOR UPDATE",
            merchant_id,
            *of_refunds,
        )
    removed = [
        from_row(row)
        for row in tx.fetch(
            f"SELECT {COLUMNS} FROM transactions WHERE merchant_id = ?"
            f" AND (id IN ({charges}) OR refund_id IN ({refunds}))",
            merchant_id,
            *on_clock,
            *of_refunds,
        )
    ]
    pending = tx.fetch(
        "SELECT merchant_id, SUM(amount_minor) AS held FROM refunds"
        f" WHERE merchant_id = ? AND status = '{PENDING_REVIEW}' AND transaction_id IN ({charges})"
        " GROUP BY merchant_id",
        merchant_id,
        *on_clock,
    )
    changes = {merchant: t.negated() for merchant, t in totals.of_ledger(removed).items()}
    for row in pending:
        merchant, held = row["merchant_id"], Totals(pending_minor=-int(row["held"]))
        changes[merchant] = changes.get(merchant, Totals()) + held
    balances.add(tx, changes)
    tx.execute(
        f"DELETE FROM transactions WHERE merchant_id = ? AND refund_id IN ({refunds})",
        merchant_id,
        *of_refunds,
    )
    tx.execute(
        f"DELETE FROM refunds WHERE merchant_id = ? AND transaction_id IN ({charges})",
        merchant_id,
        *on_clock,
    )
    tx.execute(
        f"DELETE FROM transactions WHERE merchant_id = ? AND id IN ({charges})",
        merchant_id,
        *on_clock,
    )


def by_id(tx: Tx, transaction_id: str) -> Transaction | None:
    row = tx.fetchrow(f"SELECT {COLUMNS} FROM transactions WHERE id = ?", transaction_id)
    return None if row is None else from_row(row)


def of_merchant(tx: Tx, merchant_id: str, transaction_id: str) -> Transaction | None:
    row = tx.fetchrow(
        f"SELECT {COLUMNS} FROM transactions WHERE id = ? AND merchant_id = ?",
        transaction_id,
        merchant_id,
    )
    return None if row is None else from_row(row)


def _of(column: str) -> str:
    """The condition "of the checkout session or subscription `column` names": its payment
    or charges, and the entries of their approved refunds. Arguments: the id and the
    merchant, twice. The rows are found through the unique indexes on
    `checkout_session_id` and `(subscription_id, period)`, `refunds_of_transaction` and
    `transactions_one_per_refund` only, so a page costs what that session or subscription
    holds, never a walk of the merchant's whole ledger (which the planners chose when this
    was a filter beside `merchant_id = ?`)."""
    return (
        f"id IN (SELECT id FROM transactions WHERE {column} = ? AND merchant_id = ?"
        " UNION ALL SELECT e.id FROM transactions p"
        " JOIN refunds r ON r.transaction_id = p.id AND r.merchant_id = p.merchant_id"
        " JOIN transactions e ON e.refund_id = r.id AND e.merchant_id = r.merchant_id"
        f" WHERE p.{column} = ? AND p.merchant_id = ?)"
    )


def page(
    tx: Tx,
    merchant_id: str,
    kind: str | None,
    after: tuple[int, str] | None,
    limit: int,
    checkout_session_id: str | None = None,
    subscription_id: str | None = None,
) -> list[Transaction]:
    """Up to `limit` ledger rows, newest first, after the cursor position `after`: of one
    `kind`, and of one checkout session or subscription (its payments or charges and
    their refunds' entries), where given. Refund entries name what they refund."""
    if checkout_session_id is None and subscription_id is None:
        rows = newest_first(
            tx, f"SELECT {COLUMNS} FROM transactions", merchant_id, {"kind = ?": kind}, after, limit
        )
        return _shown(tx, [from_row(row) for row in rows])
    # The same order and keyset as `newest_first`, over the rows the id filters name.
    # The merchant named outside the id filters too, so the statement keeps to its shard
    # with the tables distributed by merchant (docs/scaling.md).
    where: list[str] = ["merchant_id = ?"]
    args: list[object] = [merchant_id]
    for column, value in (
        ("checkout_session_id", checkout_session_id),
        ("subscription_id", subscription_id),
    ):
        if value is not None:
            where.append(_of(column))
            args += [value, merchant_id, value, merchant_id]
    if kind is not None:
        where.append("kind = ?")
        args.append(kind)
    if after is not None:
        where.append("(created_at, id) < (?, ?)")
        args += [after[0], after[1]]
    found = tx.fetch(
        f"SELECT {COLUMNS} FROM transactions WHERE {' AND '.join(where)}"
        " ORDER BY created_at DESC, id DESC LIMIT ?",
        *args,
        limit,
    )
    return _shown(tx, [from_row(row) for row in found])


def shown_of_merchant(tx: Tx, merchant_id: str, transaction_id: str) -> Transaction | None:
    """The merchant's transaction as the API shows it (see `_shown`)."""
    found = of_merchant(tx, merchant_id, transaction_id)
    return None if found is None else _shown(tx, [found])[0]


def _shown(tx: Tx, rows: list[Transaction]) -> list[Transaction]:
    """`rows` with each refund entry naming the checkout session or subscription of what
    it refunds, read from its refund: the row itself holds neither (the ledger's keys are
    one payment per session and one charge per period)."""
    entries = [t for t in rows if t.refund_id is not None]
    refunded: dict[str, tuple[str | None, str | None]] = {}
    for merchant_id in {t.merchant_id for t in entries}:  # one: a page is one merchant's
        refund_ids = [t.refund_id for t in entries if t.merchant_id == merchant_id]
        marks = ", ".join("?" * len(refund_ids))
        refunded |= {
            row["id"]: (row["checkout_session_id"], row["subscription_id"])
            for row in tx.fetch(
                "SELECT id, checkout_session_id, subscription_id FROM refunds"
                f" WHERE merchant_id = ? AND id IN ({marks})",
                merchant_id,
                *refund_ids,
            )
        }
    if not refunded:
        return rows
    shown = []
    for t in rows:
        if t.refund_id in refunded:
            session_id, subscription_id = refunded[t.refund_id]
            t = attrs.evolve(t, checkout_session_id=session_id, subscription_id=subscription_id)
        shown.append(t)
    return shown


def of_checkout_session(tx: Tx, merchant_id: str, session_id: str) -> list[Transaction]:
    """The payment of the merchant's checkout session (none, or one)."""
    rows = tx.fetch(
        f"SELECT {COLUMNS} FROM transactions WHERE checkout_session_id = ? AND merchant_id = ?",
        session_id,
        merchant_id,
    )
    return [from_row(row) for row in rows]


def for_checkout_session(tx: Tx, session_id: str) -> list[Transaction]:
    rows = tx.fetch(f"SELECT {COLUMNS} FROM transactions WHERE checkout_session_id = ?", session_id)
    return [from_row(row) for row in rows]


def for_subscription(tx: Tx, subscription_id: str) -> list[Transaction]:
    """A subscription's charges, in period order."""
    rows = tx.fetch(
        f"SELECT {COLUMNS} FROM transactions WHERE subscription_id = ? ORDER BY period",
        subscription_id,
    )
    return [from_row(row) for row in rows]


def reserve_refund(tx: Tx, merchant_id: str, transaction_id: str, amount_minor: int) -> bool:
    """Hold `amount_minor` of a payment or charge for a new refund, if its refundable rest
    still covers it: one conditional write, so refunds racing in any number of processes
    (each waits for the row another holds, then sees its new value) never together pass
    what was paid. False, with nothing written, when the rest is too small."""
    changed = tx.execute(
        "UPDATE transactions SET refund_reserved_minor = refund_reserved_minor + ?"
        f" WHERE id = ? AND merchant_id = ? AND kind <> '{REFUND}'"
        " AND amount_minor - refund_reserved_minor >= ?",
        amount_minor,
        transaction_id,
        merchant_id,
        amount_minor,
    )
    return changed == 1


def release_refund(tx: Tx, merchant_id: str, transaction_id: str, amount_minor: int) -> None:
    """Give back what a rejected refund held: its amount is refundable again."""
    changed = tx.execute(
        "UPDATE transactions SET refund_reserved_minor = refund_reserved_minor - ?"
        " WHERE id = ? AND merchant_id = ? AND refund_reserved_minor >= ?",
        amount_minor,
        transaction_id,
        merchant_id,
        amount_minor,
    )
    if changed != 1:
        # The reservation was made with the refund in one transaction: a bug, not a race.
        raise ValueError(f"transaction {transaction_id} holds less than {amount_minor}")


_DAY = f"created_at / {DAY_US}"  # integer division on both backends: the UTC day
DAILY_VOLUME_SQL = (
    f"SELECT {_DAY} AS day,"
    f" SUM(CASE WHEN kind = '{REFUND}' THEN 0 ELSE amount_minor END) AS paid,"
    f" SUM(CASE WHEN kind = '{REFUND}' THEN -amount_minor ELSE 0 END) AS refunded"
    " FROM transactions WHERE merchant_id = ? AND created_at >= ? AND created_at < ?"
    f" GROUP BY {_DAY} ORDER BY day"
)


def daily_volume(
    tx: Tx, merchant_id: str, since_us: int, until_us: int
) -> list[tuple[int, int, int]]:
    """The merchant's ledger from `since_us` (inclusive) to `until_us` (exclusive), summed
    per UTC day: (day number since the epoch, paid minor units, refunded minor units, a
    positive amount). A range scan of the `transactions_list` index (merchant_id,
    created_at, id), bounded by both times, so it reads one merchant's rows of those days
    and no others, however long its ledger."""
    rows = tx.fetch(DAILY_VOLUME_SQL, merchant_id, since_us, until_us)
    return [(int(row["day"]), int(row["paid"]), int(row["refunded"])) for row in rows]
