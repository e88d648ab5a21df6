"""How much one test clock advance bills, counted without enumerating periods, and the
furthest time an advance may reach (contract, "Test clocks": at most 1,000 periods of any
one subscription and 10,000 charges in all, renewals and retries, per advance).

Each count follows `periods.due_action` step by step in closed form: the renewals of a
subscription whose customer pays are the period starts up to the new time (`period_at`,
constant time even for a daily subscription over 8,000 years), cut where `end_date`,
`max_total_amount_fgc` or the time range would end it; a customer whose renewals are
declined is charged at most three more times (the renewal and its two retries)."""

from __future__ import annotations

from collections.abc import Sequence

import attrs

from .periods import RETRY_DELAYS_US, period_at, period_fits, period_start
from .subscriptions import ACTIVE, PAST_DUE, Subscription
from .times import MAX_TIME_US

MAX_PERIODS_PER_SUBSCRIPTION = 1_000
MAX_CHARGES_PER_ADVANCE = 10_000


@attrs.frozen
class Billable:
    """A subscription on the clock that may be charged, and whether its customer's
    renewals pay (a declined renewal is retried, then the subscription ends)."""

    subscription: Subscription
    renewals_pay: bool


def _periods_started(anchor: int, interval: str, first: int, until_us: int) -> int:
    """How many periods from number `first` on start at or before `until_us`."""
    if until_us < anchor:
        return 0
    return max(0, period_at(anchor, interval, until_us) - first + 1)


def charges_by(billable: Billable, until_us: int) -> int:
    """How many charges (renewals and retries, paid or declined) the subscription's actor
    makes when its clock reaches `until_us`, counted from its stored state."""
    sub = billable.subscription
    anchor = sub.approved_at
    if sub.status not in (ACTIVE, PAST_DUE) or anchor is None:
        return 0
    n, attempt = sub.charge_count, sub.failed_attempts
    if attempt > len(RETRY_DELAYS_US):
        return 0  # the end is due, not a charge
    start = period_start(anchor, sub.interval, n)
    end_date = sub.end_date if sub.end_date is not None else MAX_TIME_US + 1
    if sub.max_total_minor is not None:
        affordable = max(0, (sub.max_total_minor - sub.charged_total_minor) // sub.amount_minor)
    else:
        affordable = MAX_TIME_US  # more than any count
    if attempt == 0 and not period_fits(anchor, sub.interval, n):
        return 0  # ends at the end of the time range
    if not billable.renewals_pay:
        # The attempts left of period n, each due at its own time; declines add nothing to
        # the total, so the maximum allows all of them or none.
        if affordable < 1:
            return 0
        due = [start + (RETRY_DELAYS_US[a - 1] if a else 0) for a in range(attempt, 3)]
        return sum(1 for at in due if at <= until_us and at < end_date)
    first_at = start + (RETRY_DELAYS_US[attempt - 1] if attempt else 0)
    if first_at > until_us or first_at >= end_date or affordable < 1:
        return 0
    # Then period n + 1 on, each at its start (due at once after a late retry).
    later = _periods_started(anchor, sub.interval, n + 1, until_us)
    before_end = _periods_started(anchor, sub.interval, n + 1, end_date - 1)
    last_fitting = period_at(anchor, sub.interval, MAX_TIME_US) - 1  # its end is in range
    fitting = max(0, last_fitting - n)
    return 1 + min(later, before_end, fitting, affordable - 1)


@attrs.frozen
class TooFar:
    """An advance refused for its bounds: `max_frozen_time` is as far as one may go now.
    `charges_left` is set when what bound it was the clock's charges over its life
    (`domain.limits.MAX_CHARGES_PER_TEST_CLOCK`): how many it may still bill."""

    max_frozen_time: int
    charges_left: int | None = None


def within(
    billables: Sequence[Billable], until_us: int, most_charges: int = MAX_CHARGES_PER_ADVANCE
) -> bool:
    """Whether one advance up to `until_us` stays within both bounds, billing at most
    `most_charges` in all (fewer than `MAX_CHARGES_PER_ADVANCE` when the clock has little
    left of its life's charges)."""
    total = 0
    for billable in billables:
        count = charges_by(billable, until_us)
        if count > MAX_PERIODS_PER_SUBSCRIPTION:
            return False
        total += count
        if total > most_charges:
            return False
    return True


def max_frozen_time(
    billables: Sequence[Billable],
    frozen_time_us: int,
    most_charges: int = MAX_CHARGES_PER_ADVANCE,
) -> int:
    """The furthest time an advance from `frozen_time_us` may reach within both bounds (the
    end of the time range when nothing would pass them). The counts only grow with the
    time, so a binary search over the microseconds: some 60 rounds, each counting every
    subscription once in constant time."""
    if within(billables, MAX_TIME_US, most_charges):
        return MAX_TIME_US
    low, high = frozen_time_us, MAX_TIME_US  # within at low, not at high
    while high - low > 1:
        middle = (low + high) // 2
        if within(billables, middle, most_charges):
            low = middle
        else:
            high = middle
    return low
