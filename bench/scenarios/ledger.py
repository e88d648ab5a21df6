"""GET /balance and GET /transactions (first page, deep, type=refund) with `rows` ledger
rows loaded (bench/data.py `ledger`), one request at a time; the balance and `fgcpay
ledger verify` must agree with the rows. docs/performance.md, "Ledger reads"."""

from __future__ import annotations

import json
import random
from typing import Any

from ..clients import Paths, reads, worst
from ..core import Backend, Db, Window, quiet
from ..data import ledger
from ..minihttp import Connection
from ..pyspy import profile
from ..suite import Ctx, Spec

ABOUT = "GET /balance and GET /transactions (first, deep, type=refund) with 1M ledger rows"
FIGURES = {"p99": Spec("ledger reads p99, worst of the balance and four transaction pages", "ms",
                       {"sqlite": 10.0, "postgres": 20.0})}  # fmt: skip
FULL = {"rows": 1_000_000, "requests": 3000, "warmup": 100, "profile_seconds": 10}
QUICK = {"rows": 20_000, "requests": 200, "warmup": 20}
PAGE = "/api/v1/transactions?limit=20"


async def run(ctx: Ctx, b: Backend, p: Any) -> None:
    merchant, key = b.merchant()
    rng = random.Random(11)
    rows = ledger(merchant, p.rows, 10, random.Random(7))
    db = Db(b.url)
    db.load(rows.tables)
    db.close()
    verified = b.ledger_ok()
    paths: Paths = {
        "balance": "/api/v1/balance",
        "first page": PAGE,
        "deep page": lambda: f"{PAGE}&starting_after={rng.choice(rows.cursors)}",
        "type=refund": f"{PAGE}&type=refund",
        "type=refund, deep": lambda: f"{PAGE}&type=refund&starting_after={rng.choice(rows.refund_cursors)}",
    }  # fmt: skip
    headers = {"Authorization": f"Bearer {key}"}
    async with b.serve() as server:
        await quiet()
        with Window(server.pid, b.db_pid) as window:
            took = await reads(server.port, paths, headers, p.requests, p.warmup)
        conn = Connection("127.0.0.1", server.port)
        balance = json.loads((await conn.request("GET", "/api/v1/balance", headers)).body)
        await conn.aclose()
        value, each, name = worst(took)
        agrees = verified and b.ledger_ok() and all(balance[k] == v for k, v in rows.want.items())
        cpu = window.per(p.requests * len(paths))
        missed = ctx.add(b, "p99", value, f"{each}; {p.rows:,} rows; CPU {cpu} ms/req"
                         + ("" if agrees else "; THE BALANCE OR `ledger verify` DISAGREES"))  # fmt: skip
        if ctx.want_profile(missed):
            only = {name: paths[name]}
            ctx.profiles.append(await profile(
                f"ledger-{b.name}", server.pids(), p.profile_seconds, b.cwd,
                lambda: reads(server.port, only, headers, 1_000_000, 0), idle=True))  # fmt: skip
