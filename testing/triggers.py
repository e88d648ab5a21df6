"""Triggers (test mode): an event of any type of the contract's list, made through the
real flows (`fgcpay.testing.flows`, the actors, a test clock's advance), on one of the
merchant's objects or on objects the trigger makes; `domain.test_helpers.PLANS` says
what each type does. The answer lists every event the trigger caused, oldest first;
they are delivered from the outbox like any other."""

from __future__ import annotations

import attrs
import trio
from fgcpay.domain import checkout, errors, limits, refunds, subscriptions
from fgcpay.domain import test_clocks as clock_rules
from fgcpay.domain.refunds import RefundRequest
from fgcpay.domain.subscriptions import Subscription
from fgcpay.domain.test_clocks import TestClockRequest
from fgcpay.domain.test_helpers import (
    DEFAULT_CUSTOMER,
    PLANS,
    REFUND,
    SESSION,
    SUBSCRIPTION,
    TriggerWire,
    trigger_to_json,
)
from fgcpay.domain.times import iso_ms
from fgcpay.storage import caused_events
from fgcpay.storage import limits as limit_counts
from fgcpay.storage import test_clocks as clock_rows

from . import flows
from .flows import Flows

APPROVE, REJECT = "approve", "reject"  # a review's decision: its transition's name
PREFIXES = {
    SESSION: refunds.SESSION_PREFIX,
    SUBSCRIPTION: subscriptions.SUBSCRIPTION_PREFIX,
    REFUND: refunds.REFUND_PREFIX,
}
_WORDS = {SESSION: "a checkout session", SUBSCRIPTION: "a subscription", REFUND: "a refund"}
# What the trigger makes: a small one-time payment, a daily subscription (a clock-driven
# trigger advances its clock one day).
_AMOUNT = "10.00"
_CURRENCY = "FGC"
_URLS = {"success_url": "https://example.com/success", "cancel_url": "https://example.com/cancel"}
DAY_US = 86_400 * 1_000_000
RENEWALS_DECLINED_CUSTOMER = "TEST-0004"
# How long a trigger waits for its clock's advance (bounded: one day of one subscription).
ADVANCE_DEADLINE_SECONDS = 30.0
_FIRST_LOOK_SECONDS = 0.001
_LONGEST_LOOK_SECONDS = 0.05


@attrs.frozen
class Triggered:
    event_type: str
    object_id: str
    events: list[str]

    def to_json(self) -> TriggerWire:
        return trigger_to_json(self.event_type, self.object_id, self.events)


async def trigger(
    parts: Flows, merchant_id: str, event_type: str, object_id: str | None
) -> Triggered:
    """Make an event of `event_type` (one of `PLANS`) on the merchant's `object_id`, or on
    objects made here when None. 400 on `object` when the type takes none or another
    kind, 404 for an unknown object or another merchant's, 409 as the flow answers when it
    cannot make that event."""
    run = _Run(parts, merchant_id)
    if object_id is None:
        made = await run.make(event_type)
    else:
        made = await run.on(event_type, object_id)
    caused = await parts.db.read(caused_events.events_after, merchant_id, run.marks)
    return Triggered(event_type, made, [event.id for event in caused])


def _kind(object_id: str) -> str | None:
    for kind, prefix in PREFIXES.items():
        if object_id.startswith(prefix):
            return kind
    return None


@attrs.define
class _Run:
    """One trigger: the flows it drives, and each resource it touched with its version
    before (`marks`: its events after that are the ones caused)."""

    parts: Flows
    merchant_id: str
    marks: list[tuple[str, int]] = attrs.Factory(list)

    # -- on a given object ----------------------------------------------------------------

    async def on(self, event_type: str, object_id: str) -> str:
        accepts = PLANS[event_type].accepts
        if accepts is None:
            raise errors.ValidationFailed(
                [
                    errors.FieldError(
                        "object",
                        f"A {event_type} trigger makes its own objects: leave out object.",
                    )
                ]
            )
        kind = _kind(object_id)
        if kind is None:
            raise errors.NotFound("No such object.", {"id": object_id})
        if kind != accepts:
            raise errors.ValidationFailed(
                [
                    errors.FieldError(
                        "object",
                        f"A {event_type} trigger takes {_WORDS[accepts]}"
                        f" ({PREFIXES[accepts]}...), not {_WORDS[kind]}.",
                    )
                ]
            )
        m = self.merchant_id
        if kind == SESSION:
            session = await self.parts.checkout.get(m, object_id)
            self.marks.append((session.id, session.version))
            if event_type == "checkout.session.paid":
                await flows.pay(self.parts, m, session.id, DEFAULT_CUSTOMER)
            elif event_type == "checkout.session.expired":
                await flows.expire(self.parts, m, session.id)
            else:  # refund.created
                return await self._refund(session.id)
            return session.id
        if kind == SUBSCRIPTION:
            sub = await self.parts.subscriptions.get(m, object_id)
            self.marks.append((sub.id, sub.version))
            if event_type == "subscription.cancelled":
                await self.parts.subscriptions.cancel(m, sub.id)
            else:  # activated, charged: the approval and its first charge
                await flows.approve(self.parts, m, sub.id, DEFAULT_CUSTOMER)
            return sub.id
        refund = await self.parts.refunds.get(m, object_id)
        self.marks.append((refund.id, refund.version))
        decision = APPROVE if event_type == "refund.approved" else REJECT
        await self.parts.refunds.review(m, refund.id, decision)
        return refund.id

    async def _refund(self, session_id: str) -> str:
        # The bound `POST /refunds` keeps (http/refunds.py), on the field naming the payment.
        most = limits.MAX_REFUNDS_PER_PAYMENT
        count = await self.parts.db.read(
            limit_counts.refunds_of_session, self.merchant_id, session_id
        )
        if count >= most:
            raise errors.ValidationFailed(
                [
                    errors.FieldError(
                        "object", f"This payment has {most} refunds, the most one may have."
                    )
                ]
            )
        made = await self.parts.refunds.create(
            self.merchant_id, RefundRequest(session_id, None, None, None, "{}")
        )
        self.marks.append((made.id, 0))
        return made.id

    # -- on objects it makes --------------------------------------------------------------

    async def make(self, event_type: str) -> str:
        m = self.merchant_id
        if event_type.startswith("checkout.session.") or event_type.startswith("refund."):
            session = await self._session()
            if event_type == "checkout.session.expired":
                await flows.expire(self.parts, m, session)
                return session
            await flows.pay(self.parts, m, session, DEFAULT_CUSTOMER)
            if event_type == "checkout.session.paid":
                return session
            refund = await self._refund(session)
            if event_type != "refund.created":
                decision = APPROVE if event_type == "refund.approved" else REJECT
                await self.parts.refunds.review(m, refund, decision)
            return refund
        if event_type in ("subscription.created", "subscription.activated"):
            sub = await self._subscription({})
            if event_type == "subscription.activated":
                await flows.approve(self.parts, m, sub.id, DEFAULT_CUSTOMER)
            return sub.id
        if event_type == "subscription.cancelled":
            sub = await self._subscription({})
            await self.parts.subscriptions.cancel(m, sub.id)
            return sub.id
        return await self._on_a_clock(event_type)

    async def _session(self) -> str:
        body = {
            "amount_fgc": _AMOUNT,
            "currency": _CURRENCY,
            "description": "Triggered payment",
            **_URLS,
        }
        session = self.parts.checkout.build(checkout.parse_create(body), self.merchant_id)
        await self.parts.checkout.create(session, None)
        self.marks.append((session.id, 0))
        return session.id

    async def _subscription(self, extra: dict[str, str], at: int | None = None) -> Subscription:
        body = {
            "amount_fgc": _AMOUNT,
            "currency": _CURRENCY,
            "interval": "daily",
            "description": "Triggered subscription",
            "merchant_customer_reference": "trigger",
            **_URLS,
            **extra,
        }
        now = self.parts.clock.now_us() if at is None else at
        parsed = subscriptions.parse_create(body, now)
        sub = self.parts.subscriptions.build(parsed, self.merchant_id, now)
        await self.parts.subscriptions.create(sub, None)
        self.marks.append((sub.id, 0))
        return sub

    async def _on_a_clock(self, event_type: str) -> str:
        """`subscription.charged` (a renewal), `subscription.payment_failed`,
        `subscription.ended`: a subscription on a new test clock, approved, and the clock
        advanced to its next step, run to the end."""
        m = self.merchant_id
        start = self.parts.clock.now_us() // 1_000_000 * 1_000_000  # a whole second
        test_clock = self.parts.test_clocks.build(
            TestClockRequest(frozen_time=start, name=f"trigger {event_type}"), m
        )
        await self.parts.test_clocks.create(test_clock, None)
        extra = {"test_clock": test_clock.id}
        if event_type == "subscription.ended":
            extra["end_date"] = iso_ms(start + DAY_US)
        sub = await self._subscription(extra, start)
        customer = DEFAULT_CUSTOMER
        if event_type == "subscription.payment_failed":
            customer = RENEWALS_DECLINED_CUSTOMER
        approved = await flows.approve(self.parts, m, sub.id, customer)
        due = approved.next_action_at
        assert due is not None  # an approved daily subscription renews (or ends) next
        await self._advance(test_clock.id, due)
        return sub.id

    async def _advance(self, clock_id: str, frozen_time: int) -> None:
        """Advance the clock and wait until the advance has run (`ready`), so that the
        events it makes are known when the trigger answers."""
        await self.parts.test_clocks.advance(self.merchant_id, clock_id, frozen_time)
        look = _FIRST_LOOK_SECONDS
        with trio.move_on_after(ADVANCE_DEADLINE_SECONDS):
            while True:
                stored = await self.parts.db.read(
                    clock_rows.of_merchant, self.merchant_id, clock_id
                )
                if stored is None or stored.status == clock_rules.READY:
                    return
                await trio.sleep(look)
                look = min(look * 2, _LONGEST_LOOK_SECONDS)
        raise errors.Unavailable("The trigger's test clock is still advancing; try again.")
