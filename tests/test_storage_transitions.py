"""Storage's conditional writes guard with the domain's table, on SQLite and PostgreSQL:
a session is put in each status and every transition's write is attempted on it; exactly
the transitions the table allows change the row."""

from __future__ import annotations

import itertools

import attrs
import pytest
from fgcpay.admin import create_merchant
from fgcpay.domain import checkout, ids, money
from fgcpay.domain.checkout import CheckoutSession
from fgcpay.domain.transactions import PAYMENT, Transaction
from fgcpay.domain.webhooks import new_event
from fgcpay.storage import Database, checkout_sessions, transactions

NOW_US = 1_800_000_000_000_000
SECOND = 1_000_000


def _session(merchant_id: str, status: str, expires_at: int) -> CheckoutSession:
    return CheckoutSession(
        id=ids.checkout_session_id(),
        merchant_id=merchant_id,
        status=status,
        version=1,
        amount_minor=1250,
        currency=money.CURRENCY,
        eur_cents=1250,
        description="Two flat whites",
        success_url="https://shop.example/thanks",
        cancel_url="https://shop.example/cart",
        customer_email=None,
        customer_reference=None,
        external_reference=None,
        metadata_json="{}",
        created_at=NOW_US - 3600 * SECOND,
        updated_at=NOW_US - 3600 * SECOND,
        expires_at=expires_at,
    )


async def _attempt(db: Database, name: str, session: CheckoutSession) -> bool:
    """Run the conditional write of the transition `name` against `session` as read."""
    event = new_event(ids.event_id(), session.merchant_id, f"checkout.session.{name}",
                      session.id, session.version + 1, {"id": session.id}, NOW_US)  # fmt: skip
    if name == "pay":
        payment = Transaction(
            id=ids.transaction_id(),
            merchant_id=session.merchant_id,
            kind=PAYMENT,
            checkout_session_id=session.id,
            customer_code="TEST-0001",
            amount_minor=session.amount_minor,
            currency=session.currency,
            created_at=NOW_US,
        )
        return await db.write(checkout_sessions.pay, session, payment, NOW_US, event)
    assert name == "expire"
    return await db.write(checkout_sessions.mark_expired, session, NOW_US, event)


@pytest.mark.parametrize(
    ("name", "from_status"), list(itertools.product(["pay", "expire"], checkout.STATUSES))
)
async def test_a_conditional_write_changes_exactly_what_the_table_allows(
    db: Database, name: str, from_status: str
) -> None:
    merchant = (await create_merchant(db, "Acme", f"{name}-{from_status}@example.com")).merchant
    transition = checkout.STATES.transition(name)
    # Only the status decides here: the time condition of each write is met (payable
    # before expires_at, expirable after it).
    expires_at = NOW_US + 60 * SECOND if name == "pay" else NOW_US - 60 * SECOND
    session = _session(merchant.id, from_status, expires_at)
    await db.write(checkout_sessions.insert, session, None)

    changed = await _attempt(db, name, session)

    allowed = checkout.STATES.allows(from_status, transition.target)
    assert changed is allowed
    stored = await db.read(checkout_sessions.by_id, session.id)
    assert stored is not None
    if allowed:
        assert (stored.status, stored.version) == (transition.target, 2)
    else:
        assert stored == session  # nothing written
    paid = await db.read(transactions.for_checkout_session, session.id)
    assert len(paid) == (1 if allowed and name == "pay" else 0)


async def test_a_stale_version_changes_nothing(db: Database) -> None:
    merchant = (await create_merchant(db, "Acme", "stale@example.com")).merchant
    session = _session(merchant.id, checkout.CREATED, NOW_US - 60 * SECOND)
    await db.write(checkout_sessions.insert, session, None)
    assert not await _attempt(db, "expire", attrs.evolve(session, version=0))
    assert await db.read(checkout_sessions.by_id, session.id) == session


@pytest.mark.parametrize("name", ["pay", "expire"])
async def test_the_time_condition_still_holds(db: Database, name: str) -> None:
    """Never paid at or past expires_at; never expired before it."""
    merchant = (await create_merchant(db, "Acme", f"time-{name}@example.com")).merchant
    expires_at = NOW_US if name == "pay" else NOW_US + SECOND
    session = _session(merchant.id, checkout.CREATED, expires_at)
    await db.write(checkout_sessions.insert, session, None)
    assert not await _attempt(db, name, session)
    assert await db.read(checkout_sessions.by_id, session.id) == session


async def test_the_expiry_sweep_reads_what_expire_leaves_from(db: Database) -> None:
    merchant = (await create_merchant(db, "Acme", "due@example.com")).merchant
    due = {}
    for status in checkout.STATUSES:
        session = _session(merchant.id, status, NOW_US - 60 * SECOND)
        await db.write(checkout_sessions.insert, session, None)
        due[status] = session.id
    found = await db.read(checkout_sessions.due_for_expiry, NOW_US, 100)
    expirable = checkout.STATES.transition("expire").sources
    assert set(found) == {due[status] for status in expirable}
    assert await db.read(checkout_sessions.next_expiry) == NOW_US - 60 * SECOND
