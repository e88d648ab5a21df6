"""The checkout session list (first page, status=paid, 90 % deep) and one session by id,
with `rows` sessions loaded, one request at a time. docs/performance.md, "Lists"."""

from __future__ import annotations

import random
from typing import Any

from ..clients import reads, tail, worst
from ..core import CREATE_PATH, Backend, Db, Window, quiet
from ..data import sessions
from ..pyspy import profile
from ..suite import Ctx, Spec

ABOUT = "GET /checkout/sessions (first page, status=paid, 90 % deep) and one by id, 1M sessions"
FIGURES = {
    "p99": Spec("session list p99, worst of first page / status=paid / 90 % deep", "ms", 20.0),
    "get": Spec("one session by id, p99", "ms", {"sqlite": 10.0, "postgres": 20.0}, proposed=True),
}
FULL = {"rows": 1_000_000, "requests": 3000, "warmup": 100, "profile_seconds": 10}
QUICK = {"rows": 5000, "requests": 200, "warmup": 20}


async def run(ctx: Ctx, b: Backend, p: Any) -> None:
    merchant, key = b.merchant()
    rows, deep = sessions(merchant, p.rows, random.Random(7))
    db = Db(b.url)
    db.load([rows])
    db.close()
    one = rows[2][len(rows[2]) // 2][0]
    pages = {
        "first page": f"{CREATE_PATH}?limit=20",
        "status=paid": f"{CREATE_PATH}?limit=20&status=paid",
        "90 % deep": f"{CREATE_PATH}?limit=20&starting_after={deep}",
        "by id": f"{CREATE_PATH}/{one}",
    }
    headers = {"Authorization": f"Bearer {key}"}
    async with b.serve() as server:
        await quiet()
        with Window(server.pid, b.db_pid) as window:
            took = await reads(server.port, pages, headers, p.requests, p.warmup)
        by_id = took.pop("by id")
        value, each, name = worst(took)
        cpu = window.per(p.requests * len(pages))
        missed = ctx.add(b, "p99", value, f"{each}; {p.rows:,} rows; CPU {cpu} ms/req")
        ctx.add(b, "get", *tail(by_id))
        if ctx.want_profile(missed):
            only = {name: pages[name]}
            ctx.profiles.append(await profile(
                f"list-{b.name}", server.pids(), p.profile_seconds, b.cwd,
                lambda: reads(server.port, only, headers, 100_000, 0), idle=True))  # fmt: skip
