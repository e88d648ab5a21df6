"""The subscription actor through the service's client API (no HTTP yet): approval with the
checkout's PIN rules, renewals on the durable timer (a year of them, declines and retries,
catch-up after downtime, two processes), cancel, and test clock advances. Time is trio's
MockClock with the service's clock tied to it."""

from __future__ import annotations

from typing import Any

import pytest
import trio
import trio.testing
from fgcpay.actors import authorization as outcomes
from fgcpay.actors import checkout_session
from fgcpay.actors.subscription import APPROVED
from fgcpay.actors.subscription import KIND as SUBSCRIPTION
from fgcpay.core.clock import TrioClock
from fgcpay.core.settings import Settings
from fgcpay.domain import errors, transactions
from fgcpay.domain import subscriptions as subs
from fgcpay.domain.periods import DAY_US
from fgcpay.domain.times import iso_ms
from fgcpay.domain.transactions import SUBSCRIPTION_CHARGE, Transaction
from fgcpay.live_status import StatusHub, republish_statuses
from fgcpay.service import Service
from fgcpay.storage import subscriptions as subscription_rows
from fgcpay.storage import test_clocks as clock_rows
from helpers import (
    Server,
    add_subscription,
    add_test_clock,
    advances_held,
    charges_of,
    events_of,
    start_server,
    stored,
    subscription_record,
    utc_us,
    wait_for_subscription_status,
    wait_until,
)

# Jan 31 as the anchor's day shows the month ends clamped (Feb 28, Apr 30, ...).
ANCHOR = utc_us(2027, 1, 31, 9)
YEAR_OF_STARTS = [
    utc_us(2027, 1, 31, 9),
    utc_us(2027, 2, 28, 9),
    utc_us(2027, 3, 31, 9),
    utc_us(2027, 4, 30, 9),
    utc_us(2027, 5, 31, 9),
    utc_us(2027, 6, 30, 9),
    utc_us(2027, 7, 31, 9),
    utc_us(2027, 8, 31, 9),
    utc_us(2027, 9, 30, 9),
    utc_us(2027, 10, 31, 9),
    utc_us(2027, 11, 30, 9),
    utc_us(2027, 12, 31, 9),
]
DAYS = 86_400.0  # trio seconds


def service_of(server: Server) -> Service:
    return server.running.service


def charge_json(charge: Transaction, period: int) -> dict[str, Any]:
    """A 12.50 subscription charge as events carry it (`data.transaction`)."""
    return {
        "id": charge.id,
        "object": "transaction",
        "mode": "test",
        "type": "subscription_charge",
        "status": "succeeded",
        "amount_fgc": "12.50",
        "currency": "FGC",
        "checkout_session_id": None,
        "subscription_id": charge.subscription_id,
        "refund_id": None,
        "period": period,
        "created_at": iso_ms(charge.created_at),
    }


def types_and_sequences(events: list[Any]) -> list[tuple[str, int]]:
    return [(event.type, event.sequence) for event in events]


# -- approval -----------------------------------------------------------------------------


async def test_approving_as_test_0001_activates_and_charges_period_0(server: Server) -> None:
    service = service_of(server)
    merchant = await server.merchant()
    sub = await add_subscription(service, merchant.id)
    result = await service.subscriptions.approve(sub.id, "test-0001 ", "1234")
    assert result.outcome == APPROVED
    active = await stored(server.db, sub.id)
    assert active == result.subscription
    assert (active.status, active.customer_code, active.charge_count) == (
        subs.ACTIVE,
        "TEST-0001",
        1,
    )
    assert active.approved_at == active.current_period_start
    assert active.next_action_at == active.current_period_end
    [charge] = await charges_of(server.db, sub.id)
    assert (charge.kind, charge.period, charge.customer_code, charge.amount_minor) == (
        SUBSCRIPTION_CHARGE,
        0,
        "TEST-0001",
        1250,
    )
    events = await events_of(server.db, sub.id)
    assert types_and_sequences(events) == [
        ("subscription.created", 1),
        ("subscription.activated", 2),
        ("subscription.charged", 3),  # one change, two events: two sequences, in order
    ]
    assert events[1].created_at < events[2].created_at  # activated is due first
    assert events[0].data["status"] == subs.PAUSED
    assert events[2].data == subs.to_json(active, service.settings.public_url)
    # `subscription.charged` carries the ledger row it wrote; the others no transaction.
    assert events[2].transaction == charge_json(charge, period=0)
    assert charge.id.startswith("txn_test_") and charge.created_at == active.approved_at
    assert events[0].transaction is None and events[1].transaction is None
    # Approving again changes nothing.
    again = await service.subscriptions.approve(sub.id, "TEST-0001", "1234")
    assert again.outcome == outcomes.ALREADY_FINAL
    assert len(await charges_of(server.db, sub.id)) == 1


@pytest.mark.parametrize(
    ("code", "pin", "outcome"),
    [
        ("TEST-0001", "9999", outcomes.WRONG_CREDENTIALS),
        ("TEST-9999", "1234", outcomes.WRONG_CREDENTIALS),
        ("", "", outcomes.WRONG_CREDENTIALS),
        ("TEST-0002", "1234", outcomes.DECLINED),
        ("TEST-0003", "1234", outcomes.BLOCKED),
    ],
)
async def test_refused_approvals_charge_nothing(
    server: Server, code: str, pin: str, outcome: str
) -> None:
    service = service_of(server)
    merchant = await server.merchant()
    sub = await add_subscription(service, merchant.id)
    result = await service.subscriptions.approve(sub.id, code, pin)
    assert result.outcome == outcome
    assert result.message == outcomes.MESSAGES[outcome]
    assert await stored(server.db, sub.id) == sub
    assert await charges_of(server.db, sub.id) == []
    assert [event.type for event in await events_of(server.db, sub.id)] == ["subscription.created"]


async def test_five_wrong_pins_lock_the_code_for_approvals_too(server: Server) -> None:
    service = service_of(server)
    merchant = await server.merchant()
    sub = await add_subscription(service, merchant.id)
    seen = [
        (await service.subscriptions.approve(sub.id, "TEST-0001", "0000")).outcome for _ in range(5)
    ]
    assert seen == [outcomes.WRONG_CREDENTIALS] * 4 + [outcomes.LOCKED]
    locked = await service.subscriptions.approve(sub.id, "TEST-0001", "1234")
    assert locked.outcome == outcomes.LOCKED
    assert (await stored(server.db, sub.id)).status == subs.PAUSED
    # The lock is the code's for this merchant, shared with its checkout sessions.
    session_id = (await merchant.post("/checkout/sessions", json=_session_body())).json()["id"]
    confirm = await service.checkout.confirm(session_id, "TEST-0001", "1234")
    assert confirm.outcome == outcomes.LOCKED


def _session_body() -> dict[str, Any]:
    return {
        "amount_fgc": "12.50",
        "currency": "FGC",
        "description": "Two flat whites",
        "success_url": "https://shop.example/thanks",
        "cancel_url": "https://shop.example/cart",
    }


async def test_test_0004_pays_a_checkout_session(server: Server) -> None:
    merchant = await server.merchant()
    session_id = (await merchant.post("/checkout/sessions", json=_session_body())).json()["id"]
    result = await service_of(server).checkout.confirm(session_id, "TEST-0004", "1234")
    assert result.outcome == checkout_session.PAID


# -- renewals on the real (mock) clock -----------------------------------------------------


async def test_a_paused_subscription_past_its_end_date_ends_unapproved(
    nursery: trio.Nursery, settings: Settings, clock: trio.testing.MockClock
) -> None:
    server = await start_server(nursery, settings, clock=TrioClock(start_us=ANCHOR))
    service = service_of(server)
    merchant = await server.merchant()
    end_date = ANCHOR + 2 * DAY_US
    sub = await add_subscription(service, merchant.id, end_date=iso_ms(end_date))
    assert sub.next_action_at == end_date  # its only due time
    clock.jump(2 * DAYS)
    await wait_for_subscription_status(service, sub.id, subs.ENDED)
    ended = await stored(server.db, sub.id)
    assert (ended.ended_reason, ended.charge_count, ended.next_action_at) == (
        subs.END_DATE_REACHED,
        0,
        None,
    )
    assert ended.ended_at is not None and ended.ended_at >= end_date
    assert await charges_of(server.db, sub.id) == []
    events = await events_of(server.db, sub.id)
    assert types_and_sequences(events) == [("subscription.created", 1), ("subscription.ended", 2)]
    # Too late to approve: the customer is told so, nothing is charged.
    result = await service.subscriptions.approve(sub.id, "TEST-0001", "1234")
    assert (result.outcome, result.subscription.status) == (outcomes.ALREADY_FINAL, subs.ENDED)
    assert await charges_of(server.db, sub.id) == []
    server.stop.set()


async def test_a_monthly_subscription_renews_for_a_year_then_ends_at_its_max_total(
    nursery: trio.Nursery, settings: Settings, clock: trio.testing.MockClock
) -> None:
    server = await start_server(nursery, settings, clock=TrioClock(start_us=ANCHOR))
    service = service_of(server)
    merchant = await server.merchant()
    sub = await add_subscription(service, merchant.id, max_total_amount_fgc="150.00")
    assert (await service.subscriptions.approve(sub.id, "TEST-0001", "1234")).outcome == APPROVED
    clock.jump(366 * DAYS)
    await wait_for_subscription_status(service, sub.id, subs.ENDED)
    ended = await stored(server.db, sub.id)
    assert (ended.ended_reason, ended.charge_count, ended.charged_total_minor) == (
        subs.MAX_TOTAL_REACHED,
        12,
        12 * 1250,
    )
    assert ended.next_action_at is None
    charges = await charges_of(server.db, sub.id)
    assert [charge.period for charge in charges] == list(range(12))
    assert {charge.customer_code for charge in charges} == {"TEST-0001"}
    events = await events_of(server.db, sub.id)
    charged = [event for event in events if event.type == "subscription.charged"]
    assert len(charged) == 12
    # Each charge's event names its period, counted from the anchor with month ends clamped.
    assert [event.data["current_period_start"] for event in charged] == [
        iso_ms(start) for start in YEAR_OF_STARTS
    ]
    assert [event.data["charge_count"] for event in charged] == list(range(1, 13))
    # And the ledger row each wrote: the approval's period 0, then renewals 1 to 11.
    assert [event.transaction for event in charged] == [
        charge_json(charge, period) for period, charge in enumerate(charges)
    ]
    assert [event.type for event in events[-1:]] == ["subscription.ended"]
    assert events[-1].data["ended_reason"] == subs.MAX_TOTAL_REACHED
    assert [event.sequence for event in events[3:]] == list(range(4, 4 + len(events) - 3))
    server.stop.set()


async def test_test_0004_renewals_are_declined_retried_then_ended(
    nursery: trio.Nursery, settings: Settings, clock: trio.testing.MockClock
) -> None:
    server = await start_server(nursery, settings, clock=TrioClock(start_us=ANCHOR))
    service = service_of(server)
    merchant = await server.merchant()
    sub = await add_subscription(service, merchant.id)
    assert (await service.subscriptions.approve(sub.id, "TEST-0004", "1234")).outcome == APPROVED
    clock.jump(28 * DAYS + 1)  # the first renewal is due on Feb 28
    await wait_for_subscription_status(service, sub.id, subs.PAST_DUE)
    clock.jump(1 * DAYS)  # the first retry, a day after the due time

    async def retried() -> bool:
        return (await stored(server.db, sub.id)).failed_attempts == 2

    await wait_until(retried, within=DAYS / 2, what="the first retry declined")
    clock.jump(2 * DAYS)  # the last retry, three days after the due time
    await wait_for_subscription_status(service, sub.id, subs.ENDED)
    ended = await stored(server.db, sub.id)
    assert (ended.ended_reason, ended.charge_count, ended.failed_attempts) == (
        subs.PAYMENT_FAILED,
        1,
        3,
    )
    assert [charge.period for charge in await charges_of(server.db, sub.id)] == [0]
    events = await events_of(server.db, sub.id)
    assert types_and_sequences(events) == [
        ("subscription.created", 1),
        ("subscription.activated", 2),
        ("subscription.charged", 3),
        ("subscription.payment_failed", 4),
        ("subscription.payment_failed", 5),
        ("subscription.payment_failed", 6),  # the last decline, then the end it causes
        ("subscription.ended", 7),
    ]
    assert [event.data["status"] for event in events[3:]] == [
        subs.PAST_DUE,
        subs.PAST_DUE,
        subs.ENDED,
        subs.ENDED,
    ]
    # Each `payment_failed` carries the declined attempt of period 1: the charge's shape,
    # no id (no ledger row), `declined`; the `ended` beside the last one carries none.
    failed = [event for event in events if event.type == "subscription.payment_failed"]
    assert [{**event.transaction, "created_at": None} for event in failed if event.transaction] == [
        {
            "id": None,
            "object": "transaction",
            "mode": "test",
            "type": "subscription_charge",
            "status": "declined",
            "amount_fgc": "12.50",
            "currency": "FGC",
            "checkout_session_id": None,
            "subscription_id": sub.id,
            "refund_id": None,
            "period": 1,
            "created_at": None,
        }
    ] * 3
    assert [event.transaction for event in events if event.type == "subscription.ended"] == [None]
    # The first renewal is due Feb 28, its retries 1 and 3 days after that due time.
    due = utc_us(2027, 2, 28, 9)
    failed_at = [event.created_at for event in events if event.type.endswith("payment_failed")]
    retry_times = [due, due + DAY_US, due + 3 * DAY_US]
    for happened, expected in zip(failed_at, retry_times, strict=True):
        assert expected <= happened < expected + DAY_US // 24, (iso_ms(happened), expected)
    for event, expected in zip(failed, retry_times, strict=True):
        assert event.transaction is not None
        attempted = event.transaction["created_at"]
        assert iso_ms(expected) <= attempted <= iso_ms(event.created_at), attempted
    server.stop.set()


async def test_missed_periods_are_charged_in_order_once_after_downtime(
    nursery: trio.Nursery, settings: Settings, clock: trio.testing.MockClock
) -> None:
    service_clock = TrioClock(start_us=ANCHOR)
    first = await start_server(nursery, settings, clock=service_clock)
    merchant = await first.merchant()
    sub = await add_subscription(service_of(first), merchant.id)
    approved = await service_of(first).subscriptions.approve(sub.id, "TEST-0001", "1234")
    assert approved.outcome == APPROVED
    await first.shutdown()
    clock.jump(92 * DAYS)  # down through Feb 28, Mar 31 and Apr 30
    second = await start_server(nursery, settings, clock=service_clock)

    async def caught_up() -> bool:
        return (await stored(second.db, sub.id)).charge_count >= 4

    await wait_until(caught_up, within=30 * DAYS, what="the missed periods charged")
    record = await stored(second.db, sub.id)
    charges = await charges_of(second.db, sub.id)
    assert [charge.period for charge in charges] == list(range(record.charge_count))
    charged = [e for e in await events_of(second.db, sub.id) if e.type == "subscription.charged"]
    assert [event.data["current_period_start"] for event in charged] == [
        iso_ms(start) for start in YEAR_OF_STARTS[: record.charge_count]
    ]
    # The missed ones were charged after the restart, not at their (past) due times.
    assert all(charge.created_at >= ANCHOR + 92 * DAY_US for charge in charges[1:4])
    second.stop.set()


async def test_two_processes_sweeping_the_same_subscriptions_charge_each_period_once(
    nursery: trio.Nursery, postgres_settings: Settings, clock: trio.testing.MockClock
) -> None:
    service_clock = TrioClock(start_us=ANCHOR)
    one = await start_server(nursery, postgres_settings, clock=service_clock)
    two = await start_server(nursery, postgres_settings, clock=service_clock)
    merchant = await one.merchant()
    ids = []
    for n in range(16):
        sub = await add_subscription(
            service_of(one), merchant.id, interval="daily", max_total_amount_fgc="125.00"
        )
        approving = one if n % 2 else two
        result = await service_of(approving).subscriptions.approve(sub.id, "TEST-0001", "1234")
        assert result.outcome == APPROVED
        ids.append(sub.id)
    clock.jump(11 * DAYS)
    for subscription_id in ids:
        await wait_for_subscription_status(service_of(one), subscription_id, subs.ENDED)
    for subscription_id in ids:
        ended = await stored(one.db, subscription_id)
        assert (ended.charge_count, ended.ended_reason) == (10, subs.MAX_TOTAL_REACHED)
        charges = await charges_of(one.db, subscription_id)
        assert [charge.period for charge in charges] == list(range(10))
        events = await events_of(one.db, subscription_id)
        assert sum(event.type == "subscription.charged" for event in events) == 10
    one.stop.set()
    two.stop.set()


# -- cancel -------------------------------------------------------------------------------


@pytest.mark.parametrize("status", [subs.PAUSED, subs.ACTIVE, subs.PAST_DUE])
async def test_cancelling_a_live_subscription_cancels_it_with_its_event(
    server: Server, status: str
) -> None:
    service = service_of(server)
    merchant = await server.merchant()
    # Due in 2027: the sweep leaves them alone meanwhile.
    record = subscription_record(merchant.id, status)
    await server.db.write(subscription_rows.insert, record, None)
    cancelled = await service.subscriptions.cancel(merchant.id, record.id)
    assert (cancelled.status, cancelled.version, cancelled.next_action_at) == (
        subs.CANCELLED,
        record.version + 1,
        None,
    )
    assert cancelled.cancelled_at is not None
    assert await stored(server.db, record.id) == cancelled
    assert types_and_sequences(await events_of(server.db, record.id)) == [
        ("subscription.cancelled", record.version + 1)
    ]
    # Cancelled is final: its actor ended once the cancel was handled, not after idling.
    await trio.testing.wait_all_tasks_blocked()
    assert service.actors.load().live[SUBSCRIPTION] == 0


@pytest.mark.parametrize("status", [subs.CANCELLED, subs.ENDED])
async def test_cancelling_a_final_subscription_is_409(server: Server, status: str) -> None:
    service = service_of(server)
    merchant = await server.merchant()
    record = subscription_record(merchant.id, status)
    await server.db.write(subscription_rows.insert, record, None)
    with pytest.raises(errors.SubscriptionNotCancellable) as refused:
        await service.subscriptions.cancel(merchant.id, record.id)
    assert (refused.value.status, refused.value.code) == (409, "subscription_not_cancellable")
    assert await stored(server.db, record.id) == record
    assert await events_of(server.db, record.id) == []


async def test_another_merchants_or_an_unknown_subscription_is_404(server: Server) -> None:
    service = service_of(server)
    owner = await server.merchant()
    other = await server.merchant("Other shop")
    sub = await add_subscription(service, owner.id)
    for merchant_id, subscription_id in [
        (other.id, sub.id),
        (owner.id, "sub_test_" + "0" * 24),
        (owner.id, "nonsense"),
    ]:
        with pytest.raises(errors.SubscriptionNotFound) as missing:
            await service.subscriptions.cancel(merchant_id, subscription_id)
        assert (missing.value.status, missing.value.code) == (404, "subscription_not_found")
        with pytest.raises(errors.SubscriptionNotFound):
            await service.subscriptions.get(merchant_id, subscription_id)
    assert (await stored(server.db, sub.id)).status == subs.PAUSED


async def test_subscriptions_are_listed_newest_first_with_a_cursor(server: Server) -> None:
    service = service_of(server)
    merchant = await server.merchant()
    made = [await add_subscription(service, merchant.id) for _ in range(3)]
    first, more = await service.subscriptions.page(merchant.id, None, None, 2)
    assert more and len(first) == 2
    rest, more = await service.subscriptions.page(merchant.id, None, first[-1].id, 2)
    assert not more
    assert {s.id for s in first + rest} == {s.id for s in made}


# -- test clocks --------------------------------------------------------------------------


async def test_advancing_a_test_clock_a_year_runs_every_renewal_then_reads_ready(
    nursery: trio.Nursery, settings: Settings, clock: trio.testing.MockClock
) -> None:
    server = await start_server(nursery, settings, clock=TrioClock())
    service = service_of(server)
    clocks = service.test_clocks
    merchant = await server.merchant()
    test_clock = await add_test_clock(service, merchant.id, iso_ms(ANCHOR))
    monthly = await add_subscription(
        service, merchant.id, test_clock=test_clock.id, max_total_amount_fgc="150.00"
    )
    assert monthly.created_at == ANCHOR
    approved = await service.subscriptions.approve(monthly.id, "TEST-0001", "1234")
    assert approved.outcome == APPROVED
    assert approved.subscription.approved_at == ANCHOR
    a_year_on = ANCHOR + 366 * DAY_US
    # Held before its first batch: it reads advancing until released, however fast it runs.
    with advances_held(service) as release:
        advancing = await clocks.advance(merchant.id, test_clock.id, a_year_on)
        assert (advancing.status, advancing.frozen_time) == ("advancing", a_year_on)
        with pytest.raises(errors.TestClockAdvancing) as busy:
            await clocks.advance(merchant.id, test_clock.id, a_year_on + DAY_US)
        assert busy.value.status == 409
        assert (await stored(server.db, monthly.id)).charge_count == 1
        release.set()

        async def ready() -> bool:
            return (await clocks.get(merchant.id, test_clock.id)).status == "ready"

        await wait_until(ready, within=600.0, what="the advance finished")
    ended = await stored(server.db, monthly.id)
    assert (ended.status, ended.ended_reason, ended.charge_count) == (
        subs.ENDED,
        subs.MAX_TOTAL_REACHED,
        12,
    )
    # On the clock every step happens at its own due time.
    assert ended.ended_at == utc_us(2028, 1, 31, 9)
    charges = await charges_of(server.db, monthly.id)
    assert [charge.created_at for charge in charges] == YEAR_OF_STARTS
    charged = [e for e in await events_of(server.db, monthly.id) if e.type.endswith("charged")]
    assert [event.data["current_period_start"] for event in charged] == [
        iso_ms(start) for start in YEAR_OF_STARTS
    ]
    # Each carries its ledger row, stamped with the clock's time as the row is.
    assert [event.transaction for event in charged] == [
        transactions.to_json(charge) for charge in charges
    ]
    assert [event.transaction["created_at"] for event in charged if event.transaction] == [
        iso_ms(start) for start in YEAR_OF_STARTS
    ]
    # Events carry the service's time (their deliveries are due then), not the clock's.
    assert all(event.created_at < ANCHOR for event in charged)
    # Only forward.
    with pytest.raises(errors.ValidationFailed) as backwards:
        await clocks.advance(merchant.id, test_clock.id, ANCHOR)
    assert [error.field for error in backwards.value.errors] == ["frozen_time"]
    with pytest.raises(errors.NotFound):
        await clocks.advance((await server.merchant("Other")).id, test_clock.id, a_year_on * 2)
    server.stop.set()


async def test_an_advance_left_behind_is_resumed_at_start(
    nursery: trio.Nursery, settings: Settings, clock: trio.testing.MockClock
) -> None:
    service_clock = TrioClock()
    first = await start_server(nursery, settings, clock=service_clock)
    merchant = await first.merchant()
    test_clock = await add_test_clock(service_of(first), merchant.id, iso_ms(ANCHOR))
    sub = await add_subscription(service_of(first), merchant.id, test_clock=test_clock.id)
    await service_of(first).subscriptions.approve(sub.id, "TEST-0001", "1234")
    # As if a process died right after beginning the advance: advancing, nothing run.
    begun = await first.db.write(
        clock_rows.begin_advance, test_clock, ANCHOR + 62 * DAY_US, service_clock.now_us()
    )
    assert begun is not None
    await first.shutdown()
    second = await start_server(nursery, settings, clock=service_clock)

    async def ready() -> bool:
        found = await second.db.read(clock_rows.by_id, test_clock.id)
        return found is not None and found.status == "ready"

    await wait_until(ready, within=600.0, what="the advance resumed and finished")
    assert (await stored(second.db, sub.id)).charge_count == 3
    second.stop.set()


async def test_a_clock_left_advancing_is_resumed_while_the_service_runs(
    nursery: trio.Nursery, settings: Settings, clock: trio.testing.MockClock
) -> None:
    service_clock = TrioClock()
    server = await start_server(nursery, settings, clock=service_clock)
    service = service_of(server)
    merchant = await server.merchant()
    test_clock = await add_test_clock(service, merchant.id, iso_ms(ANCHOR))
    sub = await add_subscription(service, merchant.id, test_clock=test_clock.id)
    await service.subscriptions.approve(sub.id, "TEST-0001", "1234")
    # As another process that died right after beginning the advance leaves it, after
    # this one started: advancing, and nobody running it.
    begun = await server.db.write(
        clock_rows.begin_advance, test_clock, ANCHOR + 62 * DAY_US, service_clock.now_us()
    )
    assert begun is not None and begun.status == "advancing"
    clock.jump(service.test_clock_advances.resume_seconds)  # the next look for such clocks

    async def ready() -> bool:
        found = await server.db.read(clock_rows.by_id, test_clock.id)
        return found is not None and found.status == "ready"

    await wait_until(ready, within=5.0, what="the stuck advance resumed and finished")
    # Two renewals fell due in the 62 days (Feb 28, Mar 31): each charged once.
    assert (await stored(server.db, sub.id)).charge_count == 3
    assert [charge.period for charge in await charges_of(server.db, sub.id)] == [0, 1, 2]
    server.stop.set()


async def test_deleting_a_test_clock_deletes_its_subscriptions(server: Server) -> None:
    service = service_of(server)
    merchant = await server.merchant()
    test_clock = await add_test_clock(service, merchant.id, iso_ms(ANCHOR))
    sub = await add_subscription(service, merchant.id, test_clock=test_clock.id)
    await service.subscriptions.approve(sub.id, "TEST-0001", "1234")
    await service.test_clocks.delete(merchant.id, test_clock.id)
    with pytest.raises(errors.SubscriptionNotFound):
        await service.subscriptions.get(merchant.id, sub.id)

    async def forgotten() -> bool:
        try:
            await service.subscriptions.snapshot(sub.id)
        except errors.SubscriptionNotFound:
            return True
        return False

    await wait_until(forgotten, within=10.0, what="the actor re-read its deleted record")
    with pytest.raises(errors.NotFound):
        await service.test_clocks.get(merchant.id, test_clock.id)


async def test_a_subscription_on_an_unknown_clock_is_refused(server: Server) -> None:
    merchant = await server.merchant()
    with pytest.raises(errors.ValidationFailed) as refused:
        await add_subscription(service_of(server), merchant.id, test_clock="clock_test_" + "0" * 24)
    assert [error.field for error in refused.value.errors] == ["test_clock"]


# -- live status --------------------------------------------------------------------------


async def test_a_reconnect_rereads_the_followed_subscriptions_too(server: Server) -> None:
    """After the status listener lost its connection, the followed ids are read again: a
    subscription's from the subscriptions (by its prefix), a session's from the sessions."""
    merchant = await server.merchant()
    record = subscription_record(merchant.id, subs.ACTIVE)
    await server.db.write(subscription_rows.insert, record, None)
    session_id = (await merchant.post("/checkout/sessions", json=_session_body())).json()["id"]
    hub = StatusHub()
    with hub.subscribe(record.id) as sub_heard, hub.subscribe(session_id) as session_heard:
        await republish_statuses(server.db, hub)
        assert await sub_heard.next() == {"id": record.id, "status": subs.ACTIVE}
        assert await session_heard.next() == {"id": session_id, "status": "created"}
