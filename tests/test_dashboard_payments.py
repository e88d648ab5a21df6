"""The dashboard's payments over HTTP, on both backends: the home page's chart of the last
30 days; the lists (checkout sessions, subscriptions, refunds, transactions, events) with
their filters, keyset pages and detail pages; cancelling a subscription and reviewing a
refund through the same actors as the API, with their events. The guards of every route
(signed out, CSRF, another merchant's ids) are test_dashboard_routes.py's."""

from __future__ import annotations

import html
import json
import re
from typing import Any

from fgcpay.admin import create_merchant
from fgcpay.domain import ids, volume
from fgcpay.domain.periods import DAY_US
from fgcpay.domain.transactions import PAYMENT, Transaction
from fgcpay.storage import Tx, transactions
from fgcpay.storage.transactions import DAILY_VOLUME_SQL
from helpers import (
    PASSWORD,
    Dashboard,
    MerchantClient,
    Server,
    create,
    create_subscription,
    new_email,
    open_dashboard,
    sign_in,
)
from hosted import paid_session


async def _merchant(server: Server, name: str = "Acme Coffee") -> tuple[MerchantClient, Dashboard]:
    """A merchant with an API key and a password, and a browser signed in as it."""
    email = new_email()
    created = await create_merchant(server.db, name, email, password=PASSWORD)
    dashboard = open_dashboard(server)
    assert (await sign_in(dashboard, email)).status_code == 303
    return MerchantClient(created, server.client), dashboard


async def _refund(merchant: MerchantClient, session_id: str, amount: str) -> dict[str, Any]:
    answer = await merchant.post(
        "/refunds", json={"checkout_session_id": session_id, "amount_fgc": amount}
    )
    assert answer.status_code == 201, answer.text
    refund: dict[str, Any] = answer.json()
    return refund


def test_the_window_is_today_and_the_29_days_before_with_every_day_present() -> None:
    now = 20_000 * DAY_US + 5
    since, until = volume.window(now)
    assert (since, until) == (19_971 * DAY_US, 20_001 * DAY_US)
    days = volume.every_day(now, [(19_990, 1250, 0), (20_000, 0, 400)])
    assert len(days) == 30 and days[0].day == 19_971 and days[-1].day == 20_000
    assert days[19] == volume.DayVolume(19_990, 1250, 0)
    assert days[-1].refunded_minor == 400 and days[1] == volume.DayVolume(19_972)


async def test_home_charts_30_days_of_paid_volume_and_refunds(server: Server) -> None:
    merchant, dashboard = await _merchant(server)
    other, _ = await _merchant(server, "Other Shop")
    session = await paid_session(server, merchant)
    await paid_session(server, other)
    refund = await _refund(merchant, session["id"], "4.00")
    approve = f"/test_helpers/refunds/{refund['id']}/approve"
    assert (await merchant.post(approve)).status_code == 200
    # A payment 31 days ago is outside the chart (and in the balance).
    old = server.running.service.clock.now_us() - 31 * DAY_US
    await server.db.write(
        transactions.insert,
        Transaction(ids.transaction_id(), merchant.id, PAYMENT, None, "TEST-0001", 900, "FGC", old),
    )
    home = await dashboard.get("/dashboard")
    assert home.status_code == 200
    assert "default-src 'none'" in home.headers["content-security-policy"]
    totals = re.sub(r"<[^>]+>", "", home.text.split('data-testid="chart-totals">')[1])
    assert totals.startswith("Paid 12.50 FGC, refunded 4.00 FGC"), totals
    assert 'data-testid="paid_total">21.50 FGC' in home.text, "the balance has the old one"
    svg = home.text.split("<svg")[1].split("</svg>")[0]
    assert svg.count('<rect class="paid"') == 1 and svg.count('<rect class="refunded"') == 1
    assert "paid 12.50 FGC</title>" in svg and "refunded 4.00 FGC</title>" in svg
    assert "<script" not in home.text and "style=" not in home.text
    table = home.text.split('data-testid="chart-table">')[1].split("</table>")[0]
    assert table.count("<tr>") == 2 and "<td>12.50</td><td>4.00</td>" in table
    await dashboard.aclose()


async def test_a_merchant_without_payments_sees_an_empty_chart(server: Server) -> None:
    _, dashboard = await _merchant(server)
    home = await dashboard.get("/dashboard")
    assert "No payments yet" in home.text and "<rect" not in home.text
    assert "No payments or refunds in these 30 days." in home.text
    await dashboard.aclose()


async def test_the_chart_reads_one_merchants_30_days_through_the_ledger_index(
    server: Server,
) -> None:
    def plan(tx: Tx) -> str:
        args = ("mer_x", 0, DAY_US)
        if tx.dialect == "postgresql":
            # The test's table is small enough for a sequential scan to be cheaper: ask
            # which index the planner uses when it has to choose one.
            tx.execute("SET LOCAL enable_seqscan = off")
            rows = tx.fetch("EXPLAIN " + DAILY_VOLUME_SQL, *args)
            return "\n".join(row["QUERY PLAN"] for row in rows)
        rows = tx.fetch("EXPLAIN QUERY PLAN " + DAILY_VOLUME_SQL, *args)
        return "\n".join(row["detail"] for row in rows)

    found = await server.db.write(plan)
    # SQLite names the index on (merchant_id, created_at, id); PostgreSQL, on an empty
    # table, may take the one with `kind` between them, equal in cost there: either way an
    # index search bounded by the merchant and both times, never a scan of the table.
    assert re.search(r"(SEARCH|Index Scan|Index Only Scan).*transactions_list", found), found
    assert re.search(r"merchant_id.*created_at.*created_at", found), found
    assert not re.search(r"SCAN transactions|Seq Scan", found), found


def _rows(html: str) -> list[str]:
    """The list's rows, as text, in order."""
    if 'data-testid="list"' not in html:
        return []
    body = html.split('data-testid="list"')[1].split("</tbody>")[0]
    rows = body.split("<tr>")[2:]
    return [" ".join(re.sub(r"<[^>]+>", " ", row).split()) for row in rows]


def _next(html: str) -> str | None:
    found = re.search(r'<a href="([^"]+)" rel="next">', html)
    return found.group(1).replace("&amp;", "&") if found else None


async def _event_types(merchant: MerchantClient) -> list[str]:
    answer = await merchant.get("/events")
    return [event["type"] for event in answer.json()["data"]]


async def test_lists_filter_by_status_page_by_cursor_and_show_details(server: Server) -> None:
    merchant, dashboard = await _merchant(server)
    paid = [await paid_session(server, merchant) for _ in range(2)]
    created = await create(merchant, description="Still open")
    everything = await dashboard.get("/dashboard/checkout-sessions?limit=2")
    assert everything.status_code == 200
    first = _rows(everything.text)
    assert len(first) == 2 and first[0].startswith("Still open 12.50 FGC created")
    more = await dashboard.get(_next(everything.text) or "no next page")
    assert len(_rows(more.text)) == 1 and _next(more.text) is None, "keyset: nothing twice"
    only_paid = await dashboard.get("/dashboard/checkout-sessions?status=paid&limit=1")
    assert _rows(only_paid.text) == [f"Two flat whites 12.50 FGC paid {_when(paid[1])}"]
    next_paid = _next(only_paid.text) or ""
    assert "status=paid" in next_paid
    assert len(_rows((await dashboard.get(next_paid)).text)) == 1
    # The select's "All" sends an empty filter: no filter.
    assert len(_rows((await dashboard.get("/dashboard/checkout-sessions?status=")).text)) == 3
    for bad in (
        "status=refunded",
        "starting_after=cs_test_nope",
        f"starting_after={created['id']}x",
    ):
        refused = await dashboard.get(f"/dashboard/checkout-sessions?{bad}")
        assert refused.status_code == 400 and "not valid" in refused.text, bad
    detail = await dashboard.get(f"/dashboard/checkout-sessions/{paid[0]['id']}")
    assert detail.status_code == 200
    api = (await merchant.get(f"/checkout/sessions/{paid[0]['id']}")).json()
    assert f'data-field="status">{api["status"]}<' in detail.text
    assert f'data-field="paid_at">{api["paid_at"]}<' in detail.text
    txn = await dashboard.get("/dashboard/transactions?type=payment")
    assert len(_rows(txn.text)) == 2 and paid[0]["id"] in txn.text
    link = re.search(r'href="(/dashboard/transactions/txn_test_\w+)"', txn.text)
    assert link, txn.text
    one = await dashboard.get(link.group(1))
    assert f'href="/dashboard/checkout-sessions/{paid[1]["id"]}"' in one.text
    assert 'data-field="amount_fgc">12.50<' in one.text
    await dashboard.aclose()


def _when(resource: dict[str, Any]) -> str:
    # The list shows minutes, UTC: "2026-11-24 19:34 UTC".
    created: str = resource["created_at"]
    return f"{created[:10]} {created[11:16]} UTC"


async def test_approving_a_refund_in_the_dashboard_is_the_apis_review(server: Server) -> None:
    merchant, dashboard = await _merchant(server)
    session = await paid_session(server, merchant)
    approved = await _refund(merchant, session["id"], "4.00")
    rejected = await _refund(merchant, session["id"], "2.00")
    pending = await dashboard.get("/dashboard/refunds?status=pending_review")
    assert len(_rows(pending.text)) == 2
    page = f"/dashboard/refunds/{approved['id']}"
    shown = await dashboard.get(page)
    assert "Approve refund" in shown.text and "4.00 FGC" in shown.text
    wrong = await dashboard.submit(f"{page}/review", {"decision": "maybe"}, page=page)
    assert wrong.status_code == 400 and "approve or to reject" in wrong.text
    done = await dashboard.submit(f"{page}/review", {"decision": "approve"}, page=page)
    assert done.status_code == 303 and done.headers["location"] == f"{page}?reviewed=approve"
    notice = await dashboard.get(done.headers["location"])
    assert "Refund approved" in notice.text and "Approve refund" not in notice.text
    assert (await merchant.get(f"/refunds/{approved['id']}")).json()["status"] == "approved"
    assert (await merchant.get("/balance")).json()["refunded_fgc"] == "4.00"
    other = f"/dashboard/refunds/{rejected['id']}"
    assert (
        await dashboard.submit(f"{other}/review", {"decision": "reject"}, page=other)
    ).status_code == 303
    assert (await merchant.get(f"/refunds/{rejected['id']}")).json()["status"] == "rejected"
    types = await _event_types(merchant)
    assert types[:2] == ["refund.rejected", "refund.approved"]
    # A decision made meanwhile elsewhere: the page says so, and nothing changes.
    again = await dashboard.submit(f"{page}/review", {"decision": "reject"}, page=page)
    assert again.status_code == 409 and "already" in again.text
    assert (await merchant.get(f"/refunds/{approved['id']}")).json()["status"] == "approved"
    assert await _event_types(merchant) == types
    entries = _rows((await dashboard.get("/dashboard/transactions?type=refund")).text)
    assert len(entries) == 1 and entries[0].startswith("refund -4.00 FGC")
    await dashboard.aclose()


async def test_cancelling_a_subscription_in_the_dashboard_is_the_apis_cancel(
    server: Server,
) -> None:
    merchant, dashboard = await _merchant(server)
    sub = await create_subscription(merchant)
    listed = await dashboard.get("/dashboard/subscriptions?status=paused")
    assert _rows(listed.text)[0].startswith("Coffee club 12.50 FGC monthly paused cust-42")
    page = f"/dashboard/subscriptions/{sub['id']}"
    assert "Cancel subscription" in (await dashboard.get(page)).text
    confirm = await dashboard.get(f"{page}/cancel")
    assert confirm.status_code == 200 and "Cancel the subscription Coffee club?" in confirm.text
    assert (await merchant.get(f"/subscriptions/{sub['id']}")).json()["status"] == "paused"
    done = await dashboard.submit(f"{page}/cancel", {})
    assert done.status_code == 303 and done.headers["location"] == f"{page}?cancelled=1"
    after = await dashboard.get(done.headers["location"])
    assert "Subscription cancelled" in after.text and 'data-field="status">cancelled<' in after.text
    assert (await merchant.get(f"/subscriptions/{sub['id']}")).json()["status"] == "cancelled"
    assert (await _event_types(merchant))[0] == "subscription.cancelled"
    again = await dashboard.client.post(f"{page}/cancel", data={"csrf_token": _token(after.text)})
    assert again.status_code == 409 and "cannot be cancelled" in again.text.lower()
    await dashboard.aclose()


def _token(html: str) -> str:
    found = re.search(r'name="csrf_token" value="([^"]+)"', html)
    assert found
    return found.group(1)


async def test_an_events_page_shows_its_payload_pretty_printed(server: Server) -> None:
    merchant, dashboard = await _merchant(server)
    session = await paid_session(server, merchant)
    listed = await dashboard.get("/dashboard/events?type=checkout.session.paid")
    (row,) = _rows(listed.text)
    assert row.startswith(f"checkout.session.paid {session['id']}")
    (event,) = (await merchant.get("/events")).json()["data"]
    page = await dashboard.get(f"/dashboard/events/{event['id']}")
    payload = page.text.split('data-testid="payload">')[1].split("</pre>")[0]
    assert html.unescape(payload) == json.dumps(event, indent=2, ensure_ascii=False)
    assert f'href="/dashboard/checkout-sessions/{session["id"]}"' in page.text
    empty = await dashboard.get("/dashboard/events?type=refund.created")
    assert "No events with type refund.created." in empty.text
    await dashboard.aclose()


# Every route's guards (signed out, CSRF, another merchant's ids): test_dashboard_routes.py.


async def test_a_junk_id_is_404(server: Server) -> None:
    _, dashboard = await _merchant(server)
    for kind in ("checkout-sessions", "subscriptions", "refunds", "transactions", "events"):
        for junk in ("cs_test_nope", "x" * 300, "%00"):
            assert (await dashboard.get(f"/dashboard/{kind}/{junk}")).status_code == 404, kind
    await dashboard.aclose()
