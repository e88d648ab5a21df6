"""SQL for test clocks: insert, reads, a paged list, the advance's two conditional writes,
and delete.

The list is paged newest first like every other list, as Stripe's `GET /test_clocks` is
(limit and cursor), rather than returned whole.

Deleting a clock deletes what lives on it, as Stripe deletes a test clock's customers and
subscriptions: its subscriptions and their charges in the ledger go with it, with the
refunds of those charges (the test it ran is gone; the balance no longer counts any of
it). Their events stay, as events of deleted objects do at Stripe: they were sent, and
deliveries still pending go out. Nothing is refused: a clock deletes in either status (an
advance still running then finds its rows gone and its conditional writes fail), and
`delete` returns the ids of the subscriptions it deleted so that their actors can be told.
"""

from __future__ import annotations

from fgcpay.domain import advance_bounds
from fgcpay.domain import limits as domain_limits
from fgcpay.domain.advance_bounds import Billable, TooFar
from fgcpay.domain.customers import renewal_pays
from fgcpay.domain.idempotency import Completion
from fgcpay.domain.subscriptions import ACTIVE, PAST_DUE
from fgcpay.domain.test_clocks import ADVANCING, READY, TestClock

from . import customers, idempotency, limits, transactions
from . import subscriptions as subscription_rows
from ._database import Row, Tx, locks
from .paging import newest_first

COLUMNS = "id, merchant_id, name, frozen_time, status, version, created_at, updated_at"


def from_row(row: Row) -> TestClock:
    return TestClock(
        id=row["id"],
        merchant_id=row["merchant_id"],
        name=row["name"],
        frozen_time=row["frozen_time"],
        status=row["status"],
        version=row["version"],
        created_at=row["created_at"],
        updated_at=row["updated_at"],
    )


@locks(idempotency.completion_keys)
def insert(tx: Tx, clock: TestClock, completion: Completion | None) -> None:
    """Insert a new clock and, in the same transaction, its idempotency answer."""
    c = clock
    tx.execute(
        f"INSERT INTO test_clocks ({COLUMNS}) VALUES (?, ?, ?, ?, ?, ?, ?, ?)",
        c.id, c.merchant_id, c.name, c.frozen_time, c.status, c.version, c.created_at,
        c.updated_at,
    )  # fmt: skip
    if completion is not None:
        idempotency.complete(tx, completion)


@locks(idempotency.completion_keys)
def insert_within(tx: Tx, clock: TestClock, completion: Completion | None, most: int) -> bool:
    """`insert`, unless the merchant already has `most` clocks: then False, nothing written
    (counted in the same transaction as the insert)."""
    if limits.test_clocks_of_merchant(tx, clock.merchant_id) >= most:
        return False
    insert(tx, clock, completion)
    return True


def by_id(tx: Tx, clock_id: str) -> TestClock | None:
    row = tx.fetchrow(f"SELECT {COLUMNS} FROM test_clocks WHERE id = ?", clock_id)
    return None if row is None else from_row(row)


def of_merchant(tx: Tx, merchant_id: str, clock_id: str) -> TestClock | None:
    row = tx.fetchrow(
        f"SELECT {COLUMNS} FROM test_clocks WHERE id = ? AND merchant_id = ?",
        clock_id,
        merchant_id,
    )
    return None if row is None else from_row(row)


def page(
    tx: Tx,
    merchant_id: str,
    after: tuple[int, str] | None,
    limit: int,
    status: str | None = None,
) -> list[TestClock]:
    """Up to `limit` of the merchant's clocks (those in `status` when given), newest
    first, after the cursor `after`."""
    rows = newest_first(
        tx, f"SELECT {COLUMNS} FROM test_clocks", merchant_id, {"status = ?": status}, after, limit
    )
    return [from_row(row) for row in rows]


def advancing(tx: Tx, limit: int) -> list[TestClock]:
    """Clocks in `advancing`, longest first: those a process died advancing are
    resumed from here (their due subscriptions are still due)."""
    rows = tx.fetch(
        f"SELECT {COLUMNS} FROM test_clocks WHERE status = '{ADVANCING}'"
        " ORDER BY updated_at, id LIMIT ?",
        limit,
    )
    return [from_row(row) for row in rows]


def begin_advance(tx: Tx, clock: TestClock, frozen_time: int, now_us: int) -> TestClock | None:
    """`ready` -> `advancing`, moving the clock forward to `frozen_time` (strictly later).

    Returns the clock as written; None, with nothing written, when it moved on meanwhile
    (another advance began, it was deleted), or when `frozen_time` is not later (the
    caller answers that in the merchant's terms before asking).
    """
    changed = tx.execute(
        "UPDATE test_clocks SET status = ?, frozen_time = ?, version = version + 1,"
        f" updated_at = ? WHERE id = ? AND merchant_id = ? AND status = '{READY}'"
        " AND version = ? AND frozen_time < ?",
        ADVANCING,
        frozen_time,
        now_us,
        clock.id,
        clock.merchant_id,
        clock.version,
        frozen_time,
    )
    return of_merchant(tx, clock.merchant_id, clock.id) if changed == 1 else None


def billable(tx: Tx, clock: TestClock) -> list[Billable]:
    """The clock's subscriptions that an advance may charge (`active` or `past_due`), each
    with whether its customer's renewals pay: what the advance bounds are counted from."""
    rows = tx.fetch(
        f"SELECT {subscription_rows.COLUMNS} FROM subscriptions WHERE test_clock_id = ?"
        f" AND merchant_id = ? AND status IN ('{ACTIVE}', '{PAST_DUE}')"
        " AND next_action_at IS NOT NULL",
        clock.id,
        clock.merchant_id,
    )
    found = [subscription_rows.from_row(row) for row in rows]
    pays: dict[str, bool] = {}
    for code in sorted({sub.customer_code for sub in found if sub.customer_code is not None}):
        customer = customers.by_code(tx, code)
        pays[code] = customer is not None and renewal_pays(customer.outcome)
    return [Billable(sub, pays.get(sub.customer_code or "", False)) for sub in found]


def begin_bounded_advance(
    tx: Tx, clock: TestClock, frozen_time: int, now_us: int
) -> TestClock | TooFar | None:
    """`begin_advance`, unless the advance would bill more than its bounds
    (`advance_bounds`, and what is left of the clock's charges over its life): then `TooFar` with the furthest time it may reach, nothing written.
    The subscriptions are read in the same transaction as the clock's write."""
    billables = billable(tx, clock)
    if not advance_bounds.within(billables, frozen_time):
        return TooFar(advance_bounds.max_frozen_time(billables, clock.frozen_time))
    # The clock's charges over its life are bounded too (`domain.limits`): deleting the
    # clock deletes them all in one transaction.
    left = max(
        0,
        domain_limits.MAX_CHARGES_PER_TEST_CLOCK
        - limits.charges_on_clock(tx, clock.merchant_id, clock.id),
    )
    if left < advance_bounds.MAX_CHARGES_PER_ADVANCE and not advance_bounds.within(
        billables, frozen_time, left
    ):
        furthest = advance_bounds.max_frozen_time(billables, clock.frozen_time, left)
        return TooFar(furthest, charges_left=left)
    return begin_advance(tx, clock, frozen_time, now_us)


def finish_advance(tx: Tx, clock: TestClock, now_us: int) -> TestClock | None:
    """`advancing` -> `ready`, once nothing on the clock is due up to its frozen time.

    Returns the clock as written; None, with nothing written, when it moved on meanwhile
    or when a subscription on it is still due (the advance is not done: run what is due,
    then finish again). So a `ready` clock never has work left behind its time.
    """
    changed = tx.execute(
        f"UPDATE test_clocks SET status = ?, version = version + 1, updated_at = ?"
        f" WHERE id = ? AND merchant_id = ? AND status = '{ADVANCING}' AND version = ?"
        " AND NOT EXISTS (SELECT 1 FROM subscriptions WHERE test_clock_id = test_clocks.id"
        " AND merchant_id = test_clocks.merchant_id"
        " AND next_action_at IS NOT NULL AND next_action_at <= test_clocks.frozen_time)",
        READY,
        now_us,
        clock.id,
        clock.merchant_id,
        clock.version,
    )
    return of_merchant(tx, clock.merchant_id, clock.id) if changed == 1 else None


def delete(tx: Tx, merchant_id: str, clock_id: str) -> list[str] | None:
    """Delete the merchant's clock with its subscriptions and their ledger rows (see the
    module's docstring). Returns the deleted subscriptions' ids, in id order; None (and
    nothing deleted) when the merchant has no such clock."""
    if of_merchant(tx, merchant_id, clock_id) is None:
        return None
    rows = tx.fetch(
        "SELECT id FROM subscriptions WHERE test_clock_id = ? AND merchant_id = ? ORDER BY id",
        clock_id,
        merchant_id,
    )
    transactions.delete_charges_on_clock(tx, merchant_id, clock_id)
    tx.execute(
        "DELETE FROM subscriptions WHERE test_clock_id = ? AND merchant_id = ?",
        clock_id,
        merchant_id,
    )
    tx.execute("DELETE FROM test_clocks WHERE id = ? AND merchant_id = ?", clock_id, merchant_id)
    return [row["id"] for row in rows]
