"""A test customer's code and PIN checked on the hosted page: one way for every resource a
customer authorizes (a session's payment, a subscription's approval)."""

from __future__ import annotations

import logging
from collections.abc import AsyncIterator, Callable
from contextlib import asynccontextmanager
from typing import Concatenate, ParamSpec, TypeVar

import attrs
import trio
from fgcpay.core.clock import Clock
from fgcpay.core.logs import log_event
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
# A slot left by a crash or a cancellation is released within this (shielded) bound; past
# it, or with the database down, the slot ends with the code's failure window.
RELEASE_SECONDS = 5.0


@attrs.define(eq=False)
class _Slot:
    """A PIN comparison slot of one code, from its reservation until a write that settles
    it commits; `held` says whether whoever leaves `authorize` must release it."""

    scope: str
    code: str
    held: bool = False

    async def settle(
        self, db: Database, fn: Callable[Concatenate[Tx, P], T], *args: P.args, **kwargs: P.kwargs
    ) -> T:
        """Run `fn`, a write that settles the attempt in its transaction.

        Not shielded here: storage waits for a write it was handed (commit or rollback)
        whatever its caller does, and answers which (storage/_threads.py), so the slot is
        known settled (returned) or still held (raised, a cancellation before the write
        was handed over included) and is never released twice; and a charge not yet
        handed over when an ask's deadline passes is cancelled, as the rule says
        (docs/architecture.md, "An ask's deadline")."""
        result = await db.write(fn, *args, **kwargs)
        self.held = False  # no checkpoint since the write returned: known committed
        return result


@attrs.frozen
class Authorized:
    """The code and PIN are right and the customer pays. The attempt is still reserved: the
    caller settles it with `settle` and a write that calls `customers.settle_attempt(tx,
    scope, code, now, True)` in the same transaction as the charge, so the customer's
    confirm costs one durable commit. Left unsettled (a crash, a cancellation, a refusal
    on the way), `authorize` releases it as it exits."""

    scope: str
    code: str
    _slot: _Slot = attrs.field(repr=False)

    async def settle(
        self, db: Database, fn: Callable[Concatenate[Tx, P], T], *args: P.args, **kwargs: P.kwargs
    ) -> T:
        """Run the charge's write `fn`, which settles the attempt (see the class)."""
        return await self._slot.settle(db, fn, *args, **kwargs)


@asynccontextmanager
async def authorize(
    db: Database, clock: Clock, secret_key: str, merchant_id: str, customer_code: str, pin: str
) -> AsyncIterator[Authorized | str]:
    """Check `customer_code` and `pin` for a charge of `merchant_id`'s: `Authorized`, or the
    outcome that refuses it (one of `MESSAGES`' keys), with the attempt settled.

    The comparison is reserved first, in one atomic write per code (not per resource): a
    code that is locked, or has five attempts counted or in flight, is refused before any
    PIN is compared, in every process. An unknown code is counted and locked the same way.
    Lockout windows run on the service's time (never a test clock's).

    The reserved slot is released on every exit that did not settle it: an exception
    (the actor crashed: a crash is not a wrong PIN, nothing is counted), a cancellation,
    a return before the charge. The happy path pays nothing for it: the charge's own
    transaction settles the slot.
    """
    slot = _Slot("", "")
    try:
        yield await _authorize(db, clock, secret_key, slot, merchant_id, customer_code, pin)
    finally:
        if slot.held:
            await _release(db, slot)


async def _authorize(
    db: Database,
    clock: Clock,
    secret_key: str,
    slot: _Slot,
    merchant_id: str,
    customer_code: str,
    pin: str,
) -> Authorized | str:
    code = customers.normalize_code(customer_code)
    if not code or len(code) > customers.MAX_CODE_LENGTH:
        return WRONG_CREDENTIALS
    slot.scope, slot.code = customers.lock_scope(code, merchant_id), code
    attempt = await _reserve(db, clock, slot)
    if attempt.busy:
        return BUSY
    if attempt.locked:
        return LOCKED
    customer = attempt.customer
    matched = len(pin) <= customers.MAX_PIN_LENGTH and customers.pin_matches(
        secret_key, customer, code, pin
    )
    if matched and customer is not None and customers.pays(customer.outcome):
        return Authorized(slot.scope, code, slot)
    locked = await slot.settle(
        db, customer_rows.settle_attempt, slot.scope, code, clock.now_us(), matched
    )
    if not matched or customer is None:
        return LOCKED if locked else WRONG_CREDENTIALS
    if customer.outcome == customers.INSUFFICIENT_FUNDS:
        return DECLINED
    return BLOCKED


async def _reserve(db: Database, clock: Clock, slot: _Slot) -> customers.PinAttempt:
    """Reserve a PIN comparison; while the code's five slots are held by attempts in flight
    (other payments with it right now), wait for them to settle: they decide in
    milliseconds whether the code locks, and a customer whose turn comes after them must
    not be told "locked" when nothing was wrong.

    Only that wait is bounded, never a reservation under way: cancelled, it would leave
    nothing to answer with, or a slot reserved that nobody settles. So each reservation
    is shielded and marks the slot held as it returns: a cancellation meanwhile lands
    after it, and `authorize` releases the slot."""
    delay = RESERVE_RETRY_SECONDS
    give_up_at = trio.current_time() + RESERVE_WAIT_SECONDS
    while True:
        with trio.CancelScope(shield=True):
            attempt = await db.write(
                customer_rows.reserve_attempt, slot.scope, slot.code, clock.now_us()
            )
            slot.held = not attempt.locked
        # Cancelled meanwhile (an ask's deadline): no PIN is compared, the slot goes back.
        await trio.lowlevel.checkpoint_if_cancelled()
        left = give_up_at - trio.current_time()
        if not attempt.busy or left <= 0:
            return attempt
        await trio.sleep(min(delay, left))
        delay = min(delay * 2, 0.2)


async def _release(db: Database, slot: _Slot) -> None:
    """Give back a slot nobody settled. Shielded, so that a cancelled actor still releases
    it, and bounded, so that a database that does not answer cannot hold its exit."""
    failure = "timeout"
    with trio.move_on_after(RELEASE_SECONDS, shield=True):
        try:
            await db.write(customer_rows.release_attempt, slot.scope, slot.code)
            slot.held = False
        except Exception as error:  # the crash that brought us here is the one to raise
            failure = type(error).__name__
    if slot.held:
        log_event(
            "a PIN slot was not released; it ends with its failure window",
            logging.WARNING,
            error_type=failure,
        )


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
