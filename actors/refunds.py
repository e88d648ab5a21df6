"""Refunds: the operations the HTTP layer, the test helpers, the operator's command and
the dashboard call. A create or a review is a message to the actor owning the refunded
payment (its session's or its subscription's), whose desk (`fgcpay.actors.refund_desk`)
decides it."""

from __future__ import annotations

from collections.abc import Callable

import attrs
from fgcpay.domain import errors, transactions
from fgcpay.domain.idempotency import Completion, IdempotencyLost
from fgcpay.domain.refunds import Refund, RefundRequest
from fgcpay.domain.transactions import Transaction
from fgcpay.storage import Database
from fgcpay.storage import refunds as refund_rows
from fgcpay.storage import transactions as transaction_rows

from . import checkout_session, ledger, subscription
from ._runtime import ActorHost
from .refund_desk import ROWS, CreateRefund, ReviewRefund, unanswered


def _owner(paid: Transaction | Refund) -> tuple[str, str]:
    """The actor owning a payment (and its refunds): its session's, or its subscription's
    for a charge."""
    if paid.checkout_session_id is not None:
        return checkout_session.KIND, paid.checkout_session_id
    if paid.subscription_id is not None:
        return subscription.KIND, paid.subscription_id
    raise ValueError(f"{paid.id} pays nothing a refund could go through")


@attrs.define
class Refunds:
    """Creating, reviewing, reading and listing refunds; creates and reviews go through
    the actor owning the refunded payment."""

    db: Database
    host: ActorHost

    async def create(
        self,
        merchant_id: str,
        request: RefundRequest,
        answer: Callable[[Refund], Completion | None] = lambda refund: None,
    ) -> Refund:
        """A new refund, `pending_review`, stored with `answer(refund)` (the idempotent
        answer). 404 for an unknown session or transaction (or another merchant's), 409
        `checkout_session_not_paid`, 400 for a refund entry or above the refundable rest."""
        payment = await self._refundable(merchant_id, request)
        kind, owner = _owner(payment)
        made = await self.host.ask(
            kind, owner, CreateRefund(merchant_id, payment.id, request, answer)
        )
        if isinstance(made, IdempotencyLost):
            raise made
        return made

    async def _refundable(self, merchant_id: str, request: RefundRequest) -> Transaction:
        if request.checkout_session_id is not None:
            session = await checkout_session.ROWS.get(
                self.db, merchant_id, request.checkout_session_id
            )
            payments = await self.db.read(
                transaction_rows.of_checkout_session, merchant_id, session.id
            )
            if not payments:
                raise errors.CheckoutSessionNotPaid(
                    f"The checkout session is {session.status}: only a paid session can be "
                    "refunded.",
                    {"id": session.id, "status": session.status},
                )
            return payments[0]
        assert request.transaction_id is not None  # exactly one of the two (parse_create)
        payment = await ledger.ROWS.get(self.db, merchant_id, request.transaction_id)
        if payment.kind not in transactions.REFUNDABLE:
            raise errors.ValidationFailed(
                [
                    errors.FieldError(
                        "transaction_id",
                        "Must be a payment or a subscription charge: a refund's entry "
                        "cannot be refunded.",
                    )
                ]
            )
        return payment

    async def review(
        self,
        merchant_id: str,
        refund_id: str,
        decision: str,
        answer: Callable[[Refund], Completion | None] = unanswered,
    ) -> Refund:
        """Approve or reject (`decision`) the merchant's refund; the refund as written, with
        `answer(refund)` (the idempotent answer). 404 for an unknown refund or another
        merchant's, 409 `refund_already_reviewed` once it was approved or rejected. The one
        way a review is made (test helpers, the operator's command, the dashboard)."""
        refund = await ROWS.get(self.db, merchant_id, refund_id)
        kind, owner = _owner(refund)
        reviewed = await self.host.ask(
            kind, owner, ReviewRefund(merchant_id, refund.id, decision, answer)
        )
        if isinstance(reviewed, IdempotencyLost):
            raise reviewed
        return reviewed

    async def get(self, merchant_id: str, refund_id: str) -> Refund:
        """The merchant's refund; 404 for an unknown id or another merchant's."""
        return await ROWS.get(self.db, merchant_id, refund_id)

    async def page(
        self, merchant_id: str, status: str | None, starting_after: str | None, limit: int
    ) -> tuple[list[Refund], bool]:
        """One page of the merchant's refunds, newest first, and whether more follow."""
        return await ROWS.page(
            self.db,
            merchant_id,
            starting_after,
            limit,
            lambda tx, after, n: refund_rows.page(tx, merchant_id, status, after, n),
        )
