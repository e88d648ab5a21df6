"""A subscription's approval on the hosted page, over HTTP on both storage backends: the
same route, template, CSRF, PIN rules, lockout and live status as a session's payment.
(The subscriptions are made through the client API: the API routes come separately.)"""

from __future__ import annotations

import json
import re
from typing import Any
from urllib.parse import parse_qs, urlsplit

import attrs
import pytest
import trio
import trio.testing
from fgcpay.core.clock import TrioClock
from fgcpay.core.settings import Settings
from fgcpay.domain import checkout
from fgcpay.domain import subscriptions as subs
from fgcpay.domain.periods import DAY_US
from fgcpay.domain.times import iso_ms
from fgcpay.storage import customers as customer_rows
from fgcpay.storage import transactions
from helpers import (
    Server,
    add_subscription,
    add_test_clock,
    charges_of,
    start_server,
    stored,
    subscription_to_approve,
    utc_us,
    wait_for_subscription_status,
)
from hosted import Customer, message, page_status
from trio_websocket import ConnectionClosed, open_websocket_url


def _visible_text(html: str) -> str:
    return " ".join(re.sub(r"<[^>]+>", " ", html).split())


def _final_statuses(text: str) -> set[str]:
    return set(text.split('data-final-statuses="')[1].split('"')[0].split())


@pytest.mark.parametrize(
    ("interval", "line"),
    [
        ("daily", "12.50 FGC every day"),
        ("weekly", "12.50 FGC every week"),
        ("monthly", "12.50 FGC every month"),
        ("yearly", "12.50 FGC every year"),
    ],
)
async def test_the_page_shows_the_amount_with_its_interval_and_approve(
    server: Server, interval: str, line: str
) -> None:
    _, sub = await subscription_to_approve(server, interval=interval, description="Coffee club")
    customer = Customer(server)
    page = await customer.open(sub.id)
    assert page.status_code == 200
    assert page.headers["content-type"].startswith("text/html")
    assert line in _visible_text(page.text)
    for expected in ("Acme Coffee", "Coffee club", "Customer code", "PIN", ">Approve<",
                     "Test mode", "TEST-0001", "TEST-0004", "https://shop.example/cart"):  # fmt: skip
        assert expected in page.text, expected
    assert ">Pay<" not in page.text
    assert page_status(page) == "paused"
    # The page's security headers are the session page's.
    assert "frame-ancestors 'none'" in page.headers["Content-Security-Policy"]
    assert page.headers["Cache-Control"] == "no-store"
    await customer.close()


async def test_the_page_follows_until_the_subscription_can_no_longer_change(
    server: Server,
) -> None:
    _, sub = await subscription_to_approve(server)
    customer = Customer(server)
    page = await customer.open(sub.id)
    # From the table: only the statuses no transition leaves. An active or past-due
    # subscription can still be cancelled (or end), and its page shows it.
    assert _final_statuses(page.text) == {"cancelled", "ended"}
    assert _final_statuses(page.text) == set(subs.STATES.final)
    await customer.close()


async def test_approving_as_test_0001_redirects_to_success_url_and_activates(
    server: Server,
) -> None:
    _, sub = await subscription_to_approve(server, success_url="https://shop.example/thanks?o=7")
    customer = Customer(server)
    response = await customer.pay(sub.id)
    assert response.status_code == 303
    target = urlsplit(response.headers["Location"])
    assert (target.scheme, target.netloc, target.path) == ("https", "shop.example", "/thanks")
    assert parse_qs(target.query) == {"o": ["7"], "subscription_id": [sub.id]}
    active = await stored(server.db, sub.id)
    assert (active.status, active.customer_code, active.charge_count) == (
        subs.ACTIVE,
        "TEST-0001",
        1,
    )
    charges = await charges_of(server.db, sub.id)
    assert [(c.amount_minor, c.customer_code, c.period) for c in charges] == [
        (1250, "TEST-0001", 0)
    ]
    # The page now says approved, and approving again changes nothing.
    page = await customer.open(sub.id)
    assert page_status(page) == "active" and "Subscription approved" in page.text
    again = await customer.pay(sub.id)
    assert again.status_code == 200 and page_status(again) == "active"
    assert message(again) is None
    assert len(await charges_of(server.db, sub.id)) == 1
    await customer.close()


async def test_two_tabs_approving_at_once_charge_once(server: Server) -> None:
    _, sub = await subscription_to_approve(server)
    tabs = [Customer(server) for _ in range(4)]
    results = []

    async def approve(tab: Customer) -> None:
        results.append(await tab.pay(sub.id))

    async with trio.open_nursery() as nursery:
        for tab in tabs:
            nursery.start_soon(approve, tab)
    assert sorted(r.status_code for r in results) == [200] * 3 + [303]
    assert len(await charges_of(server.db, sub.id)) == 1
    for tab in tabs:
        await tab.close()


@pytest.mark.parametrize(
    ("code", "pin", "expected"),
    [
        ("TEST-0001", "9999", "The customer code or PIN is not right"),
        ("TEST-9999", "1234", "The customer code or PIN is not right"),
        ("TEST-0002", "1234", "insufficient funds"),
        ("TEST-0003", "1234", "customer is blocked"),
    ],
)
async def test_refused_approvals_show_a_message_and_change_nothing(
    server: Server, code: str, pin: str, expected: str
) -> None:
    _, sub = await subscription_to_approve(server)
    customer = Customer(server)
    response = await customer.pay(sub.id, code, pin)
    assert response.status_code == 400
    assert expected in (message(response) or "")
    assert page_status(response) == "paused"
    assert 'aria-invalid="true"' in response.text  # the PIN field, as on a session's page
    assert f'value="{code}"' in response.text  # the code is kept for another try
    assert (await stored(server.db, sub.id)).status == subs.PAUSED
    assert await charges_of(server.db, sub.id) == []
    await customer.close()


async def test_five_wrong_pins_lock_the_code_for_subscriptions_and_sessions_alike(
    nursery: trio.Nursery, settings: Settings, clock: trio.testing.MockClock
) -> None:
    server = await start_server(nursery, settings, clock=TrioClock())
    merchant, sub = await subscription_to_approve(server)
    customer = Customer(server)
    for _ in range(4):
        assert "not right" in (message(await customer.pay(sub.id, pin="0000")) or "")
    assert "locked" in (message(await customer.pay(sub.id, pin="0000")) or "")
    assert "locked" in (message(await customer.pay(sub.id)) or "")
    # The lock is the code's (per merchant), whatever the page: a session's too.
    session = await merchant.post("/checkout/sessions", json=_session_body())
    assert session.status_code == 201, session.text
    assert "locked" in (message(await customer.pay(session.json()["id"])) or "")
    clock.jump(15 * 60 + 1)
    assert (await customer.pay(sub.id)).status_code == 303
    assert len(await charges_of(server.db, sub.id)) == 1
    await customer.close()
    await server.shutdown()


def _session_body() -> dict[str, Any]:
    return {
        "amount_fgc": "3.00",
        "currency": "FGC",
        "description": "A flat white",
        "success_url": "https://shop.example/thanks",
        "cancel_url": "https://shop.example/cart",
    }


async def test_a_post_without_the_csrf_token_changes_nothing(server: Server) -> None:
    _, sub = await subscription_to_approve(server)
    customer = Customer(server)
    await customer.open(sub.id)
    for token in (None, "forged"):
        data = {"customer_code": "TEST-0001", "pin": "1234"}
        if token:
            data["csrf_token"] = token
        response = await customer.client.post(f"/checkout/{sub.id}", data=data)
        assert response.status_code == 400
        assert "try again" in (message(response) or "")
    # A token from another browser (another cookie) does not work either.
    stranger = Customer(server)
    page = await stranger.open(sub.id)
    token = page.text.split('name="csrf_token" value="')[1].split('"')[0]
    response = await customer.client.post(
        f"/checkout/{sub.id}",
        data={"csrf_token": token, "customer_code": "TEST-0001", "pin": "1234"},
    )
    assert response.status_code == 400
    assert (await stored(server.db, sub.id)).status == subs.PAUSED
    assert await charges_of(server.db, sub.id) == []
    await customer.close()
    await stranger.close()


async def test_a_cancelled_subscription_shows_cancelled_and_cannot_be_approved(
    server: Server,
) -> None:
    merchant, sub = await subscription_to_approve(server)
    await server.running.service.subscriptions.cancel(merchant.id, sub.id)
    customer = Customer(server)
    page = await customer.open(sub.id)
    assert page_status(page) == "cancelled"
    assert "This subscription has been cancelled" in page.text
    response = await customer.pay(sub.id)
    assert response.status_code == 200 and page_status(response) == "cancelled"
    assert message(response) is None
    assert await charges_of(server.db, sub.id) == []
    await customer.close()


async def test_past_its_end_date_a_paused_subscription_reads_ended_and_cannot_be_approved(
    nursery: trio.Nursery, settings: Settings, clock: trio.testing.MockClock
) -> None:
    server = await start_server(nursery, settings, clock=TrioClock())
    now = server.running.service.clock.now_us()
    _, sub = await subscription_to_approve(server, end_date=iso_ms(now + DAY_US))
    customer = Customer(server)
    assert page_status(await customer.open(sub.id)) == "paused"
    clock.jump(DAY_US / 1_000_000 + 1)
    page = await customer.open(sub.id)
    assert page_status(page) == "ended" and "This subscription has ended" in page.text
    status = await customer.client.get(f"/checkout/{sub.id}/status")
    assert status.json() == {"id": sub.id, "status": "ended"}
    token = page.text.split('name="csrf_token" value="')[1].split('"')[0]
    response = await customer.client.post(
        f"/checkout/{sub.id}",
        data={"csrf_token": token, "customer_code": "TEST-0001", "pin": "1234"},
    )
    assert response.status_code == 200 and page_status(response) == "ended"
    assert message(response) is None
    assert await charges_of(server.db, sub.id) == []
    await customer.close()
    await server.shutdown()


async def test_on_a_test_clock_the_page_judges_the_end_date_by_the_clock(
    server: Server,
) -> None:
    service = server.running.service
    merchant = await server.merchant("Acme Coffee")
    test_clock = await add_test_clock(service, merchant.id, "2031-01-01T00:00:00Z")
    sub = await add_subscription(
        service, merchant.id, test_clock=test_clock.id, end_date="2031-01-02T00:00:00Z"
    )
    customer = Customer(server)
    assert page_status(await customer.open(sub.id)) == "paused"
    # Years ahead of the service's time, but past end_date on the subscription's clock.
    await service.test_clocks.advance(merchant.id, test_clock.id, utc_us(2031, 1, 3))
    assert page_status(await customer.open(sub.id)) == "ended"
    response = await customer.pay(sub.id)
    assert response.status_code == 200 and page_status(response) == "ended"
    assert await charges_of(server.db, sub.id) == []
    await customer.close()


async def test_unknown_subscription_is_a_404_page(server: Server) -> None:
    customer = Customer(server)
    for page_id in ("sub_test_" + "A" * 24, "sub_test_x"):
        assert (await customer.open(page_id)).status_code == 404
        assert (await customer.client.get(f"/checkout/{page_id}/status")).status_code == 404
    await customer.close()


async def test_the_status_endpoint_reports_paused_then_active(server: Server) -> None:
    _, sub = await subscription_to_approve(server)
    customer = Customer(server)
    status = await customer.client.get(f"/checkout/{sub.id}/status")
    assert status.json() == {"id": sub.id, "status": "paused"}
    assert status.headers["Cache-Control"] == "no-store"
    assert (await customer.pay(sub.id)).status_code == 303
    status = await customer.client.get(f"/checkout/{sub.id}/status")
    assert status.json() == {"id": sub.id, "status": "active"}
    await customer.close()


def _ws_url(server: Server, page_id: str) -> str:
    return server.url.replace("http://", "ws://") + f"/checkout/{page_id}/ws"


async def test_the_websocket_stays_open_once_active_and_reports_a_cancel(
    server: Server,
) -> None:
    merchant, sub = await subscription_to_approve(server)
    async with open_websocket_url(_ws_url(server, sub.id)) as ws:
        assert json.loads(await ws.get_message()) == {"id": sub.id, "status": "paused"}
        customer = Customer(server)
        assert (await customer.pay(sub.id)).status_code == 303
        await customer.close()
        assert json.loads(await ws.get_message()) == {"id": sub.id, "status": "active"}
        # Approved, yet it can still change: cancelled through the API, the page hears it.
        cancelled = await merchant.post(f"/subscriptions/{sub.id}/cancel")
        assert cancelled.status_code == 200, cancelled.text
        assert json.loads(await ws.get_message()) == {"id": sub.id, "status": "cancelled"}
        # Cancelled is final: nothing more can change, the socket closes.
        with pytest.raises(ConnectionClosed) as closed:
            await ws.get_message()
        assert closed.value.reason is not None and closed.value.reason.code == 1000


async def test_the_websocket_of_an_active_subscription_follows_it_until_cancelled(
    server: Server,
) -> None:
    merchant, sub = await subscription_to_approve(server)
    await server.running.service.subscriptions.approve(sub.id, "TEST-0001", "1234")
    async with open_websocket_url(_ws_url(server, sub.id)) as ws:
        assert json.loads(await ws.get_message()) == {"id": sub.id, "status": "active"}
        cancelled = await merchant.post(f"/subscriptions/{sub.id}/cancel")
        assert cancelled.status_code == 200, cancelled.text
        assert json.loads(await ws.get_message()) == {"id": sub.id, "status": "cancelled"}
        with pytest.raises(ConnectionClosed):
            await ws.get_message()


async def test_the_websocket_of_a_cancelled_subscription_sends_it_and_closes(
    server: Server,
) -> None:
    merchant, sub = await subscription_to_approve(server)
    await server.running.service.subscriptions.cancel(merchant.id, sub.id)
    async with open_websocket_url(_ws_url(server, sub.id)) as ws:
        assert json.loads(await ws.get_message()) == {"id": sub.id, "status": "cancelled"}
        with pytest.raises(ConnectionClosed) as closed:
            await ws.get_message()
        assert closed.value.reason is not None and closed.value.reason.code == 1000


async def test_a_session_page_still_follows_only_its_own_table(server: Server) -> None:
    merchant = await server.merchant("Acme Coffee")
    created = await merchant.post("/checkout/sessions", json=_session_body())
    customer = Customer(server)
    page = await customer.open(created.json()["id"])
    assert _final_statuses(page.text) == set(checkout.STATES.final)
    assert "Subscription approved" not in page.text and "every month" not in page.text
    await customer.close()


@pytest.mark.parametrize("commits", [True, False])
async def test_an_approval_that_outlives_its_ask_shows_the_true_outcome(
    nursery: trio.Nursery,
    settings: Settings,
    clock: trio.testing.MockClock,
    monkeypatch: pytest.MonkeyPatch,
    commits: bool,
) -> None:
    ask_timeout = 5.0
    server = await start_server(
        nursery, attrs.evolve(settings, actor_ask_timeout_seconds=ask_timeout), clock=TrioClock()
    )
    _, sub = await subscription_to_approve(server)
    real_write = server.db.write
    release = trio.Event()

    async def slow_write(fn: Any, *args: Any, **kwargs: Any) -> Any:
        if fn is customer_rows.attempt:
            if commits:
                # Handed to the writer, a slow commit (mock time) past the ask's deadline:
                # awaited whole (shielded, as storage awaits a write handed over).
                with trio.CancelScope(shield=True):
                    await trio.sleep(ask_timeout * 1.5)
                    return await real_write(fn, *args, **kwargs)
            await release.wait()  # never handed over before the deadline: cancelled
        return await real_write(fn, *args, **kwargs)

    monkeypatch.setattr(server.db, "write", slow_write)
    customer = Customer(server)
    answer = await customer.pay(sub.id)
    if commits:
        assert answer.status_code == 303
        assert f"subscription_id={sub.id}" in answer.headers["location"]
    else:
        assert answer.status_code == 503
        assert answer.headers["content-type"].startswith("text/html")
        assert int(answer.headers["retry-after"]) >= 1
        assert "try again" in (message(answer) or "")
        release.set()
        # The approval past its deadline was cancelled before it wrote (issue 28): nothing
        # was charged, and the customer's retry approves once.
        await trio.testing.wait_all_tasks_blocked()
        assert await server.db.read(transactions.for_subscription, sub.id) == []
        assert (await customer.pay(sub.id)).status_code == 303
        with trio.fail_after(60):
            await wait_for_subscription_status(server.running.service, sub.id, subs.ACTIVE)
        assert page_status(await customer.open(sub.id)) == "active"
    assert len(await server.db.read(transactions.for_subscription, sub.id)) == 1
    await customer.close()
    await server.shutdown()
