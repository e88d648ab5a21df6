"""Refunds created from `clients` connections (distinct payments, then one payment),
approved one at a time and then at once, and listed, on a loaded ledger; every answer
201 / 200 and `fgcpay ledger verify` agreeing. docs/performance.md, "Refunds"."""

from __future__ import annotations

import json
import random
from typing import Any

from ..clients import burst, reads, tail, worst
from ..core import Backend, Db, Window, percentile, quiet
from ..data import ledger
from ..suite import Ctx, Spec

ABOUT = "POST /refunds (distinct payments, one payment), review (approve), GET /refunds"
FIGURES = {
    "create": Spec(
        "refunds created, distinct payments",
        "/s",
        {"sqlite": 400.0, "postgres": 250.0},
        higher=True,
        proposed=True,
    ),  # fmt: skip
    "one_payment": Spec("refunds created, one payment", "/s"),
    "review": Spec(
        "refund approved, one at a time, p99",
        "ms",
        {"sqlite": 15.0, "postgres": 30.0},
        proposed=True,
    ),  # fmt: skip
    "reviews": Spec(
        "refunds approved", "/s", {"sqlite": 400.0, "postgres": 250.0}, higher=True, proposed=True
    ),  # fmt: skip
    "list": Spec(
        "GET /refunds p99, first page and status=pending_review",
        "ms",
        {"sqlite": 10.0, "postgres": 20.0},
        proposed=True,
    ),  # fmt: skip
}
FULL = {"rows": 100_000, "refunds": 5000, "one_payment": 1000, "clients": 32, "latency": 500,
        "requests": 1000, "warmup": 50}  # fmt: skip
QUICK = {"rows": 5000, "refunds": 300, "one_payment": 50, "latency": 50, "requests": 100,
         "warmup": 10}  # fmt: skip


async def run(ctx: Ctx, b: Backend, p: Any) -> None:
    merchant, key = b.merchant()
    rows = ledger(merchant, p.rows, p.refunds, random.Random(7))
    db = Db(b.url)
    db.load(rows.tables)
    db.close()
    headers = {"Authorization": f"Bearer {key}", "Content-Type": "application/json"}
    bodies = {
        "create": [{"checkout_session_id": s, "amount_fgc": "1.00"} for s in rows.refundable],
        "one_payment": [{"checkout_session_id": rows.one, "amount_fgc": "0.01"}] * p.one_payment,
    }
    ok = True
    async with b.serve() as server:
        for name, body in bodies.items():
            await quiet()
            calls = [("/api/v1/refunds", json.dumps(x).encode()) for x in body]
            with Window(server.pid, b.db_pid) as window:
                seconds, statuses, took = await burst(server.port, calls, headers, p.clients)
            ok &= statuses == {201: len(body)}
            ctx.add(b, name, len(body) / seconds, f"{len(body):,} from {p.clients} connections; "
                    f"p99 {percentile(took, 99):.1f} ms; CPU {window.per(len(body))} ms/refund; {statuses}")  # fmt: skip
        await quiet()  # the lists while every refund is pending review
        took2 = await reads(server.port, {
            "first page": "/api/v1/refunds?limit=20",
            "pending": "/api/v1/refunds?limit=20&status=pending_review",
        }, headers, p.requests, p.warmup)  # fmt: skip
        db = Db(b.url)
        made = [r[0] for r in db.conn.execute("SELECT id FROM refunds WHERE status = 'pending_review'"
                                               " ORDER BY created_at").fetchall()]  # fmt: skip
        db.close()
        await quiet()
        first = [(f"/api/v1/test_helpers/refunds/{r}/approve", b"") for r in made[: p.latency]]
        _, statuses, took = await burst(server.port, first, headers, 1)
        ctx.add(b, "review", *tail(took))
        rest = [(f"/api/v1/test_helpers/refunds/{r}/approve", b"") for r in made[p.latency :]]
        with Window(server.pid, b.db_pid) as window:
            seconds, more, _ = await burst(server.port, rest, headers, p.clients)
        ok &= statuses == {200: len(first)} and more == {200: len(rest)}
        ctx.add(b, "reviews", len(rest) / seconds, f"{len(rest):,} from {p.clients} connections; "
                f"CPU {window.per(len(rest))} ms/review")  # fmt: skip
    value, each, _ = worst(took2)
    ok &= b.ledger_ok()
    wrong = "" if ok else "; NOT EVERY ANSWER 201/200, OR `ledger verify` DISAGREES"
    ctx.add(b, "list", value, each + wrong)
