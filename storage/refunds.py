"""SQL for refunds: creating one (with its reservation on the payment), one conditional
write per review of `refunds.STATES`, the reads and the lists."""

from __future__ import annotations

import attrs
from fgcpay.domain import balances as totals
from fgcpay.domain.events import Event
from fgcpay.domain.idempotency import Completion
from fgcpay.domain.refunds import STATES, Refund
from fgcpay.domain.transactions import REFUND, Transaction

from . import balances, idempotency, transactions, webhooks
from ._database import Row, Tx, locks
from ._status import guarded_update, status_in
from .paging import newest_first

# One column per field of the record, in its order; only `metadata_json` is renamed.
_FIELDS = tuple(field.name for field in attrs.fields(Refund))
_COLUMN_OF = {"metadata_json": "metadata"}
COLUMNS = ", ".join(_COLUMN_OF.get(name, name) for name in _FIELDS)
_GUARDS = {transition.name: status_in(transition) for transition in STATES.transitions}


def from_row(row: Row) -> Refund:
    return Refund(**{name: row[_COLUMN_OF.get(name, name)] for name in _FIELDS})


@locks(idempotency.completion_keys)
def create(tx: Tx, refund: Refund, event: Event, completion: Completion | None) -> bool:
    """A new refund, `pending_review`, in one transaction with: its amount reserved on the
    payment it refunds (the conditional write that decides), the pending total, its
    `refund.created` event with the deliveries, and its idempotent answer. False, with
    nothing written, when the payment's refundable rest no longer covers it (another
    process's refund took it first) or the payment is gone."""
    if not transactions.reserve_refund(
        tx, refund.merchant_id, refund.transaction_id, refund.amount_minor
    ):
        return False
    placeholders = ", ".join("?" for _ in _FIELDS)
    tx.execute(
        f"INSERT INTO refunds ({COLUMNS}) VALUES ({placeholders})",
        *(getattr(refund, name) for name in _FIELDS),
    )
    balances.add(tx, totals.pending(refund.merchant_id, refund.amount_minor))
    webhooks.record_event(tx, event)
    if completion is not None:
        idempotency.complete(tx, completion)
    return True


@locks(idempotency.completion_keys)
def approve(
    tx: Tx,
    before: Refund,
    after: Refund,
    entry: Transaction,
    event: Event,
    completion: Completion | None = None,
) -> bool:
    """`approve` (`pending_review` -> `approved`): with the negative ledger entry (which adds
    to the refunded total), off the pending total, `refund.approved`, and the request's
    idempotent answer. False, with nothing written, when the refund moved on meanwhile."""
    expected = (REFUND, before.merchant_id, -before.amount_minor, before.id)
    if (entry.kind, entry.merchant_id, entry.amount_minor, entry.refund_id) != expected:
        raise ValueError(f"refund {before.id}: the entry {entry} is not its own")
    if not _review(tx, "approve", before, after, event):
        return False
    transactions.insert(tx, entry)
    if completion is not None:  # raises IdempotencyLost (all rolled back) if taken over
        idempotency.complete(tx, completion)
    return True


@locks(idempotency.completion_keys)
def reject(
    tx: Tx, before: Refund, after: Refund, event: Event, completion: Completion | None = None
) -> bool:
    """`reject` (`pending_review` -> `rejected`): what it held of the payment given back
    (refundable again), off the pending total, `refund.rejected`, and the request's
    idempotent answer. False, with nothing written, when the refund moved on meanwhile."""
    if not _review(tx, "reject", before, after, event):
        return False
    transactions.release_refund(tx, before.merchant_id, before.transaction_id, before.amount_minor)
    if completion is not None:  # raises IdempotencyLost (all rolled back) if taken over
        idempotency.complete(tx, completion)
    return True


def _review(tx: Tx, name: str, before: Refund, after: Refund, event: Event) -> bool:
    target = STATES.transition(name).target
    if after.status != target or after.version != before.version + 1:
        raise ValueError(f"refund {before.id} {name}: the record after is not its {target}")
    if (event.resource_id, event.sequence) != (before.id, after.version):
        raise ValueError(f"refund {before.id} {name}: event {event.id} is not of this change")
    changed = guarded_update(
        tx,
        "refunds",
        "status = ?, version = version + 1, updated_at = ?, reviewed_at = ?",
        (after.status, after.updated_at, after.reviewed_at),
        before.id,
        f"{_GUARDS[name]} AND version = ?",
        (before.version,),
        give_way=False,
        merchant_id=before.merchant_id,
    )
    if changed != 1:
        return False
    balances.add(tx, totals.pending(before.merchant_id, -before.amount_minor))
    webhooks.record_event(tx, event)
    return True


def by_id(tx: Tx, refund_id: str) -> Refund | None:
    row = tx.fetchrow(f"SELECT {COLUMNS} FROM refunds WHERE id = ?", refund_id)
    return None if row is None else from_row(row)


def of_merchant(tx: Tx, merchant_id: str, refund_id: str) -> Refund | None:
    row = tx.fetchrow(
        f"SELECT {COLUMNS} FROM refunds WHERE id = ? AND merchant_id = ?", refund_id, merchant_id
    )
    return None if row is None else from_row(row)


def page(
    tx: Tx,
    merchant_id: str,
    status: str | None,
    after: tuple[int, str] | None,
    limit: int,
) -> list[Refund]:
    """Up to `limit` refunds, newest first, after the cursor position `after`."""
    rows = newest_first(
        tx, f"SELECT {COLUMNS} FROM refunds", merchant_id, {"status = ?": status}, after, limit
    )
    return [from_row(row) for row in rows]


def for_transaction(tx: Tx, transaction_id: str) -> list[Refund]:
    """The refunds of a payment or charge, oldest first."""
    rows = tx.fetch(
        f"SELECT {COLUMNS} FROM refunds WHERE transaction_id = ? ORDER BY created_at, id",
        transaction_id,
    )
    return [from_row(row) for row in rows]
