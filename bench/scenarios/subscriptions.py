"""Subscriptions created (wrk), approved on the hosted page one at a time on a test clock,
the clock advanced a month until `ready`, and the lists. docs/performance.md,
"Subscriptions and test clocks"."""

from __future__ import annotations

import json
import time
from typing import Any

import trio
from fgcpay.domain.limits import MAX_SUBSCRIPTIONS_PER_TEST_CLOCK

from ..clients import api, confirm, create, expect, open_page, reads, tail, worst
from ..core import Backend, Db, quiet
from ..minihttp import Connection
from ..suite import Ctx, Spec
from ..wrk import script, wrk

ABOUT = (
    "POST /subscriptions (wrk), approval on the hosted page, a test clock advanced a month, lists"
)
READ = {"sqlite": 10.0, "postgres": 20.0}
FIGURES = {
    "create": Spec(
        "subscriptions created",
        "/s",
        {"sqlite": 500.0, "postgres": 500.0},
        higher=True,
        proposed=True,
    ),  # fmt: skip
    "approve": Spec(
        "approval form POST on the hosted page, p99",
        "ms",
        {"sqlite": 15.0, "postgres": 30.0},
        proposed=True,
    ),  # fmt: skip
    "advance": Spec("test clock advanced a month, until `ready`", "s", 1.0, proposed=True),
    "list": Spec("GET /subscriptions and GET /test_clocks p99", "ms", READ, proposed=True),
}
FULL = {"seconds": 15.0, "warmup": 3.0, "connections": 64, "approvals": 200, "requests": 1000}
QUICK = {"seconds": 2.0, "warmup": 0.5, "approvals": 20, "requests": 100}
PATH = "/api/v1/subscriptions"
PLAN = {"amount_fgc": "9.90", "currency": "FGC", "interval": "monthly", "description": "bench plan",
        "merchant_customer_reference": "customer-1", "success_url": "https://shop.example/ok",
        "cancel_url": "https://shop.example/cancel"}  # fmt: skip


def rfc3339(us: int) -> str:
    return time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime(us / 1e6))


async def run(ctx: Ctx, b: Backend, p: Any) -> None:
    _, key = b.merchant()
    lua = script(b.cwd, "subscribe", "POST", PATH, 201, api(key), json.dumps(PLAN))
    async with b.serve() as server:
        await quiet()
        load = await wrk(server, lua, p.seconds, p.connections, p.warmup, db=b.db_pid)
        ctx.add(b, "create", load.rps, f"{load.requests:,} in {load.seconds:.1f} s, "
                f"{p.connections} connections; CPU {load.cpu()} ms/create" + (f"; {load.bad} bad" if load.bad else ""))  # fmt: skip
        conn, browser = Connection("127.0.0.1", server.port), Connection("127.0.0.1", server.port)
        now = int(time.time()) * 1_000_000
        # A clock holds at most MAX_SUBSCRIPTIONS_PER_TEST_CLOCK (docs/api.md): the
        # approvals are spread over as many clocks as that takes, each filled in turn.
        clocks: list[str] = []
        for _ in range(-(-p.approvals // MAX_SUBSCRIPTIONS_PER_TEST_CLOCK)):
            made = await conn.request("POST", "/api/v1/test_clocks", api(key),
                                      json.dumps({"frozen_time": rfc3339(now)}).encode())  # fmt: skip
            clocks.append(json.loads(expect(made, 201, "POST /test_clocks").body)["id"])
        await quiet()
        took = []
        for n in range(p.approvals):
            on = clocks[n // MAX_SUBSCRIPTIONS_PER_TEST_CLOCK]
            page = await create(conn, key, PATH, PLAN | {"test_clock": on})
            await open_page(browser, page)
            answer = await confirm(browser, page)
            took.append((answer.done_at - answer.sent_at) * 1000)
        ctx.add(b, "approve", *tail(took))
        await quiet()
        body = json.dumps({"frozen_time": rfc3339(now + 32 * 86_400_000_000)}).encode()
        started = trio.current_time()
        for clock in clocks:
            url = f"/api/v1/test_clocks/{clock}"
            expect(await conn.request("POST", f"{url}/advance", api(key), body), 200, "advance")
        for clock in clocks:
            url, status = f"/api/v1/test_clocks/{clock}", "advancing"
            while status != "ready":  # polled, as a merchant would (docs/api.md)
                await trio.sleep(0.005)
                status = json.loads((await conn.request("GET", url, api(key))).body)["status"]
        seconds, db = trio.current_time() - started, Db(b.url)
        renewed = db.value("SELECT COUNT(*) FROM transactions WHERE period = 1")
        db.close()
        ctx.add(b, "advance", seconds, f"{renewed} of the {p.approvals} on {len(clocks)} "
                f"clock(s) renewed, the clocks advanced together")  # fmt: skip
        for c in (conn, browser):
            await c.aclose()
        await quiet()
        got = await reads(server.port, {"subscriptions": f"{PATH}?limit=20",
                                        "test clocks": "/api/v1/test_clocks?limit=20"},
                          api(key), p.requests, p.requests // 20)  # fmt: skip
        value, each, _ = worst(got)
        ctx.add(b, "list", value, f"{each}; {load.requests:,} subscriptions")
