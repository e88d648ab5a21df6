"""Checkout sessions: the actor that owns each session's state transitions, and the
operations the HTTP layer calls."""

from __future__ import annotations

import logging
from collections.abc import Awaitable, Callable
from decimal import Decimal
from typing import Any

import attrs
from fgcpay.core.clock import Clock
from fgcpay.core.logs import log_event
from fgcpay.domain import checkout, errors, ids, money
from fgcpay.domain.checkout import CheckoutRequest, CheckoutSession
from fgcpay.domain.events import Event, new_event
from fgcpay.domain.idempotency import Completion, IdempotencyLost
from fgcpay.domain.test_helpers import CheckoutSessionNotOpen
from fgcpay.domain.transactions import PAYMENT, Transaction
from fgcpay.storage import Database, checkout_sessions
from fgcpay.storage.owned import OwnedRows

from ._runtime import NOT_LOADED, ActorHost, Message
from .authorization import ALREADY_FINAL, MESSAGES, Charged, Entered, Vouched, charge, enter, vouch
from .refund_desk import RefundDesk

KIND = "checkout_session"
_FINAL = checkout.STATES.final  # paid, expired: a customer's next request is a read
ROWS = OwnedRows("cs_test_", "checkout session", checkout_sessions.of_merchant)


# Confirm's outcome when it paid; the others are `authorization`'s (ALREADY_FINAL and the
# refusals), in the customer's terms.
PAID = "paid"


@attrs.frozen
class ConfirmResult:
    outcome: str
    session: CheckoutSession

    @property
    def message(self) -> str:
        return MESSAGES.get(self.outcome, "")


@attrs.frozen
class Expire(Message[CheckoutSession]):
    """The session's `expires_at` has passed (sent by the expiry sweep); replied with the
    session after it."""


def _unanswered(session: CheckoutSession) -> Completion | None:
    return None


@attrs.frozen
class ExpireNow(Message[CheckoutSession | errors.ServiceError | IdempotencyLost]):
    """A test helper expires the session now, before `expires_at` (which becomes now),
    storing `answer(expired)` (the request's idempotent answer) with it. Replied with the
    session expired, 409 `checkout_session_not_open` unless it was `created`, or the lost
    Idempotency-Key (replied, not raised, so that a state read meanwhile is kept)."""

    answer: Callable[[CheckoutSession], Completion | None] = attrs.field(
        eq=False, default=_unanswered
    )


@attrs.frozen
class Snapshot(Message[CheckoutSession]):
    """Reply with the session as the actor holds it."""


@attrs.frozen
class Confirm(Message[ConfirmResult]):
    """The customer authorizes the payment on the hosted page."""

    customer_code: str
    pin: str = attrs.field(repr=False)  # never in a repr, a log line or an error


@attrs.frozen
class TestPay(Message[ConfirmResult | IdempotencyLost]):
    """A test helper pays as the test customer `customer_code`, vouched for by the
    merchant's API key (`authorization.vouch`): no PIN; the rest as `Confirm`. The paid
    session's `answer` (the request's idempotent answer) is stored with the payment; a
    lost Idempotency-Key is replied, not raised."""

    __test__ = False  # a message, not a test class for pytest to collect

    customer_code: str
    answer: Callable[[CheckoutSession], Completion | None] = attrs.field(
        eq=False, default=_unanswered
    )


# The payment's conditional write, given the session before and after, the payment, the
# time and the event: with the PIN's attempt (the page: an outcome refusing it, or
# whether it paid) or without one (a helper: whether it paid).
_PayWrite = Callable[
    [CheckoutSession, CheckoutSession, Transaction, int, Event], Awaitable[bool | str]
]


Listener = Callable[[CheckoutSession], None]


class CheckoutSessionActor:
    """Behaviour of one checkout session. State: the session, or None if it does not exist.
    It also owns the session's payment: the refunds of it go through `refunds`."""

    kind = KIND

    def __init__(
        self,
        db: Database,
        clock: Clock,
        secret_key: str,
        public_url: str,
        on_change: Listener,
        refunds: RefundDesk | None = None,
    ) -> None:
        self.db = db
        self.clock = clock
        self.secret_key = secret_key
        self.public_url = public_url
        self.on_change = on_change
        self.refunds = refunds

    def _event(self, session: CheckoutSession, event_type: str, now: int) -> Event:
        return new_event(
            ids.event_id(),
            session.merchant_id,
            event_type,
            session.id,
            session.version,
            checkout.to_json(session, self.public_url),
            now,
        )

    async def activate(self, actor_id: str) -> CheckoutSession | None:
        return await self.db.read(checkout_sessions.by_id, actor_id)

    def resting(self, state: CheckoutSession | None) -> bool:
        # A refund of the payment, rarer, activates it again.
        return state is None or state.status in _FINAL

    async def receive(
        self, actor_id: str, state: CheckoutSession | None, message: Any
    ) -> tuple[CheckoutSession | None, Any]:
        if state is None:
            raise errors.NotFound("No such checkout session.")
        if isinstance(message, Snapshot):
            return state, state
        if isinstance(message, Expire):
            state = await self._expire(state)
            return state, state
        if isinstance(message, ExpireNow):
            return await self._expire_now(state, message)
        if isinstance(message, Confirm | TestPay):
            try:
                result = await self._confirm(state, message)
            except IdempotencyLost as lost:
                return state, lost  # nothing written
            return result.session, result
        if self.refunds is not None and self.refunds.handles(message):
            return state, await self.refunds.receive(message)
        raise TypeError(f"unexpected message {message!r}")

    async def _confirm(self, session: CheckoutSession, request: Confirm | TestPay) -> ConfirmResult:
        now = self.clock.now_us()
        if not checkout.STATES.allows(session.status, checkout.PAID):
            return ConfirmResult(ALREADY_FINAL, session)
        if session.is_expired_at(now):
            # Never payable past expires_at, whether or not the sweep has run.
            return ConfirmResult(ALREADY_FINAL, await self._expire(session))
        if isinstance(request, TestPay):
            vouched = await vouch(self.db, request.customer_code)
            if not isinstance(vouched, Vouched):
                return ConfirmResult(vouched, session)
            answer = request.answer

            async def pay_answered(
                before: CheckoutSession,
                paid: CheckoutSession,
                payment: Transaction,
                now: int,
                event: Event,
            ) -> bool:
                return await self.db.write(
                    checkout_sessions.pay_answered, before, payment, now, event, answer(paid)
                )

            return await self._pay(session, vouched.code, now, pay_answered)
        entered = enter(session.merchant_id, request.customer_code, request.pin)
        if not isinstance(entered, Entered):
            return ConfirmResult(entered, session)

        async def pay_with_pin(
            session: CheckoutSession,
            paid: CheckoutSession,
            payment: Transaction,
            now: int,
            event: Event,
        ) -> bool | str:
            # The PIN's attempt decided in the payment's transaction: one commit.
            charged = await charge(
                self.db, self.clock, self.secret_key, entered, checkout_sessions.pay,
                session, payment, now, event,
            )  # fmt: skip
            return charged.result if isinstance(charged, Charged) else charged

        return await self._pay(session, entered.code, now, pay_with_pin)

    async def _pay(
        self, session: CheckoutSession, code: str, now: int, write: _PayWrite
    ) -> ConfirmResult:
        payment = Transaction(
            id=ids.transaction_id(),
            merchant_id=session.merchant_id,
            kind=PAYMENT,
            checkout_session_id=session.id,
            customer_code=code,
            amount_minor=session.amount_minor,
            currency=money.CURRENCY,
            created_at=now,
        )
        pay = checkout.STATES.check("pay", session.status)
        paid = attrs.evolve(
            session, status=pay.target, version=session.version + 1, updated_at=now, paid_at=now
        )
        event = self._event(paid, "checkout.session.paid", now)
        written = await write(session, paid, payment, now, event)
        if isinstance(written, str):  # the PIN's attempt refused it: nothing charged
            return ConfirmResult(written, session)
        if written:
            self.on_change(paid)
            return ConfirmResult(PAID, paid)
        # Another process moved it on first (paid or expired): storage decided.
        fresh = await self.db.read(checkout_sessions.by_id, session.id)
        return ConfirmResult(ALREADY_FINAL, fresh if fresh is not None else session)

    async def _expire_now(
        self, session: CheckoutSession, request: ExpireNow
    ) -> tuple[CheckoutSession | None, CheckoutSession | errors.ServiceError | IdempotencyLost]:
        """The new state, and the reply (see `ExpireNow`)."""
        current: CheckoutSession | None = session
        while current is not None and checkout.STATES.allows(current.status, checkout.EXPIRED):
            now = self.clock.now_us()
            # Expired ahead of time: it expired now, and `expires_at` says so.
            expired = attrs.evolve(
                current,
                status=checkout.EXPIRED,
                version=current.version + 1,
                updated_at=now,
                expires_at=min(now, current.expires_at),
            )
            event = self._event(expired, "checkout.session.expired", now)
            try:
                written = await self.db.write(
                    checkout_sessions.expire_early, current, now, event, request.answer(expired)
                )
            except IdempotencyLost as lost:
                return current, lost  # nothing written
            if written:
                self.on_change(expired)
                return expired, expired
            # Moved on meanwhile (paid, or expired by the sweep): decide on what is stored.
            current = await self.db.read(checkout_sessions.by_id, session.id)
        found = current if current is not None else session
        return current, CheckoutSessionNotOpen(
            f"The checkout session is {found.status}: only a `created` session can be expired.",
            {"id": found.id, "status": found.status},
        )

    async def _expire(self, session: CheckoutSession) -> CheckoutSession:
        now = self.clock.now_us()
        if not checkout.STATES.allows(session.status, checkout.EXPIRED):
            return session
        if not session.is_expired_at(now):
            return session
        expired = attrs.evolve(
            session, status=checkout.EXPIRED, version=session.version + 1, updated_at=now
        )
        event = self._event(expired, "checkout.session.expired", now)
        if await self.db.write(checkout_sessions.mark_expired, session, now, event):
            self.on_change(expired)
            return expired
        # Another process moved it on first: storage decided; take its word.
        fresh = await self.db.read(checkout_sessions.by_id, session.id)
        return fresh if fresh is not None else session


@attrs.define
class CheckoutSessions:
    """Creating, reading and listing sessions; state changes go through the actors."""

    db: Database
    host: ActorHost
    clock: Clock
    ttl_seconds: int
    eur_cents_per_fgc: Decimal
    on_created: Callable[[CheckoutSession], None] = lambda session: None

    def build(self, request: CheckoutRequest, merchant_id: str) -> CheckoutSession:
        return checkout.new_session(
            request,
            session_id=ids.checkout_session_id(),
            merchant_id=merchant_id,
            now_us=self.clock.now_us(),
            ttl_seconds=self.ttl_seconds,
            eur_cents_per_fgc=self.eur_cents_per_fgc,
        )

    async def create(self, session: CheckoutSession, completion: Completion | None) -> None:
        """Store a new session (and its idempotent answer) in one transaction."""
        await self.db.write(checkout_sessions.insert, session, completion)
        self.on_created(session)

    async def get(self, merchant_id: str, session_id: str) -> CheckoutSession:
        """The merchant's session; 404 for an unknown id or another merchant's."""
        return await ROWS.get(self.db, merchant_id, session_id)

    async def page(
        self, merchant_id: str, status: str | None, starting_after: str | None, limit: int
    ) -> tuple[list[CheckoutSession], bool]:
        """One page of the merchant's sessions, newest first, and whether more follow."""
        return await ROWS.page(
            self.db,
            merchant_id,
            starting_after,
            limit,
            lambda tx, after, n: checkout_sessions.page(tx, merchant_id, status, after, n),
        )

    async def expire(self, session_id: str) -> CheckoutSession:
        return await self.host.ask(KIND, session_id, Expire())

    async def confirm(
        self, session_id: str, customer_code: str, pin: str, read: CheckoutSession | None = None
    ) -> ConfirmResult:
        """The customer authorizes with code and PIN; the session's actor decides. `read`:
        the session as the caller has just read it (`find`), which the actor starts from
        if this confirm starts it, rather than reading it again."""
        loaded = NOT_LOADED if read is None else read
        return await self.host.ask(KIND, session_id, Confirm(customer_code, pin), loaded=loaded)

    async def test_pay(
        self,
        merchant_id: str,
        session_id: str,
        customer_code: str,
        answer: Callable[[CheckoutSession], Completion | None] = _unanswered,
    ) -> ConfirmResult:
        """A test helper pays the merchant's session as the test customer `customer_code`
        (no PIN: `TestPay`), storing `answer(paid)` with the payment; 404 for an unknown
        session or another merchant's."""
        await self.get(merchant_id, session_id)
        result = await self.host.ask(KIND, session_id, TestPay(customer_code, answer))
        if isinstance(result, IdempotencyLost):
            raise result
        return result

    async def expire_now(
        self,
        merchant_id: str,
        session_id: str,
        answer: Callable[[CheckoutSession], Completion | None] = _unanswered,
    ) -> CheckoutSession:
        """A test helper expires the merchant's session now (`created` -> `expired`),
        storing `answer(expired)` with it; the session expired. 404 as `get`, 409
        `checkout_session_not_open` unless it was `created`."""
        await self.get(merchant_id, session_id)
        result = await self.host.ask(KIND, session_id, ExpireNow(answer))
        if isinstance(result, errors.ServiceError | IdempotencyLost):
            raise result
        return result

    async def settled(self, session_id: str) -> CheckoutSession | None:
        """The session as it is once its actor has handled what it had queued.

        For a confirm that outlived its ask: the actor handles one message at a time, so a
        snapshot asked now is answered after that confirm committed or gave up. If the
        actor cannot answer in time either, storage's word is taken (None if unreadable).
        """
        try:
            return await self.host.ask(KIND, session_id, Snapshot())
        except errors.ServiceError:
            pass
        try:
            return await self.db.read(checkout_sessions.by_id, session_id)
        except Exception as error:  # the page still answers; the outage is logged
            log_event(
                "could not read a checkout session",
                logging.WARNING,
                error_type=type(error).__name__,
            )
            return None

    async def find(self, session_id: str) -> CheckoutSession | None:
        """Any merchant's session, for the hosted page (the id is the capability)."""
        if not ids.looks_like_id(session_id, "cs_test_", 24):
            return None
        return await self.db.read(checkout_sessions.by_id, session_id)
