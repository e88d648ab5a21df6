"""Subscription periods and their schedule, table-driven: when each period starts (month
ends, leap years), which period holds an instant, and what is due when (renewals, the retries
of a declined one, the end at end_date, at the maximum total or after the last retry)."""

from __future__ import annotations

from decimal import Decimal
from typing import Any

import attrs
import pytest
from fgcpay.domain import periods, subscriptions
from fgcpay.domain.periods import DAY_US, End, Renew, Retry, StaleAction, Step
from fgcpay.domain.states import TransitionRefused
from fgcpay.domain.subscriptions import END_DATE_REACHED, STATES, Subscription, SubscriptionRequest
from fgcpay.domain.test_clocks import parse_date_time

AMOUNT = 1250


def at(text: str) -> int:
    """An instant written as the API writes it."""
    return parse_date_time(text)


def paused(**overrides: Any) -> Subscription:
    fields: dict[str, Any] = {
        "amount_minor": AMOUNT,
        "interval": "monthly",
        "description": "Coffee club",
        "merchant_customer_reference": "cust-42",
        "customer_email": None,
        "success_url": "https://shop.example/thanks",
        "cancel_url": "https://shop.example/cart",
        "external_reference": None,
        "max_total_minor": None,
        "end_date": None,
        "test_clock_id": None,
        "metadata": {},
        "used_amount_minor": False,
    }
    fields.update(overrides)
    return subscriptions.new_subscription(
        SubscriptionRequest(**fields),
        subscription_id="sub_test_" + "a" * 24,
        merchant_id="mer_" + "b" * 16,
        now_us=at("2026-01-01T00:00:00Z"),
        eur_cents_per_fgc=Decimal(100),
    )


def checked(before: Subscription, step: Step) -> Subscription:
    """The record after `step`, having checked the step against the state table."""
    after = step.subscription
    assert STATES.check(step.transition, before.status).target == after.status
    assert after.version == before.version + 1
    action = periods.due_action(after)
    assert after.next_action_at == (action.due_at if action is not None else None)
    return after


def approved(anchor: str, **overrides: Any) -> Subscription:
    sub = paused(**overrides)
    return checked(sub, periods.approve(sub, customer_code="TEST-0001", now_us=at(anchor)))


# --- period_start -------------------------------------------------------------------------

PERIOD_STARTS = [
    # daily and weekly: exact steps, the time of day kept to the microsecond
    ("2026-01-31T10:15:00Z", "daily", 0, "2026-01-31T10:15:00.000000Z"),
    ("2026-01-31T10:15:00Z", "daily", 1, "2026-02-01T10:15:00.000000Z"),
    ("2026-01-31T10:15:00Z", "daily", 29, "2026-03-01T10:15:00.000000Z"),
    ("2028-02-28T10:15:00Z", "daily", 1, "2028-02-29T10:15:00.000000Z"),
    ("2026-01-31T10:15:00Z", "daily", 365, "2027-01-31T10:15:00.000000Z"),
    ("2026-12-29T23:59:59.999999Z", "weekly", 1, "2027-01-05T23:59:59.999999Z"),
    ("2026-01-31T10:15:00Z", "weekly", 52, "2027-01-30T10:15:00.000000Z"),
    # monthly from a month's last day: clamped, and back to the 31st when the month has it
    ("2026-01-31T09:30:00Z", "monthly", 1, "2026-02-28T09:30:00.000000Z"),
    ("2026-01-31T09:30:00Z", "monthly", 2, "2026-03-31T09:30:00.000000Z"),
    ("2026-01-31T09:30:00Z", "monthly", 3, "2026-04-30T09:30:00.000000Z"),
    ("2026-01-31T09:30:00Z", "monthly", 4, "2026-05-31T09:30:00.000000Z"),
    ("2026-01-31T09:30:00Z", "monthly", 11, "2026-12-31T09:30:00.000000Z"),
    ("2026-01-31T09:30:00Z", "monthly", 12, "2027-01-31T09:30:00.000000Z"),
    ("2026-01-31T09:30:00Z", "monthly", 13, "2027-02-28T09:30:00.000000Z"),
    ("2028-01-31T09:30:00Z", "monthly", 1, "2028-02-29T09:30:00.000000Z"),
    ("2026-01-30T09:30:00Z", "monthly", 1, "2026-02-28T09:30:00.000000Z"),
    ("2026-01-30T09:30:00Z", "monthly", 2, "2026-03-30T09:30:00.000000Z"),
    ("2026-01-29T09:30:00Z", "monthly", 1, "2026-02-28T09:30:00.000000Z"),
    ("2028-01-29T09:30:00Z", "monthly", 1, "2028-02-29T09:30:00.000000Z"),
    ("2026-03-31T00:00:00Z", "monthly", 1, "2026-04-30T00:00:00.000000Z"),
    ("2026-03-31T00:00:00Z", "monthly", 2, "2026-05-31T00:00:00.000000Z"),
    ("2026-08-31T23:59:59.999999Z", "monthly", 6, "2027-02-28T23:59:59.999999Z"),
    ("2026-12-15T12:00:00Z", "monthly", 1, "2027-01-15T12:00:00.000000Z"),
    ("2026-12-15T12:00:00Z", "monthly", 25, "2029-01-15T12:00:00.000000Z"),
    # yearly from Feb 29: Feb 28 in common years, Feb 29 again in the next leap year
    ("2028-02-29T12:00:00Z", "yearly", 1, "2029-02-28T12:00:00.000000Z"),
    ("2028-02-29T12:00:00Z", "yearly", 2, "2030-02-28T12:00:00.000000Z"),
    ("2028-02-29T12:00:00Z", "yearly", 3, "2031-02-28T12:00:00.000000Z"),
    ("2028-02-29T12:00:00Z", "yearly", 4, "2032-02-29T12:00:00.000000Z"),
    ("2096-02-29T12:00:00Z", "yearly", 4, "2100-02-28T12:00:00.000000Z"),  # 2100: no leap day
    ("2026-06-15T08:00:00Z", "yearly", 1, "2027-06-15T08:00:00.000000Z"),
    ("1970-01-01T00:00:00Z", "yearly", 56, "2026-01-01T00:00:00.000000Z"),
    # an anchor written with an offset is the same instant: its UTC day and time are kept
    ("2026-02-01T00:30:00+01:00", "monthly", 1, "2026-02-28T23:30:00.000000Z"),
]


@pytest.mark.parametrize(("anchor", "interval", "n", "expected"), PERIOD_STARTS)
def test_period_start(anchor: str, interval: str, n: int, expected: str) -> None:
    assert periods.period_start(at(anchor), interval, n) == at(expected)
    if n:
        assert periods.period_end(at(anchor), interval, n - 1) == at(expected)


def test_every_interval_is_scheduled() -> None:
    for interval in subscriptions.INTERVALS:
        assert periods.period_start(0, interval, 1) > 0


@pytest.mark.parametrize(
    ("interval", "n"),
    [("monthly", -1), ("daily", -1), ("hourly", 1), ("Monthly", 1), ("yearly", 8000)],
)
def test_a_period_that_cannot_exist_is_refused(interval: str, n: int) -> None:
    with pytest.raises(ValueError):
        periods.period_start(at("2026-01-31T09:30:00Z"), interval, n)


# --- period_at ----------------------------------------------------------------------------

PERIODS_AT = [
    ("2026-01-31T09:30:00Z", "daily", "2026-01-31T09:30:00Z", 0),
    ("2026-01-31T09:30:00Z", "daily", "2026-02-01T09:29:59.999999Z", 0),
    ("2026-01-31T09:30:00Z", "daily", "2026-02-01T09:30:00Z", 1),
    ("2026-01-31T09:30:00Z", "weekly", "2026-02-14T09:30:00Z", 2),
    ("2026-01-31T09:30:00Z", "monthly", "2026-02-28T09:29:59.999999Z", 0),
    ("2026-01-31T09:30:00Z", "monthly", "2026-02-28T09:30:00Z", 1),
    ("2026-01-31T09:30:00Z", "monthly", "2026-03-01T00:00:00Z", 1),
    ("2026-01-31T09:30:00Z", "monthly", "2026-03-31T09:29:59Z", 1),
    ("2026-01-31T09:30:00Z", "monthly", "2026-03-31T09:30:00Z", 2),
    ("2026-01-31T09:30:00Z", "monthly", "2027-01-31T09:30:00Z", 12),
    ("2026-01-15T09:30:00Z", "monthly", "2026-02-15T09:29:00Z", 0),  # day reached, time not
    ("2026-01-15T09:30:00Z", "monthly", "2026-02-14T23:00:00Z", 0),
    ("2028-02-29T12:00:00Z", "yearly", "2029-02-28T11:59:59Z", 0),
    ("2028-02-29T12:00:00Z", "yearly", "2029-02-28T12:00:00Z", 1),
    ("2028-02-29T12:00:00Z", "yearly", "2032-02-29T11:59:59Z", 3),
    ("2028-02-29T12:00:00Z", "yearly", "2032-02-29T12:00:00Z", 4),
]


@pytest.mark.parametrize(("anchor", "interval", "instant", "expected"), PERIODS_AT)
def test_period_at(anchor: str, interval: str, instant: str, expected: int) -> None:
    assert periods.period_at(at(anchor), interval, at(instant)) == expected


@pytest.mark.parametrize("interval", subscriptions.INTERVALS)
@pytest.mark.parametrize(
    "anchor", ["2026-01-31T09:30:00Z", "2028-02-29T00:00:00Z", "2026-12-31T23:59:59.999999Z"]
)
def test_each_period_holds_its_start_and_not_the_instant_before(anchor: str, interval: str) -> None:
    for n in range(1, 60):
        start = periods.period_start(at(anchor), interval, n)
        assert periods.period_at(at(anchor), interval, start) == n
        assert periods.period_at(at(anchor), interval, start - 1) == n - 1


def test_an_instant_before_the_anchor_is_in_no_period() -> None:
    with pytest.raises(ValueError):
        periods.period_at(at("2026-01-31T09:30:00Z"), "monthly", at("2026-01-31T09:29:59Z"))
    with pytest.raises(ValueError):
        periods.period_at(0, "fortnightly", 1)


# --- approval and the renewals ------------------------------------------------------------


def test_approval_charges_period_zero_and_schedules_the_first_renewal() -> None:
    sub = approved("2026-01-31T09:30:00Z")
    anchor = at("2026-01-31T09:30:00Z")
    assert (sub.status, sub.approved_at, sub.customer_code) == ("active", anchor, "TEST-0001")
    assert (sub.charge_count, sub.charged_total_minor, sub.failed_attempts) == (1, AMOUNT, 0)
    assert sub.current_period_start == anchor
    assert sub.current_period_end == sub.next_action_at == at("2026-02-28T09:30:00Z")
    assert periods.next_action(sub, at("2026-02-28T09:29:59.999999Z")) is None
    assert periods.next_action(sub, at("2026-02-28T09:30:00Z")) == Renew(
        1, at("2026-02-28T09:30:00Z")
    )


def test_nothing_is_due_for_a_paused_or_final_subscription() -> None:
    sub = paused()
    assert sub.next_action_at is None and periods.due_action(sub) is None
    cancelled = checked(sub, periods.cancel(sub, now_us=at("2026-01-02T00:00:00Z")))
    assert cancelled.next_action_at is None and cancelled.cancelled_at == at("2026-01-02T00:00:00Z")
    assert periods.next_action(cancelled, at("2099-01-01T00:00:00Z")) is None


def test_a_paused_subscription_with_an_end_date_ends_then_unapproved() -> None:
    end_date = at("2026-03-01T00:00:00Z")
    sub = paused(end_date=end_date)
    assert sub.next_action_at == end_date  # stored at creation: the sweep finds it
    assert periods.due_action(sub) == End(END_DATE_REACHED, end_date)
    assert periods.next_action(sub, end_date - 1) is None
    action = periods.next_action(sub, end_date)
    assert isinstance(action, End)
    ended = checked(sub, periods.end(sub, action, now_us=end_date))
    assert (ended.status, ended.ended_reason, ended.ended_at, ended.next_action_at) == (
        "ended",
        END_DATE_REACHED,
        end_date,
        None,
    )
    assert ended.charge_count == 0 and ended.approved_at is None


def run_until(sub: Subscription, now_us: int, outcome: str = "paid") -> list[Any]:
    """Every action due up to `now_us`, in order, each charge succeeding (or declined)."""
    taken: list[Any] = []
    while (action := periods.next_action(sub, now_us)) is not None:
        taken.append(action)
        if isinstance(action, End):
            step = periods.end(sub, action, now_us=action.due_at)
        elif outcome == "paid":
            step = periods.charged(sub, action, now_us=action.due_at)
        else:
            step = periods.declined(sub, action, now_us=action.due_at)
        sub = checked(sub, step)
    taken.append(sub)
    return taken


def test_a_year_of_monthly_renewals_from_jan_31_with_a_total_of_twelve_intervals() -> None:
    sub = approved("2026-01-31T09:30:00Z", max_total_minor=12 * AMOUNT)
    *actions, final = run_until(sub, at("2027-06-01T00:00:00Z"))
    days = ["02-28", "03-31", "04-30", "05-31", "06-30", "07-31", "08-31", "09-30", "10-31"]
    days += ["11-30", "12-31"]
    assert actions[:-1] == [
        Renew(n, at(f"2026-{day}T09:30:00Z")) for n, day in enumerate(days, start=1)
    ]
    assert actions[-1] == End("max_total_reached", at("2027-01-31T09:30:00Z"))
    assert (final.status, final.ended_reason, final.ended_at) == (
        "ended",
        "max_total_reached",
        at("2027-01-31T09:30:00Z"),
    )
    assert (final.charge_count, final.charged_total_minor) == (12, 12 * AMOUNT)
    assert final.current_period_start == at("2026-12-31T09:30:00Z")
    assert final.current_period_end == at("2027-01-31T09:30:00Z")
    assert final.next_action_at is None


@pytest.mark.parametrize("interval", subscriptions.INTERVALS)
def test_missed_periods_are_charged_in_order_from_the_anchor(interval: str) -> None:
    sub = approved("2028-02-29T12:00:00Z", interval=interval)
    anchor = at("2028-02-29T12:00:00Z")
    back = periods.period_start(anchor, interval, 5) + 1  # five periods of downtime
    *actions, final = run_until(sub, back)
    assert actions == [Renew(n, periods.period_start(anchor, interval, n)) for n in range(1, 6)]
    assert final.charge_count == 6 and final.charged_total_minor == 6 * AMOUNT
    assert final.next_action_at == periods.period_start(anchor, interval, 6)


def test_an_action_already_taken_is_stale() -> None:
    sub = approved("2026-01-31T09:30:00Z", interval="daily")
    first = Renew(1, at("2026-02-01T09:30:00Z"))
    after = checked(sub, periods.charged(sub, first, now_us=first.due_at))
    with pytest.raises(StaleAction):
        periods.charged(after, first, now_us=first.due_at)
    with pytest.raises(StaleAction):
        periods.declined(after, Retry(2, 1, at("2026-02-03T09:30:00Z")), now_us=0)
    with pytest.raises(StaleAction):
        periods.end(after, End("end_date_reached", 0), now_us=0)
    cancelled = checked(after, periods.cancel(after, now_us=first.due_at))
    with pytest.raises(StaleAction):
        periods.charged(cancelled, Renew(2, at("2026-02-02T09:30:00Z")), now_us=0)


# --- a declined renewal: past_due, retried 1 and 3 days after the due time ----------------

DUE = "2026-02-28T09:30:00Z"  # period 1 of a monthly subscription approved on Jan 31
RETRIES = [
    # outcomes of the charges of period 1, then what each step did and what comes next
    (
        ["paid"],
        [("renew", "active", Renew(2, at("2026-03-31T09:30:00Z")))],
    ),
    (
        ["declined", "paid"],
        [
            ("decline", "past_due", Retry(1, 1, at("2026-03-01T09:30:00Z"))),
            ("recover", "active", Renew(2, at("2026-03-31T09:30:00Z"))),
        ],
    ),
    (
        ["declined", "declined", "paid"],
        [
            ("decline", "past_due", Retry(1, 1, at("2026-03-01T09:30:00Z"))),
            ("retry_declined", "past_due", Retry(1, 2, at("2026-03-03T09:30:00Z"))),
            ("recover", "active", Renew(2, at("2026-03-31T09:30:00Z"))),
        ],
    ),
    (
        ["declined", "declined", "declined"],
        [
            ("decline", "past_due", Retry(1, 1, at("2026-03-01T09:30:00Z"))),
            ("retry_declined", "past_due", Retry(1, 2, at("2026-03-03T09:30:00Z"))),
            ("end", "ended", None),
        ],
    ),
]


@pytest.mark.parametrize(("outcomes", "expected"), RETRIES)
def test_the_retry_schedule_of_a_declined_renewal(
    outcomes: list[str], expected: list[tuple[str, str, Any]]
) -> None:
    sub = approved("2026-01-31T09:30:00Z")
    seen = []
    for outcome in outcomes:
        action = periods.due_action(sub)
        assert isinstance(action, Renew | Retry) and action.period == 1
        # The service was down for an hour: the schedule keeps to the due time regardless.
        now_us = action.due_at + 3600 * 1_000_000
        assert periods.next_action(sub, now_us) == action
        step = (periods.charged if outcome == "paid" else periods.declined)(
            sub, action, now_us=now_us
        )
        sub = checked(sub, step)
        seen.append((step.transition, sub.status, periods.due_action(sub)))
    assert seen == expected
    if outcomes[-1] == "paid":  # the period keeps its anchor, whichever attempt paid it
        assert (sub.charge_count, sub.failed_attempts) == (2, 0)
        assert sub.current_period_start == at(DUE)
        assert sub.current_period_end == at("2026-03-31T09:30:00Z")
    else:
        assert (sub.ended_reason, sub.ended_at) == ("payment_failed", at("2026-03-03T10:30:00Z"))
        assert (sub.charge_count, sub.charged_total_minor) == (1, AMOUNT)
        assert sub.current_period_end == at(DUE)  # the last period paid


def test_a_decline_recorded_without_its_end_still_ends() -> None:
    sub = approved("2026-01-31T09:30:00Z")
    sub = attrs.evolve(sub, status="past_due", failed_attempts=3)
    last_retry = at("2026-03-03T09:30:00Z")
    assert periods.next_action(sub, last_retry - 1) is None
    assert periods.next_action(sub, last_retry) == End("payment_failed", last_retry)


def test_a_day_of_declines_in_one_run() -> None:
    sub = approved("2026-01-31T09:30:00Z", interval="daily")
    *actions, final = run_until(sub, at("2026-02-05T00:00:00Z"), outcome="declined")
    assert actions == [
        Renew(1, at("2026-02-01T09:30:00Z")),
        Retry(1, 1, at("2026-02-02T09:30:00Z")),
        Retry(1, 2, at("2026-02-04T09:30:00Z")),
    ]
    assert (final.status, final.ended_reason) == ("ended", "payment_failed")


# --- the end: end_date on and around a due time, the maximum total -------------------------

D1 = at(DUE)
END_DATES = [
    # end_date, what is due first, and (when period 1 was charged) what is due after it
    pytest.param(D1 - 1, End("end_date_reached", D1 - 1), None, id="just before"),
    # at the due time: ends, uncharged
    pytest.param(D1, End("end_date_reached", D1), None, id="at"),
    pytest.param(D1 + 1, Renew(1, D1), End("end_date_reached", D1 + 1), id="just after"),
    pytest.param(
        at("2026-03-31T09:30:00Z"),
        Renew(1, D1),
        End("end_date_reached", at("2026-03-31T09:30:00Z")),
        id="at the next",
    ),
    pytest.param(
        at("2026-03-31T09:30:01Z"),
        Renew(1, D1),
        Renew(2, at("2026-03-31T09:30:00Z")),
        id="after the next",
    ),
]


@pytest.mark.parametrize(("end_date", "first", "second"), END_DATES)
def test_end_date_on_and_around_a_due_time(end_date: int, first: Any, second: Any) -> None:
    sub = approved("2026-01-31T09:30:00Z", end_date=end_date)
    assert periods.due_action(sub) == first
    assert sub.next_action_at == first.due_at
    if isinstance(first, End):
        after = checked(sub, periods.end(sub, first, now_us=first.due_at))
        assert (after.status, after.ended_reason) == ("ended", "end_date_reached")
        assert (after.ended_at, after.charge_count) == (end_date, 1)
        return
    after = checked(sub, periods.charged(sub, first, now_us=first.due_at))
    assert periods.due_action(after) == second


@pytest.mark.parametrize(
    ("end_date", "expected"),
    [
        pytest.param(
            at("2026-03-01T09:29:59Z"),
            End("end_date_reached", at("2026-03-01T09:29:59Z")),
            id="before the retry",
        ),
        pytest.param(
            at("2026-03-01T09:30:00Z"),
            End("end_date_reached", at("2026-03-01T09:30:00Z")),
            id="at the retry",
        ),
        pytest.param(
            at("2026-03-01T09:30:01Z"),
            Retry(1, 1, at("2026-03-01T09:30:00Z")),
            id="after the retry",
        ),
    ],
)
def test_end_date_during_the_retries(end_date: int, expected: Any) -> None:
    sub = approved("2026-01-31T09:30:00Z", end_date=end_date)
    sub = checked(sub, periods.declined(sub, Renew(1, D1), now_us=D1))
    assert sub.status == "past_due" and periods.due_action(sub) == expected


MAX_TOTALS = [
    # the maximum total, the charges made, and what is due at the next period's start
    (None, 1, "renew"),
    (AMOUNT, 1, "max_total_reached"),  # exactly one interval: the approval's charge only
    (2 * AMOUNT - 1, 1, "max_total_reached"),
    (2 * AMOUNT, 1, "renew"),
    (3 * AMOUNT, 3, "max_total_reached"),  # exactly reached by the third charge
    (3 * AMOUNT + 1, 3, "max_total_reached"),  # the fourth would exceed it
    (4 * AMOUNT - 1, 3, "max_total_reached"),
    (4 * AMOUNT, 3, "renew"),
]


@pytest.mark.parametrize(("max_total", "charges", "expected"), MAX_TOTALS)
def test_the_maximum_total_exactly_reached_or_exceeded(
    max_total: int | None, charges: int, expected: str
) -> None:
    sub = approved("2026-01-31T09:30:00Z", max_total_minor=max_total)
    while sub.charge_count < charges:
        action = periods.due_action(sub)
        assert isinstance(action, Renew)
        sub = checked(sub, periods.charged(sub, action, now_us=action.due_at))
    due = periods.period_start(at("2026-01-31T09:30:00Z"), "monthly", charges)
    action = periods.due_action(sub)
    if expected == "renew":
        assert action == Renew(charges, due)
    else:
        assert action == End(expected, due)


def test_end_date_wins_a_tie_with_the_maximum_total() -> None:
    sub = approved("2026-01-31T09:30:00Z", max_total_minor=AMOUNT, end_date=D1)
    assert periods.due_action(sub) == End("end_date_reached", D1)


# --- approval and cancellation -------------------------------------------------------------


@pytest.mark.parametrize(
    ("end_date", "now", "expected"),
    [
        (None, "2030-01-01T00:00:00Z", True),
        (at("2026-02-01T00:00:00Z"), "2026-01-31T23:59:59.999999Z", True),
        (at("2026-02-01T00:00:00Z"), "2026-02-01T00:00:00Z", False),
    ],
)
def test_approval_before_end_date_only(end_date: int | None, now: str, expected: bool) -> None:
    sub = paused(end_date=end_date)
    assert periods.approvable(sub, at(now)) is expected
    if not expected:
        with pytest.raises(ValueError):
            periods.approve(sub, customer_code="TEST-0001", now_us=at(now))


def test_only_a_paused_subscription_is_approved() -> None:
    sub = approved("2026-01-31T09:30:00Z")
    assert not periods.approvable(sub, at("2026-02-01T00:00:00Z"))
    with pytest.raises(TransitionRefused):
        periods.approve(sub, customer_code="TEST-0001", now_us=at("2026-02-01T00:00:00Z"))


@pytest.mark.parametrize("declines", [0, 1])
def test_cancel_stops_everything(declines: int) -> None:
    sub = approved("2026-01-31T09:30:00Z")
    if declines:
        sub = checked(sub, periods.declined(sub, Renew(1, D1), now_us=D1))
    assert sub.status == ("past_due" if declines else "active")
    cancelled = checked(sub, periods.cancel(sub, now_us=D1 + 5))
    assert (cancelled.status, cancelled.cancelled_at, cancelled.next_action_at) == (
        "cancelled",
        D1 + 5,
        None,
    )
    for final in (cancelled, run_until(approved("2026-01-31T09:30:00Z", end_date=D1), D1)[-1]):
        assert final.status in STATES.final
        with pytest.raises(TransitionRefused):
            periods.cancel(final, now_us=D1 + 6)


def test_retries_come_one_and_three_days_after_the_due_time() -> None:
    assert periods.RETRY_DELAYS_US == (DAY_US, 3 * DAY_US)
