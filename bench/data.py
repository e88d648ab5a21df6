"""Rows loaded straight into the service's database before a measurement (bench/core.py
`Db.load`), built with the domain's own records in the storage modules' column order, so
they are what the service itself would have written."""

from __future__ import annotations

import operator
import random
import time
from dataclasses import dataclass
from typing import Any

import attrs
from fgcpay.domain import ids, periods, refunds
from fgcpay.domain.checkout import CREATED, EXPIRED, PAID, CheckoutSession
from fgcpay.domain.events import Event, new_event
from fgcpay.domain.money import format_fgc
from fgcpay.domain.subscriptions import ACTIVE, Subscription
from fgcpay.domain.transactions import PAYMENT, SUBSCRIPTION_CHARGE, Transaction
from fgcpay.storage import checkout_sessions, subscriptions, transactions
from fgcpay.storage import refunds as refund_rows

Table = tuple[str, str, list[tuple[Any, ...]]]
MINUTE, DAY = 60_000_000, periods.DAY_US
BALANCE = "merchant_id, shard, paid_minor, refunded_minor, pending_minor, transaction_count"


def now_us() -> int:
    return int(time.time() * 1_000_000)


def table(name: str, columns: str, records: list[Any]) -> Table:
    """Records as rows of `name`, in the order of a storage module's COLUMNS."""
    names = ("metadata_json" if c == "metadata" else c for c in columns.split(", "))
    get = operator.attrgetter(*names)
    return name, columns, [get(record) for record in records]


def session(merchant: str, status: str, created: int, amount: int) -> CheckoutSession:
    paid = created + 60 * 1_000_000 if status == PAID else None
    return CheckoutSession(
        id=ids.checkout_session_id(), merchant_id=merchant, status=status, version=1 + (status != CREATED),
        amount_minor=amount, currency="FGC", eur_cents=amount, description="bench order",
        success_url="https://shop.example/ok", cancel_url="https://shop.example/cancel",
        customer_email=None, customer_reference=None, external_reference=None,
        metadata_json="{}", created_at=created, updated_at=paid or created,
        expires_at=created + (60 * 1_000_000 if status == EXPIRED else DAY), paid_at=paid,
    )  # fmt: skip


def sessions(merchant: str, count: int, rng: random.Random) -> tuple[Table, str]:
    """`count` sessions over the last 23 hours, oldest first: 80 % created (not expiring
    during the run, so the sweeper has nothing to do), 15 % paid, 5 % expired; and the
    id at 10 % of them, 90 % deep in the newest-first list."""
    end = now_us() - 10 * MINUTE
    start, made = end - 23 * 60 * MINUTE, []
    for i in range(count):
        roll = rng.random()
        status = CREATED if roll < 0.8 else PAID if roll < 0.95 else EXPIRED
        made.append(
            session(
                merchant, status, start + (end - start) * i // count, rng.randrange(100, 100_000)
            )
        )
    return table("checkout_sessions", checkout_sessions.COLUMNS, made), made[count // 10].id


def subscription(merchant: str, anchor: int, charged: int, amount: int, n: int) -> Subscription:
    """An active monthly subscription approved at `anchor`, `charged` periods charged, the
    next one due at the end of the current period."""
    renews, last = (periods.period_start(anchor, "monthly", p) for p in (charged, charged - 1))
    return Subscription(
        id=ids.subscription_id(), merchant_id=merchant, status=ACTIVE, version=charged + 1,
        interval="monthly", amount_minor=amount, currency="FGC", eur_cents=amount,
        description="bench plan", merchant_customer_reference=f"customer-{n}", customer_email=None,
        success_url="https://shop.example/ok", cancel_url="https://shop.example/cancel",
        external_reference=None, metadata_json="{}", max_total_minor=None, end_date=None,
        test_clock_id=None, created_at=anchor - MINUTE, updated_at=last, approved_at=anchor,
        customer_code="TEST-0001", charge_count=charged, charged_total_minor=charged * amount,
        current_period_start=last, current_period_end=renews, next_action_at=renews,
    )  # fmt: skip


def charges(sub: Subscription) -> list[Transaction]:
    """The ledger rows of its periods charged so far."""
    return [Transaction(id=ids.transaction_id(), merchant_id=sub.merchant_id, kind=SUBSCRIPTION_CHARGE,
                        checkout_session_id=None, customer_code="TEST-0001", amount_minor=sub.amount_minor,
                        currency="FGC", created_at=periods.period_start(sub.approved_at or 0, "monthly", p),
                        subscription_id=sub.id, period=p) for p in range(sub.charge_count)]  # fmt: skip


@dataclass
class Ledger:
    tables: list[Table]
    want: dict[str, Any]  # the balance's figures
    cursors: list[str]  # ledger rows at random depths
    refund_cursors: list[str]  # refund entries at random depths
    refundable: list[str]  # paid sessions never refunded
    one: str  # a paid session to refund 0.01 at a time


def ledger(merchant: str, count: int, refundable: int, rng: random.Random) -> Ledger:
    """A year of one merchant's ledger, `count` rows: 20 % monthly subscription charges
    (with their active subscriptions, none due during the run), 5 % approved refunds of
    payments and charges at least a week old (60 % of the whole amount; the refunds, their
    negative entries and the payments' reservations), the rest payments of paid sessions
    (with the sessions); the balance's running totals to agree."""
    now = now_us()
    start = now - 365 * DAY
    common: dict[str, Any] = {
        "merchant_id": merchant,
        "currency": "FGC",
        "customer_code": "TEST-0001",
    }
    subs: list[Subscription] = []
    paid: list[Transaction] = []
    while len(paid) < count * 0.20:
        anchor = start + rng.randrange(30 * DAY)
        n = next(p for p in range(14) if periods.period_start(anchor, "monthly", p) > now)
        if periods.period_start(anchor, "monthly", n) < now + DAY:
            continue  # nothing falls due while the bench runs
        amount = rng.choice((500, 990, 1250, 2900, 4900))
        subs.append(subscription(merchant, anchor, n, amount, len(subs)))
        paid += charges(subs[-1])
    n_refunds = round(count * 0.05)
    bought = [session(merchant, PAID, rng.randrange(start, now - 20 * MINUTE), rng.randrange(100, 100_000))
              for _ in range(count - len(paid) - n_refunds)]  # fmt: skip
    paid += [Transaction(**common, id=ids.transaction_id(), kind=PAYMENT, checkout_session_id=s.id,
                         amount_minor=s.amount_minor, created_at=s.paid_at or 0) for s in bought]  # fmt: skip
    old = [i for i, t in enumerate(paid) if t.created_at < now - 7 * DAY]
    made, entries = [], []
    for i in rng.sample(old, n_refunds):
        payment = paid[i]
        amount = (
            payment.amount_minor if rng.random() < 0.6 else rng.randrange(1, payment.amount_minor)
        )
        asked = payment.created_at + rng.randrange(5 * MINUTE, 3 * DAY)
        approved = asked + rng.randrange(5 * MINUTE, 3 * DAY)
        refund = refunds.Refund(
            id=ids.refund_id(), merchant_id=merchant, status=refunds.APPROVED, version=2,
            amount_minor=amount, currency="FGC", transaction_id=payment.id,
            checkout_session_id=payment.checkout_session_id,
            subscription_id=payment.subscription_id, reason="requested_by_customer",
            metadata_json="{}", created_at=asked, updated_at=approved, reviewed_at=approved,
        )  # fmt: skip
        made.append(refund)
        entries.append(
            refunds.ledger_entry(
                refund, payment, transaction_id=ids.transaction_id(), now_us=approved
            )
        )
        paid[i] = attrs.evolve(payment, refund_reserved_minor=amount)
    for rows in (subs, paid, bought, made, entries):  # as a year's writes lie on disk
        rows.sort(key=operator.attrgetter("created_at"))
    paid_minor, refunded_minor = (
        sum(t.amount_minor for t in paid),
        sum(r.amount_minor for r in made),
    )
    untouched = [t for t in paid if t.kind == PAYMENT and not t.refund_reserved_minor]
    rng.shuffle(untouched)
    return Ledger(
        tables=[
            table("checkout_sessions", checkout_sessions.COLUMNS, bought),
            table("subscriptions", subscriptions.COLUMNS, subs),
            table("transactions", transactions.COLUMNS, paid),
            table("refunds", refund_rows.COLUMNS, made),
            table("transactions", transactions.COLUMNS, entries),  # after their refunds
            ("balance_shards", BALANCE, [(merchant, 0, paid_minor, refunded_minor, 0, count)]),
        ],
        want={"paid_total_fgc": format_fgc(paid_minor), "refunded_fgc": format_fgc(refunded_minor),
              "transaction_count": count},
        cursors=[t.id for t in rng.sample(paid + entries, min(1000, count))],
        refund_cursors=[t.id for t in rng.sample(entries, min(1000, len(entries)))],
        refundable=[str(t.checkout_session_id) for t in untouched[:refundable]],
        one=str(max(untouched[refundable:], key=operator.attrgetter("amount_minor")).checkout_session_id),
    )  # fmt: skip


EVENTS = "id, merchant_id, type, resource_id, sequence, body, created_at"
DELIVERIES = ("id, event_id, endpoint_id, merchant_id, status, attempts, next_attempt_at, "
              "lease_owner, lease_expires_at, created_at, updated_at")  # fmt: skip
ATTEMPTS = "id, delivery_id, attempted_at, response_status, latency_ms, error, response_body"


def delivered(events: list[Event], endpoint: str) -> list[Table]:
    """Each event delivered to `endpoint` at its first attempt (200): the deliveries and
    their attempts, as the dispatcher leaves them."""
    deliveries, attempts = [], []
    for e in events:
        delivery = "whd_" + ids.random_base62(24)
        deliveries.append((delivery, e.id, endpoint, e.merchant_id, "succeeded", 1, e.created_at,
                           None, None, e.created_at, e.created_at + 5000))  # fmt: skip
        attempts.append(("att_" + ids.random_base62(24), delivery, e.created_at + 5000, 200, 5,
                         None, "ok"))  # fmt: skip
    return [("deliveries", DELIVERIES, deliveries), ("delivery_attempts", ATTEMPTS, attempts)]


def busy_merchant(
    merchant: str, endpoint: str, count: int, subs: int, rng: random.Random
) -> list[Table]:
    """A CI run's worth of one merchant's rows (a sandbox about to be deleted): `count`
    sessions over the last day (80 % open, 15 % paid with their payments, 5 % expired),
    `subs` active monthly subscriptions charged once, their events (a session's paid or
    expired; a subscription's created, activated, charged), each delivered to `endpoint`
    once, and the balance's totals."""
    end = now_us() - 10 * MINUTE
    start = end - 23 * 60 * MINUTE
    made, payments, events = [], [], []
    for i in range(count):
        roll = rng.random()
        status = CREATED if roll < 0.8 else PAID if roll < 0.95 else EXPIRED
        s = session(
            merchant, status, start + (end - start) * i // count, rng.randrange(100, 100_000)
        )
        made.append(s)
        if status == PAID:
            payments.append(Transaction(id=ids.transaction_id(), merchant_id=merchant, kind=PAYMENT,
                                        checkout_session_id=s.id, customer_code="TEST-0001",
                                        amount_minor=s.amount_minor, currency="FGC",
                                        created_at=s.paid_at or 0))  # fmt: skip
        if status != CREATED:
            events.append(new_event(ids.event_id(), merchant, f"checkout.session.{status}", s.id, 2,
                                    {"id": s.id, "object": "checkout.session"}, s.updated_at))  # fmt: skip
    anchor = now_us() - 31 * DAY
    plans = [subscription(merchant, anchor, 1, 1250, n) for n in range(subs)]
    charged = [c for sub in plans for c in charges(sub)]
    for sub in plans:
        for n, kind in enumerate(("created", "activated", "charged")):
            events.append(new_event(ids.event_id(), merchant, f"subscription.{kind}", sub.id, n + 1,
                                    {"id": sub.id, "object": "subscription"}, anchor + n))  # fmt: skip
    paid = sum(t.amount_minor for t in payments + charged)
    return [
        table("checkout_sessions", checkout_sessions.COLUMNS, made),
        table("subscriptions", subscriptions.COLUMNS, plans),
        table("transactions", transactions.COLUMNS, payments + charged),
        ("balance_shards", BALANCE, [(merchant, 0, paid, 0, 0, len(payments) + len(charged))]),
        table("events", EVENTS, events),
        *delivered(events, endpoint),
    ]
