"""The hosted checkout page as a customer uses it, on both storage backends."""

from __future__ import annotations

import logging
from urllib.parse import parse_qs, urlsplit

import attrs
import pytest
import trio
import trio.testing
from fgcpay.core.clock import TrioClock
from fgcpay.core.logs import JsonFormatter
from fgcpay.core.settings import Settings
from fgcpay.domain import checkout
from fgcpay.storage import customers, transactions
from helpers import Server, create, start_server
from hosted import Customer, message, new_session, page_status


async def test_the_page_script_stops_following_at_the_final_statuses_of_the_table(
    server: Server,
) -> None:
    _, session = await new_session(server)
    customer = Customer(server)
    page = await customer.open(str(session["id"]))
    final = " ".join(sorted(checkout.STATES.final))
    assert final == "expired paid"
    assert f'data-final-statuses="{final}"' in page.text
    await customer.close()


async def test_the_page_shows_what_the_customer_needs(server: Server) -> None:
    _, session = await new_session(server, description="Two flat whites")
    customer = Customer(server)
    page = await customer.open(str(session["id"]))
    assert page.status_code == 200
    assert page.headers["content-type"].startswith("text/html")
    for text in ("Acme Coffee", "12.50 FGC", "Two flat whites", "Customer code", "PIN", ">Pay<",
                 "Test mode", "TEST-0001", "TEST-0002", "TEST-0003", "https://shop.example/cart"):  # fmt: skip
        assert text in page.text, text
    assert 'type="password"' in page.text and 'inputmode="numeric"' in page.text
    assert 'autocomplete="off"' in page.text
    assert "http://" not in page.text.replace(str(session["cancel_url"]), "").replace(
        str(session["success_url"]), ""
    ).split("<body")[0].replace("http://www.w3.org", ""), "the page loads nothing external"
    await customer.close()


async def test_page_headers_protect_the_capability_url(server: Server) -> None:
    _, session = await new_session(server)
    customer = Customer(server)
    page = await customer.open(str(session["id"]))
    csp = page.headers["Content-Security-Policy"]
    assert "unsafe-inline" not in csp
    assert "frame-ancestors 'none'" in csp
    assert "default-src 'none'" in csp
    assert page.headers["Referrer-Policy"] == "no-referrer"
    assert page.headers["Cache-Control"] == "no-store"
    await customer.close()


async def test_unknown_session_is_a_404_page(server: Server) -> None:
    customer = Customer(server)
    for session_id in ("cs_test_" + "A" * 24, "nonsense", "cs_test_x"):
        page = await customer.open(session_id)
        assert page.status_code == 404
        assert "not valid" in page.text
    status = await customer.client.get("/checkout/cs_test_nope/status")
    assert status.status_code == 404
    await customer.close()


async def test_paying_as_test_0001_redirects_to_success_url_and_marks_paid(server: Server) -> None:
    merchant, session = await new_session(server)
    customer = Customer(server)
    response = await customer.pay(str(session["id"]))
    assert response.status_code == 303
    target = urlsplit(response.headers["Location"])
    assert (target.scheme, target.netloc, target.path) == ("https", "shop.example", "/thanks")
    assert parse_qs(target.query) == {"order": ["42"], "checkout_session_id": [session["id"]]}
    paid = (await merchant.get(f"/checkout/sessions/{session['id']}")).json()
    assert paid["status"] == "paid" and paid["paid_at"] is not None
    written = await server.db.read(transactions.for_checkout_session, str(session["id"]))
    assert len(written) == 1
    assert written[0].amount_minor == 1250 and written[0].customer_code == "TEST-0001"
    # The page now says paid, and paying again changes nothing.
    again = await customer.pay(str(session["id"]))
    assert again.status_code == 200 and page_status(again) == "paid"
    assert len(await server.db.read(transactions.for_checkout_session, str(session["id"]))) == 1
    await customer.close()


async def test_two_tabs_paying_at_once_make_exactly_one_transaction(server: Server) -> None:
    merchant, session = await new_session(server)
    tabs = [Customer(server) for _ in range(6)]
    results = []

    async def pay(tab: Customer) -> None:
        results.append(await tab.pay(str(session["id"])))

    async with trio.open_nursery() as nursery:
        for tab in tabs:
            nursery.start_soon(pay, tab)
    assert sorted(r.status_code for r in results) == [200] * 5 + [303]
    assert all(page_status(r) == "paid" for r in results if r.status_code == 200)
    assert len(await server.db.read(transactions.for_checkout_session, str(session["id"]))) == 1
    for tab in tabs:
        await tab.close()


@pytest.mark.parametrize(
    ("code", "pin", "expected"),
    [
        ("TEST-0001", "9999", "The customer code or PIN is not right"),
        ("TEST-9999", "1234", "The customer code or PIN is not right"),
        ("", "", "The customer code or PIN is not right"),
        ("TEST-0002", "1234", "insufficient funds"),
        ("TEST-0003", "1234", "customer is blocked"),
    ],
)
async def test_refused_payments_show_a_message_and_change_nothing(
    server: Server, code: str, pin: str, expected: str
) -> None:
    merchant, session = await new_session(server)
    customer = Customer(server)
    response = await customer.pay(str(session["id"]), code, pin)
    assert response.status_code == 400
    assert expected in (message(response) or "")
    assert page_status(response) == "created"
    assert (await merchant.get(f"/checkout/sessions/{session['id']}")).json()["status"] == "created"
    assert await server.db.read(transactions.for_checkout_session, str(session["id"])) == []
    await customer.close()


async def test_customer_code_is_case_and_space_insensitive(server: Server) -> None:
    _, session = await new_session(server)
    customer = Customer(server)
    assert (await customer.pay(str(session["id"]), "  test-0001 ", "1234")).status_code == 303
    await customer.close()


async def test_five_wrong_pins_lock_the_code_for_15_minutes(
    nursery: trio.Nursery, settings: Settings, clock: trio.testing.MockClock
) -> None:
    server = await start_server(nursery, settings, clock=TrioClock())
    merchant, session = await new_session(server)
    customer = Customer(server)
    sid = str(session["id"])
    for _ in range(4):
        assert "not right" in (message(await customer.pay(sid, pin="0000")) or "")
    assert "locked" in (message(await customer.pay(sid, pin="0000")) or "")
    # Even the right PIN is refused while locked, on any of the merchant's sessions (a test
    # customer's lock is kept per merchant: tests/test_lockout.py shows another's pays).
    assert "locked" in (message(await customer.pay(sid)) or "")
    other = await create(merchant)
    assert "locked" in (message(await customer.pay(str(other["id"]))) or "")
    clock.jump(14 * 60)
    assert "locked" in (message(await customer.pay(sid)) or "")
    clock.jump(61)
    assert (await customer.pay(sid)).status_code == 303
    assert len(await server.db.read(transactions.for_checkout_session, sid)) == 1
    await customer.close()
    await server.shutdown()


async def test_wrong_pins_spread_over_more_than_15_minutes_do_not_lock(
    nursery: trio.Nursery, settings: Settings, clock: trio.testing.MockClock
) -> None:
    server = await start_server(nursery, settings, clock=TrioClock())
    _, session = await new_session(server)
    customer = Customer(server)
    sid = str(session["id"])
    for _ in range(4):
        await customer.pay(sid, pin="0000")
    clock.jump(16 * 60)
    assert "not right" in (message(await customer.pay(sid, pin="0000")) or "")
    assert (await customer.pay(sid)).status_code == 303
    await customer.close()
    await server.shutdown()


async def test_an_expired_session_cannot_be_paid(
    nursery: trio.Nursery, settings: Settings, clock: trio.testing.MockClock
) -> None:
    server = await start_server(
        nursery, attrs.evolve(settings, checkout_ttl_seconds=300), clock=TrioClock()
    )
    merchant, session = await new_session(server)
    customer = Customer(server)
    sid = str(session["id"])
    page = await customer.open(sid)
    clock.jump(301)
    # Straight away, whether or not the sweep has run yet.
    token = page.text.split('name="csrf_token" value="')[1].split('"')[0]
    response = await customer.client.post(
        f"/checkout/{sid}", data={"csrf_token": token, "customer_code": "TEST-0001", "pin": "1234"}
    )
    assert response.status_code == 200 and page_status(response) == "expired"
    assert "expired" in (await customer.open(sid)).text
    assert await server.db.read(transactions.for_checkout_session, sid) == []
    assert (await merchant.get(f"/checkout/sessions/{sid}")).json()["status"] == "expired"
    await customer.close()
    await server.shutdown()


async def test_a_post_without_the_csrf_token_changes_nothing(server: Server) -> None:
    merchant, session = await new_session(server)
    customer = Customer(server)
    sid = str(session["id"])
    await customer.open(sid)
    for token in (None, "forged"):
        data = {"customer_code": "TEST-0001", "pin": "1234"}
        if token:
            data["csrf_token"] = token
        response = await customer.client.post(f"/checkout/{sid}", data=data)
        assert response.status_code == 400
        assert "try again" in (message(response) or "")
    # A token from another browser (another cookie) does not work either.
    stranger = Customer(server)
    page = await stranger.open(sid)
    token = page.text.split('name="csrf_token" value="')[1].split('"')[0]
    response = await customer.client.post(
        f"/checkout/{sid}", data={"csrf_token": token, "customer_code": "TEST-0001", "pin": "1234"}
    )
    assert response.status_code == 400
    assert (await merchant.get(f"/checkout/sessions/{sid}")).json()["status"] == "created"
    await customer.close()
    await stranger.close()


async def test_status_polling_endpoint(server: Server) -> None:
    _, session = await new_session(server)
    customer = Customer(server)
    sid = str(session["id"])
    assert (await customer.client.get(f"/checkout/{sid}/status")).json() == {
        "id": sid,
        "status": "created",
    }
    await customer.pay(sid)
    assert (await customer.client.get(f"/checkout/{sid}/status")).json() == {
        "id": sid,
        "status": "paid",
    }
    await customer.close()


async def test_the_pin_is_never_logged_or_stored(server: Server, database_url: str) -> None:
    lines: list[str] = []

    class Capture(logging.Handler):
        def emit(self, record: logging.LogRecord) -> None:
            lines.append(JsonFormatter().format(record))

    handler = Capture()
    root = logging.getLogger()
    level = root.level
    root.addHandler(handler)
    root.setLevel(logging.DEBUG)
    try:
        merchant, session = await new_session(server)
        await merchant.post("/webhook_endpoints", json={"url": "https://hooks.example/x"})
        customer = Customer(server)
        secret_pin = "8675309421"
        await customer.pay(str(session["id"]), pin=secret_pin)
        response = await customer.pay(str(session["id"]))
        assert response.status_code == 303
        await customer.close()
    finally:
        # Put back as found: the tests of a process share the root logger (conftest's
        # `logging_left_as_found`).
        root.removeHandler(handler)
        root.setLevel(level)
    assert lines, "no log lines captured"
    assert not any(secret_pin in line for line in lines)
    assert not any("pin=" in line.lower() for line in lines)
    dump = await _database_text(server)
    assert "checkout.session.paid" in dump  # the event is in there, without the PIN
    assert secret_pin not in dump
    stored = await server.db.read(customers.by_code, "TEST-0001")
    assert stored is not None and stored.pin_hmac not in (None, "1234")
    assert "1234" not in repr(stored)


async def _database_text(server: Server) -> str:
    """Every text value in every table, as one string."""

    def everything(tx: object) -> str:
        out = []
        for table in ("merchants", "api_keys", "checkout_sessions", "idempotency_keys",
                      "test_customers", "pin_failures", "transactions", "events",
                      "deliveries", "delivery_attempts", "webhook_endpoints"):  # fmt: skip
            for row in tx.fetch(f"SELECT * FROM {table}"):  # type: ignore[attr-defined]
                out.append(" ".join(str(row[column]) for column in row.keys()))
        return "\n".join(out)

    return await server.db.read(everything)
