"""A test customer's code and PIN checked on the hosted page: one way for every resource a
customer authorizes (a session's payment, a subscription's approval)."""

from __future__ import annotations

import attrs
import trio
from fgcpay.clock import Clock
from fgcpay.domain import customers
from fgcpay.storage import Database
from fgcpay.storage import customers as customer_rows

# Outcomes of an authorization, in the customer's terms.
ALREADY_FINAL = "already_final"  # the resource is in a final status: nothing to authorize
WRONG_CREDENTIALS = "wrong_credentials"
LOCKED = "locked"
DECLINED = "declined"
BLOCKED = "blocked"
BUSY = "busy"  # the code's attempts in flight did not settle in time: try again

MESSAGES = {
    WRONG_CREDENTIALS: "The customer code or PIN is not right. Nothing was charged.",
    BUSY: "This customer code is being checked in another payment. Nothing was charged;"
    " please try again in a moment.",
    LOCKED: "Too many wrong PINs for this customer code. It is locked for 15 minutes.",
    DECLINED: "Payment declined: insufficient funds. Nothing was charged.",
    BLOCKED: "Payment refused: this customer is blocked. Nothing was charged.",
}

# An authorization waits this long at most for a code's attempts in flight to settle.
RESERVE_WAIT_SECONDS = 5.0
RESERVE_RETRY_SECONDS = 0.01


@attrs.frozen
class Authorized:
    """The code and PIN are right and the customer pays. The attempt is still reserved: the
    caller settles it (`customers.settle_attempt(tx, scope, code, now, True)`) in the same
    transaction as the charge, so the customer's confirm costs one durable commit."""

    scope: str
    code: str


async def authorize(
    db: Database, clock: Clock, secret_key: str, merchant_id: str, customer_code: str, pin: str
) -> Authorized | str:
    """Check `customer_code` and `pin` for a charge of `merchant_id`'s: `Authorized`, or the
    outcome that refuses it (one of `MESSAGES`' keys), with the attempt settled.

    The comparison is reserved first, in one atomic write per code (not per resource): a
    code that is locked, or has five attempts counted or in flight, is refused before any
    PIN is compared, in every process. An unknown code is counted and locked the same way.
    Lockout windows run on the service's time (never a test clock's).
    """
    code = customers.normalize_code(customer_code)
    if not code or len(code) > customers.MAX_CODE_LENGTH:
        return WRONG_CREDENTIALS
    scope = customers.lock_scope(code, merchant_id)
    attempt = await _reserve(db, clock, scope, code)
    if attempt.busy:
        return BUSY
    if attempt.locked:
        return LOCKED
    customer = attempt.customer
    matched = len(pin) <= customers.MAX_PIN_LENGTH and customers.pin_matches(
        secret_key, customer, code, pin
    )
    if matched and customer is not None and customers.pays(customer.outcome):
        return Authorized(scope, code)
    locked = await db.write(customer_rows.settle_attempt, scope, code, clock.now_us(), matched)
    if not matched or customer is None:
        return LOCKED if locked else WRONG_CREDENTIALS
    if customer.outcome == customers.INSUFFICIENT_FUNDS:
        return DECLINED
    return BLOCKED


async def _reserve(db: Database, clock: Clock, scope: str, code: str) -> customers.PinAttempt:
    """Reserve a PIN comparison; while the code's five slots are held by attempts in flight
    (other payments with it right now), wait for them to settle: they decide in
    milliseconds whether the code locks, and a customer whose turn comes after them must
    not be told "locked" when nothing was wrong.

    Only that wait is bounded, never a reservation under way: cancelled, it would leave
    nothing to answer with, or a slot reserved that nobody settles."""
    delay = RESERVE_RETRY_SECONDS
    give_up_at = trio.current_time() + RESERVE_WAIT_SECONDS
    while True:
        attempt = await db.write(customer_rows.reserve_attempt, scope, code, clock.now_us())
        left = give_up_at - trio.current_time()
        if not attempt.busy or left <= 0:
            return attempt
        await trio.sleep(min(delay, left))
        delay = min(delay * 2, 0.2)
