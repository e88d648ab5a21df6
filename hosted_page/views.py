"""What the hosted page shows, derived from a session or a subscription: pure, no I/O."""

from __future__ import annotations

from typing import Any
from urllib.parse import parse_qsl, urlencode, urlsplit, urlunsplit

from fgcpay.domain import checkout, customers, money, periods, subscriptions
from fgcpay.domain.checkout import CheckoutSession
from fgcpay.domain.subscriptions import Subscription

# What the page shows: a session to pay or a subscription to approve (the id says which).
Shown = CheckoutSession | Subscription


# Where the page stops following, per resource it shows: the statuses no transition
# leaves, from the tables. Until then the status can still change, and the page shows it
# without a reload (an active subscription cancelled elsewhere reads `cancelled`).
SESSION_STOPS = checkout.STATES.final
SUBSCRIPTION_STOPS = subscriptions.STATES.final
# Every status at which any page stops (the two tables share no status name).
FINAL_STATUSES = SESSION_STOPS | SUBSCRIPTION_STOPS

# When a confirm gets no answer in time. True whether or not it commits later: a session
# is paid at most once, and the page shows `paid` as soon as it is.
TRY_AGAIN = (
    "We could not confirm your payment just now. Please try again in a moment;"
    " you will never be charged twice."
)

_EVERY = {"daily": "every day", "weekly": "every week", "monthly": "every month",
          "yearly": "every year"}  # fmt: skip


def stops_at(shown: Shown) -> frozenset[str]:
    """The statuses at which the page of `shown` stops following."""
    return SUBSCRIPTION_STOPS if isinstance(shown, Subscription) else SESSION_STOPS


def display_status(shown: Shown, now_us: int) -> str:
    """What the customer should see: past `expires_at` a session reads expired even before
    the sweep; a subscription still `paused` past its `end_date` (judged at its own time)
    reads ended, since it can no longer be approved."""
    if isinstance(shown, Subscription):
        if shown.status == subscriptions.PAUSED and not periods.approvable(shown, now_us):
            return subscriptions.ENDED
        return shown.status
    if checkout.STATES.allows(shown.status, checkout.EXPIRED) and shown.is_expired_at(now_us):
        return checkout.EXPIRED
    return shown.status


def with_query_param(url: str, name: str, value: str) -> str:
    """`url` with `name=value` added to its existing query, fragment kept."""
    parts = urlsplit(url)
    query = parse_qsl(parts.query, keep_blank_values=True)
    query = [(k, v) for k, v in query if k != name] + [(name, value)]
    return urlunsplit((parts.scheme, parts.netloc, parts.path, urlencode(query), parts.fragment))


def success_redirect(shown: Shown) -> str:
    """Where the customer goes after paying or approving: `success_url` with
    `checkout_session_id` or `subscription_id` added."""
    name = "subscription_id" if isinstance(shown, Subscription) else "checkout_session_id"
    return with_query_param(shown.success_url, name, shown.id)


def page_context(shown: Shown, merchant_name: str, now_us: int) -> dict[str, Any]:
    """The template's values for the page of a session or a subscription."""
    is_subscription = isinstance(shown, Subscription)
    return {
        "session_id": shown.id,
        "merchant_name": merchant_name,
        "amount": f"{money.format_fgc(shown.amount_minor)} {shown.currency}",
        "interval": _EVERY[shown.interval] if isinstance(shown, Subscription) else None,
        "description": shown.description,
        "action_label": "Approve" if is_subscription else "Pay",
        "status": display_status(shown, now_us),
        # The page's script stops following at these (one source: the tables).
        "final_statuses": " ".join(sorted(stops_at(shown))),
        "cancel_url": shown.cancel_url,
        "return_url": success_redirect(shown),
        "test_customers": [
            {"code": code, "pin": pin, "outcome": _OUTCOME_TEXT[outcome]}
            for code, pin, outcome in customers.TEST_CUSTOMERS
        ],
    }


_OUTCOME_TEXT = {
    customers.SUCCEEDS: "succeeds",
    customers.INSUFFICIENT_FUNDS: "declined: insufficient funds",
    customers.BLOCKED: "refused: customer blocked",
    customers.RENEWALS_DECLINED: "approves; renewals declined",
}
