"""The dashboard's payments over HTTP, on both backends: the home page's chart of the last
30 days; the lists (checkout sessions, subscriptions, refunds, transactions, events) with
their filters, keyset pages and detail pages; cancelling a subscription and reviewing a
refund through the same actors as the API, with their events; and the guards of every
route (signed out, CSRF, another merchant's ids)."""

from __future__ import annotations

import re
from typing import Any

from fgcpay.admin import create_merchant
from fgcpay.domain import ids, volume
from fgcpay.domain.periods import DAY_US
from fgcpay.domain.transactions import PAYMENT, Transaction
from fgcpay.storage import Tx, transactions
from fgcpay.storage.transactions import DAILY_VOLUME_SQL
from helpers import PASSWORD, Dashboard, MerchantClient, Server, new_email, open_dashboard, sign_in
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
