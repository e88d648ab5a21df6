"""Webhooks: how soon a payment's webhook reaches the merchant, and how fast a backlog of
queued deliveries drains, to one receiver in this process (`minihttp.serve_ok`: answers
200 at once, records when each request's headers were complete, on the driver's clock),
registered with `fgcpay webhook-endpoint create` for all events.

1. Payment -> webhook: `payments` one at a time after `warmup` (create, page, confirm:
   303), each waiting for its session's event at the receiver; from the moment the 303's
   headers were read (the payment committed before the 303 was sent) to the receipt.
2. Drain: the service is stopped; `backlog` paid events, copies of a real one from part
   1 with fresh ids, and one pending delivery each (due now, no lease) are inserted
   straight into the database; the service is launched and the clock runs from the
   launch until the receiver has seen every queued event id (at most `drain_timeout` s).
"""

from __future__ import annotations

import re
import secrets
import time
from dataclasses import dataclass, field
from typing import Any

import trio

from ..clients import confirm, create, open_page, tail
from ..core import Backend, Db, Window, free_port, quiet
from ..minihttp import Connection, clock, serve_ok
from ..pyspy import profile
from ..suite import Ctx, Spec

ABOUT = "payment -> webhook receipt p99, and a backlog of 10,000 queued deliveries drained"
FIGURES = {
    "latency": Spec("payment (303) -> webhook received, p99", "ms", 50.0),
    "drain": Spec("backlog drained, from the service's launch", "/s", 1000.0, higher=True),
}
FULL = {"payments": 300, "warmup": 20, "backlog": 10_000, "drain_timeout": 300.0,
        "profile_seconds": 10}  # fmt: skip
QUICK = {"payments": 30, "warmup": 5, "backlog": 500}
BASE62 = "0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz"
_SESSION = re.compile(rb"cs_test_[0-9A-Za-z]{24}")
EVENT_COLUMNS = "id, merchant_id, type, resource_id, sequence, body, created_at"
DELIVERY_COLUMNS = ("id, event_id, endpoint_id, merchant_id, status, attempts, next_attempt_at, "
                    "lease_owner, lease_expires_at, created_at, updated_at")  # fmt: skip


def rid(prefix: str) -> str:
    return prefix + "".join(secrets.choice(BASE62) for _ in range(24))


@dataclass
class Receiver:
    port: int = field(default_factory=free_port)
    first_seen: dict[str, float] = field(default_factory=dict)  # event id -> first receipt
    waiting: dict[str, trio.Event] = field(default_factory=dict)  # session id -> its event
    by_session: dict[str, float] = field(default_factory=dict)
    watch: set[str] = field(default_factory=set)  # event ids of a drain
    arrivals: list[float] = field(default_factory=list)  # their receipts, in order
    all_watched: trio.Event = field(default_factory=trio.Event)
    hits: int = 0

    def on_request(self, method: str, target: str, headers: list[tuple[bytes, bytes]],
                   body: bytes, at: float) -> None:  # fmt: skip
        self.hits += 1
        event_id = next((v.decode() for k, v in headers if k == b"service-event-id"), "")
        if event_id in self.first_seen:
            return  # a duplicate: counted in hits only
        self.first_seen[event_id] = at
        if (match := _SESSION.search(body)) and (
            session := match.group(0).decode()
        ) in self.waiting:
            self.by_session[session] = at
            self.waiting.pop(session).set()
        if event_id in self.watch:
            self.arrivals.append(at)
            if len(self.arrivals) == len(self.watch):
                self.all_watched.set()


def backlog_rows(template: tuple[str, str, str], merchant: str, endpoint: str, count: int,
                 now_us: int, status: str = "pending") -> tuple[list[tuple[Any, ...]], list[tuple[Any, ...]]]:  # fmt: skip
    """Events copied from a real one (id, resource id, body) with fresh event and session
    ids, and one delivery each, due now (oldest first, all in the past)."""
    events, deliveries = [], []
    for i in range(count):
        event_id, session_id, created = rid("evt_"), rid("cs_test_"), now_us - (count - i)
        body = template[2].replace(template[0], event_id).replace(template[1], session_id)
        events.append((event_id, merchant, "checkout.session.paid", session_id, 2, body, created))
        deliveries.append((rid("whd_"), event_id, endpoint, merchant, status, int(status != "pending"),
                           created, None, None, created, created))  # fmt: skip
    return events, deliveries


async def latency(b: Backend, key: str, receiver: Receiver, count: int, warmup: int) -> list[float]:
    async with b.serve() as server:
        await quiet()
        api, browser, took = (
            Connection("127.0.0.1", server.port),
            Connection("127.0.0.1", server.port),
            [],
        )
        for i in range(warmup + count):
            with trio.fail_after(30):
                page = await create(api, key)
                await open_page(browser, page)
                receiver.waiting[page.id] = arrived = trio.Event()
                answer = await confirm(browser, page)
                await arrived.wait()
            if i >= warmup:
                took.append((receiver.by_session[page.id] - answer.headers_at) * 1000)
        await api.aclose()
        await browser.aclose()
    return took


async def drain(ctx: Ctx, b: Backend, p: Any, merchant: str, endpoint: str, receiver: Receiver,
                spy: bool = False) -> None:  # fmt: skip
    db = Db(b.url)
    template = db.conn.execute("SELECT id, resource_id, body FROM events WHERE type = "
                               "'checkout.session.paid' ORDER BY created_at DESC LIMIT 1").fetchone()  # fmt: skip
    now_us = int(time.time() * 1_000_000)
    events, deliveries = backlog_rows(tuple(template), merchant, endpoint, p.backlog, now_us)
    db.load([("events", EVENT_COLUMNS, events), ("deliveries", DELIVERY_COLUMNS, deliveries)])
    receiver.watch, receiver.arrivals, receiver.all_watched = (
        {e[0] for e in events},
        [],
        trio.Event(),
    )
    await quiet()
    server = b.server("fgcpay-drain")
    with Window(db=b.db_pid) as window:
        launched = clock()
        async with trio.open_nursery() as nursery:  # /readyz polled in a thread meanwhile
            nursery.start_soon(trio.to_thread.run_sync, server.start)
            with trio.fail_after(p.drain_timeout):
                while server.proc is None:  # noqa: ASYNC110 (set by a thread, no trio token)
                    await trio.sleep(0.001)
                window.server, window.marks = server.pid, (0.0, *window.marks[1:])
                if spy:
                    while server.ready_at is None:  # noqa: ASYNC110
                        await trio.sleep(0.01)
                    ctx.profiles.append(await profile(f"drain-{b.name}", server.pids(), p.profile_seconds,
                                                      b.cwd, receiver.all_watched.wait))  # fmt: skip
                await receiver.all_watched.wait()
    await trio.sleep(0.5)  # any late duplicates
    await trio.to_thread.run_sync(server.stop)
    n, arrivals = len(receiver.arrivals), receiver.arrivals
    mine = f"FROM deliveries WHERE created_at >= {now_us - n}"  # the backlog's deliveries
    states = db.conn.execute(
        f"SELECT status, attempts, COUNT(*) {mine} GROUP BY status, attempts"
    ).fetchall()
    recorded = db.value(
        f"SELECT COUNT(*) FROM delivery_attempts WHERE delivery_id IN (SELECT id {mine})"
    )
    db.close()
    if spy:
        return
    missed = ctx.add(b, "drain", n / (arrivals[-1] - launched),
                     f"{n:,} deliveries; launch -> ready {(server.ready_at or launched) - launched:.2f} s, "
                     f"-> first {arrivals[0] - launched:.2f} s, -> last {arrivals[-1] - launched:.2f} s; "
                     f"middle 80 % {int(n * 0.8) / (arrivals[int(n * 0.9) - 1] - arrivals[int(n * 0.1)]):,.0f}/s; "
                     f"CPU {window.per(n)} ms/delivery; {receiver.hits - len(receiver.first_seen)} duplicates; "
                     f"(status, attempts, deliveries) {[tuple(s) for s in states]}, {recorded:,} attempts recorded")  # fmt: skip
    if ctx.want_profile(missed):
        await drain(ctx, b, p, merchant, endpoint, receiver, spy=True)


async def run(ctx: Ctx, b: Backend, p: Any) -> None:
    merchant, key = b.merchant()
    receiver = Receiver()
    url = f"http://127.0.0.1:{receiver.port}/hooks"
    endpoint = b.command("webhook-endpoint", "create", "--merchant", merchant, "--url", url)["id"]
    async with trio.open_nursery() as nursery:
        await nursery.start(serve_ok, receiver.port, receiver.on_request)
        took = await latency(b, key, receiver, p.payments, p.warmup)
        ctx.add(b, "latency", *tail(took))
        await drain(ctx, b, p, merchant, endpoint, receiver)
        nursery.cancel_scope.cancel()
