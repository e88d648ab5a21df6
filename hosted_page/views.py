"""What the hosted page shows, derived from a session: pure, no I/O."""

from __future__ import annotations

from typing import Any
from urllib.parse import parse_qsl, urlencode, urlsplit, urlunsplit

from fgcpay.domain import checkout, customers, money
from fgcpay.domain.states import final_statuses

# Where the page stops following a status: final in the table of a resource it shows.
FINAL_STATUSES = final_statuses([checkout.STATES])

# When a confirm gets no answer in time. True whether or not it commits later: a session
# is paid at most once, and the page shows `paid` as soon as it is.
TRY_AGAIN = (
    "We could not confirm your payment just now. Please try again in a moment;"
    " you will never be charged twice."
)


def display_status(session: checkout.CheckoutSession, now_us: int) -> str:
    """What the customer should see: past `expires_at` reads expired even before the sweep."""
    if checkout.STATES.allows(session.status, checkout.EXPIRED) and session.is_expired_at(now_us):
        return checkout.EXPIRED
    return session.status


def with_query_param(url: str, name: str, value: str) -> str:
    """`url` with `name=value` added to its existing query, fragment kept."""
    parts = urlsplit(url)
    query = parse_qsl(parts.query, keep_blank_values=True)
    query = [(k, v) for k, v in query if k != name] + [(name, value)]
    return urlunsplit((parts.scheme, parts.netloc, parts.path, urlencode(query), parts.fragment))


def success_redirect(session: checkout.CheckoutSession) -> str:
    return with_query_param(session.success_url, "checkout_session_id", session.id)


def page_context(
    session: checkout.CheckoutSession, merchant_name: str, now_us: int
) -> dict[str, Any]:
    return {
        "session_id": session.id,
        "merchant_name": merchant_name,
        "amount": f"{money.format_fgc(session.amount_minor)} {session.currency}",
        "interval": None,
        "description": session.description,
        "action_label": "Pay",
        "status": display_status(session, now_us),
        # The page's script stops following at these (one source: the tables).
        "final_statuses": " ".join(sorted(FINAL_STATUSES)),
        "cancel_url": session.cancel_url,
        "return_url": success_redirect(session),
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
