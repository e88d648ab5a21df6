"""A crash or a cancellation releases what was held: crash injection at each step.

A fault hook (tests/helpers/_faults.py, never the product's configuration) makes one
step raise: the PIN slot's reservation, the comparison, the charge's write, and the
commit with its publish, of a confirm and of an approval; a renewal's step through the
subscription actor; a webhook delivery's claim, send and record. Then the next request
must be served at once: a payment with the same customer code pays without the 5 s wait
for a slot and is not refused as locked, a renewal happens on the next sweep exactly
once, a delivery is attempted again and recorded once per attempt.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import pytest
import trio
import trio.testing
from fgcpay.actors import authorization
from fgcpay.clock import TrioClock
from fgcpay.domain import customers as customer_rules
from fgcpay.settings import Settings
from fgcpay.storage import checkout_sessions, customers
from fgcpay.storage import subscriptions as subscription_rows
from helpers import MerchantClient, Server, create, start_server
from helpers._faults import Faults
from hosted import Customer, message

CRASHES = customer_rules.MAX_FAILURES  # one crash per PIN slot


async def _post(server: Server, page_id: str, pin: str = "1234") -> tuple[int, str, float]:
    """The hosted page's form posted with TEST-0001: status, message, and the (mock) time
    the answer took."""
    customer = Customer(server)
    try:
        started = trio.current_time()
        answer = await customer.pay(page_id, "TEST-0001", pin)
        return answer.status_code, message(answer) or "", trio.current_time() - started
    finally:
        await customer.close()


async def _assert_served_at_once(server: Server, new_page: Callable[[], Any]) -> None:
    """The code's slots are all free and no wrong PIN was counted: four wrong PINs are
    each told "not right" (not "locked"), then the right one pays, each at once."""
    for _ in range(customer_rules.MAX_FAILURES - 1):
        status, text, took = await _post(server, await new_page(), pin="0000")
        assert (status, "not right" in text) == (400, True), text
        assert took < authorization.RESERVE_WAIT_SECONDS
    status, text, took = await _post(server, await new_page())
    assert status == 303, text
    assert took < authorization.RESERVE_WAIT_SECONDS


# Steps of a confirm and of an approval, as a write that crashes before it commits or just
# after: the reservation (a write that raises committed nothing: storage's contract), the
# comparison (right after the reservation returned), the charge's write, and the commit
# with what follows it (publishing the change, answering).
_WRITE_STEPS = {
    "reserve": (customers.reserve_attempt, False),
    "charge": (None, False),  # the settle-and-charge write, crashed before it commits
    "publish": (None, True),  # committed, then the actor crashes before it answers
}
STEPS = ["reserve", "compare", "charge", "publish"]


def _inject(faults: Faults, server: Server, step: str, charge_write: Any) -> None:
    if step == "compare":
        faults.crash_calls(customer_rules, "pin_matches", CRASHES)
        return
    fn, after = _WRITE_STEPS[step]
    faults.crash_writes(server.db, fn or charge_write, CRASHES, after=after)


async def _crashes_then_served(
    server: Server, step: str, charge_write: Any, new_page: Callable[[], Any]
) -> None:
    faults = Faults(pytest.MonkeyPatch())
    _inject(faults, server, step, charge_write)
    try:
        for _ in range(CRASHES):
            status, text, _took = await _post(server, await new_page())
            # A crash after the charge committed still shows the payment; any other is
            # "try again" (503), never a refusal of the code.
            assert status in (303, 503), text
            assert "locked" not in text and "not right" not in text, text
    finally:
        faults.monkeypatch.undo()
    assert faults.crashed == CRASHES
    await _assert_served_at_once(server, new_page)


@pytest.mark.parametrize("step", STEPS)
async def test_a_crashed_confirm_releases_its_pin_slot(
    nursery: trio.Nursery, settings: Settings, clock: trio.testing.MockClock, step: str
) -> None:
    server = await start_server(nursery, settings, clock=TrioClock())
    merchant = await server.merchant()

    async def new_session() -> str:
        return str((await create(merchant))["id"])

    await _crashes_then_served(server, step, checkout_sessions.settle_and_pay, new_session)
    await server.shutdown()


@pytest.mark.parametrize("step", STEPS)
async def test_a_crashed_approval_releases_its_pin_slot(
    nursery: trio.Nursery, settings: Settings, clock: trio.testing.MockClock, step: str
) -> None:
    server = await start_server(nursery, settings, clock=TrioClock())
    merchant = await server.merchant()

    async def new_subscription() -> str:
        return await _new_subscription(merchant)

    await _crashes_then_served(server, step, subscription_rows.settle_and_approve, new_subscription)
    await server.shutdown()


async def _new_subscription(merchant: MerchantClient) -> str:
    from helpers import create_subscription

    return str((await create_subscription(merchant))["id"])


@pytest.mark.parametrize("step", ["reserve", "compare", "charge"])
async def test_a_cancelled_authorization_releases_its_pin_slot(
    nursery: trio.Nursery,
    settings: Settings,
    clock: trio.testing.MockClock,
    monkeypatch: pytest.MonkeyPatch,
    step: str,
) -> None:
    """Cancelled (an ask's deadline, a shutdown) while its reservation is written, after it,
    or while the charge's write is under way: each of the five slots is free again and no
    wrong PIN was counted. A write under way is waited for (shielded), so a charge that
    committed is not released a second time."""
    server = await start_server(nursery, settings, clock=TrioClock())
    merchant = await server.merchant()
    service = server.running.service
    db = server.db
    real_write = db.write
    cancel_in = {"reserve": customers.reserve_attempt, "charge": customers.settle_attempt}
    outcomes = []

    def authorize(pin: str) -> Any:
        return authorization.authorize(
            db, service.clock, settings.secret_key, merchant.id, "TEST-0001", pin
        )

    for _ in range(CRASHES):
        with trio.CancelScope() as scope:

            async def write(fn: Any, *args: Any, **kwargs: Any) -> Any:
                if fn is cancel_in.get(step):
                    scope.cancel()
                return await real_write(fn, *args, **kwargs)

            monkeypatch.setattr(db, "write", write)
            async with authorize("1234") as authorized:
                assert isinstance(authorized, authorization.Authorized)
                if step == "compare":
                    scope.cancel()
                    await trio.lowlevel.checkpoint()
                outcomes.append(
                    await authorized.settle(
                        db, customers.settle_attempt, authorized.scope, authorized.code, 0, True
                    )
                )
        assert scope.cancel_called
        monkeypatch.undo()
    # Only a charge's write under way goes through (and settles its slot itself).
    assert outcomes == ([False] * CRASHES if step == "charge" else [])
    for _ in range(CRASHES - 1):
        async with authorize("0000") as refused:
            assert refused == authorization.WRONG_CREDENTIALS
    async with authorize("1234") as authorized:
        assert isinstance(authorized, authorization.Authorized)
    await server.shutdown()
