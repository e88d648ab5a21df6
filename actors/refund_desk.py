"""The refund desk: what the actor owning a payment does with refund messages.

A refund's payment is owned by the actor of what it paid: a checkout session's actor for
a payment, a subscription's actor for a subscription charge. That actor hands every
refund message (`MESSAGES`) to its desk, which decides the refundable rest and the
reviews of the payment's refunds one message at a time, so in one process they never
race; across processes the conditional writes behind it (the reservation on the payment's
ledger row, the refund's status and version) decide. The client that routes a refund to
its owner is `fgcpay.actors.refunds`.
"""

from __future__ import annotations

from collections.abc import Callable

import attrs
from fgcpay.core.clock import Clock
from fgcpay.domain import errors, ids, refunds
from fgcpay.domain.events import Event, new_event
from fgcpay.domain.idempotency import Completion, IdempotencyLost
from fgcpay.domain.refunds import Refund, RefundRequest
from fgcpay.domain.transactions import Transaction
from fgcpay.storage import Database
from fgcpay.storage import refunds as refund_rows
from fgcpay.storage import transactions as transaction_rows
from fgcpay.storage.owned import OwnedRows

from ._runtime import Message

ROWS = OwnedRows(refunds.REFUND_PREFIX, "refund", refund_rows.of_merchant)


@attrs.frozen
class CreateRefund(Message[Refund | IdempotencyLost]):
    """Refund part or all of the payment (or charge) `payment_id`, owned by the actor.
    Replied with the refund written, or that the request's Idempotency-Key was taken over
    (see `RefundDesk._create`)."""

    merchant_id: str
    payment_id: str
    request: RefundRequest
    # The idempotent answer stored with the refund, made from it (None without a key).
    answer: Callable[[Refund], Completion | None] = attrs.field(eq=False)


def unanswered(refund: Refund) -> Completion | None:
    return None


@attrs.frozen
class ReviewRefund(Message[Refund | IdempotencyLost]):
    """Approve or reject (`decision`, a transition of `refunds.STATES`) a refund of the
    actor's payment. Replied as `CreateRefund` is."""

    merchant_id: str
    refund_id: str
    decision: str
    # The idempotent answer stored with the review, made from the refund as reviewed (None
    # without a key, and for the dashboard's and the operator's reviews).
    answer: Callable[[Refund], Completion | None] = attrs.field(eq=False, default=unanswered)


MESSAGES = (CreateRefund, ReviewRefund)
Listener = Callable[[Refund], None]


class RefundDesk:
    """The refund messages' handling, shared by the checkout-session and subscription
    actors (they hand it every message of `MESSAGES`). Replies with the refund; refusals
    are raised as `ServiceError`s, which leave the owner's state as it was."""

    def __init__(self, db: Database, clock: Clock, on_change: Listener) -> None:
        self.db = db
        self.clock = clock
        self.on_change = on_change

    @staticmethod
    def handles(message: object) -> bool:
        return isinstance(message, MESSAGES)

    async def receive(self, message: object) -> Refund | IdempotencyLost:
        if isinstance(message, CreateRefund):
            return await self._create(message)
        if isinstance(message, ReviewRefund):
            return await self._review(message)
        raise TypeError(f"unexpected message {message!r}")

    def _event(self, refund: Refund, event_type: str) -> Event:
        return new_event(
            ids.event_id(),
            refund.merchant_id,
            event_type,
            refund.id,
            refund.version,
            refunds.to_json(refund),
            self.clock.now_us(),
        )

    async def _payment(self, merchant_id: str, payment_id: str) -> Transaction:
        payment = await self.db.read(transaction_rows.of_merchant, merchant_id, payment_id)
        if payment is None:  # deleted meanwhile, with its subscription's test clock
            raise errors.NotFound("No such transaction.", {"id": payment_id})
        return payment

    async def _create(self, message: CreateRefund) -> Refund | IdempotencyLost:
        """The refund written; or, replied rather than raised (it is no crash of the
        actor's), that the request's Idempotency-Key was taken over and nothing written."""
        while True:
            payment = await self._payment(message.merchant_id, message.payment_id)
            amount = refunds.refund_amount(payment, message.request.amount_minor)
            refund = refunds.new_refund(
                message.request,
                refund_id=ids.refund_id(),
                payment=payment,
                amount_minor=amount,
                now_us=self.clock.now_us(),
            )
            event = self._event(refund, "refund.created")
            try:
                written = await self.db.write(
                    refund_rows.create, refund, event, message.answer(refund)
                )
            except IdempotencyLost as lost:
                return lost
            if written:
                self.on_change(refund)
                return refund
            # Another process's refund took part of the rest first: decide again on what
            # is stored now (a 400 once the rest no longer covers the amount).

    async def _review(self, message: ReviewRefund) -> Refund | IdempotencyLost:
        """The refund as reviewed; or, replied as `_create` does, that the request's
        Idempotency-Key was taken over and nothing written."""
        transition = refunds.STATES.transition(message.decision)
        while True:
            refund = await ROWS.get(self.db, message.merchant_id, message.refund_id)
            if refund.status not in transition.sources:
                raise errors.RefundAlreadyReviewed(
                    f"The refund is already {refund.status}: a review is final.",
                    {"id": refund.id, "status": refund.status},
                )
            now = self.clock.now_us()
            after = refunds.reviewed(refund, message.decision, now)
            event = self._event(after, refunds.EVENT_OF[message.decision])
            answer = message.answer(after)
            try:
                if message.decision == "approve":
                    payment = await self._payment(refund.merchant_id, refund.transaction_id)
                    entry = refunds.ledger_entry(
                        refund, payment, transaction_id=ids.transaction_id(), now_us=now
                    )
                    written = await self.db.write(
                        refund_rows.approve, refund, after, entry, event, answer
                    )
                else:
                    written = await self.db.write(refund_rows.reject, refund, after, event, answer)
            except IdempotencyLost as lost:
                return lost
            if written:
                self.on_change(after)
                return after
            # Reviewed by another process first: decide again on what is stored (a 409).
