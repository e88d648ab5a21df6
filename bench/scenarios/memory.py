"""RSS of every service process after `sessions` distinct sessions created, read and paid,
then idle, against the idle service once `warmup` sessions loaded its code paths; and
the load's last tenth's rate against its first. docs/performance.md, "Memory"."""

from __future__ import annotations

from typing import Any

import trio

from ..clients import confirm, create, expect, in_parallel, merchants_for, open_page
from ..core import CREATE_PATH, Backend, Window, quiet, rss_mib
from ..minihttp import Connection
from ..suite import Ctx, Spec

ABOUT = "RSS after 100,000 sessions created, read and paid, then idle; and no decay over them"
FIGURES = {
    "memory": Spec("RSS after the sessions and the settle time / idle", "x", 1.2),
    "steady": Spec(
        "sessions touched/s, last tenth / first tenth", "x", 0.9, higher=True, proposed=True
    ),
}
FULL = {"sessions": 100_000, "warmup": 500, "clients": 32, "settle": 70.0, "actor_idle": 0.0}
# Quick: actors end after 1 s idle (0: the service's default, 60 s), so 3 s settle them.
QUICK = {"sessions": 1000, "warmup": 100, "clients": 16, "settle": 3.0, "actor_idle": 1.0}


async def touch(port: int, keys: list[str], count: int, clients: int) -> list[float]:
    """`count` sessions created, read and paid from `clients` connections, client i as
    merchant `keys[i % len(keys)]`; when each was done."""
    done: list[float] = []
    left = iter(range(count))

    async def client(i: int) -> None:
        key = keys[i % len(keys)]
        headers = {"Authorization": f"Bearer {key}"}
        conn = Connection("127.0.0.1", port)
        for _ in left:
            page = await create(conn, key)
            expect(
                await conn.request("GET", f"{CREATE_PATH}/{page.id}", headers), 200, "GET session"
            )
            await open_page(conn, page)
            done.append((await confirm(conn, page)).done_at)
        await conn.aclose()

    await in_parallel(clients, client)
    return done


async def run(ctx: Ctx, b: Backend, p: Any) -> None:
    keys = [b.merchant(n)[1] for n in range(merchants_for(p.clients))]
    seconds = str(p.actor_idle or 60.0)  # 60 s: the service's default
    async with b.serve(FGCPAY_ACTOR_IDLE_SECONDS=seconds) as server:
        pids = server.all_pids()
        fresh = [rss_mib(pid) for pid in pids]
        await touch(server.port, keys, p.warmup, p.clients)
        idle = [rss_mib(pid) for pid in pids]
        await quiet()
        with Window(server.pid, b.db_pid) as window:
            done = await touch(server.port, keys, p.sessions, p.clients)
        after = [rss_mib(pid) for pid in pids]
        await trio.sleep(p.settle)
        settled = [rss_mib(pid) for pid in pids]
    rss = "; ".join(
        f"{a:.1f} / {b_:.1f} / {c:.1f} / {d:.1f}"
        for a, b_, c, d in zip(fresh, idle, after, settled, strict=True)
    )
    ctx.add(b, "memory", max(d / a for a, d in zip(idle, settled, strict=True) if a),
            f"{p.sessions:,} sessions; MiB at start / idle after {p.warmup} / after the load / "
            f"{p.settle:.0f} s later, each process: {rss}")  # fmt: skip
    tenth = len(done) // 10
    rate = [tenth / (chunk[-1] - chunk[0]) for chunk in (done[:tenth], done[-tenth:])]
    ctx.add(b, "steady", rate[1] / rate[0], f"{rate[1]:,.0f} vs {rate[0]:,.0f} sessions/s; "
            f"{len(done) / window.seconds:,.0f}/s overall; CPU {window.per(len(done))} ms/session")  # fmt: skip
