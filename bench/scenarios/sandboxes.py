"""Sandboxes (issue 31): `POST /sandboxes` one at a time; a sandbox holding `sessions`
sessions, `subscriptions` subscriptions and their events (each delivered once, with its
attempt) deleted, timed from the DELETE to no row of it left, while another merchant
creates checkout sessions from `neighbours` connections, their p99 against the same
merchant's just before, in the same round; and one sandbox with the shortest
`ttl_seconds` (60), watched until it is gone, on the service's own expiry settings.
docs/performance.md, "Sandboxes"."""

from __future__ import annotations

import json
import random
import time
from datetime import datetime
from typing import Any

import trio

from ..clients import api, burst, expect, tail
from ..core import CREATE_BODY, CREATE_PATH, Backend, Db, Window, log, percentile, quiet
from ..data import busy_merchant
from ..minihttp import Connection, clock
from ..suite import Ctx, Spec

ABOUT = "POST /sandboxes p99; a loaded sandbox deleted, another merchant creating meanwhile; expiry"
FIGURES = {
    "create": Spec("POST /sandboxes, one at a time, p99", "ms", 50.0),
    "delete": Spec("sandbox of 10,000 sessions, 1,000 subscriptions and their events deleted, "
                   "DELETE to no row left (worst round)", "s", 2.0),
    "neighbour": Spec("another merchant's create p99 during the deletions / just before", "x", 2.0),
    "expiry": Spec("sandbox gone after its expires_at (ttl_seconds 60)", "s", 60.0),
}  # fmt: skip
FULL = {"creates": 500, "warmup": 20, "sessions": 10_000, "subscriptions": 1000, "rounds": 3,
        "before_seconds": 3.0, "neighbours": 4, "expiry": 1}  # fmt: skip
# --quick leaves expiry out (a minute of waiting); `--set expiry=1` brings it back.
QUICK = {"creates": 50, "warmup": 5, "sessions": 1000, "subscriptions": 100, "rounds": 1,
         "before_seconds": 1.0, "expiry": 0}  # fmt: skip
PATH = "/api/v1/sandboxes"
NOWHERE = "http://127.0.0.1:9/hooks"  # never called: every delivery loaded has succeeded
# What a deletion must leave empty of the sandbox's merchant (the merchant row last).
OWNED = ("checkout_sessions", "subscriptions", "transactions", "events", "deliveries",
         "webhook_endpoints", "api_keys", "balance_shards")  # fmt: skip


def left(db: Db, merchant: str) -> int:
    """The sandbox's rows still there (its merchant row included)."""
    counts = [db.value(f"SELECT COUNT(*) FROM {t} WHERE merchant_id = ?", merchant) for t in OWNED]
    return sum(counts) + db.value("SELECT COUNT(*) FROM merchants WHERE id = ?", merchant)


async def sandbox(conn: Connection, key: str, body: dict[str, Any]) -> dict[str, Any]:
    r = await conn.request("POST", PATH, api(key), json.dumps(body).encode())
    made: dict[str, Any] = json.loads(expect(r, 201, "POST /sandboxes").body)
    return made


async def loaded(port: int, db: Db, key: str, p: Any, seed: int) -> tuple[str, str]:
    """A sandbox with an endpoint and its rows loaded: (its id, its merchant's id). On a
    connection of its own: loading the rows can outlast the server's keep-alive (5 s),
    which would close a connection kept across rounds."""
    conn = Connection("127.0.0.1", port)
    made = await sandbox(conn, key, {"name": f"loaded {seed}"})
    body = json.dumps({"url": NOWHERE}).encode()
    r = await conn.request("POST", "/api/v1/webhook_endpoints", api(made["api_key"]), body)
    endpoint = json.loads(expect(r, 201, "POST /webhook_endpoints").body)["id"]
    merchant = db.value("SELECT merchant_id FROM webhook_endpoints WHERE id = ?", endpoint)
    await conn.aclose()
    rows = busy_merchant(merchant, endpoint, p.sessions, p.subscriptions, random.Random(seed))
    await trio.to_thread.run_sync(db.load, rows)
    return made["id"], merchant


async def creating(port: int, key: str, took: list[float], until: trio.Event) -> None:
    """Checkout sessions created one at a time on one connection until `until`: each
    one's ms."""
    conn, body = Connection("127.0.0.1", port), json.dumps(CREATE_BODY).encode()
    while not until.is_set():
        r = expect(await conn.request("POST", CREATE_PATH, api(key), body), 201, "create")
        took.append((r.done_at - r.sent_at) * 1000)
    await conn.aclose()


async def deletion(port: int, db: Db, parent: str, neighbour: str, sandbox_id: str,
                   merchant: str, p: Any) -> tuple[float, float, list[float], list[float]]:  # fmt: skip
    """The neighbour's creates from `p.neighbours` connections for `p.before_seconds`,
    then the DELETE while they go on: the seconds to the DELETE's answer and to no row
    left, and the neighbour's ms before and during (the requests that ended while the
    deletion ran). Several connections, the same number in both: a deletion of a few
    hundred ms then holds enough creates for a p99."""
    before: list[float] = []
    enough = trio.Event()
    async with trio.open_nursery() as nursery:
        for _ in range(p.neighbours):
            nursery.start_soon(creating, port, neighbour, before, enough)
        await trio.sleep(p.before_seconds)
        enough.set()
    during: list[float] = []
    done = trio.Event()
    conn = Connection("127.0.0.1", port)
    async with trio.open_nursery() as nursery:
        for _ in range(p.neighbours):
            nursery.start_soon(creating, port, neighbour, during, done)
        await trio.sleep(0.1)  # the neighbour under way
        count = len(during)
        started = clock()
        r = expect(await conn.request("DELETE", f"{PATH}/{sandbox_id}", api(parent)), 200, "DELETE")
        answered = r.done_at - started
        # Another process's rows: polling the database is the only way to see them go.
        while await trio.to_thread.run_sync(left, db, merchant):  # noqa: ASYNC110
            await trio.sleep(0.02)
        gone = clock() - started
        done.set()
    await conn.aclose()
    return answered, gone, before, during[count:]


async def watch_expiry(port: int, parent: str, made: dict[str, Any], out: list[float],
                       seen: trio.Event) -> None:  # fmt: skip
    """Once past its `expires_at`, GET the sandbox every 0.25 s until 404: how long after
    `expires_at` it was first seen gone."""
    expires = datetime.fromisoformat(made["expires_at"].replace("Z", "+00:00")).timestamp()
    await trio.sleep(max(0.0, expires - time.time()))
    conn = Connection("127.0.0.1", port)
    # The service's timer, in another process: polling is the only way to see it act.
    while (await conn.request("GET", f"{PATH}/{made['id']}", api(parent))).status == 200:  # noqa: ASYNC110
        await trio.sleep(0.25)
    out.append(time.time() - expires)
    seen.set()
    await conn.aclose()


async def run(ctx: Ctx, b: Backend, p: Any) -> None:
    _, parent = b.merchant(0)
    _, neighbour = b.merchant(1)
    db = Db(b.url)
    expired: list[float] = []
    seen = trio.Event()
    async with b.serve() as server, trio.open_nursery() as watching:
        conn = Connection("127.0.0.1", server.port)
        if p.expiry:
            short = await sandbox(conn, parent, {"name": "short", "ttl_seconds": 60})
            watching.start_soon(watch_expiry, server.port, parent, short, expired, seen)
        await quiet()
        body = json.dumps({"name": "ci shard", "ttl_seconds": 3600}).encode()
        calls = [(PATH, body)] * (p.warmup + p.creates)
        with Window(server.pid, b.db_pid) as window:
            _, statuses, took = await burst(server.port, calls, api(parent), 1)
        p99, detail = tail(took[p.warmup :])
        ctx.add(b, "create", p99, f"{detail}; CPU {window.per(len(calls))} ms/create; {statuses}")

        rounds, before, during = [], [], []
        for n in range(p.rounds):
            sandbox_id, merchant = await loaded(server.port, db, parent, p, n)
            held = await trio.to_thread.run_sync(left, db, merchant)
            await quiet()
            answered, gone, ahead, meanwhile = await deletion(
                server.port, db, parent, neighbour, sandbox_id, merchant, p
            )
            rounds.append((gone, answered, held))
            before += ahead
            during += meanwhile
            log(f"round {n}: {held:,} rows; DELETE answered in {answered * 1000:.0f} ms, no row left after "
                f"{gone * 1000:.0f} ms; neighbour p99 {percentile(ahead, 99):.2f} ms before, "
                f"{percentile(meanwhile, 99):.2f} ms during (n={len(meanwhile)})")  # fmt: skip
        await conn.aclose()
        worst = max(rounds)
        each = ", ".join(f"{g:.2f} s (answered {a * 1000:.0f} ms)" for g, a, _ in rounds)
        size = f"{p.sessions:,} sessions, {p.subscriptions:,} subscriptions"
        ctx.add(b, "delete", worst[0], f"{size}, {worst[2]:,} rows; {p.rounds} round(s): {each}")
        p99_before, p99_during = percentile(before, 99), percentile(during, 99)
        ctx.add(b, "neighbour", p99_during / p99_before,
                f"p99 {p99_during:.2f} ms during (n={len(during)}) vs {p99_before:.2f} ms "
                f"before (n={len(before)}); p50 {percentile(during, 50):.2f} vs "
                f"{percentile(before, 50):.2f} ms")  # fmt: skip
        if p.expiry:
            with trio.fail_after(180):
                await seen.wait()
            ctx.add(b, "expiry", expired[0], "first GET answering 404, polled every 0.25 s")
        watching.cancel_scope.cancel()
    db.close()
