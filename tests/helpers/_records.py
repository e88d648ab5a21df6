"""Records as storage keeps them, built directly for the storage tests: a subscription in
any status, a test clock, a subscription's charge, and the record after a transition.

The period arithmetic here is a stand-in (periods of one day), enough to give storage
records of the right shape; the real rules are the domain's (`domain/periods.py`).
"""

from __future__ import annotations

from typing import Any

import attrs
from fgcpay.domain import ids, money, periods
from fgcpay.domain import subscriptions as subs
from fgcpay.domain.events import Event, new_event
from fgcpay.domain.subscriptions import Subscription
from fgcpay.domain.test_clocks import READY, TestClock
from fgcpay.domain.transactions import Transaction

NOW_US = 1_800_000_000_000_000
SECOND = 1_000_000
DAY = 86_400 * SECOND
CUSTOMER = "TEST-0001"
AMOUNT_MINOR = 1250


def subscription_record(
    merchant_id: str,
    status: str = subs.PAUSED,
    *,
    test_clock_id: str | None = None,
    created_at: int = NOW_US - 3 * DAY,
    **overrides: Any,
) -> Subscription:
    """A daily subscription of 12.50 FGC in `status`, with the fields that status implies:
    approved two days after `created_at` and charged once (period 0) unless `paused`, due
    at its period's end while `active` or `past_due` (one retry declined in `past_due`),
    with nothing due once final. `overrides` replace any field."""
    record = Subscription(
        id=ids.subscription_id(),
        merchant_id=merchant_id,
        status=status,
        version=1,
        interval="daily",
        amount_minor=AMOUNT_MINOR,
        currency=money.CURRENCY,
        eur_cents=AMOUNT_MINOR,
        description="Coffee beans, every day",
        merchant_customer_reference="cust-42",
        customer_email=None,
        success_url="https://shop.example/thanks",
        cancel_url="https://shop.example/cart",
        external_reference=None,
        metadata_json="{}",
        max_total_minor=None,
        end_date=None,
        test_clock_id=test_clock_id,
        created_at=created_at,
        updated_at=created_at,
    )
    if status != subs.PAUSED:
        approved_at = created_at + 2 * DAY
        record = attrs.evolve(
            record,
            version=2,
            updated_at=approved_at,
            approved_at=approved_at,
            customer_code=CUSTOMER,
            charge_count=1,
            charged_total_minor=AMOUNT_MINOR,
            current_period_start=approved_at,
            current_period_end=approved_at + DAY,
            next_action_at=approved_at + DAY,
        )
    if status == subs.PAST_DUE:
        record = attrs.evolve(record, failed_attempts=1)
    if status == subs.CANCELLED:
        record = attrs.evolve(record, next_action_at=None, cancelled_at=record.updated_at)
    if status == subs.ENDED:
        record = attrs.evolve(
            record,
            next_action_at=None,
            ended_at=record.updated_at,
            ended_reason=subs.END_DATE_REACHED,
        )
    return attrs.evolve(record, **overrides)


def clock_record(merchant_id: str, frozen_time: int = NOW_US, **overrides: Any) -> TestClock:
    """A `ready` clock frozen at `frozen_time`; `overrides` replace any field."""
    clock = TestClock(
        id=ids.test_clock_id(),
        merchant_id=merchant_id,
        name="a year of renewals",
        frozen_time=frozen_time,
        status=READY,
        version=1,
        created_at=NOW_US - DAY,
        updated_at=NOW_US - DAY,
    )
    return attrs.evolve(clock, **overrides)


def subscription_charge(
    subscription: Subscription, now_us: int, customer_code: str = CUSTOMER
) -> Transaction:
    """The charge of `subscription`'s next period (its period number is its charge count)."""
    return periods.next_charge(
        subscription,
        transaction_id=ids.transaction_id(),
        customer_code=customer_code,
        now_us=now_us,
    )


# The transitions that move money.
CHARGING = frozenset({"approve", "renew", "recover"})


def after_transition(
    before: Subscription, name: str, now_us: int
) -> tuple[Subscription, Transaction | None]:
    """The record after the transition `name` at `now_us`, and its charge where money
    moves (approve, renew, recover), in the shape storage's conditional writes accept."""
    target = subs.STATES.transition(name).target
    after = attrs.evolve(before, status=target, version=before.version + 1, updated_at=now_us)
    charge = None
    if name in CHARGING:
        customer_code = before.customer_code or CUSTOMER
        charge = subscription_charge(before, now_us, customer_code)
        start = now_us if name == "approve" else (before.current_period_end or now_us)
        after = attrs.evolve(
            after,
            customer_code=customer_code,
            approved_at=before.approved_at or now_us,
            charge_count=before.charge_count + 1,
            charged_total_minor=before.charged_total_minor + charge.amount_minor,
            current_period_start=start,
            current_period_end=start + DAY,
            next_action_at=start + DAY,
            failed_attempts=0,
        )
    elif name in ("decline", "retry_declined"):
        after = attrs.evolve(
            after, failed_attempts=before.failed_attempts + 1, next_action_at=now_us + DAY
        )
    elif name == "cancel":
        after = attrs.evolve(after, next_action_at=None, cancelled_at=now_us)
    else:
        assert name == "end"
        after = attrs.evolve(
            after, next_action_at=None, ended_at=now_us, ended_reason=subs.PAYMENT_FAILED
        )
    return after, charge


def subscription_event(
    after: Subscription, event_type: str, now_us: int, sequence: int | None = None
) -> Event:
    """An event of the change that made `after` (its sequence is `after.version` unless
    given: a change with two events gives the first `after.version - 1`)."""
    return new_event(
        ids.event_id(),
        after.merchant_id,
        event_type,
        after.id,
        after.version if sequence is None else sequence,
        {"id": after.id, "status": after.status},
        now_us,
    )
