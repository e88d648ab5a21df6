"""The renewal burst: `count` active subscriptions due at one past instant, loaded while
the service runs, renewed by its sweep while the dispatcher delivers each renewal's
event to a receiver here; RSS after the actors' idle time; then a second burst of as
many, and RSS after it against after the first (what one more burst leaves behind once
the service is warm); then the checks. docs/performance.md, "Renewal burst"."""

from __future__ import annotations

import time
from typing import Any

import trio
from fgcpay.domain import periods
from fgcpay.storage import subscriptions, transactions

from ..core import Backend, Db, Server, Window, free_port, quiet, rss_mib
from ..data import BALANCE, charges, now_us, subscription, table
from ..minihttp import serve_ok
from ..suite import Ctx, Spec

ABOUT = "100,000 subscriptions due at one instant: renewals/s, and RSS after the idle time"
FIGURES = {
    "rate": Spec("renewals, the dispatcher delivering meanwhile", "/s", 2000.0, higher=True),
    "memory": Spec("RSS after the burst and the actors' idle time / before", "x", 1.2),
    "again": Spec("RSS after a second burst and the idle time / after the first", "x", 1.05,
                  proposed=True),
}  # fmt: skip
FULL = {"count": 100_000, "merchants": 4, "timeout": 600.0, "idle_wait": 70.0}
QUICK = {"count": 2000, "idle_wait": 3.0}


def burst_rows(merchants: list[str], count: int) -> tuple[list[Any], list[Any]]:
    """`count` active monthly subscriptions approved a month ago, all due at one instant
    (already past), and their period-0 charges; and the balance's totals of those, as
    rows of shard 0."""
    anchor = now_us() - 31 * periods.DAY_US
    subs = [subscription(merchants[i % len(merchants)], anchor, 1, 1250, i) for i in range(count)]
    each = [len(subs[i :: len(merchants)]) for i in range(len(merchants))]
    totals = [(m, 0, 1250 * n, 0, 0, n) for m, n in zip(merchants, each, strict=True)]
    return [
        table("subscriptions", subscriptions.COLUMNS, subs),
        table("transactions", transactions.COLUMNS, [c for s in subs for c in charges(s)]),
    ], totals


def load_burst(db: Db, merchants: list[str], count: int, first: bool) -> None:
    """A burst's rows loaded (the totals inserted by the first, added to shard 0 by the
    next)."""
    tables, totals = burst_rows(merchants, count)
    if first:
        tables.append(("balance_shards", BALANCE, totals))
    else:  # before the rows: the totals never say less than the ledger the service sees
        for merchant, _, paid, _, _, n in totals:
            db.value("UPDATE balance_shards SET paid_minor = paid_minor + ?, transaction_count"
                     " = transaction_count + ? WHERE merchant_id = ? AND shard = 0 RETURNING 1",
                     paid, n, merchant)  # fmt: skip
    db.load(tables)


async def run(ctx: Ctx, b: Backend, p: Any) -> None:
    port, received = free_port(), set[str]()
    merchants = []
    for i in range(p.merchants):
        merchant, _ = b.merchant(i)
        b.command(
            "webhook-endpoint",
            "create",
            "--merchant",
            merchant,
            "--url",
            f"http://127.0.0.1:{port}/hooks",
        )
        merchants.append(merchant)
    db = Db(b.url)

    async def burst(k: int, server: Server) -> tuple[Window, int, int, list[float], list[float]]:
        """Burst k loaded and renewed: its CPU, the renewals and the events received by
        then, and each process's RSS right after it and `idle_wait` later."""
        await trio.to_thread.run_sync(load_burst, db, merchants, p.count, k == 0)
        loaded, renewed = time.monotonic(), 0
        with Window(server.pid, b.db_pid) as window:
            while renewed < p.count * (k + 1) and time.monotonic() - loaded < p.timeout:
                await trio.sleep(0.5)
                renewed = db.value("SELECT COUNT(*) FROM transactions WHERE period >= 1")
        during, right_after = len(received), [rss_mib(pid) for pid in server.all_pids()]
        await trio.sleep(p.idle_wait)
        return window, renewed, during, right_after, [rss_mib(pid) for pid in server.all_pids()]

    async with trio.open_nursery() as nursery:
        await nursery.start(serve_ok, port, lambda m, t, headers, body, at: received.add(
            next((v.decode() for k, v in headers if k == b"service-event-id"), "")))  # fmt: skip
        async with b.serve(FGCPAY_EXPIRY_POLL_SECONDS="2") as server:
            before = [rss_mib(pid) for pid in server.all_pids()]
            await quiet()
            window, renewed, during, burst1, idle = await burst(0, server)
            first, last = (db.value(f"SELECT {f}(created_at) FROM transactions WHERE period >= 1")
                           for f in ("MIN", "MAX"))  # fmt: skip
            *_, burst2, again = await burst(1, server)
        nursery.cancel_scope.cancel()
    n = 2 * p.count
    checks = {  # what each should count
        "renewal charges": ("SELECT COUNT(*) FROM transactions WHERE period = 1", n),
        "subscriptions charged": ("SELECT COUNT(DISTINCT subscription_id) FROM transactions WHERE period = 1", n),
        "charged events": ("SELECT COUNT(DISTINCT resource_id) FROM events WHERE type = 'subscription.charged'", n),
        "their deliveries": ("SELECT COUNT(*) FROM deliveries d JOIN events e ON e.id = d.event_id "
                             "WHERE e.type = 'subscription.charged'", n),
        "charges past period 1": ("SELECT COUNT(*) FROM transactions WHERE period > 1", 0),
        "still due": (f"SELECT COUNT(*) FROM subscriptions WHERE next_action_at <= {now_us()}", 0),
    }  # fmt: skip
    wrong: dict[str, Any] = {
        k: got for k, (sql, want) in checks.items() if (got := db.value(sql)) != want
    }
    db.close()
    wrong |= {} if b.ledger_ok() else {"ledger verify": "disagrees"}
    seconds = max((last - first) / 1e6, 1e-6)
    ctx.add(b, "rate", renewed / seconds, f"{renewed:,} in {seconds:.1f} s; CPU {window.per(renewed)} "
            f"ms/renewal; {during:,} events delivered meanwhile; checks {wrong or 'ok'}")  # fmt: skip
    wait = f"{p.idle_wait:.0f} s later"
    add_rss(ctx, b, "memory", (before, burst1, idle), f"before / after the burst / {wait}")
    add_rss(ctx, b, "again", (idle, burst2, again),
            f"after the first burst's idle time / the second burst / {wait}")  # fmt: skip


def add_rss(ctx: Ctx, b: Backend, key: str, rss: tuple[list[float], ...], what: str) -> None:
    """The figure `key`: the largest last / first RSS over the processes, with each
    process's (first, middle, last) readings."""
    first, middle, last = rss
    each = "; ".join(
        f"{a:.1f} / {c:.1f} / {d:.1f}" for a, c, d in zip(first, middle, last, strict=True)
    )
    ratio = max(d / a for a, d in zip(first, last, strict=True) if a)
    ctx.add(b, key, ratio, f"MiB {what}, each process: {each}")
