"""The hosted page: confirm -> "paid" at the page's websocket, one payment at a time (with
several workers half of the confirms sent to another worker than the websocket's), the
page and status GETs, and customers paying at once. docs/performance.md, "Hosted page"."""

from __future__ import annotations

import json
from typing import Any

import trio
from trio_websocket import open_websocket_url

from ..clients import (
    Page,
    WorkerConnections,
    confirm,
    create,
    in_parallel,
    merchants_for,
    open_page,
    owner_of,
    tail,
)
from ..core import Backend, Window, percentile, quiet
from ..minihttp import Connection, clock
from ..pyspy import profile
from ..suite import Ctx, Spec

ABOUT = "hosted page: confirm -> websocket push p99, page GET, status poll, confirms/s"
FIGURES = {
    "push": Spec("confirm sent -> 'paid' at the page's websocket, p99", "ms", 10.0),
    "page": Spec("hosted page GET, p99", "ms", {"sqlite": 10.0, "postgres": 20.0}, proposed=True),
    "status": Spec("status poll GET, p99", "ms", {"sqlite": 10.0, "postgres": 20.0}, proposed=True),
    "confirms": Spec("customers paying at once, page + confirm each", "/s"),
}
FULL = {"payments": 500, "warmup": 20, "customers": 64, "per_customer": 40, "seconds": 30.0,
        "profile_seconds": 10}  # fmt: skip
QUICK = {"payments": 40, "warmup": 5, "customers": 16, "per_customer": 5, "seconds": 5.0}


async def pushes(
    port: int, key: str, count: int, warmup: int, pids: list[int]
) -> dict[str, list[float]]:
    api, browser = Connection("127.0.0.1", port), Connection("127.0.0.1", port)
    workers = WorkerConnections(port, pids) if len(pids) > 1 else None
    out: dict[str, list[float]] = {"push": [], "page": [], "status": [], "cross": []}
    for i in range(warmup + count):
        with trio.fail_after(30):
            page = await create(api, key)
            shown = await open_page(browser, page)
            async with open_websocket_url(f"ws://127.0.0.1:{port}{page.path}/ws") as ws:
                if json.loads(await ws.get_message()).get("status") != "created":
                    raise RuntimeError("the websocket's first message is not 'created'")
                poster, crossed = browser, False
                if workers is not None:  # which worker holds each side (outside the timing)
                    holder = owner_of(port, ws.local.port, pids)  # type: ignore[union-attr]
                    crossed = i % 2 == 1
                    poster = await workers.get(next(p for p in pids if (p == holder) != crossed))
                got: list[float] = []

                async def read_push(got: list[float] = got) -> None:
                    if json.loads(await ws.get_message()).get("status") == "paid":
                        got.append(clock())

                async with trio.open_nursery() as nursery:
                    nursery.start_soon(read_push)
                    sent = (await confirm(poster, page)).sent_at
            status = await browser.request("GET", f"{page.path}/status")
        if i >= warmup:
            out["cross" if crossed else "push"].append((got[0] - sent) * 1000)
            out["page"].append((shown.done_at - shown.sent_at) * 1000)
            out["status"].append((status.done_at - status.sent_at) * 1000)
    for conn in (api, browser, workers):
        if conn is not None:
            await conn.aclose()
    return out


async def customers(port: int, pages: list[Page], count: int, seconds: float) -> int:
    """`count` customers paying their share of `pages` one after another (at most `seconds`)."""
    paid = [0]
    with trio.move_on_after(seconds):

        async def customer(i: int) -> None:
            conn = Connection("127.0.0.1", port)
            for page in pages[i::count]:
                await open_page(conn, page)
                await confirm(conn, page)
                paid[0] += 1
            await conn.aclose()

        await in_parallel(count, customer)
    return paid[0]


async def run(ctx: Ctx, b: Backend, p: Any) -> None:
    _, key = b.merchant()
    async with b.serve() as server:
        await quiet()
        took = await pushes(server.port, key, p.payments, p.warmup, server.pids())
        both = took["push"] + took["cross"]
        cross = (
            f"; across workers p99 {percentile(took['cross'], 99):.2f} ms" if took["cross"] else ""
        )
        value, text = tail(both)
        missed = ctx.add(b, "push", value, text + cross)
        ctx.add(b, "page", *tail(took["page"]))
        ctx.add(b, "status", *tail(took["status"]))
        if ctx.want_profile(missed):
            ctx.profiles.append(await profile(
                f"push-{b.name}", server.pids(), p.profile_seconds, b.cwd,
                lambda: pushes(server.port, key, 100_000, 0, server.pids()), idle=True))  # fmt: skip
        # Customer c pays pages c, c + customers, ...: each page of merchant c % merchants,
        # whatever the sizes.
        keys = [b.merchant(n + 1)[1] for n in range(merchants_for(p.customers))]
        maker = Connection("127.0.0.1", server.port)
        pages = [await create(maker, keys[i % p.customers % len(keys)])
                 for i in range(p.customers * p.per_customer)]  # fmt: skip
        await maker.aclose()
        await quiet()
        with Window(server.pid, b.db_pid) as window:
            paid = await customers(server.port, pages, p.customers, p.seconds)
        ctx.add(b, "confirms", paid / window.seconds, f"{p.customers} customers, {paid:,} paid; "
                f"CPU {window.per(paid)} ms per page + confirm")  # fmt: skip
