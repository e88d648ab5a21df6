"""Subscription periods and their schedule: when each period starts, what is due at an instant,
and the record after each step (approval, charge, decline, end, cancel)."""

from __future__ import annotations

import calendar
from datetime import date
from typing import Any

import attrs

from .subscriptions import (
    ACTIVE,
    CANCELLED,
    END_DATE_REACHED,
    END_OF_TIME_RANGE,
    ENDED,
    MAX_TOTAL_REACHED,
    PAST_DUE,
    PAUSED,
    PAYMENT_FAILED,
    STATES,
    Subscription,
)
from .times import MAX_TIME, MAX_TIME_US, MICROS
from .transactions import SUBSCRIPTION_CHARGE, Transaction

DAY_US = 86_400 * MICROS
WEEK_US = 7 * DAY_US
# A declined renewal is retried this long after its due time (not after the decline, so a
# renewal charged late after downtime keeps the same schedule); still declined after the
# last one, the subscription ends with `payment_failed`.
RETRY_DELAYS_US = (1 * DAY_US, 3 * DAY_US)

_FIXED_STEPS = {"daily": DAY_US, "weekly": WEEK_US}
_MONTH_STEPS = {"monthly": 1, "yearly": 12}
_EPOCH_ORDINAL = date(1970, 1, 1).toordinal()


class OutOfTime(ValueError):
    """A period would start after the time range ends (`times.MAX_TIME_US`)."""


def _civil(us: int) -> tuple[date, int]:
    """The UTC date of an instant and its time of day in microseconds."""
    days, time_of_day = divmod(us, DAY_US)
    return date.fromordinal(_EPOCH_ORDINAL + days), time_of_day


def _months_after(anchor_us: int, months: int) -> int:
    anchor, time_of_day = _civil(anchor_us)
    year, month0 = divmod(anchor.year * 12 + anchor.month - 1 + months, 12)
    # A day the target month lacks (31, or 29 in February) is clamped to its last day;
    # the anchor's own day is used again the month after, never the clamped one.
    if year > 9999:
        raise OutOfTime(f"a period would start after {MAX_TIME}")
    day = min(anchor.day, calendar.monthrange(year, month0 + 1)[1])
    return (date(year, month0 + 1, day).toordinal() - _EPOCH_ORDINAL) * DAY_US + time_of_day


def period_start(anchor_us: int, interval: str, n: int) -> int:
    """The start of period `n` (0 is the anchor's), counted from the anchor: anchor + n
    intervals, never the previous period plus one.

    `daily` and `weekly` are exact 24 h and 7 x 24 h steps. `monthly` and `yearly` keep
    the anchor's day and time of day (UTC), a day past the month's end clamped to its last
    day: monthly from Jan 31 gives Feb 28 (29 in a leap year), Mar 31, Apr 30; yearly from
    Feb 29 gives Feb 28, then Feb 29 in the next leap year. Raises `ValueError` for an
    unknown interval or a negative `n`, and `OutOfTime` for a start after the time range.
    """
    if n < 0:
        raise ValueError(f"period {n} does not exist: periods count from 0")
    if interval in _FIXED_STEPS:
        start = anchor_us + n * _FIXED_STEPS[interval]
    elif interval in _MONTH_STEPS:
        start = _months_after(anchor_us, n * _MONTH_STEPS[interval])
    else:
        raise ValueError(f"unknown interval {interval!r}")
    if start > MAX_TIME_US:
        raise OutOfTime(f"a period would start after {MAX_TIME}")
    return start


def period_start_or_none(anchor_us: int, interval: str, n: int) -> int | None:
    """`period_start`, or None when the period would start after the time range."""
    try:
        return period_start(anchor_us, interval, n)
    except OutOfTime:
        return None


def period_fits(anchor_us: int, interval: str, n: int) -> bool:
    """Whether period `n` ends within the time range: only such a period is ever charged
    (its `current_period_end` must be a time the API can write)."""
    return period_start_or_none(anchor_us, interval, n + 1) is not None


def period_end(anchor_us: int, interval: str, n: int) -> int:
    """The end of period `n` (exclusive): the next period's start, when it is charged."""
    return period_start(anchor_us, interval, n + 1)


def period_at(anchor_us: int, interval: str, instant_us: int) -> int:
    """The number of the period containing `instant_us` (a period holds its start, not its
    end). Raises `ValueError` for an instant before the anchor or an unknown interval."""
    if instant_us < anchor_us:
        raise ValueError("an instant before the anchor is in no period")
    if interval in _FIXED_STEPS:
        return (instant_us - anchor_us) // _FIXED_STEPS[interval]
    if interval not in _MONTH_STEPS:
        raise ValueError(f"unknown interval {interval!r}")
    anchor, _ = _civil(anchor_us)
    instant, _ = _civil(instant_us)
    months = (instant.year - anchor.year) * 12 + instant.month - anchor.month
    # The calendar months between them are right or one too many (the instant's day or
    # time of day comes before the anchor's): correct by comparing real starts.
    n = max(months // _MONTH_STEPS[interval], 0)
    while n > 0 and period_start(anchor_us, interval, n) > instant_us:
        n -= 1
    while (following := period_start_or_none(anchor_us, interval, n + 1)) is not None:
        if following > instant_us:
            break
        n += 1
    return n


@attrs.frozen
class Renew:
    """Charge period `period` (its first attempt), due at its start."""

    period: int
    due_at: int


@attrs.frozen
class Retry:
    """Charge period `period` again after `attempt` declines (1 or 2), due
    `RETRY_DELAYS_US[attempt - 1]` after the period's start."""

    period: int
    attempt: int
    due_at: int


@attrs.frozen
class End:
    """End the subscription with `reason` (one of `ENDED_REASONS`), due at `due_at`."""

    reason: str
    due_at: int


Action = Renew | Retry | End


def due_action(sub: Subscription) -> Action | None:
    """What the subscription does next and when, whatever the time now; None when nothing
    ever will (cancelled, ended, or paused without an `end_date`). Its `due_at` is the
    `next_action_at` to store. A paused subscription ends at its `end_date` unapproved.

    The next period to charge is number `charge_count` (the approval charged period 0).
    Ending wins a tie: an `end_date` at or before the charge's due time ends the
    subscription at `end_date`, uncharged; a period that would end after the time range
    (9999-12-31T23:59:59Z) is never charged: the subscription ends when it would have
    started (`end_of_time_range`); a charge that would take `charged_total_minor` past
    `max_total_minor` ends it at the charge's due time instead.
    """
    if sub.status == PAUSED and sub.end_date is not None:
        return End(END_DATE_REACHED, sub.end_date)
    if sub.status not in (ACTIVE, PAST_DUE) or sub.approved_at is None:
        return None
    period = sub.charge_count
    start = period_start(sub.approved_at, sub.interval, period)
    attempt = sub.failed_attempts
    # `declined` ends the subscription with the last retry's decline; a past_due record
    # with every retry declined (its end never written) still ends, at the last retry.
    if attempt > len(RETRY_DELAYS_US):
        return End(PAYMENT_FAILED, start + RETRY_DELAYS_US[-1])
    charge_at = start + (RETRY_DELAYS_US[attempt - 1] if attempt else 0)
    if sub.end_date is not None and sub.end_date <= charge_at:
        return End(END_DATE_REACHED, sub.end_date)
    if not attempt and not period_fits(sub.approved_at, sub.interval, period):
        return End(END_OF_TIME_RANGE, charge_at)
    if sub.max_total_minor is not None:
        if sub.charged_total_minor + sub.amount_minor > sub.max_total_minor:
            return End(MAX_TOTAL_REACHED, charge_at)
    if attempt:
        return Retry(period, attempt, charge_at)
    return Renew(period, charge_at)


def next_action(sub: Subscription, now_us: int) -> Action | None:
    """The action due at `now_us` (its `due_at` at or before it), or None. After downtime
    the actions missed are due one after the other: take the step, then ask again."""
    action = due_action(sub)
    if action is None or action.due_at > now_us:
        return None
    return action


class StaleAction(ValueError):
    """A step was asked for an action that is not the subscription's next one (another
    process took it first: reload and ask `next_action` again)."""


@attrs.frozen
class Step:
    """A step's result: the transition of `STATES` it takes (storage guards its write with
    the transition's sources and the old version) and the record after it."""

    transition: str
    subscription: Subscription


def sequenced(step: Step, events: int) -> Step:
    """`step` as written with `events` events (contract, "Webhooks": two events of one
    resource never share a sequence). Each event counts as a change of its own: the version,
    which is the events' `sequence`, moves on by one per event, so the events of one step
    carry `sequences(before, after)` in the order they are sent (an approval's
    `subscription.activated` below its first `subscription.charged`)."""
    extra = max(events, 1) - 1
    if not extra:
        return step
    after = step.subscription
    return attrs.evolve(step, subscription=attrs.evolve(after, version=after.version + extra))


def sequences(before: Subscription, after: Subscription) -> range:
    """The sequences of the events of the step from `before` to `after`, in order."""
    return range(before.version + 1, after.version + 1)


def _step(sub: Subscription, transition: str, now_us: int, **changes: Any) -> Step:
    STATES.check(transition, sub.status)
    after = attrs.evolve(sub, version=sub.version + 1, updated_at=now_us, **changes)
    action = due_action(after)
    after = attrs.evolve(after, next_action_at=action.due_at if action is not None else None)
    return Step(transition, after)


def approvable(sub: Subscription, now_us: int) -> bool:
    """Whether the customer may approve now: still `paused`, and `end_date` not passed."""
    return sub.status == PAUSED and (sub.end_date is None or now_us < sub.end_date)


def first_period_fits(sub: Subscription, now_us: int) -> bool:
    """Whether an approval at `now_us` has a first period that ends within the time range
    (on a test clock near 9999-12-31 it may not: such an approval is refused)."""
    return period_fits(now_us, sub.interval, 0)


def approve(sub: Subscription, *, customer_code: str, now_us: int) -> Step:
    """The customer approved at `now_us`, the anchor: period 0 is charged with it.

    Raises `TransitionRefused` unless `paused`, `ValueError` when `end_date` has passed,
    `OutOfTime` when the first period would end after the time range.
    """
    STATES.check("approve", sub.status)
    if not approvable(sub, now_us):
        raise ValueError("the subscription's end_date has passed")
    if not first_period_fits(sub, now_us):
        raise OutOfTime(f"the first period would end after {MAX_TIME}")
    return _step(
        sub,
        "approve",
        now_us,
        status=ACTIVE,
        approved_at=now_us,
        customer_code=customer_code,
        charge_count=1,
        charged_total_minor=sub.amount_minor,
        current_period_start=now_us,
        current_period_end=period_start(now_us, sub.interval, 1),
        failed_attempts=0,
    )


def _expect(sub: Subscription, action: Action) -> None:
    if due_action(sub) != action:
        raise StaleAction(f"{action!r} is not the next action of {sub.id}")


def charged(sub: Subscription, action: Renew | Retry, *, now_us: int) -> Step:
    """The charge of `action` succeeded: the period is paid (`renew`, or `recover` from
    `past_due`) and the next one is scheduled from the anchor. Raises `StaleAction`."""
    _expect(sub, action)
    anchor = sub.approved_at
    assert anchor is not None  # due_action is None before approval
    return _step(
        sub,
        "renew" if sub.status == ACTIVE else "recover",
        now_us,
        status=ACTIVE,
        charge_count=sub.charge_count + 1,
        charged_total_minor=sub.charged_total_minor + sub.amount_minor,
        current_period_start=period_start(anchor, sub.interval, action.period),
        current_period_end=period_end(anchor, sub.interval, action.period),
        failed_attempts=0,
    )


def declined(sub: Subscription, action: Renew | Retry, *, now_us: int) -> Step:
    """The charge of `action` was declined: `past_due` with the next retry scheduled, or,
    after the last retry, `ended` with `payment_failed`. The current period stays the last
    one paid. Raises `StaleAction`."""
    _expect(sub, action)
    failed = sub.failed_attempts + 1
    if failed > len(RETRY_DELAYS_US):
        return _step(
            sub,
            "end",
            now_us,
            status=ENDED,
            failed_attempts=failed,
            ended_at=now_us,
            ended_reason=PAYMENT_FAILED,
        )
    transition = "decline" if sub.status == ACTIVE else "retry_declined"
    return _step(sub, transition, now_us, status=PAST_DUE, failed_attempts=failed)


def end(sub: Subscription, action: End, *, now_us: int) -> Step:
    """`end_date` passed (approved or still paused) or the next charge would pass the
    maximum total: `ended` with `action.reason`. Raises `StaleAction`."""
    _expect(sub, action)
    return _step(sub, "end", now_us, status=ENDED, ended_at=now_us, ended_reason=action.reason)


def cancel(sub: Subscription, *, now_us: int) -> Step:
    """The merchant cancelled: nothing is due any more. Raises `TransitionRefused` from a
    final status (the API's 409 `subscription_not_cancellable`)."""
    return _step(sub, "cancel", now_us, status=CANCELLED, cancelled_at=now_us)


def next_charge(
    sub: Subscription, *, transaction_id: str, customer_code: str, now_us: int
) -> Transaction:
    """The charge of the subscription's next period (number `charge_count`: the approval
    charges period 0): the ledger row when it pays, the declined attempt when it does not."""
    return Transaction(
        id=transaction_id,
        merchant_id=sub.merchant_id,
        kind=SUBSCRIPTION_CHARGE,
        checkout_session_id=None,
        customer_code=customer_code,
        amount_minor=sub.amount_minor,
        currency=sub.currency,
        created_at=now_us,
        subscription_id=sub.id,
        period=sub.charge_count,
    )
