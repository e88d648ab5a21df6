"""A test customer's code and PIN checked on the hosted page: one way for every resource a
customer authorizes (a session's payment, a subscription's approval)."""

from __future__ import annotations

from collections.abc import Callable
from typing import Concatenate, Generic, ParamSpec, TypeVar, cast

import attrs
from fgcpay.core.clock import Clock
from fgcpay.domain import customers
from fgcpay.storage import Database, Tx
from fgcpay.storage import customers as customer_rows

P = ParamSpec("P")
T = TypeVar("T")

# Outcomes of an authorization, in the customer's terms.
ALREADY_FINAL = "already_final"  # the resource is in a final status: nothing to authorize
WRONG_CREDENTIALS = "wrong_credentials"
LOCKED = "locked"
DECLINED = "declined"
BLOCKED = "blocked"
BUSY = "busy"  # the code's counter cannot be taken now (its merchant going): try again

MESSAGES = {
    WRONG_CREDENTIALS: "The customer code or PIN is not right. Nothing was charged.",
    BUSY: "This customer code is being checked in another payment. Nothing was charged;"
    " please try again in a moment.",
    LOCKED: "Too many wrong PINs for this customer code. It is locked for 15 minutes.",
    DECLINED: "Payment declined: insufficient funds. Nothing was charged.",
    BLOCKED: "Payment refused: this customer is blocked. Nothing was charged.",
}


@attrs.frozen
class Entered:
    """A customer code and PIN as entered on the hosted page (`enter`), checked in the
    transaction of the charge they authorize (`charge`)."""

    scope: str  # the code's wrong-PIN counter: the merchant's, or every merchant's
    code: str
    pin: str = attrs.field(repr=False)  # never in a repr, a log line or an error


@attrs.frozen
class Charged(Generic[T]):
    """The code and PIN were right, the customer pays, and the charge was written."""

    result: T


def enter(merchant_id: str, customer_code: str, pin: str) -> Entered | str:
    """The code and PIN a customer entered for a charge of `merchant_id`'s, or
    `WRONG_CREDENTIALS` for a code no customer can have (nothing is counted for it)."""
    code = customers.normalize_code(customer_code)
    if not code or len(code) > customers.MAX_CODE_LENGTH:
        return WRONG_CREDENTIALS
    return Entered(customers.lock_scope(code, merchant_id), code, pin)


async def charge(
    db: Database,
    clock: Clock,
    secret_key: str,
    entered: Entered,
    fn: Callable[Concatenate[Tx, P], T],
    *args: P.args,
    **kwargs: P.kwargs,
) -> Charged[T] | str:
    """Check `entered` and, when the customer pays, write the charge `fn(tx, *args,
    **kwargs)`: `Charged` with its result, or the outcome that refused it (one of
    `MESSAGES`' keys), nothing charged.

    One write decides all of it (`customer_rows.attempt`): a code that is locked is
    refused before any PIN is compared, in every process; an unknown code is counted and
    locked the same way; a wrong PIN is counted, the fifth in 15 minutes locking the code;
    a right one pays in the same transaction, so the customer's confirm costs one durable
    commit. A crash leaves nothing counted and nothing charged (the transaction rolls
    back); a cancellation before the write is handed over writes nothing (an ask's
    deadline, docs/architecture.md), and one after it does not stop it: storage waits
    for a write it was handed whatever its caller does (storage/_threads.py), so a caller
    who gives up cannot get a wrong PIN uncounted. Lockout windows run on the
    service's time (never a test clock's).
    """
    code, pin = entered.code, entered.pin

    def matches(customer: customers.Customer | None) -> bool:
        return len(pin) <= customers.MAX_PIN_LENGTH and customers.pin_matches(
            secret_key, customer, code, pin
        )

    tried = await db.write(
        customer_rows.attempt, entered.scope, code, clock.now_us(), matches, fn, args, kwargs
    )
    if tried.refused:
        return BUSY if tried.busy else LOCKED
    customer = tried.customer
    if not tried.matched or customer is None:
        return LOCKED if tried.locked else WRONG_CREDENTIALS
    if customers.pays(customer.outcome):
        return Charged(cast(T, tried.charged))
    if customer.outcome == customers.INSUFFICIENT_FUNDS:
        return DECLINED
    return BLOCKED


@attrs.frozen
class Vouched:
    """A test customer a test helper pays or approves as (`POST /test_helpers/...`): the
    merchant's own API key vouches for it, so no PIN is asked or compared and no attempt is
    reserved or counted (the hosted page's check is untouched: only this path skips it).
    The charge's write needs no attempt settled with it."""

    code: str


async def vouch(db: Database, customer_code: str) -> Vouched | str:
    """The test customer `customer_code` paying without a PIN: `Vouched`, or the outcome
    refusing it as the page would (`DECLINED`, `BLOCKED`), with nothing written; an unknown
    code, or one that is not a documented test customer, is `WRONG_CREDENTIALS`."""
    code = customers.normalize_code(customer_code)
    if code not in customers.PER_MERCHANT_CODES:
        return WRONG_CREDENTIALS
    customer = await db.read(customer_rows.by_code, code)
    if customer is None:
        return WRONG_CREDENTIALS
    if customers.pays(customer.outcome):
        return Vouched(code)
    if customer.outcome == customers.INSUFFICIENT_FUNDS:
        return DECLINED
    return BLOCKED
