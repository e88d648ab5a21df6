"""The hosted page in a real headless browser (Debian's chromium, driven by Playwright).

Each scenario runs Playwright's sync API in a worker thread (`trio.to_thread.run_sync`)
while the service runs on trio in this one. Screenshots land in tests/artifacts/.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Iterator
from typing import Any

import attrs
import pytest
import trio
import trio.testing
from fgcpay.core.clock import TrioClock
from fgcpay.core.settings import Settings
from fgcpay.domain import subscriptions
from helpers import (
    WAIT_MS,
    Server,
    browser,
    charges_of,
    fill_and_approve,
    fill_and_pay,
    in_browser,
    page_url,
    screenshot,
    shop_site,
    start_server,
    stored,
    subscription_to_approve,
)
from hosted import new_session

# Skips (or, in CI, fails) every test here without chromium.
pytestmark = pytest.mark.usefixtures("need_browser")


@pytest.fixture
def shop() -> Iterator[str]:
    with shop_site() as url:
        yield url


async def test_paying_as_test_0001_lands_on_the_success_url(server: Server, shop: str) -> None:
    merchant, session = await new_session(
        server, success_url=f"{shop}/thanks?order=42", cancel_url=f"{shop}/cart"
    )

    def scenario() -> None:
        with browser() as b:
            page = b.new_page(viewport={"width": 390, "height": 844})
            page.goto(str(session["checkout_url"]))
            assert page.get_by_text("12.50 FGC").is_visible()
            assert page.get_by_text("Acme Coffee").first.is_visible()
            screenshot(page, f"checkout-page-{server.db.dialect}")
            fill_and_pay(page, "TEST-0001", "1234")
            page.wait_for_url(f"{shop}/thanks*", timeout=WAIT_MS)
            assert f"checkout_session_id={session['id']}" in page.url
            assert "order=42" in page.url
            assert page.get_by_text("Thank you for your order").is_visible()

    await in_browser(scenario)
    api = (await merchant.get(f"/checkout/sessions/{session['id']}")).json()
    assert api["status"] == "paid"


async def test_approving_a_subscription_as_test_0001_lands_on_the_success_url(
    server: Server, shop: str
) -> None:
    _, sub = await subscription_to_approve(
        server, success_url=f"{shop}/thanks?plan=club", cancel_url=f"{shop}/cart"
    )

    def scenario() -> None:
        with browser() as b:
            page = b.new_page(viewport={"width": 390, "height": 844})
            page.goto(page_url(server, sub))
            assert page.get_by_test_id("amount").inner_text() == "12.50 FGC every month"
            assert page.get_by_text("Coffee club").is_visible()
            page.wait_for_function("document.body.dataset.status === 'paused'")
            screenshot(page, f"subscription-approve-{server.db.dialect}")
            fill_and_approve(page, "TEST-0001", "1234")
            page.wait_for_url(f"{shop}/thanks*", timeout=WAIT_MS)
            assert f"subscription_id={sub.id}" in page.url
            assert "plan=club" in page.url
            assert page.get_by_text("Thank you for your order").is_visible()

    await in_browser(scenario)
    assert (await stored(server.db, sub.id)).status == subscriptions.ACTIVE
    assert len(await charges_of(server.db, sub.id)) == 1


async def test_an_approval_in_another_tab_turns_this_tab_approved(
    server: Server, shop: str
) -> None:
    _, sub = await subscription_to_approve(server, success_url=f"{shop}/thanks")

    def scenario() -> None:
        with browser() as b:
            context = b.new_context()
            first = context.new_page()
            first.goto(page_url(server, sub))
            first.wait_for_function("document.body.dataset.status === 'paused'")
            second = context.new_page()
            second.goto(page_url(server, sub))
            fill_and_approve(second, "TEST-0001", "1234")
            second.wait_for_url(f"{shop}/thanks*", timeout=WAIT_MS)
            first.get_by_test_id("active").wait_for(state="visible", timeout=WAIT_MS)
            assert first.get_by_text("Subscription approved").is_visible()
            assert not first.get_by_role("button", name="Approve").is_visible()
            screenshot(first, f"subscription-approved-elsewhere-{server.db.dialect}")

    await in_browser(scenario)


async def test_an_active_subscription_cancelled_elsewhere_turns_its_page_cancelled(
    server: Server,
) -> None:
    merchant, sub = await subscription_to_approve(server)
    await server.running.service.subscriptions.approve(sub.id, "TEST-0001", "1234")
    page_open = threading.Event()
    cancelled = threading.Event()

    def scenario() -> None:
        with browser() as b:
            page = b.new_page()
            try:
                page.goto(page_url(server, sub))
                page.get_by_test_id("active").wait_for(state="visible", timeout=WAIT_MS)
            finally:
                page_open.set()  # on failure too, so the test ends and reports it
            cancelled.wait(timeout=30)
            # No reload: the page's live channel brings the cancel.
            page.get_by_test_id("cancelled").wait_for(state="visible", timeout=WAIT_MS)
            assert not page.get_by_test_id("active").is_visible()
            screenshot(page, f"subscription-cancelled-elsewhere-{server.db.dialect}")

    async with trio.open_nursery() as inner:
        inner.start_soon(in_browser, scenario)
        await trio.to_thread.run_sync(page_open.wait)
        response = await merchant.post(f"/subscriptions/{sub.id}/cancel")
        assert response.status_code == 200, response.text
        cancelled.set()


async def test_a_wrong_pin_shows_the_message(server: Server) -> None:
    _, session = await new_session(server)

    def scenario() -> None:
        with browser() as b:
            page = b.new_page()
            page.goto(str(session["checkout_url"]))
            fill_and_pay(page, "TEST-0001", "0000")
            alert = page.get_by_role("alert")
            alert.wait_for(timeout=WAIT_MS)
            assert "not right" in alert.inner_text()
            assert page.get_by_role("button", name="Pay").is_enabled()
            screenshot(page, f"wrong-pin-{server.db.dialect}")

    await in_browser(scenario)


async def test_a_payment_in_another_tab_turns_this_tab_paid(server: Server, shop: str) -> None:
    _, session = await new_session(server, success_url=f"{shop}/thanks")

    def scenario() -> None:
        with browser() as b:
            context = b.new_context()
            first = context.new_page()
            first.goto(str(session["checkout_url"]))
            first.wait_for_function("document.body.dataset.status === 'created'")
            second = context.new_page()
            second.goto(str(session["checkout_url"]))
            fill_and_pay(second, "TEST-0001", "1234")
            second.wait_for_url(f"{shop}/thanks*", timeout=WAIT_MS)
            first.get_by_test_id("paid").wait_for(state="visible", timeout=WAIT_MS)
            assert not first.get_by_role("button", name="Pay").is_visible()
            screenshot(first, f"paid-elsewhere-{server.db.dialect}")

    await in_browser(scenario)


@pytest.fixture
def manual_clock() -> trio.testing.MockClock:
    """Time moves only when the test jumps it: while the browser thread works, every trio
    task is idle, and an autojumping clock would run the session out before the page
    has even loaded."""
    return trio.testing.MockClock()


async def test_expiry_turns_the_open_page_expired(
    nursery: trio.Nursery, settings: Settings, manual_clock: trio.testing.MockClock
) -> None:
    clock = manual_clock
    server = await start_server(
        nursery, attrs.evolve(settings, checkout_ttl_seconds=600), clock=TrioClock()
    )
    _, session = await new_session(server)
    page_open = threading.Event()
    jumped = threading.Event()

    def scenario() -> None:
        with browser() as b:
            page = b.new_page()
            frames: list[object] = []

            def on_socket(socket: Any) -> None:
                socket.on("framereceived", lambda frame: frames.append(frame))

            page.on("websocket", on_socket)
            try:
                page.goto(str(session["checkout_url"]))
                page.wait_for_function("document.body.dataset.status === 'created'")
                # The server subscribes the page's socket before it sends the first
                # status: once that frame is here, a change made now reaches the page.
                deadline = time.monotonic() + WAIT_MS / 1000
                while not frames:
                    assert time.monotonic() < deadline, "the page's websocket sent nothing"
                    page.wait_for_timeout(20)
            finally:
                page_open.set()  # on failure too, so the test ends and reports it
            jumped.wait(timeout=30)
            page.get_by_test_id("expired").wait_for(state="visible", timeout=WAIT_MS)
            assert not page.get_by_role("button", name="Pay").is_visible()
            screenshot(page, f"expired-{server.db.dialect}")

    async with trio.open_nursery() as inner:
        inner.start_soon(in_browser, scenario)
        await trio.to_thread.run_sync(page_open.wait)
        clock.jump(601)
        jumped.set()
    await server.shutdown()
