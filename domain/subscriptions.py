"""Subscriptions: the record, its states and transitions (the request rules, the wire form
and the period arithmetic join here and in `periods.py`)."""

from __future__ import annotations

import attrs

from .states import StateMachine, Transition

PAUSED = "paused"
ACTIVE = "active"
PAST_DUE = "past_due"
CANCELLED = "cancelled"
ENDED = "ended"

# The one place a subscription's status rules live (contract, "Subscriptions"): the actor
# decides with it, and storage's conditional writes guard with it.
STATES = StateMachine(
    "subscription",
    statuses=(PAUSED, ACTIVE, PAST_DUE, CANCELLED, ENDED),
    transitions=(
        # The customer approved on the hosted page; the first interval is charged with it.
        Transition("approve", {PAUSED}, ACTIVE),
        # A period charged on time (the status stays; the period moves on).
        Transition("renew", {ACTIVE}, ACTIVE),
        # A renewal charge was declined; it is retried 1 and 3 days after the due time.
        Transition("decline", {ACTIVE}, PAST_DUE),
        # A retry was declined again, with a retry still to come.
        Transition("retry_declined", {PAST_DUE}, PAST_DUE),
        # A retry succeeded: active again, the period keeping its anchor.
        Transition("recover", {PAST_DUE}, ACTIVE),
        Transition("cancel", {PAUSED, ACTIVE, PAST_DUE}, CANCELLED),
        # end_date reached, the next charge would pass max_total, or the retries failed.
        Transition("end", {ACTIVE, PAST_DUE}, ENDED),
    ),
)
STATUSES = STATES.statuses

INTERVALS = ("daily", "weekly", "monthly", "yearly")

# `ended_reason` values.
END_DATE_REACHED = "end_date_reached"
MAX_TOTAL_REACHED = "max_total_reached"
PAYMENT_FAILED = "payment_failed"
ENDED_REASONS = (END_DATE_REACHED, MAX_TOTAL_REACHED, PAYMENT_FAILED)


@attrs.frozen
class Subscription:
    """One subscription as stored. Money in minor units, times in microseconds (UTC)."""

    id: str
    merchant_id: str
    status: str
    version: int  # the compare-and-set token and the events' `sequence`
    interval: str  # one of INTERVALS
    amount_minor: int  # per interval
    currency: str
    eur_cents: int
    description: str
    merchant_customer_reference: str
    customer_email: str | None
    success_url: str
    cancel_url: str
    external_reference: str | None
    metadata_json: str
    max_total_minor: int | None
    end_date: int | None
    test_clock_id: str | None
    created_at: int
    updated_at: int
    # Set at approval: the anchor periods are counted from, and the customer charged.
    approved_at: int | None = None
    customer_code: str | None = None
    charge_count: int = 0  # charges made: the approval's is number 1
    charged_total_minor: int = 0
    current_period_start: int | None = None
    current_period_end: int | None = None  # the next charge's due time
    # The durable timer: when the sweep next hands this subscription to its actor (a
    # renewal, a retry, or the end); None once nothing is due (paused or final).
    next_action_at: int | None = None
    failed_attempts: int = 0  # declined charges of the current period
    cancelled_at: int | None = None
    ended_at: int | None = None
    ended_reason: str | None = None
