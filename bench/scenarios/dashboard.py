"""The dashboard's pages, signed in, with a loaded ledger and events: the home page,
each list's first page and a session's page, one at a time. docs/performance.md,
"Dashboard"."""

from __future__ import annotations

import random
from typing import Any

from ..clients import Paths, reads, sign_in, worst
from ..core import Backend, Db, Window, quiet
from ..data import ledger
from ..minihttp import Connection
from ..suite import Ctx, Spec
from .events import load

ABOUT = "signed-in GETs of the dashboard's home, each list and a detail page, with data present"
PAGE = {"sqlite": 20.0, "postgres": 40.0}
FIGURES = {
    "home": Spec("dashboard home (balance and chart), p99", "ms", PAGE, proposed=True),
    "lists": Spec("dashboard lists p99, worst of seven pages", "ms", PAGE, proposed=True),
    "detail": Spec("dashboard checkout session page, p99", "ms", PAGE, proposed=True),
}
FULL = {"rows": 100_000, "events": 20_000, "requests": 500, "warmup": 20}
QUICK = {"rows": 5000, "events": 500, "requests": 50, "warmup": 5}
LISTS = (
    "checkout-sessions",
    "subscriptions",
    "refunds",
    "transactions",
    "events",
    "webhooks",
    "api-keys",
)


async def run(ctx: Ctx, b: Backend, p: Any) -> None:
    merchant, key = b.merchant(password="bench-password-1")
    await load(b, merchant, key, p.events)
    rows = ledger(merchant, p.rows, 0, random.Random(5))
    db = Db(b.url)
    db.load(rows.tables)
    db.close()
    one = rows.tables[0][2][len(rows.tables[0][2]) // 2][0]  # a paid session's id
    async with b.serve() as server:
        conn = Connection("127.0.0.1", server.port)
        headers = await sign_in(conn, "shop0@example.com", "bench-password-1")
        await conn.aclose()
        pages: dict[str, Paths] = {
            "home": {"home": "/dashboard"},
            "lists": {name: f"/dashboard/{name}" for name in LISTS},
            "detail": {"session": f"/dashboard/checkout-sessions/{one}"},
        }
        for figure, group in pages.items():
            await quiet()
            with Window(server.pid, b.db_pid) as window:
                took = await reads(server.port, group, headers, p.requests, p.warmup)
            value, each, _ = worst(took)
            ctx.add(b, figure, value, f"{each}; CPU {window.per(p.requests * len(group))} ms/page")
