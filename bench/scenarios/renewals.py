"""The renewal burst: `count` active subscriptions due at one past instant, loaded while
the service runs, renewed by its sweep while the dispatcher delivers each renewal's
event to a receiver here; then the checks, and RSS after the actors' idle time.
docs/performance.md, "Renewal burst"."""

from __future__ import annotations

import time
from typing import Any

import trio
from fgcpay.domain import periods
from fgcpay.storage import subscriptions, transactions

from ..core import Backend, Db, Window, free_port, quiet, rss_mib
from ..data import BALANCE, charges, now_us, subscription, table
from ..minihttp import serve_ok
from ..suite import Ctx, Spec

ABOUT = "100,000 subscriptions due at one instant: renewals/s, and RSS after the idle time"
FIGURES = {
    "rate": Spec("renewals, the dispatcher delivering meanwhile", "/s", 2000.0, higher=True),
    "memory": Spec("RSS after the burst and the actors' idle time / before", "x", 1.2),
}
FULL = {"count": 100_000, "merchants": 4, "timeout": 600.0, "idle_wait": 70.0}
QUICK = {"count": 2000, "idle_wait": 3.0}


def burst_rows(merchants: list[str], count: int) -> tuple[int, list[Any]]:
    """`count` active monthly subscriptions approved a month ago, all due at one instant
    (already past), their period-0 charges and the balance's totals of those."""
    anchor = now_us() - 31 * periods.DAY_US
    subs = [subscription(merchants[i % len(merchants)], anchor, 1, 1250, i) for i in range(count)]
    each = [len(subs[i :: len(merchants)]) for i in range(len(merchants))]
    totals = [(m, 0, 1250 * n, 0, 0, n) for m, n in zip(merchants, each, strict=True)]
    return subs[0].next_action_at or 0, [
        table("subscriptions", subscriptions.COLUMNS, subs),
        table("transactions", transactions.COLUMNS, [c for s in subs for c in charges(s)]),
        ("balance_shards", BALANCE, totals),
    ]


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
    due, tables = burst_rows(merchants, p.count)
    db = Db(b.url)
    async with trio.open_nursery() as nursery:
        await nursery.start(serve_ok, port, lambda m, t, headers, body, at: received.add(
            next((v.decode() for k, v in headers if k == b"service-event-id"), "")))  # fmt: skip
        async with b.serve(FGCPAY_EXPIRY_POLL_SECONDS="2") as server:
            pids = server.all_pids()
            before = [rss_mib(pid) for pid in pids]
            await quiet()
            await trio.to_thread.run_sync(db.load, tables)
            loaded, renewed = time.monotonic(), 0
            with Window(server.pid, b.db_pid) as window:
                while renewed < p.count and time.monotonic() - loaded < p.timeout:
                    await trio.sleep(0.5)
                    renewed = db.value("SELECT COUNT(*) FROM transactions WHERE period >= 1")
            first, last = (db.value(f"SELECT {f}(created_at) FROM transactions WHERE period >= 1")
                           for f in ("MIN", "MAX"))  # fmt: skip
            burst = [rss_mib(pid) for pid in pids]
            during = len(received)
            await trio.sleep(p.idle_wait)
            idle = [rss_mib(pid) for pid in pids]
        nursery.cancel_scope.cancel()
    n = p.count
    checks = {  # what each should count
        "renewal charges": ("SELECT COUNT(*) FROM transactions WHERE period = 1", n),
        "subscriptions charged": ("SELECT COUNT(DISTINCT subscription_id) FROM transactions WHERE period = 1", n),
        "charged events": ("SELECT COUNT(DISTINCT resource_id) FROM events WHERE type = 'subscription.charged'", n),
        "their deliveries": ("SELECT COUNT(*) FROM deliveries d JOIN events e ON e.id = d.event_id "
                             "WHERE e.type = 'subscription.charged'", n),
        "charges past period 1": ("SELECT COUNT(*) FROM transactions WHERE period > 1", 0),
        "still due": (f"SELECT COUNT(*) FROM subscriptions WHERE next_action_at <= {due}", 0),
    }  # fmt: skip
    wrong: dict[str, Any] = {
        k: got for k, (sql, want) in checks.items() if (got := db.value(sql)) != want
    }
    db.close()
    wrong |= {} if b.ledger_ok() else {"ledger verify": "disagrees"}
    seconds = max((last - first) / 1e6, 1e-6)
    ctx.add(b, "rate", renewed / seconds, f"{renewed:,} in {seconds:.1f} s; CPU {window.per(renewed)} "
            f"ms/renewal; {during:,} events delivered meanwhile; checks {wrong or 'ok'}")  # fmt: skip
    rss = "; ".join(
        f"{a:.1f} / {c:.1f} / {d:.1f}" for a, c, d in zip(before, burst, idle, strict=True)
    )
    ctx.add(
        b,
        "memory",
        max(d / a for a, d in zip(before, idle, strict=True) if a),
        f"MiB before / after the burst / {p.idle_wait:.0f} s later, each process: {rss}",
    )
