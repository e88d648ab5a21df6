"""Storage's conditional writes guard with the domain's tables, on SQLite and PostgreSQL:
each resource (checkout sessions, subscriptions) is put in each of its statuses and every
transition's write is attempted on it; exactly the transitions the table allows change
the row, and only they write their ledger row and event."""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from typing import Any

import attrs
import pytest
from fgcpay.admin import create_merchant
from fgcpay.domain import checkout, ids, money
from fgcpay.domain import subscriptions as subscriptions_domain
from fgcpay.domain.checkout import CheckoutSession
from fgcpay.domain.events import new_event
from fgcpay.domain.states import StateMachine
from fgcpay.domain.transactions import PAYMENT, Transaction
from fgcpay.storage import Database, checkout_sessions, subscriptions, transactions, webhooks
from helpers import CHARGING, after_transition, subscription_event, subscription_record

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


@attrs.frozen
class Attempt:
    """One resource in one status, its transition's write tried once: what the row held
    before, what the write was asked to make of it, and what it answered."""

    before: Any
    after: Any  # the record as the caller computed it, or None where storage computes it
    changed: bool


async def _checkout_attempt(db: Database, merchant_id: str, status: str, name: str) -> Attempt:
    # Only the status decides here: the time condition of each write is met (payable
    # before expires_at, expirable after it).
    expires_at = NOW_US + 60 * SECOND if name == "pay" else NOW_US - 60 * SECOND
    session = _session(merchant_id, status, expires_at)
    await db.write(checkout_sessions.insert, session, None)
    return Attempt(session, None, await _attempt(db, name, session))


async def _subscription_attempt(db: Database, merchant_id: str, status: str, name: str) -> Attempt:
    before = subscription_record(merchant_id, status)
    await db.write(subscriptions.insert, before, None)
    after, charge = after_transition(before, name, NOW_US)
    events = [subscription_event(after, f"subscription.{name}", NOW_US)]
    write = getattr(subscriptions, name)
    changed = await (
        db.write(write, before, after, events)
        if charge is None
        else db.write(write, before, after, charge, events)
    )
    return Attempt(before, after, changed)


@attrs.frozen
class Table:
    """A resource's state table and how storage writes and reads that resource."""

    machine: StateMachine
    attempt: Callable[[Database, str, str, str], Awaitable[Attempt]]
    read: Callable[[Database, str], Awaitable[Any]]
    ledger: Callable[[Database, str], Awaitable[list[Transaction]]]
    charging: frozenset[str]  # the transitions that write a ledger row


TABLES = {
    "checkout": Table(
        checkout.STATES,
        _checkout_attempt,
        lambda db, id: db.read(checkout_sessions.by_id, id),
        lambda db, id: db.read(transactions.for_checkout_session, id),
        frozenset({"pay"}),
    ),
    "subscription": Table(
        subscriptions_domain.STATES,
        _subscription_attempt,
        lambda db, id: db.read(subscriptions.by_id, id),
        lambda db, id: db.read(transactions.for_subscription, id),
        CHARGING,
    ),
}

CASES = [
    (resource, transition.name, status)
    for resource, table in TABLES.items()
    for transition in table.machine.transitions
    for status in table.machine.statuses
]


@pytest.mark.parametrize(("resource", "name", "from_status"), CASES)
async def test_a_conditional_write_changes_exactly_what_the_table_allows(
    db: Database, resource: str, name: str, from_status: str
) -> None:
    table = TABLES[resource]
    merchant = (await create_merchant(db, "Acme", f"{name}-{from_status}@example.com")).merchant
    transition = table.machine.transition(name)

    attempt = await table.attempt(db, merchant.id, from_status, name)

    allowed = from_status in transition.sources
    assert attempt.changed is allowed
    stored = await table.read(db, attempt.before.id)
    if not allowed:
        assert stored == attempt.before  # nothing written
    elif attempt.after is not None:
        assert stored == attempt.after  # every new value, as the caller computed it
    else:
        assert (stored.status, stored.version) == (transition.target, attempt.before.version + 1)
    ledger = await table.ledger(db, attempt.before.id)
    assert len(ledger) == (1 if allowed and name in table.charging else 0)
    events = await db.read(webhooks.events_page, merchant.id, None, None, 0, 10)
    assert [event.resource_id for event in events] == ([attempt.before.id] if allowed else [])


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
