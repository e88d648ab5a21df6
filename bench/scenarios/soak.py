"""An hour of mixed load on 2 workers and PostgreSQL, through two database restarts and a
worker killed; then nothing lost. docs/performance.md, "Soak".

`clients` merchants' clients, paced to `rate` operations a second in all, each operation
drawn from MIX: a session created; one paid through the test helper or the hosted page
(its page, then its form); a list or a read; a paid session refunded and the refund
approved; a subscription on the merchant's test clock, approved. Each merchant's clock is
advanced a month every `advance_every` s; each merchant has a webhook endpoint on a
receiver in this process and an event stream (`GET /events/stream`) read here, resumed
with `after` whenever it closes. After `warmup` s untimed, `minutes` of load in windows of
`window` s (0: a twelfth of the run, 30 s to 5 minutes); PostgreSQL restarted (`pg_ctl
restart -m fast`) at 1/3 and 2/3 of it, a worker SIGKILLed at 1/2 (the supervisor should
start another). Each window: requests/s, p50/p99, RSS per worker, answers other than the
expected 2xx/303 (503 apart), connection errors. Then, the load stopped: every 201 read
back (paid, approved, active as the run left it), every paid session's
`checkout.session.paid` at the receiver, every merchant's events seen on its stream once
each and in each resource's `sequence` order, `fgcpay ledger verify`.

PostgreSQL only (on SQLite one worker serves: the kill would be the service's end).
"""

from __future__ import annotations

import json
import math
import os
import random
import signal
import time
from collections import deque
from collections.abc import Sequence
from dataclasses import asdict, dataclass, field
from datetime import datetime, timedelta
from pathlib import Path
from typing import Any
from urllib.parse import urlencode, urlsplit

import trio
from fgcpay.domain.limits import MAX_SUBSCRIPTIONS_PER_TEST_CLOCK
from trio_websocket import ConnectionClosed, HandshakeError, open_websocket_url

from ..clients import CSRF_TOKEN, CUSTOMER, api
from ..core import (
    CREATE_BODY,
    CREATE_PATH,
    OTHERS,
    Backend,
    Db,
    Server,
    free_port,
    log,
    machine_busy,
    own_cpu,
    percentile,
    quiet,
    tree_cpu,
)
from ..core import rss_mib as rss_of
from ..minihttp import Connection, Response, clock, serve_ok
from ..suite import Ctx, Spec
from .subscriptions import PLAN, rfc3339

ABOUT = (
    "an hour of mixed load, 2 workers, PostgreSQL restarted twice, a worker killed: nothing lost"
)
PG = "postgres"
FIGURES = {
    "rss": Spec("RSS of the largest worker, last window / the first", "x", {PG: 1.1}),
    "p99": Spec("p99 of every request, last window / the first", "x", {PG: 1.5}),
    "lost": Spec(
        "lost: 201s not read back, paid without webhook, stream events missed, "
        "repeated or out of order; ledger verify failing",
        "lost",
        {PG: 1.0},
    ),  # fmt: skip
    "unexpected": Spec(
        "answers other than 2xx (503 around the restarts apart), connection "
        "errors outside the kill",
        "answers",
        {PG: 1.0},
    ),  # fmt: skip
    "worker": Spec("killed worker replaced by the supervisor", "s", {PG: 10.0}, proposed=True),
}
FULL = {"minutes": 60.0, "window": 0.0, "warmup": 60.0, "rate": 75.0, "clients": 16,
        "merchants": 4, "advance_every": 60.0, "grace": 15.0, "drain": 180.0}  # fmt: skip
QUICK = {"minutes": 3.5, "warmup": 30.0, "advance_every": 15.0, "drain": 60.0}
# Operations and their weights.
MIX = {"create": 30, "pay_helper": 20, "pay_page": 10, "read": 25, "refund": 10, "subscribe": 5}
TIMEOUT = 30.0  # s for one request: longer is counted as a connection error (status 0)
REPLACE_WAIT = 30.0  # s given the supervisor to start a worker in place of the killed one


# -- the pure part: windows and verdicts (tests/test_bench_soak.py) ----------------------


@dataclass(frozen=True, slots=True)  # an hour holds some 400,000
class Sample:
    at: float  # s since the load began, when the answer (or the error) came
    kind: str  # the request, e.g. "create"
    status: int  # 0: no answer (connection error or timeout)
    ms: float
    ok: bool  # the status expected (201, 200, 303)
    error: str = ""  # why no answer came, or the start of an unexpected answer's body


# A CPU reading: (s since the load began, the machine busy, the service, PostgreSQL, this
# driver), CPU seconds so far.
Cpu = tuple[float, float, float, float, float]


@dataclass
class Row:
    index: int
    start: float  # s since the measured part began
    requests: int  # answered
    rate: float
    p50: float
    p99: float
    rss: list[float]  # MiB, each worker alive at the window's last sample
    unavailable: int  # 503s
    other: dict[int, int]  # other unexpected statuses -> count
    errors: int  # no answer
    notes: list[str] = field(default_factory=list)
    unready: int = 0  # `/readyz` polls (one a second) not answered 200
    cpu_ms: float = math.nan  # the service's and PostgreSQL's CPU per request
    others: float = math.nan  # % of the machine the rest of it used


def windows(samples: list[Sample], rss: list[tuple[float, dict[int, float]]],
            marks: list[tuple[float, str]], start: float, width: float, count: int,
            ready: Sequence[tuple[float, int]] = (), cpu: Sequence[Cpu] = (),
            cpus: int = 2) -> list[Row]:  # fmt: skip
    """`count` windows of `width` s from `start` (s since the load began): the requests
    answered in each, the workers' RSS at its last sample, the marks (restarts) in it,
    the `/readyz` polls (one a second) not answered 200, and from the CPU readings (each
    second, cumulative), the service's and PostgreSQL's CPU per request and the share of
    the `cpus` the rest of the machine used."""
    rows = []
    for i in range(count):
        lo, hi = start + i * width, start + (i + 1) * width
        inside = [s for s in samples if lo <= s.at < hi]
        answered = [s.ms for s in inside if s.status]
        last = [r for t, r in rss if lo <= t < hi]
        other: dict[int, int] = {}
        for s in inside:
            if s.status and not s.ok and s.status != 503:
                other[s.status] = other.get(s.status, 0) + 1
        rows.append(Row(
            i, i * width, len(answered), len(answered) / width, percentile(answered, 50),
            percentile(answered, 99), sorted(last[-1].values()) if last else [],
            sum(1 for s in inside if s.status == 503), other,
            sum(1 for s in inside if not s.status),
            [f"{text} at {t - start:.0f} s" for t, text in marks if lo <= t < hi],
            sum(1 for t, status in ready if lo <= t < hi and status != 200)))  # fmt: skip
        # Between consecutive readings; a process gone (restarted) counts from 0 again.
        used, elapsed, others = 0.0, 0.0, 0.0
        for a, b in zip(cpu, cpu[1:], strict=False):
            if lo <= b[0] < hi:
                d = [max(0.0, y - x) for x, y in zip(a, b, strict=True)]
                used, elapsed = used + d[2] + d[3], elapsed + d[0]
                others += max(0.0, d[1] - d[2] - d[3] - d[4])
        rows[-1].cpu_ms = used * 1000 / len(answered) if answered else math.nan
        rows[-1].others = others / (elapsed * cpus) * 100 if elapsed else math.nan
    return rows


def unexpected(samples: list[Sample], restarts: list[tuple[float, float]],
               kill: tuple[float, float] | None, grace: float) -> dict[str, int]:  # fmt: skip
    """What no run should see: a 503 outside [a restart's start, its end + grace], any
    other unexpected status, no answer outside [the kill, the workers back + grace]."""
    out: dict[str, int] = {}

    def near(t: float, spans: list[tuple[float, float]]) -> bool:
        return any(a - 1.0 <= t <= b + grace for a, b in spans)

    for s in samples:
        if s.ok:
            continue
        if s.status == 503:
            if near(s.at, restarts):
                continue
            key = "503 outside the restarts"
        elif s.status == 0:
            if kill is not None and near(s.at, [kill]):
                continue
            key = f"no answer outside the kill ({s.kind}: {s.error})"
        else:
            key = f"{s.status} ({s.kind})"
        out[key] = out.get(key, 0) + 1
    return out


def ratios(rows: list[Row]) -> tuple[float, float]:
    """RSS of the largest worker and p99, the last window against the first."""
    first, last = rows[0], rows[-1]
    rss = max(last.rss, default=0.0) / max(first.rss, default=0.0) if first.rss else float("nan")
    return rss, last.p99 / first.p99 if first.p99 else float("nan")


def stream_problems(seen: list[tuple[str, str, int]], expected: set[str]) -> dict[str, int]:
    """A stream's events (id, resource id, sequence) in the order received, against the
    ids it should have sent: missed, repeated, and out of order (an event whose sequence
    is not above the last one seen of its resource; a repeat is counted once, as repeated)."""
    ids, once = [e[0] for e in seen], set[str]()
    last: dict[str, int] = {}
    disorder = 0
    for event, resource, sequence in seen:
        if event in once:
            continue  # counted as repeated
        once.add(event)
        if sequence <= last.get(resource, -1):
            disorder += 1
        last[resource] = max(sequence, last.get(resource, -1))
    return {"missed": len(expected - set(ids)), "repeated": len(ids) - len(set(ids)),
            "out of order": disorder, "unknown": len(set(ids) - expected)}  # fmt: skip


def table(rows: list[Row]) -> str:
    lines = ["| window | requests/s | p50 ms | p99 ms | RSS per worker, MiB | 503 | other non-2xx "
             "| no answer | /readyz not 200, s | CPU ms/request (service + PG) | others' CPU "
             "| during |", "|---|---:|---:|---:|---|---:|---|---:|---:|---:|---:|---|"]  # fmt: skip
    for r in rows:
        m0, m1 = divmod(int(r.start), 60)
        other = ", ".join(f"{k}: {v}" for k, v in sorted(r.other.items())) or "0"
        lines.append(f"| {m0}:{m1:02d} | {r.rate:,.1f} | {r.p50:.2f} | {r.p99:.2f} | "
                     f"{' / '.join(f'{x:.1f}' for x in r.rss)} | {r.unavailable} | {other} | "
                     f"{r.errors} | {r.unready} | {r.cpu_ms:.2f} | {r.others:.0f} % | "
                     f"{'; '.join(r.notes)} |")  # fmt: skip
    return "\n".join(lines)


def p99_by_kind(
    samples: list[Sample], start: float, width: float, count: int
) -> list[dict[str, float]]:
    """Each window's p99 of each kind of request (which of them moved)."""
    out = []
    for i in range(count):
        lo, hi = start + i * width, start + (i + 1) * width
        kinds: dict[str, list[float]] = {}
        for s in samples:
            if lo <= s.at < hi and s.status:
                kinds.setdefault(s.kind, []).append(s.ms)
        out.append({k: round(percentile(v, 99), 2) for k, v in sorted(kinds.items())})
    return out


def said(counts: dict[str, Any]) -> str:
    """`{"a": 1, "b": {"c": 2}}` as `a 1, b (c 2)`."""
    return ", ".join(f"{k} ({said(v)})" if isinstance(v, dict) else f"{k} {v:,}"
                     for k, v in counts.items())  # fmt: skip


def window_width(minutes: float, window: float) -> float:
    """The window's width: given, or a twelfth of the run in steps of 30 s (30 s to 5 min)."""
    if window > 0:
        return window
    return min(300.0, max(30.0, round(minutes * 60 / 12 / 30) * 30))


# -- the run ------------------------------------------------------------------------------


@dataclass
class Merchant:
    id: str
    key: str
    clock: str = ""
    on_clock: int = 0  # subscriptions made on it
    lock: trio.Lock = field(default_factory=trio.Lock)  # its clock: advancing or not
    paid: deque[str] = field(default_factory=deque)  # paid sessions not yet refunded
    sessions: deque[str] = field(default_factory=lambda: deque(maxlen=200))  # recent ones
    stream: list[tuple[str, str, int]] = field(default_factory=list)
    reconnects: dict[str, int] = field(default_factory=dict)


@dataclass
class State:
    port: int
    t0: float  # the load's start, minihttp's clock
    samples: list[Sample] = field(default_factory=list)
    created: dict[str, tuple[str, str]] = field(default_factory=dict)  # id -> key, state
    paid: set[str] = field(default_factory=set)
    advances: list[float] = field(default_factory=list)
    used: dict[int, float] = field(default_factory=dict)  # a connection's last answer

    async def call(self, conn: Connection, kind: str, method: str, path: str,
                   headers: dict[str, str], body: bytes = b"", want: int = 200) -> Response | None:  # fmt: skip
        """One request, recorded; None (and the connection closed) when no answer came.
        A connection idle for 4 s is opened again first: the service closes one idle for
        5 s (its keep-alive), and a request sent meanwhile would fail as no client's does
        (they retry a request on a kept-alive connection closed under it)."""
        if conn.stream is not None and clock() - self.used.get(id(conn), 0.0) > 4.0:
            await conn.aclose()
        sent = clock()
        try:
            with trio.fail_after(TIMEOUT):
                r = await conn.request(method, path, headers, body)
        except (OSError, ConnectionError, trio.BrokenResourceError, trio.ClosedResourceError,
                trio.TooSlowError, ValueError, IndexError) as error:  # fmt: skip
            if conn.stream is not None:
                await trio.aclose_forcefully(conn.stream)
            conn.stream = None
            why = f"{type(error).__name__}: {error}"[:80]
            self.samples.append(
                Sample(clock() - self.t0, kind, 0, (clock() - sent) * 1000, False, why)
            )
            return None
        self.used[id(conn)] = r.done_at
        ok = r.status == want
        said = "" if ok or r.status == 503 else r.body[:160].decode(errors="replace")
        self.samples.append(Sample(r.done_at - self.t0, kind, r.status,
                                   (r.done_at - r.sent_at) * 1000, ok, said))  # fmt: skip
        return r


def body(r: Response) -> dict[str, Any]:
    data: dict[str, Any] = json.loads(r.body)
    return data


async def operation(s: State, m: Merchant, conn: Connection, kind: str,
                    rng: random.Random) -> None:  # fmt: skip
    headers = api(m.key)
    if kind == "refund" and not m.paid:
        kind = "pay_helper"
    if kind in ("create", "pay_helper", "pay_page"):
        r = await s.call(conn, "create", "POST", CREATE_PATH, headers,
                         json.dumps(CREATE_BODY).encode(), 201)  # fmt: skip
        if r is None or r.status != 201:
            return
        session = body(r)
        sid = session["id"]
        s.created[sid] = (m.key, "open")
        m.sessions.append(sid)
        if kind == "pay_helper":
            r = await s.call(conn, "pay (test helper)", "POST",
                             f"/api/v1/test_helpers/checkout/sessions/{sid}/pay", headers, b"{}")  # fmt: skip
        elif kind == "pay_page":
            path = urlsplit(session["checkout_url"]).path
            r = await s.call(conn, "hosted page", "GET", path, {"Accept": "text/html"})
            if r is None or r.status != 200:
                return
            cookie, match = r.cookies().get("fgc_csrf"), CSRF_TOKEN.search(r.body)
            if not cookie or not match:  # counted as an unexpected answer
                s.samples.append(Sample(r.done_at - s.t0, "hosted page without its form", 200,
                                        0.0, False, r.body[:160].decode(errors="replace")))  # fmt: skip
                return
            form = urlencode({"csrf_token": match.group(1).decode(), **CUSTOMER}).encode()
            r = await s.call(conn, "pay (hosted page)", "POST", path,
                             {"Content-Type": "application/x-www-form-urlencoded",
                              "Cookie": f"fgc_csrf={cookie}"}, form, 303)  # fmt: skip
        if kind != "create" and r is not None and r.status in (200, 303):
            s.created[sid] = (m.key, "paid")
            s.paid.add(sid)
            m.paid.append(sid)
    elif kind == "read":
        paths = ["/api/v1/checkout/sessions?limit=20", "/api/v1/refunds?limit=20",
                 "/api/v1/subscriptions?limit=20", "/api/v1/events?limit=20"]  # fmt: skip
        if m.sessions:
            paths.append(f"{CREATE_PATH}/{rng.choice(m.sessions)}")
        path = rng.choice(paths)
        await s.call(conn, "read " + path.split("?")[0].split("/")[3], "GET", path, headers)
    elif kind == "refund":
        sid = m.paid.popleft()
        r = await s.call(conn, "refund", "POST", "/api/v1/refunds", headers,
                         json.dumps({"checkout_session_id": sid, "amount_fgc": "1.00"}).encode(), 201)  # fmt: skip
        if r is None or r.status != 201:
            return
        rid = body(r)["id"]
        s.created[rid] = (m.key, "pending_review")
        r = await s.call(conn, "refund approve", "POST",
                         f"/api/v1/test_helpers/refunds/{rid}/approve", headers)  # fmt: skip
        if r is not None and r.status == 200:
            s.created[rid] = (m.key, "approved")
    elif kind == "subscribe":
        async with m.lock:  # not while its clock advances (409 test_clock_advancing)
            if m.on_clock >= MAX_SUBSCRIPTIONS_PER_TEST_CLOCK - 10:  # 10: 503s that made one
                await new_clock(s, m, conn)
            plan = json.dumps(PLAN | {"test_clock": m.clock}).encode()
            r = await s.call(conn, "subscribe", "POST", "/api/v1/subscriptions", headers, plan, 201)
            if r is None or r.status != 201:
                return
            m.on_clock += 1
            sub = body(r)["id"]
            s.created[sub] = (m.key, "paused")
            r = await s.call(conn, "subscription approve", "POST",
                             f"/api/v1/test_helpers/subscriptions/{sub}/approve", headers, b"{}")  # fmt: skip
            if r is not None and r.status == 200:
                s.created[sub] = (m.key, "active")


async def new_clock(s: State, m: Merchant, conn: Connection) -> None:
    """A test clock for the merchant's next subscriptions, at the service's time: one
    holds at most MAX_SUBSCRIPTIONS_PER_TEST_CLOCK (docs/api.md, "Limits"). The
    advances move the newest only: the renewals per advance stay bounded."""
    frozen = json.dumps({"frozen_time": rfc3339(int(time.time()) * 1_000_000)}).encode()
    r = await s.call(conn, "test clock create", "POST", "/api/v1/test_clocks", api(m.key),
                     frozen, 201)  # fmt: skip
    if r is not None and r.status == 201:
        m.clock, m.on_clock = body(r)["id"], 0
        s.created[m.clock] = (m.key, "ready")


async def client(s: State, m: Merchant, i: int, interval: float, end: float) -> None:
    """Operations every `interval` s (never catching up in a burst) until `end`."""
    rng, conn = random.Random(i), Connection("127.0.0.1", s.port)
    kinds, weights = list(MIX), list(MIX.values())
    due = trio.current_time() + interval * rng.random()
    while due < end:
        await trio.sleep_until(due)
        await operation(s, m, conn, rng.choices(kinds, weights)[0], rng)
        due = max(due + interval, trio.current_time())
    await conn.aclose()


async def advancer(s: State, m: Merchant, every: float, end: float) -> None:
    """The merchant's test clock a month (31 days) further every `every` s, then polled
    until `ready`, subscriptions waiting meanwhile. A connection each time: one idle
    since the last (past the service's 5 s keep-alive) is closed by then."""
    next_at = trio.current_time() + every
    while next_at < end:
        await trio.sleep_until(next_at)
        next_at += every
        async with m.lock:
            url = f"/api/v1/test_clocks/{m.clock}"
            await advance(s, Connection("127.0.0.1", s.port), url, api(m.key), every)


async def advance(s: State, conn: Connection, url: str, headers: dict[str, str],
                  wait: float) -> None:  # fmt: skip
    try:
        r = await s.call(conn, "test clock", "GET", url, headers)
        if r is None or r.status != 200 or body(r)["status"] != "ready":
            return
        now = datetime.fromisoformat(body(r)["frozen_time"].replace("Z", "+00:00"))
        later = (now + timedelta(days=31)).timestamp()
        start = trio.current_time()
        payload = json.dumps({"frozen_time": rfc3339(int(later * 1e6))}).encode()
        r = await s.call(conn, "test clock advance", "POST", f"{url}/advance", headers, payload)
        if r is None or r.status != 200:
            return
        with trio.move_on_after(wait):
            while True:
                await trio.sleep(0.2)
                r = await s.call(conn, "test clock", "GET", url, headers)
                if r is not None and r.status == 200 and body(r)["status"] == "ready":
                    s.advances.append(trio.current_time() - start)
                    break
    finally:
        await conn.aclose()


async def stream(s: State, m: Merchant) -> None:
    """The merchant's event stream, from its first event, resumed after the last one
    received whenever it closes; runs until cancelled."""
    while True:
        after = m.stream[-1][0] if m.stream else "start"
        url = f"ws://127.0.0.1:{s.port}/api/v1/events/stream?after={after}"
        reason = "closed"
        try:
            async with open_websocket_url(
                url, extra_headers=[(b"Authorization", f"Bearer {m.key}".encode())],
                connect_timeout=10, message_queue_size=100,
            ) as ws:  # fmt: skip
                while True:
                    frame = json.loads(await ws.get_message())
                    if frame.get("object") == "event":
                        resource = frame["data"]["object"].get("id") or ""
                        m.stream.append((frame["id"], resource, int(frame["sequence"])))
        except ConnectionClosed as closed:
            reason = f"close {closed.reason.code if closed.reason else '?'}"
        except HandshakeError as refused:
            reason = f"refused {getattr(refused, 'status_code', type(refused).__name__)}"
        except (OSError, trio.BrokenResourceError, trio.TooSlowError) as error:
            reason = type(error).__name__
        m.reconnects[reason] = m.reconnects.get(reason, 0) + 1
        await trio.sleep(1.0)


@dataclass
class Receiver:
    """Every webhook: event ids received (and how many twice), paid sessions announced."""

    port: int = field(default_factory=free_port)
    events: set[str] = field(default_factory=set)
    repeats: int = 0
    paid: set[str] = field(default_factory=set)

    def on_request(self, method: str, target: str, headers: list[tuple[bytes, bytes]],
                   data: bytes, at: float) -> None:  # fmt: skip
        event = json.loads(data)
        if event["id"] in self.events:
            self.repeats += 1
        self.events.add(event["id"])
        if event["type"] == "checkout.session.paid":
            self.paid.add(event["data"]["object"]["id"])


class Postgres:
    """The run's cluster, found from its database (data directory, binaries, owner), so a
    scenario can restart it as an operator would: `pg_ctl restart -m fast`."""

    def __init__(self, url: str) -> None:
        db = Db(url)
        self.data = Path(str(db.value("SHOW data_directory")))
        db.close()
        self.pg_ctl = str(Path(os.readlink(f"/proc/{self.pid()}/exe")).parent / "pg_ctl")
        self.run_as = ["runuser", "-u", "postgres", "--"] if os.geteuid() == 0 else []

    def pid(self) -> int:
        """The postmaster's (another after each restart)."""
        return int((self.data / "postmaster.pid").read_text().split("\n", 1)[0])

    def restart(self) -> None:
        import subprocess

        log_path = self.data.parent / "server.log"  # where bench.core's cluster logs
        subprocess.run([*self.run_as, self.pg_ctl, "-D", str(self.data), "-m", "fast", "-w",
                        "-t", "60", "-l", str(log_path), "restart"],
                       check=True, capture_output=True, timeout=120)  # fmt: skip


@dataclass
class Disruptions:
    restarts: list[tuple[float, float]] = field(default_factory=list)  # s since the load began
    kill: tuple[float, float] | None = None
    marks: list[tuple[float, str]] = field(default_factory=list)
    worker: str = ""  # what became of the killed worker
    replaced: float | None = None  # s until the supervisor had started another


async def disrupt(s: State, server: Server, pg: Postgres, d: Disruptions,
                  at: list[tuple[float, str]]) -> None:  # fmt: skip
    for when, what in at:
        await trio.sleep_until(when)
        began = clock() - s.t0
        if what == "restart":
            log("soak: PostgreSQL restarting (fast)")
            await trio.to_thread.run_sync(pg.restart)
            d.restarts.append((began, clock() - s.t0))
            d.marks.append((began, f"PostgreSQL restarted ({clock() - s.t0 - began:.1f} s)"))
            continue
        workers = server.pids()
        victim = workers[0]
        log(f"soak: SIGKILL to worker {victim} of {workers}")
        os.kill(victim, signal.SIGKILL)
        assert server.proc is not None
        waited = 0.0
        while waited < REPLACE_WAIT:
            await trio.sleep(0.1)
            waited = clock() - s.t0 - began
            if server.proc.poll() is not None:
                break
            now = server.pids()
            if victim not in now and len(now) == len(workers) and now != [server.proc.pid]:
                d.replaced = waited
                break
        if d.replaced is not None:
            d.worker = f"replaced by the supervisor in {d.replaced:.1f} s"
        else:
            code = server.proc.poll()
            d.worker = (f"NOT replaced: the supervisor exited {code} (its other workers stopped)"
                        if code is not None else f"NOT replaced within {REPLACE_WAIT:.0f} s")  # fmt: skip
            if code is None:
                server.stop()
            log(f"soak: the killed worker {d.worker}; `fgcpay serve` launched again")
            server.proc = None
            await trio.to_thread.run_sync(server.start)
            d.worker += f"; `fgcpay serve` launched again, serving {clock() - s.t0 - began:.1f} s after the kill"
        d.kill = (began, clock() - s.t0)
        d.marks.append((began, f"worker SIGKILLed ({d.worker.split(';')[0]})"))
        log(f"soak: worker {d.worker}")


async def sample(s: State, server: Server, pg: Postgres, into: list[tuple[float, dict[int, float]]],
                 ready: list[tuple[float, int]], cpu: list[Cpu], end: float) -> None:  # fmt: skip
    """Each second: every worker's RSS, `GET /readyz` (0: no answer), the CPU used."""
    conn = Connection("127.0.0.1", s.port)
    while trio.current_time() < end:
        into.append((clock() - s.t0, {pid: rss_of(pid) for pid in server.pids()}))
        try:
            db = tree_cpu(pg.pid())
        except (OSError, ValueError):  # restarting
            db = 0.0
        cpu.append((clock() - s.t0, machine_busy(), tree_cpu(server.pid), db, own_cpu()))
        try:
            with trio.fail_after(5):
                status = (await conn.request("GET", "/readyz")).status
        except (OSError, ConnectionError, trio.BrokenResourceError, trio.TooSlowError):
            status, conn = 0, Connection("127.0.0.1", s.port)
        ready.append((clock() - s.t0, status))
        await trio.sleep(1.0)
    await conn.aclose()


async def read_back(s: State, clients: int) -> dict[str, int]:
    """Every id a 201 gave, read with its merchant's key: missing, or not in the state the
    run left it in (paid, approved, active)."""
    todo, wrong = iter(list(s.created.items())), {"missing": 0, "wrong state": 0}
    paths = {"cs_": CREATE_PATH, "re_": "/api/v1/refunds", "sub": "/api/v1/subscriptions",
             "clo": "/api/v1/test_clocks"}  # fmt: skip

    async def reader(_: int) -> None:
        conn = Connection("127.0.0.1", s.port)
        for rid, (key, want) in todo:
            headers = {"Authorization": f"Bearer {key}"}
            r = None
            for _ in range(3):
                r = await s.call(conn, "read back", "GET", f"{paths[rid[:3]]}/{rid}", headers)
                if r is not None and r.status != 503:
                    break
                await trio.sleep(1.0)
            if r is None or r.status != 200:
                wrong["missing"] += 1
            elif want in ("paid", "approved", "active", "ready") and body(r)["status"] != want:
                wrong["wrong state"] += 1
        await conn.aclose()

    async with trio.open_nursery() as nursery:
        for i in range(clients):
            nursery.start_soon(reader, i)
    return wrong


async def settle(s: State, merchants: list[Merchant], receiver: Receiver, b: Backend,
                 seconds: float) -> dict[str, Any]:  # fmt: skip
    """The load over: each clock `ready`, then (within `seconds`) every paid session's
    webhook and every merchant's events on its stream; what was lost, and what was seen."""
    deadline = trio.current_time() + seconds
    conn = Connection("127.0.0.1", s.port)
    for m in merchants:
        while trio.current_time() < deadline:
            r = await s.call(
                conn, "test clock", "GET", f"/api/v1/test_clocks/{m.clock}", api(m.key)
            )
            if r is not None and r.status == 200 and body(r)["status"] == "ready":
                break
            await trio.sleep(0.5)
    await conn.aclose()
    db = Db(b.url)
    expected: dict[str, set[str]] = {}
    while True:
        for m in merchants:
            rows = db.conn.execute("SELECT id FROM events WHERE merchant_id = %s", (m.id,))
            expected[m.id] = {row[0] for row in rows.fetchall()}
        caught_up = all(expected[m.id] <= {e[0] for e in m.stream} for m in merchants)
        if (caught_up and s.paid <= receiver.paid) or trio.current_time() > deadline:
            break
        await trio.sleep(0.5)
    deliveries = dict(
        db.conn.execute("SELECT status, COUNT(*) FROM deliveries GROUP BY status").fetchall()
    )
    db.close()
    lost: dict[str, int] = {"paid without webhook": len(s.paid - receiver.paid)}
    for m in merchants:
        for key, n in stream_problems(m.stream, expected[m.id]).items():
            lost[f"stream {key}"] = lost.get(f"stream {key}", 0) + n
    reconnects: dict[str, int] = {}
    for m in merchants:
        for reason, n in m.reconnects.items():
            reconnects[reason] = reconnects.get(reason, 0) + n
    seen = {
        "events": sum(len(x) for x in expected.values()), "webhooks received": len(receiver.events),
        "webhook repeats": receiver.repeats, "deliveries": deliveries,
        "stream reconnects": reconnects,
    }  # fmt: skip
    return {"lost": lost, "seen": seen}


async def run(ctx: Ctx, b: Backend, p: Any) -> None:
    if b.name != PG:
        log("soak: PostgreSQL only (--pg): on SQLite one worker serves")
        return
    width = window_width(p.minutes, p.window)
    measured = p.minutes * 60
    count = max(1, round(measured / width))
    receiver = Receiver()
    hooks = f"http://127.0.0.1:{receiver.port}/hooks"
    merchants = []
    for n in range(p.merchants):
        merchant, key = b.merchant(n)
        b.command("webhook-endpoint", "create", "--merchant", merchant, "--url", hooks)
        merchants.append(Merchant(merchant, key))
    pg = Postgres(b.url)
    server = b.server()
    rss: list[tuple[float, dict[int, float]]] = []
    ready: list[tuple[float, int]] = []
    cpu: list[Cpu] = []
    d = Disruptions()
    async with trio.open_nursery() as outer:
        await outer.start(serve_ok, receiver.port, receiver.on_request)
        await quiet()  # a test run of someone else's ended, the CPUs idle (not with --quick)
        await trio.to_thread.run_sync(server.start)
        try:
            s = State(server.port, clock())
            setup = Connection("127.0.0.1", server.port)
            for m in merchants:
                frozen = rfc3339(int(time.time()) * 1_000_000)
                made = await setup.request("POST", "/api/v1/test_clocks", api(m.key),
                                           json.dumps({"frozen_time": frozen}).encode())  # fmt: skip
                m.clock = body(made)["id"]
                s.created[m.clock] = (m.key, "ready")
                outer.start_soon(stream, s, m)
            await setup.aclose()
            s.t0, begin = clock(), trio.current_time()
            start, end = begin + p.warmup, begin + p.warmup + measured
            log(f"soak: {p.warmup:.0f} s warm-up, then {count} windows of {width:.0f} s; "
                f"{p.rate:g} operations/s from {p.clients} clients, {p.merchants} merchants")  # fmt: skip
            plan = [(start + measured / 3, "restart"), (start + measured / 2, "kill"),
                    (start + measured * 2 / 3, "restart")]  # fmt: skip
            async with trio.open_nursery() as load:
                load.start_soon(disrupt, s, server, pg, d, plan)
                load.start_soon(sample, s, server, pg, rss, ready, cpu, end)
                for m in merchants:
                    load.start_soon(advancer, s, m, p.advance_every, end)
                for i in range(p.clients):
                    m = merchants[i % len(merchants)]
                    load.start_soon(client, s, m, i, p.clients / p.rate, end)
            log("soak: load over; reading back, waiting for the webhooks and the streams")
            samples = list(s.samples)  # the load's, not the checks'
            offset = start - begin  # the measured part, in s since the load began
            rows = windows(samples, rss, d.marks, offset, width, count, ready, cpu,
                           os.cpu_count() or 1)  # fmt: skip
            OTHERS.extend(r.others for r in rows if not math.isnan(r.others))
            found = await settle(s, merchants, receiver, b, p.drain)  # clocks ready first
            wrong = await read_back(s, p.clients)
            ledger = b.ledger_ok()
        finally:
            await trio.to_thread.run_sync(server.stop)
        outer.cancel_scope.cancel()
    lost = wrong | found["lost"] | {"ledger verify failing": 0 if ledger else 1}
    bad = unexpected(samples, d.restarts, d.kill, p.grace)
    text = table(rows)
    print(f"\n### soak windows ({width:.0f} s each, after {p.warmup:.0f} s of warm-up)\n\n"
          f"{text}\n", flush=True)  # fmt: skip
    ctx.notes["soak"] = {
        "windows": [vars(r) for r in rows], "table": text, "lost": lost, "unexpected": bad,
        "seen": found["seen"], "worker": d.worker, "restarts": d.restarts,
        "created": len(s.created), "paid": len(s.paid), "advances": len(s.advances),
        "p99 by kind": p99_by_kind(samples, offset, width, count),
        "odd": [asdict(x) for x in samples if not x.ok][:300],  # to see when and what
    }  # fmt: skip
    outside = sum(n for k, n in bad.items() if k.startswith("no answer"))
    rss_x, p99_x = ratios(rows)
    first, last = rows[0], rows[-1]
    ctx.add(
        b, "rss", rss_x, f"{max(last.rss, default=0):.1f} vs {max(first.rss, default=0):.1f} MiB"
    )
    requests = sum(r.requests for r in rows)
    ctx.add(b, "p99", p99_x, f"{last.p99:.2f} vs {first.p99:.2f} ms; {requests:,} requests in "
            f"{count} windows of {width:.0f} s, {requests / (width * count):,.0f}/s; "
            f"{len(s.advances)} clock advances, slowest {max(s.advances, default=0):.2f} s")  # fmt: skip
    ctx.add(b, "lost", sum(lost.values()),
            f"{len(s.created):,} created (201) and read back, {len(s.paid):,} paid; "
            f"{said(lost) if any(lost.values()) else 'nothing lost'}; {said(found['seen'])}")  # fmt: skip
    ctx.add(b, "unexpected", sum(bad.values()),
            f"{said(bad) or 'none'}; 503s around the restarts {sum(r.unavailable for r in rows)}, "
            f"no answer around the kill {sum(r.errors for r in rows) - outside}")  # fmt: skip
    ctx.add(b, "worker", d.replaced if d.replaced is not None else REPLACE_WAIT, d.worker)
