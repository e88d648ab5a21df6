"""Subscriptions: the actor that owns each subscription's transitions, and the operations
the HTTP layer, the hosted page, the renewal sweep and test clocks call."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from decimal import Decimal
from typing import Any

import attrs
from fgcpay.core.clock import Clock
from fgcpay.domain import customers, errors, ids, limits, periods, subscriptions, transactions
from fgcpay.domain import test_clocks as clock_rules
from fgcpay.domain.events import Event, new_event
from fgcpay.domain.idempotency import Completion, IdempotencyLost
from fgcpay.domain.subscriptions import Subscription, SubscriptionRequest
from fgcpay.domain.transactions import Transaction, TransactionWire
from fgcpay.storage import Database
from fgcpay.storage import customers as customer_rows
from fgcpay.storage import limits as limit_counts
from fgcpay.storage import subscriptions as subscription_rows
from fgcpay.storage import test_clocks as clock_rows
from fgcpay.storage.owned import OwnedRows

from . import authorization
from ._runtime import NOT_LOADED, ActorHost, Message
from .authorization import ALREADY_FINAL, MESSAGES, Charged, Entered, Vouched, enter, vouch
from .refund_desk import RefundDesk

KIND = "subscription"
_FINAL = subscriptions.STATES.final
ROWS = OwnedRows(
    subscriptions.SUBSCRIPTION_PREFIX,
    "subscription",
    subscription_rows.of_merchant,
    errors.SubscriptionNotFound,
)


# Outcomes of Approve beyond the checkout's (the same codes, PIN rules and messages).
APPROVED = "approved"
# The first period would end after the time range (a test clock near 9999-12-31T23:59:59Z).
OUT_OF_TIME = "out_of_time"
# A test helper's approval found its test clock moved on (an advance began) between reading
# the clock's time and writing: nothing written; approve again once the clock is ready.
CLOCK_MOVED = "clock_moved"
_OWN_MESSAGES = {
    OUT_OF_TIME: "This subscription cannot start at its test clock's time: its first period"
    " would end after 9999-12-31T23:59:59Z, the last time the service keeps. Nothing was"
    " charged.",
    CLOCK_MOVED: "The subscription's test clock moved on (an advance began) while it was"
    " being approved. Nothing was charged; approve it again once the clock is ready.",
}


@attrs.frozen
class ApproveResult:
    """What an approval did, in the customer's terms (the outcomes of `ConfirmResult`)."""

    outcome: str
    subscription: Subscription

    @property
    def message(self) -> str:
        return _OWN_MESSAGES.get(self.outcome) or MESSAGES.get(self.outcome, "")


@attrs.frozen
class Approve(Message[ApproveResult]):
    """The customer approves on the hosted page; the first interval is charged with it."""

    customer_code: str
    pin: str = attrs.field(repr=False)  # never in a repr, a log line or an error


def _unanswered(sub: Subscription) -> Completion | None:
    return None


@attrs.frozen
class TestApprove(Message[ApproveResult | IdempotencyLost]):
    """A test helper approves as the test customer `customer_code`, vouched for by the
    merchant's API key (`authorization.vouch`): no PIN; the rest as `Approve`. The active
    subscription's `answer` (the request's idempotent answer) is stored with the
    approval; a lost Idempotency-Key is replied, not raised."""

    __test__ = False  # a message, not a test class for pytest to collect

    customer_code: str
    answer: Callable[[Subscription], Completion | None] = attrs.field(eq=False, default=_unanswered)


@attrs.frozen
class Cancel(Message[Subscription | errors.ServiceError | IdempotencyLost]):
    """The merchant cancels. Replied with the subscription as cancelled, or the refusal or
    the lost Idempotency-Key (replied, not raised: see `SubscriptionActor._cancel`)."""

    # The idempotent answer stored with the cancel, made from the subscription as cancelled
    # (None without a key, and for the dashboard's cancel).
    answer: Callable[[Subscription], Completion | None] = attrs.field(eq=False, default=_unanswered)


@attrs.frozen
class Act(Message[Subscription | None]):
    """Do everything due now, one step at a time, in order: renewals, retries, the end
    (sent by the renewal sweep and by a test clock's advance); replied with the
    subscription after it (None once it is gone)."""


@attrs.frozen
class Snapshot(Message[Subscription]):
    """Reply with the subscription as the actor holds it."""


@attrs.frozen
class Reload(Message[Subscription | None]):
    """Read the subscription again from storage (its test clock was deleted with it)."""


Listener = Callable[[Subscription], None]

# Each transition's conditional write: with a charge (money moves) or without.
_CHARGING_WRITES = {
    "approve": subscription_rows.approve,
    "renew": subscription_rows.renew,
    "recover": subscription_rows.recover,
}
_WRITES = {
    "decline": subscription_rows.decline,
    "retry_declined": subscription_rows.retry_declined,
    "end": subscription_rows.end,
}


def _transaction_of(event_type: str, attempt: Transaction | None) -> TransactionWire | None:
    """`data.transaction` of an event (contract, "Webhooks"): `subscription.charged` shows
    the ledger row written, `subscription.payment_failed` the declined attempt (no id: a
    declined charge moves no money and is in no ledger); other events none."""
    if attempt is None:
        return None
    if event_type == "subscription.charged":
        return transactions.to_json(attempt)
    if event_type == "subscription.payment_failed":
        return transactions.to_json(attempt, declined=True)
    return None


class SubscriptionActor:
    """Behaviour of one subscription. State: the subscription, or None if it does not exist.
    It also owns the subscription's charges: the refunds of them go through `refunds`."""

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
        # Test customers' outcomes never change while a process runs: one read per code.
        self._outcomes: dict[str, str | None] = {}

    async def activate(self, actor_id: str) -> Subscription | None:
        return await self.db.read(subscription_rows.by_id, actor_id)

    def resting(self, state: Subscription | None) -> bool:
        # Cancelled or ended: only a refund of a charge, rarer, activates it again.
        return state is None or state.status in _FINAL

    async def receive(
        self, actor_id: str, state: Subscription | None, message: Any
    ) -> tuple[Subscription | None, Any]:
        if isinstance(message, Reload):
            state = await self.activate(actor_id)
            return state, state
        if self.refunds is not None and self.refunds.handles(message):
            # The desk reads the payment itself: a charge deleted with its test clock is a
            # transaction not found, not a subscription.
            return state, await self.refunds.receive(message)
        if state is None:
            raise errors.SubscriptionNotFound("No such subscription.")
        if isinstance(message, Snapshot):
            return state, state
        if isinstance(message, Act):
            state = await self._act(state)
            return state, state
        if isinstance(message, Cancel):
            return await self._cancel(state, message)
        if isinstance(message, Approve | TestApprove):
            try:
                result = await self._approve(state, message)
            except IdempotencyLost as lost:
                return state, lost  # nothing written
            return result.subscription, result
        raise TypeError(f"unexpected message {message!r}")

    # -- time -----------------------------------------------------------------------------

    async def _now(self, sub: Subscription) -> int | None:
        """The subscription's time: its test clock's frozen time, else the service's.
        None when its clock is gone (deleted with the subscription)."""
        if sub.test_clock_id is None:
            return self.clock.now_us()
        clock = await self.db.read(clock_rows.of_merchant, sub.merchant_id, sub.test_clock_id)
        return None if clock is None else clock.frozen_time

    async def _reload(self, sub: Subscription) -> Subscription | None:
        # Another process moved it on first: storage decided; take its word.
        return await self.db.read(subscription_rows.by_id, sub.id)

    # -- writes ---------------------------------------------------------------------------

    def _events(
        self,
        before: Subscription,
        after: Subscription,
        event_types: Sequence[str],
        attempt: Transaction | None = None,
    ) -> list[Event]:
        """The events of the step from `before` to `after` (`periods.sequenced` for their
        number), each with its own sequence, in order. Stamped with the service's time, even
        on a test clock: an event's time is when its deliveries are due, and a clock's time
        may be years ahead of the real one. One microsecond apart, so that the first is due
        first: the outbox sends each endpoint's deliveries oldest due first."""
        now = self.clock.now_us()
        wire = subscriptions.to_json(after, self.public_url)
        return [
            new_event(
                ids.event_id(),
                after.merchant_id,
                event_type,
                after.id,
                sequence,
                wire,
                now + offset,
                _transaction_of(event_type, attempt),
            )
            for offset, (event_type, sequence) in enumerate(
                zip(event_types, periods.sequences(before, after), strict=True)
            )
        ]

    def _charge(self, before: Subscription, code: str, now: int) -> Transaction:
        return periods.next_charge(
            before, transaction_id=ids.transaction_id(), customer_code=code, now_us=now
        )

    async def _write(
        self,
        before: Subscription,
        step: periods.Step,
        now: int,
        event_types: Sequence[str],
        answer: Callable[[Subscription], Completion | None] = _unanswered,
    ) -> Subscription | None:
        """Write `step` with its events (and its charge where money moves; for a cancel,
        with `answer(after)`, the request's idempotent answer); the record as stored after
        it, or storage's word when the row moved on first."""
        step = periods.sequenced(step, len(event_types))
        after = step.subscription
        # The charge of the period due (`before.charge_count`): the ledger row when the step
        # pays; shown declined by `subscription.payment_failed` when it does not. Only the
        # events of a charge show it (`_transaction_of`).
        attempt = None
        if after.customer_code is not None:  # approved: set by the approval
            attempt = self._charge(before, after.customer_code, now)
        events = self._events(before, after, event_types, attempt)
        if step.transition in _CHARGING_WRITES:
            assert attempt is not None  # charging steps follow the approval, which sets the code
            written = await self.db.write(
                _CHARGING_WRITES[step.transition], before, after, attempt, events
            )
        elif step.transition == "cancel":
            written = await self.db.write(
                subscription_rows.cancel, before, after, events, answer(after)
            )
        else:
            written = await self.db.write(_WRITES[step.transition], before, after, events)
        if written:
            self.on_change(after)
            return after
        return await self._reload(before)

    # -- Act ------------------------------------------------------------------------------

    async def _act(self, sub: Subscription | None) -> Subscription | None:
        # One step at a time, asking again after each: after downtime every missed period
        # is charged in order, each once (its write is guarded by the version before it).
        # A test clock holds still while it advances: its time is read once, not per step.
        now = None if sub is None else await self._now(sub)
        while sub is not None:
            if sub.test_clock_id is None:
                now = self.clock.now_us()
            if now is None:
                return await self._reload(sub)
            action = periods.next_action(sub, now)
            if action is None:
                return sub
            moved = await self._take(sub, action, now)
            if moved == sub:
                return sub  # nothing changed (cannot happen after a failed write): stop
            sub = moved
        return sub

    async def _take(
        self, sub: Subscription, action: periods.Action, now: int
    ) -> Subscription | None:
        # On a test clock each step happens at its own due time, as if time had flowed
        # there; on the real clock at the time it really happened (late after downtime).
        at = action.due_at if sub.test_clock_id is not None else now
        if isinstance(action, periods.End):
            return await self._write(
                sub, periods.end(sub, action, now_us=at), at, ["subscription.ended"]
            )
        if await self._renewal_pays(sub):
            step = periods.charged(sub, action, now_us=at)
            return await self._write(sub, step, at, ["subscription.charged"])
        step = periods.declined(sub, action, now_us=at)
        event_types = ["subscription.payment_failed"]
        if step.subscription.status == subscriptions.ENDED:
            event_types.append("subscription.ended")
        return await self._write(sub, step, at, event_types)

    async def _renewal_pays(self, sub: Subscription) -> bool:
        code = sub.customer_code
        if code is None:
            return False
        if code not in self._outcomes:
            customer = await self.db.read(customer_rows.by_code, code)
            self._outcomes[code] = None if customer is None else customer.outcome
        outcome = self._outcomes[code]
        return outcome is not None and customers.renewal_pays(outcome)

    # -- Cancel ---------------------------------------------------------------------------

    async def _cancel(
        self, sub: Subscription, message: Cancel
    ) -> tuple[Subscription | None, Subscription | errors.ServiceError | IdempotencyLost]:
        """The new state, and the reply: the cancelled record or the refusal (a reply, not
        a raise, so that the state read meanwhile is kept), or that the request's
        Idempotency-Key was taken over and nothing written (no crash of the actor's)."""
        current: Subscription | None = sub
        while current is not None:
            if not subscriptions.STATES.allows(current.status, subscriptions.CANCELLED):
                return current, errors.SubscriptionNotCancellable(
                    f"The subscription is {current.status} and cannot be cancelled.",
                    {"id": current.id, "status": current.status},
                )
            now = await self._now(current)
            if now is None:
                current = await self._reload(current)
                break
            step = periods.cancel(current, now_us=now)
            try:
                written = await self._write(
                    current, step, now, ["subscription.cancelled"], message.answer
                )
            except IdempotencyLost as lost:
                return current, lost
            if written == step.subscription:
                return written, written
            current = written  # moved on meanwhile: decide again on what is stored
        return current, errors.SubscriptionNotFound("No such subscription.", {"id": sub.id})

    # -- Approve --------------------------------------------------------------------------

    async def _approve(self, sub: Subscription, request: Approve | TestApprove) -> ApproveResult:
        now = await self._now(sub)
        if now is None or not periods.approvable(sub, now):
            return ApproveResult(ALREADY_FINAL, sub)
        if not periods.first_period_fits(sub, now):
            # Refused before the PIN is compared: nothing reserved, nothing to settle.
            return ApproveResult(OUT_OF_TIME, sub)
        if isinstance(request, TestApprove):
            vouched = await vouch(self.db, request.customer_code)
            if not isinstance(vouched, Vouched):
                return ApproveResult(vouched, sub)
            return await self._activate(sub, vouched, now, request.answer)
        # The same check and lockout per code as a session's confirm, in the approval's
        # own transaction.
        entered = enter(sub.merchant_id, request.customer_code, request.pin)
        if not isinstance(entered, Entered):
            return ApproveResult(entered, sub)
        return await self._activate(sub, entered, now)

    async def _activate(
        self,
        sub: Subscription,
        customer: Entered | Vouched,
        now: int,
        answer: Callable[[Subscription], Completion | None] = _unanswered,
    ) -> ApproveResult:
        # Two events of one change, each with its own sequence: activated, then charged.
        event_types = ("subscription.activated", "subscription.charged")
        step = periods.sequenced(
            periods.approve(sub, customer_code=customer.code, now_us=now), len(event_types)
        )
        after = step.subscription
        charge = self._charge(sub, customer.code, now)
        events = self._events(sub, after, event_types, charge)
        if isinstance(customer, Vouched):  # a test helper's: no PIN to check
            written = await self.db.write(
                subscription_rows.approve_answered, sub, after, charge, events, answer(after)
            )
        else:
            charged = await authorization.charge(
                self.db, self.clock, self.secret_key, customer,
                subscription_rows.approve_at_clock_time, sub, after, charge, events,
            )  # fmt: skip
            if not isinstance(charged, Charged):  # refused: nothing charged
                return ApproveResult(charged, sub)
            written = charged.result
        if written:
            self.on_change(after)
            return ApproveResult(APPROVED, after)
        fresh = await self._reload(sub)
        if isinstance(customer, Vouched) and fresh is not None and periods.approvable(fresh, now):
            # Still `paused`: its clock moved on (the page shows itself again instead, and
            # its customer approves at the clock's new time).
            return ApproveResult(CLOCK_MOVED, fresh)
        return ApproveResult(ALREADY_FINAL, fresh if fresh is not None else sub)


@attrs.define
class Subscriptions:
    """Creating, reading and listing subscriptions; state changes go through the actors."""

    db: Database
    host: ActorHost
    clock: Clock
    public_url: str
    eur_cents_per_fgc: Decimal
    # Called after a commit that wrote events (the creation's): rings the dispatcher.
    on_created: Callable[[Subscription], None] = lambda subscription: None

    async def creation_time(self, merchant_id: str, test_clock_id: str | None) -> int:
        """The time a subscription is created at: its test clock's frozen time, else the
        service's. 400 on `test_clock` when the merchant has no such clock or it holds
        `limits.MAX_SUBSCRIPTIONS_PER_TEST_CLOCK`, 409 `test_clock_advancing` while it
        advances."""
        if test_clock_id is None:
            return self.clock.now_us()
        found = None
        if ids.looks_like_id(test_clock_id, clock_rules.TEST_CLOCK_PREFIX, 24):
            found = await self.db.read(clock_rows.of_merchant, merchant_id, test_clock_id)
        if found is None:
            raise errors.ValidationFailed([errors.FieldError("test_clock", "No such test clock.")])
        if found.status == clock_rules.ADVANCING:
            # As Stripe: what is created now would be created at a time the advance is
            # still moving through; wait for `ready`.
            raise errors.TestClockAdvancing(
                "The test clock is still advancing; try again once it is ready.",
                {"id": found.id},
            )
        most = limits.MAX_SUBSCRIPTIONS_PER_TEST_CLOCK
        on_clock = await self.db.read(
            limit_counts.subscriptions_on_clock, found.merchant_id, found.id
        )
        if on_clock >= most:
            raise errors.ValidationFailed(
                [
                    errors.FieldError(
                        "test_clock",
                        f"This test clock has {most} subscriptions, the most one may have:"
                        " use another clock.",
                    )
                ]
            )
        return found.frozen_time

    def build(
        self, request: SubscriptionRequest, merchant_id: str, now_us: int | None = None
    ) -> Subscription:
        """A new `paused` subscription made at `now_us` (`creation_time`; default the
        service's time)."""
        return subscriptions.new_subscription(
            request,
            subscription_id=ids.subscription_id(),
            merchant_id=merchant_id,
            now_us=self.clock.now_us() if now_us is None else now_us,
            eur_cents_per_fgc=self.eur_cents_per_fgc,
        )

    async def create(self, subscription: Subscription, completion: Completion | None) -> None:
        """Store a new subscription, its `subscription.created` event and its idempotent
        answer in one transaction."""
        event = new_event(
            ids.event_id(),
            subscription.merchant_id,
            "subscription.created",
            subscription.id,
            subscription.version,
            subscriptions.to_json(subscription, self.public_url),
            self.clock.now_us(),  # not a test clock's time (see SubscriptionActor._event)
        )
        await self.db.write(subscription_rows.insert, subscription, completion, [event])
        self.on_created(subscription)

    async def get(self, merchant_id: str, subscription_id: str) -> Subscription:
        """The merchant's subscription; 404 `subscription_not_found` for an unknown id or
        another merchant's."""
        return await ROWS.get(self.db, merchant_id, subscription_id)

    async def page(
        self, merchant_id: str, status: str | None, starting_after: str | None, limit: int
    ) -> tuple[list[Subscription], bool]:
        """One page of the merchant's subscriptions, newest first, and whether more follow."""
        return await ROWS.page(
            self.db,
            merchant_id,
            starting_after,
            limit,
            lambda tx, after, n: subscription_rows.page(tx, merchant_id, status, after, n),
        )

    async def cancel(
        self,
        merchant_id: str,
        subscription_id: str,
        answer: Callable[[Subscription], Completion | None] = _unanswered,
    ) -> Subscription:
        """Cancel the merchant's subscription, storing `answer(cancelled)` (the idempotent
        answer) with it: 404 `subscription_not_found`, 409 `subscription_not_cancellable`
        once `cancelled` or `ended`."""
        await self.get(merchant_id, subscription_id)
        result = await self.host.ask(KIND, subscription_id, Cancel(answer))
        if isinstance(result, errors.ServiceError | IdempotencyLost):
            raise result
        return result

    async def approve(
        self, subscription_id: str, customer_code: str, pin: str, read: Subscription | None = None
    ) -> ApproveResult:
        """The customer approves with code and PIN; the subscription's actor decides.
        `read`: the subscription as the caller has just read it (`find`), which the actor
        starts from if this approval starts it, rather than reading it again."""
        loaded = NOT_LOADED if read is None else read
        approve = Approve(customer_code, pin)
        return await self.host.ask(KIND, subscription_id, approve, loaded=loaded)

    async def test_approve(
        self,
        merchant_id: str,
        subscription_id: str,
        customer_code: str,
        answer: Callable[[Subscription], Completion | None] = _unanswered,
    ) -> ApproveResult:
        """A test helper approves the merchant's subscription as the test customer
        `customer_code` (no PIN: `TestApprove`), storing `answer(active)` with the
        approval; 404 `subscription_not_found` as `get`."""
        await self.get(merchant_id, subscription_id)
        result = await self.host.ask(KIND, subscription_id, TestApprove(customer_code, answer))
        if isinstance(result, IdempotencyLost):
            raise result
        return result

    async def act(self, subscription_id: str) -> Subscription | None:
        """Do everything due now; the subscription after it (None once it is gone)."""
        return await self.host.ask(KIND, subscription_id, Act())

    async def snapshot(self, subscription_id: str) -> Subscription:
        """The subscription as its actor holds it (after what it had queued)."""
        return await self.host.ask(KIND, subscription_id, Snapshot())

    async def find(self, subscription_id: str) -> Subscription | None:
        """Any merchant's subscription, for the hosted page (the id is the capability)."""
        if not ids.looks_like_id(subscription_id, subscriptions.SUBSCRIPTION_PREFIX, 24):
            return None
        return await self.db.read(subscription_rows.by_id, subscription_id)
