"""The test helpers' actions, on the real flows: pay or expire a checkout session,
approve a subscription, as the hosted page and the expiry sweep do (the same actors, the
same conditional writes, ledger rows and events), without a PIN: the merchant's API key
vouches for the test customer (`fgcpay.actors.authorization.vouch`). Each answers the
resource as changed, or raises the error the API answers."""

from __future__ import annotations

from collections.abc import Callable
from typing import Protocol, TypeVar

from fgcpay.actors import authorization
from fgcpay.actors.checkout_session import PAID, CheckoutSessions
from fgcpay.actors.refunds import Refunds
from fgcpay.actors.subscription import APPROVED, CLOCK_MOVED, OUT_OF_TIME, Subscriptions
from fgcpay.actors.test_clocks import TestClocks
from fgcpay.core.clock import Clock
from fgcpay.domain import errors
from fgcpay.domain.checkout import CheckoutSession
from fgcpay.domain.idempotency import Completion
from fgcpay.domain.subscriptions import Subscription
from fgcpay.domain.test_helpers import (
    CheckoutSessionNotOpen,
    PaymentDeclined,
    SubscriptionNotApprovable,
)
from fgcpay.storage import Database

T = TypeVar("T")


class Flows(Protocol):
    """The parts of the running service (or of a command's own host) the helpers drive."""

    @property
    def db(self) -> Database: ...
    @property
    def clock(self) -> Clock: ...
    @property
    def checkout(self) -> CheckoutSessions: ...
    @property
    def subscriptions(self) -> Subscriptions: ...
    @property
    def test_clocks(self) -> TestClocks: ...
    @property
    def refunds(self) -> Refunds: ...


_DECLINES = {
    authorization.DECLINED: ("insufficient_funds", "Payment declined: insufficient funds."),
    authorization.BLOCKED: ("customer_blocked", "Payment refused: this customer is blocked."),
}


def _refusal(outcome: str) -> errors.ServiceError | None:
    """The error of a test customer's refusal (402), None for any other outcome."""
    if outcome in _DECLINES:
        reason, words = _DECLINES[outcome]
        return PaymentDeclined(f"{words} Nothing was charged.", {"reason": reason})
    if outcome in (authorization.WRONG_CREDENTIALS, authorization.LOCKED, authorization.BUSY):
        # The body's rule lets only the test customers through: not reached from the API.
        return errors.ValidationFailed(
            [errors.FieldError("customer_code", "Must be one of the test customers.")]
        )
    return None


def _not_open(session: CheckoutSession) -> CheckoutSessionNotOpen:
    return CheckoutSessionNotOpen(
        f"The checkout session is {session.status}: only a `created` session before its"
        " expires_at can be paid or expired.",
        {"id": session.id, "status": session.status},
    )


Answer = Callable[[T], Completion | None]


def _unanswered(resource: object) -> Completion | None:
    return None


async def pay(
    flows: Flows,
    merchant_id: str,
    session_id: str,
    customer_code: str,
    answer: Answer[CheckoutSession] = _unanswered,
) -> CheckoutSession:
    """Pay the merchant's session as `customer_code`, storing `answer(paid)` (the request's
    idempotent answer) with the payment: the session, `paid`. 404, 402
    `payment_declined`, 409 `checkout_session_not_open`."""
    result = await flows.checkout.test_pay(merchant_id, session_id, customer_code, answer)
    if result.outcome == PAID:
        return result.session
    refused = _refusal(result.outcome)
    if refused is not None:
        raise refused
    raise _not_open(result.session)


async def expire(
    flows: Flows,
    merchant_id: str,
    session_id: str,
    answer: Answer[CheckoutSession] = _unanswered,
) -> CheckoutSession:
    """Expire the merchant's session now, storing `answer(expired)` with it: the session,
    `expired`. 404, 409 `checkout_session_not_open` unless it was `created`."""
    return await flows.checkout.expire_now(merchant_id, session_id, answer)


async def approve(
    flows: Flows,
    merchant_id: str,
    subscription_id: str,
    customer_code: str,
    answer: Answer[Subscription] = _unanswered,
) -> Subscription:
    """Approve the merchant's subscription as `customer_code`, storing `answer(active)`
    with the approval: the subscription, `active`, its first interval charged. 404
    `subscription_not_found`, 402 `payment_declined`, 409 `subscription_not_approvable`
    unless `paused`, 409 `test_clock_advancing` when an advance of its clock began while it
    was approved, 400 on `test_clock` when its first period would end after the time
    range."""
    result = await flows.subscriptions.test_approve(
        merchant_id, subscription_id, customer_code, answer
    )
    if result.outcome == APPROVED:
        return result.subscription
    refused = _refusal(result.outcome)
    if refused is not None:
        raise refused
    if result.outcome == OUT_OF_TIME:
        raise errors.ValidationFailed([errors.FieldError("test_clock", result.message)])
    sub = result.subscription
    if result.outcome == CLOCK_MOVED:
        raise errors.TestClockAdvancing(result.message, {"id": sub.test_clock_id})
    raise SubscriptionNotApprovable(
        f"The subscription is {sub.status}: only a `paused` subscription before its"
        " end_date can be approved.",
        {"id": sub.id, "status": sub.status},
    )
