"""SQL for checkout sessions."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from fgcpay.domain.checkout import STATES, CheckoutSession
from fgcpay.domain.events import Event
from fgcpay.domain.idempotency import Completion
from fgcpay.domain.transactions import Transaction

from . import idempotency, transactions, webhooks
from ._bulk import Column, insert_rows
from ._database import LockKey, Row, Tx, batched, locks
from ._status import guarded_update, status_in
from .paging import newest_first

# The conditional writes' transitions, from the one table in the domain.
_PAY = STATES.transition("pay")
_EXPIRE = STATES.transition("expire")
_PAYABLE = status_in(_PAY)
_EXPIRABLE = status_in(_EXPIRE)

# A row's columns with their types (a batch of inserts sends one array of each).
_INSERTED: tuple[Column, ...] = (
    ("id", "text"), ("merchant_id", "text"), ("status", "text"), ("version", "bigint"),
    ("amount_minor", "bigint"), ("currency", "text"), ("eur_cents", "bigint"),
    ("description", "text"), ("success_url", "text"), ("cancel_url", "text"),
    ("customer_email", "text"), ("customer_reference", "text"),
    ("external_reference", "text"), ("metadata", "text"), ("created_at", "bigint"),
    ("updated_at", "bigint"), ("expires_at", "bigint"), ("paid_at", "bigint"),
)  # fmt: skip
COLUMNS = ", ".join(name for name, _ in _INSERTED)


def from_row(row: Row) -> CheckoutSession:
    return CheckoutSession(
        id=row["id"],
        merchant_id=row["merchant_id"],
        status=row["status"],
        version=row["version"],
        amount_minor=row["amount_minor"],
        currency=row["currency"],
        eur_cents=row["eur_cents"],
        description=row["description"],
        success_url=row["success_url"],
        cancel_url=row["cancel_url"],
        customer_email=row["customer_email"],
        customer_reference=row["customer_reference"],
        external_reference=row["external_reference"],
        metadata_json=row["metadata"],
        created_at=row["created_at"],
        updated_at=row["updated_at"],
        expires_at=row["expires_at"],
        paid_at=row["paid_at"],
    )


def _values(s: CheckoutSession) -> tuple[object, ...]:
    return (
        s.id, s.merchant_id, s.status, s.version, s.amount_minor, s.currency, s.eur_cents,
        s.description, s.success_url, s.cancel_url, s.customer_email, s.customer_reference,
        s.external_reference, s.metadata_json, s.created_at, s.updated_at, s.expires_at, s.paid_at,
    )  # fmt: skip


def _completions_keys(calls: Sequence[tuple[Any, ...]]) -> list[LockKey]:
    return [key for call in calls for key in idempotency.completion_keys(call[1])]


# The writer takes the keys each caller's `insert` declared; these are the same ones.
@locks(_completions_keys)
def _insert_many(tx: Tx, calls: Sequence[tuple[Any, ...]]) -> list[None]:
    """The batched form of `insert`: a group's new sessions in one statement (a burst of
    creates queues many behind the writer), then their idempotency answers in order."""
    insert_rows(tx, "checkout_sessions", _INSERTED, [_values(call[0]) for call in calls])
    for call in calls:
        if call[1] is not None:
            idempotency.complete(tx, call[1])
    return [None] * len(calls)


@batched(_insert_many)
@locks(idempotency.completion_keys)
def insert(tx: Tx, session: CheckoutSession, completion: Completion | None) -> None:
    """Insert a new session and, in the same transaction, its idempotency answer."""
    insert_rows(tx, "checkout_sessions", _INSERTED, [_values(session)])
    if completion is not None:
        idempotency.complete(tx, completion)


def by_id(tx: Tx, session_id: str) -> CheckoutSession | None:
    row = tx.fetchrow(f"SELECT {COLUMNS} FROM checkout_sessions WHERE id = ?", session_id)
    return None if row is None else from_row(row)


def of_merchant(tx: Tx, merchant_id: str, session_id: str) -> CheckoutSession | None:
    row = tx.fetchrow(
        f"SELECT {COLUMNS} FROM checkout_sessions WHERE id = ? AND merchant_id = ?",
        session_id,
        merchant_id,
    )
    return None if row is None else from_row(row)


def page(
    tx: Tx,
    merchant_id: str,
    status: str | None,
    after: tuple[int, str] | None,
    limit: int,
) -> list[CheckoutSession]:
    """Up to `limit` sessions, newest first, after the cursor position `after`."""
    rows = newest_first(
        tx, f"SELECT {COLUMNS} FROM checkout_sessions", merchant_id, {"status = ?": status},
        after, limit,
    )  # fmt: skip
    return [from_row(row) for row in rows]


def due_for_expiry(tx: Tx, now_us: int, limit: int, offset: int = 0) -> list[str]:
    """Up to `limit` sessions past `expires_at`, the earliest first after skipping `offset`."""
    rows = tx.fetch(
        f"SELECT id FROM checkout_sessions WHERE {_EXPIRABLE} AND expires_at <= ?"
        " ORDER BY expires_at LIMIT ? OFFSET ?",
        now_us,
        limit,
        offset,
    )
    return [row["id"] for row in rows]


def next_expiry(tx: Tx) -> int | None:
    value = tx.fetchval(f"SELECT MIN(expires_at) FROM checkout_sessions WHERE {_EXPIRABLE}")
    return None if value is None else int(value)


def mark_expired(tx: Tx, session: CheckoutSession, now_us: int, event: Event) -> bool:
    """Compare-and-set the `expire` transition (`created` -> `expired`) and record its
    event with the deliveries; False (nothing written) when the row moved on meanwhile."""
    changed = guarded_update(
        tx,
        "checkout_sessions",
        "status = ?, version = version + 1, updated_at = ?",
        (_EXPIRE.target, now_us),
        session.id,
        f"{_EXPIRABLE} AND version = ? AND expires_at <= ?",
        (session.version, now_us),
        give_way=True,
        merchant_id=session.merchant_id,
    )
    if changed == 1:
        webhooks.record_event(tx, event)
        notify_status(tx, session.id, _EXPIRE.target)
    return changed == 1


@locks(idempotency.completion_keys)
def expire_early(
    tx: Tx, session: CheckoutSession, now_us: int, event: Event, completion: Completion | None
) -> bool:
    """The `expire` transition before `expires_at` (the test helper `expire`): as
    `mark_expired`, and `expires_at` becomes now, when it expired; with the request's
    idempotent answer (raises `IdempotencyLost`, nothing written, if its claim was taken
    over). False (nothing written) when the row moved on meanwhile."""
    changed = guarded_update(
        tx,
        "checkout_sessions",
        "status = ?, version = version + 1, updated_at = ?, expires_at = ?",
        (_EXPIRE.target, now_us, now_us),
        session.id,
        f"{_EXPIRABLE} AND version = ?",
        (session.version,),
        give_way=False,  # a merchant's step: it waits for the row (see guarded_update)
        merchant_id=session.merchant_id,
    )
    if changed != 1:
        return False
    webhooks.record_event(tx, event)
    notify_status(tx, session.id, _EXPIRE.target)
    if completion is not None:
        idempotency.complete(tx, completion)
    return True


STATUS_CHANNEL = "fgcpay_status"


def notify_status(tx: Tx, resource_id: str, status: str) -> None:
    """PostgreSQL: tell every process's live-status subscribers, on commit."""
    if tx.dialect == "postgresql":
        tx.execute(f"SELECT pg_notify('{STATUS_CHANNEL}', ?)", f"{resource_id}:{status}")


def pay(tx: Tx, session: CheckoutSession, payment: Transaction, now_us: int, event: Event) -> bool:
    """Compare-and-set the `pay` transition (`created` -> `paid`), and with it the test
    transaction, the event and its outbox deliveries: one transaction, so a crash never
    loses a webhook.

    False (and nothing written) when the session moved on or expired meanwhile.
    """
    changed = guarded_update(
        tx,
        "checkout_sessions",
        "status = ?, version = version + 1, updated_at = ?, paid_at = ?",
        (_PAY.target, now_us, now_us),
        session.id,
        f"{_PAYABLE} AND version = ? AND expires_at > ?",
        (session.version, now_us),
        give_way=False,
        merchant_id=session.merchant_id,
    )
    if changed != 1:
        return False
    transactions.insert(tx, payment)
    webhooks.record_event(tx, event)
    notify_status(tx, session.id, _PAY.target)
    return True


@locks(idempotency.completion_keys)
def pay_answered(
    tx: Tx,
    session: CheckoutSession,
    payment: Transaction,
    now_us: int,
    event: Event,
    completion: Completion | None,
) -> bool:
    """`pay` without a PIN attempt (a test helper's), with the request's idempotent answer
    (raises `IdempotencyLost`, nothing written, if its claim was taken over): a retry
    after a 503 replays it."""
    if not pay(tx, session, payment, now_us, event):
        return False
    if completion is not None:
        idempotency.complete(tx, completion)
    return True
