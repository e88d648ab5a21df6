"""GET /events and GET /webhook_deliveries (pages, filters, one by id) with `rows`
delivered events loaded, one request at a time. docs/performance.md, "Events and
deliveries"."""

from __future__ import annotations

import random
import time
from typing import Any

from ..clients import Paths, confirm, create, open_page, reads, worst
from ..core import Backend, Db, Window, quiet
from ..minihttp import Connection
from ..suite import Ctx, Spec
from .webhooks import DELIVERY_COLUMNS, EVENT_COLUMNS, backlog_rows

ABOUT = "GET /events and GET /webhook_deliveries (pages, filters, one by id), 100,000 of each"
READ = {"sqlite": 10.0, "postgres": 20.0}
FIGURES = {
    "events": Spec(
        "GET /events p99, worst of first page / deep / type= / by id", "ms", READ, proposed=True
    ),
    "deliveries": Spec(
        "GET /webhook_deliveries p99, worst of first page / deep / filters / by id",
        "ms",
        READ,
        proposed=True,
    ),  # fmt: skip
}
FULL = {"rows": 100_000, "requests": 1000, "warmup": 50}
QUICK = {"rows": 2000, "requests": 100, "warmup": 10}


async def load(b: Backend, merchant: str, key: str, rows: int) -> tuple[list[Any], list[Any], str]:
    """`rows` delivered events loaded, copies of the event of one real payment; the
    events, the deliveries and their endpoint."""
    async with b.serve() as server:
        conn = Connection("127.0.0.1", server.port)
        page = await create(conn, key)
        await open_page(conn, page)
        await confirm(conn, page)
        await conn.aclose()
    url = "http://127.0.0.1:9/hooks"  # never called: every delivery loaded has succeeded
    endpoint = b.command("webhook-endpoint", "create", "--merchant", merchant, "--url", url)["id"]
    db = Db(b.url)
    template = db.conn.execute("SELECT id, resource_id, body FROM events WHERE type = "
                               "'checkout.session.paid' LIMIT 1").fetchone()  # fmt: skip
    events, deliveries = backlog_rows(tuple(template), merchant, endpoint, rows,
                                      int(time.time() * 1e6), status="succeeded")  # fmt: skip
    db.load([("events", EVENT_COLUMNS, events), ("deliveries", DELIVERY_COLUMNS, deliveries)])
    db.close()
    return events, deliveries, endpoint


async def run(ctx: Ctx, b: Backend, p: Any) -> None:
    merchant, key = b.merchant()
    events, deliveries, endpoint = await load(b, merchant, key, p.rows)
    rng = random.Random(3)
    hooks = "/api/v1/webhook_deliveries?limit=20"
    paths: dict[str, Paths] = {
        "events": {
            "first page": "/api/v1/events?limit=20",
            "deep": lambda: f"/api/v1/events?limit=20&starting_after={rng.choice(events)[0]}",
            "type=": "/api/v1/events?limit=20&type=checkout.session.paid",
            "by id": lambda: f"/api/v1/events/{rng.choice(events)[0]}",
        },
        "deliveries": {
            "first page": hooks,
            "deep": lambda: f"{hooks}&starting_after={rng.choice(deliveries)[0]}",
            "status=, endpoint_id=": f"{hooks}&status=succeeded&endpoint_id={endpoint}",
            "by id": lambda: f"/api/v1/webhook_deliveries/{rng.choice(deliveries)[0]}",
        },
    }
    async with b.serve() as server:
        for figure, group in paths.items():
            await quiet()
            with Window(server.pid, b.db_pid) as window:
                took = await reads(
                    server.port, group, {"Authorization": f"Bearer {key}"}, p.requests, p.warmup
                )
            value, each, _ = worst(took)
            cpu = window.per(p.requests * len(group))
            ctx.add(b, figure, value, f"{each}; {p.rows:,} rows; CPU {cpu} ms/req")
