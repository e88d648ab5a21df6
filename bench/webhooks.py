#!/usr/bin/env python3
"""fgcpay webhook benchmark: how soon a payment's webhook reaches the merchant, and how
fast a backlog of queued deliveries drains.

    .venv/bin/python bench/webhooks.py               # SQLite, 1 worker (about 2 minutes)
    .venv/bin/python bench/webhooks.py --pg          # then PostgreSQL, 2 workers, too
    .venv/bin/python bench/webhooks.py --profile always --json /tmp/webhooks.json

The service is started as an operator starts it (`fgcpay serve --port P --workers N`, a
temporary working directory, 127.0.0.1, FGCPAY_WEBHOOK_ALLOW_PRIVATE=1 so a loopback
receiver is allowed); the merchant comes from `fgcpay merchant create` and the receiver
is registered with `fgcpay webhook-endpoint create --merchant <id> --url
http://127.0.0.1:<port>/hooks` (all event types).

The receiver runs inside this driver process (`bench/minihttp.py`: trio, a hand-written
HTTP/1.1 parser, keep-alive): it answers 200 at once and records, per request, the
moment its headers were complete, its `Service-Event-Id` and the checkout session id in
the body. The driver's clock and the receiver's are the same monotonic clock.

1. Payment -> webhook (one payment at a time, `--payments` after `--warmup`): create a
   session (API), GET its page, POST the confirm form (303), then wait for the event of
   that session at the receiver. Latency = receipt at the receiver - the moment the 303's
   headers were read by the customer (the payment had committed before the 303 was
   sent); also reported from the moment the confirm POST was sent. Target p99 < 50 ms.
2. Draining a backlog: the service is stopped; `--backlog` (10,000) paid events and one
   pending delivery each (due now, no lease) are inserted straight into the database
   (SQLite: one transaction with sqlite3; PostgreSQL: COPY), with the exact body of a
   real `checkout.session.paid` event from part 1 (fresh event and session ids). The
   service is started again and the clock runs from the launch of `fgcpay serve` until
   the receiver has seen every queued event id. Reports deliveries/s from launch, from
   the first receipt, and over the middle 80 % of receipts. Target >= 1,000/s.
"""

from __future__ import annotations

import argparse
import json
import os
import re
import secrets
import shutil
import sqlite3
import sys
import tempfile
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import trio

sys.path.insert(0, str(Path(__file__).resolve().parent))

from common import (  # noqa: E402
    QUIET,
    CpuWindow,
    Server,
    create_merchant,
    fgcpay_env,
    fgcpay_server,
    fmt_summary,
    free_port,
    loadavg,
    log,
    sh_json,
    summary_ms,
    tool,
    wait_for_quiet,
)
from flows import confirm, create_session, open_page  # noqa: E402
from hosted import pyspy_finish, pyspy_start  # noqa: E402
from minihttp import Connection, clock, serve_ok  # noqa: E402

TARGET_LATENCY_P99_MS = 50.0
TARGET_DRAIN_PER_S = 1000.0
BASE62 = "0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz"
_SESSION = re.compile(rb"cs_test_[0-9A-Za-z]{24}")


def rid(prefix: str, n: int = 24) -> str:
    return prefix + "".join(secrets.choice(BASE62) for _ in range(n))


# -- the receiver ----------------------------------------------------------------------------


@dataclass
class Receiver:
    port: int
    first_seen: dict[str, float] = field(default_factory=dict)  # event id -> first receipt
    by_session: dict[str, float] = field(default_factory=dict)  # session id -> first receipt
    hits: int = 0
    not_hooks: int = 0
    waiting: dict[str, trio.Event] = field(default_factory=dict)
    watch: set[str] | None = None  # event ids being counted for a drain
    watched_seen: int = 0
    arrivals: list[float] = field(default_factory=list)  # receipts of watched ids, in order
    all_watched: trio.Event = field(default_factory=trio.Event)

    def reset(self, watch: set[str] | None = None) -> None:
        self.first_seen.clear()
        self.by_session.clear()
        self.hits = self.not_hooks = self.watched_seen = 0
        self.arrivals = []
        self.watch = watch
        self.all_watched = trio.Event()

    def on_request(
        self, method: str, target: str, headers: list[tuple[bytes, bytes]], body: bytes, at: float
    ) -> None:
        if method != "POST" or not target.startswith("/hooks"):
            self.not_hooks += 1
            return
        self.hits += 1
        event_id = next((v.decode() for k, v in headers if k == b"service-event-id"), "")
        if event_id in self.first_seen:
            return  # a duplicate delivery: counted in hits only
        self.first_seen[event_id] = at
        match = _SESSION.search(body)
        if match:
            session = match.group(0).decode()
            self.by_session.setdefault(session, at)
            waiter = self.waiting.pop(session, None)
            if waiter is not None:
                waiter.set()
        if self.watch is not None and event_id in self.watch:
            self.watched_seen += 1
            self.arrivals.append(at)
            if self.watched_seen == len(self.watch):
                self.all_watched.set()


# -- backlog insertion -----------------------------------------------------------------------


def backlog_rows(
    template: dict[str, str], merchant_id: str, endpoint_id: str, count: int, now_us: int
) -> tuple[list[tuple[Any, ...]], list[tuple[Any, ...]], set[str]]:
    """Events copied from a real one (fresh event and session ids) and a pending delivery
    each, due now."""
    events, deliveries, ids = [], [], set()
    for i in range(count):
        event_id, session_id = rid("evt_"), rid("cs_test_")
        body = (
            template["body"]
            .replace(template["id"], event_id)
            .replace(template["resource_id"], session_id)
        )
        created = now_us - (count - i)  # distinct, oldest first, all in the past
        events.append(
            (event_id, merchant_id, "checkout.session.paid", session_id, 2, body, created)
        )
        deliveries.append((rid("whd_"), event_id, endpoint_id, merchant_id, "pending", 0, created,
                           None, None, created, created))  # fmt: skip
        ids.add(event_id)
    return events, deliveries, ids


EVENT_COLUMNS = ("id", "merchant_id", "type", "resource_id", "sequence", "body", "created_at")
DELIVERY_COLUMNS = (
    "id", "event_id", "endpoint_id", "merchant_id", "status", "attempts", "next_attempt_at",
    "lease_owner", "lease_expires_at", "created_at", "updated_at",
)  # fmt: skip


class SqliteStore:
    def __init__(self, path: Path) -> None:
        self.path = path

    def _conn(self) -> sqlite3.Connection:
        conn = sqlite3.connect(self.path, isolation_level=None)
        conn.execute("PRAGMA busy_timeout=30000")
        return conn

    def template(self) -> dict[str, str]:
        conn = self._conn()
        try:
            row = conn.execute(
                "SELECT id, resource_id, body FROM events WHERE type = 'checkout.session.paid'"
                " ORDER BY created_at DESC LIMIT 1"
            ).fetchone()
        finally:
            conn.close()
        return {"id": row[0], "resource_id": row[1], "body": row[2]}

    def insert(self, events: list[tuple[Any, ...]], deliveries: list[tuple[Any, ...]]) -> None:
        conn = self._conn()
        try:
            conn.execute("BEGIN IMMEDIATE")
            conn.executemany(
                f"INSERT INTO events ({', '.join(EVENT_COLUMNS)}) VALUES ({', '.join('?' * 7)})",
                events,
            )
            conn.executemany(
                f"INSERT INTO deliveries ({', '.join(DELIVERY_COLUMNS)}) VALUES ({', '.join('?' * 11)})",
                deliveries,
            )
            conn.execute("COMMIT")
            conn.execute("PRAGMA wal_checkpoint(TRUNCATE)")
        finally:
            conn.close()

    def outcome(self, lo_us: int, hi_us: int) -> dict[str, int]:
        """The backlog's deliveries (created in [lo_us, hi_us]) by status and attempts."""
        conn = self._conn()
        try:
            rows = conn.execute(
                "SELECT status, attempts, COUNT(*) FROM deliveries WHERE created_at BETWEEN ? AND ?"
                " GROUP BY status, attempts",
                (lo_us, hi_us),
            ).fetchall()
            attempts = conn.execute(
                "SELECT COUNT(*) FROM delivery_attempts a JOIN deliveries d ON d.id = a.delivery_id"
                " WHERE d.created_at BETWEEN ? AND ?",
                (lo_us, hi_us),
            ).fetchone()[0]
        finally:
            conn.close()
        out = {f"{status} after {n} attempt(s)": c for status, n, c in rows}
        out["attempt rows"] = attempts
        return out


class PgStore:
    def __init__(self, url: str) -> None:
        self.url = url

    def _connect(self) -> Any:
        import psycopg
        from psycopg.rows import dict_row

        return psycopg.connect(self.url, autocommit=True, row_factory=dict_row)

    def template(self) -> dict[str, str]:
        with self._connect() as conn:
            row = conn.execute(
                "SELECT id, resource_id, body FROM events WHERE type = 'checkout.session.paid'"
                " ORDER BY created_at DESC LIMIT 1"
            ).fetchone()
        return {"id": row["id"], "resource_id": row["resource_id"], "body": row["body"]}

    def insert(self, events: list[tuple[Any, ...]], deliveries: list[tuple[Any, ...]]) -> None:
        with self._connect() as conn:
            with conn.cursor() as cur, conn.transaction():
                for table, columns, rows in (
                    ("events", EVENT_COLUMNS, events),
                    ("deliveries", DELIVERY_COLUMNS, deliveries),
                ):
                    with cur.copy(f"COPY {table} ({', '.join(columns)}) FROM STDIN") as copy:
                        for row in rows:
                            copy.write_row(row)
            conn.execute("VACUUM (ANALYZE) deliveries")
            conn.execute("VACUUM (ANALYZE) events")
            conn.execute("CHECKPOINT")

    def outcome(self, lo_us: int, hi_us: int) -> dict[str, int]:
        with self._connect() as conn:
            rows = conn.execute(
                "SELECT status, attempts, COUNT(*) AS c FROM deliveries WHERE created_at BETWEEN %s AND %s"
                " GROUP BY status, attempts",
                (lo_us, hi_us),
            ).fetchall()
            out = {f"{r['status']} after {r['attempts']} attempt(s)": r["c"] for r in rows}
            counted = conn.execute(
                "SELECT COUNT(*) AS c FROM delivery_attempts a JOIN deliveries d ON d.id = a.delivery_id"
                " WHERE d.created_at BETWEEN %s AND %s",
                (lo_us, hi_us),
            ).fetchone()
        out["attempt rows"] = counted["c"] if counted else 0
        return out


# -- the scenario ------------------------------------------------------------------------------


@dataclass
class Setup:
    backend: str
    env: dict[str, str]
    cwd: Path
    workers: int
    store: SqliteStore | PgStore
    db_pid: int | None = None


class Bench:
    def __init__(self, args: argparse.Namespace, work: Path) -> None:
        self.args = args
        self.work = work
        self.results: dict[str, Any] = {}
        self.verdicts: list[str] = []
        self.profiles: list[str] = []

    def want_profile(self, missed: bool) -> bool:
        return self.args.profile == "always" or (self.args.profile == "auto" and missed)

    async def run(self, setup: Setup) -> None:
        args = self.args
        receiver = Receiver(free_port())
        result: dict[str, Any] = {"workers": setup.workers}
        self.results[setup.backend] = result
        merchant_id, api_key = await trio.to_thread.run_sync(create_merchant, setup.env, setup.cwd)
        endpoint = await trio.to_thread.run_sync(
            sh_json,
            [tool("fgcpay"), "webhook-endpoint", "create", "--merchant", merchant_id,
             "--url", f"http://127.0.0.1:{receiver.port}/hooks"],
            setup.env, setup.cwd,
        )  # fmt: skip
        log(f"{setup.backend}: receiver on 127.0.0.1:{receiver.port}, endpoint {endpoint['id']}")
        async with trio.open_nursery() as nursery:
            await nursery.start(serve_ok, receiver.port, receiver.on_request)
            server = fgcpay_server(
                f"fgcpay-{setup.backend}",
                setup.env,
                setup.cwd,
                setup.workers,
                self.work,
                args.patch,
            )
            await trio.to_thread.run_sync(server.start)
            try:
                await self.latency(setup, server, api_key, receiver, result)
            finally:
                await trio.to_thread.run_sync(server.stop)
            await self.drain(setup, merchant_id, endpoint["id"], receiver, result, "drain")
            if self.want_profile(result["drain"]["from_launch_per_s"] < TARGET_DRAIN_PER_S):
                await self.drain(setup, merchant_id, endpoint["id"], receiver, result, "profile")
            nursery.cancel_scope.cancel()

    async def latency(
        self, setup: Setup, server: Server, api_key: str, receiver: Receiver, result: dict[str, Any]
    ) -> None:
        args = self.args
        await trio.to_thread.run_sync(wait_for_quiet)
        log(
            f"{setup.backend}: payment -> webhook, {args.payments} payments one at a time (+{args.warmup} warm-up)"
        )
        receiver.reset()
        api = Connection("127.0.0.1", server.port)
        browser = Connection("127.0.0.1", server.port)
        from_303: list[float] = []
        from_sent: list[float] = []
        cpu = CpuWindow(
            server_pids=[server.proc.pid if server.proc else None], db_pid=setup.db_pid
        ).start()
        for i in range(args.warmup + args.payments):
            with trio.fail_after(30):
                page = await create_session(api, api_key)
                await open_page(browser, page)
                arrived = trio.Event()
                receiver.waiting[page.session_id] = arrived
                response = await confirm(browser, page)
                await arrived.wait()
            at = receiver.by_session[page.session_id]
            if i >= args.warmup:
                from_303.append(at - response.headers_at)
                from_sent.append(at - response.sent_at)
        cpu.stop()
        await api.aclose()
        await browser.aclose()
        summary = {
            "from_303": summary_ms(from_303),
            "from_sent": summary_ms(from_sent),
            "receipt_before_303": sum(1 for v in from_303 if v < 0),
            "duplicates": receiver.hits - len(receiver.first_seen),
            "cpu": cpu.as_dict(),
        }
        result["latency"] = summary
        log(f"  303 -> receipt       {fmt_summary(summary['from_303'])}")
        log(f"  POST sent -> receipt {fmt_summary(summary['from_sent'])}")
        log(f"  {cpu.describe()}")
        p99 = summary["from_303"]["p99"]
        met = p99 < TARGET_LATENCY_P99_MS
        self.verdicts.append(
            f"{setup.backend} {setup.workers}w payment (303) -> webhook receipt p99 = {p99:.2f} ms, p50 "
            f"{summary['from_303']['p50']:.2f} ms (target < {TARGET_LATENCY_P99_MS:.0f} ms: "
            + ("MET" if met else f"MISSED by {p99 - TARGET_LATENCY_P99_MS:.1f} ms")
            + ")"
        )
        log(self.verdicts[-1])

    async def drain(
        self,
        setup: Setup,
        merchant_id: str,
        endpoint_id: str,
        receiver: Receiver,
        result: dict[str, Any],
        kind: str,
    ) -> None:
        args = self.args
        store = setup.store
        template = await trio.to_thread.run_sync(store.template)
        now_us = int(time.time() * 1_000_000)
        events, deliveries, ids = backlog_rows(
            template, merchant_id, endpoint_id, args.backlog, now_us
        )
        log(f"{setup.backend}: service stopped; inserting {len(ids):,} events + pending deliveries")
        took = time.monotonic()
        await trio.to_thread.run_sync(store.insert, events, deliveries)
        log(f"  inserted in {time.monotonic() - took:.1f} s")
        await trio.to_thread.run_sync(wait_for_quiet)
        receiver.reset(ids)
        server = fgcpay_server(
            f"fgcpay-{setup.backend}-{kind}",
            setup.env,
            setup.cwd,
            setup.workers,
            self.work,
            args.patch,
        )
        label = f"{setup.backend}-{kind}"
        log(
            f"{setup.backend}: starting the service to drain {len(ids):,} deliveries (loadavg {loadavg()})"
        )
        cpu = CpuWindow(db_pid=setup.db_pid).start()
        launched = clock()
        spies = None
        try:
            # The Server polls /readyz in a thread while this process keeps receiving.
            async with trio.open_nursery() as nursery:
                ready_at: list[float] = []
                ready = trio.Event()

                async def start() -> None:
                    await trio.to_thread.run_sync(server.start)
                    ready_at.append(server.ready_at or clock())  # the first /readyz 200
                    ready.set()

                nursery.start_soon(start)
                with trio.fail_after(args.drain_timeout):
                    # server.proc is set by server.start in a worker thread, which has no
                    # trio token to set an Event with: polled, under the deadline above.
                    while server.proc is None:  # noqa: ASYNC110
                        await trio.sleep(0.001)
                    cpu.server_pids = [server.proc.pid]
                    cpu.server0 = 0.0  # a fresh process tree: all of its CPU counts
                    if kind == "profile":
                        await ready.wait()
                        spies = pyspy_start(
                            server.worker_pids(), args.profile_seconds, self.work, label
                        )
                    await receiver.all_watched.wait()
            cpu.stop()
            if spies is not None:
                text = pyspy_finish(spies, self.work, label, None, args.profile_seconds)
                self.profiles.append(
                    f"### {label} ({setup.workers} worker(s), py-spy from readiness for "
                    f"{args.profile_seconds}s while draining)\n{text}"
                )
                return
            await trio.sleep(1.0)  # any late duplicates
        finally:
            await trio.to_thread.run_sync(server.stop)
        arrivals = receiver.arrivals
        n = len(arrivals)
        lo, hi = int(n * 0.1), int(n * 0.9)
        drain = {
            "backlog": len(ids),
            "launch_to_ready_s": ready_at[0] - launched if ready_at else None,
            "launch_to_first_s": arrivals[0] - launched,
            "launch_to_last_s": arrivals[-1] - launched,
            "first_to_last_s": arrivals[-1] - arrivals[0],
            "from_launch_per_s": n / (arrivals[-1] - launched),
            "from_first_per_s": (n - 1) / (arrivals[-1] - arrivals[0]),
            "middle_80_per_s": (hi - lo) / (arrivals[hi] - arrivals[lo]),
            "receiver_hits": receiver.hits,
            "duplicates": receiver.hits - len(receiver.first_seen),
            "cpu": cpu.as_dict(),
            "server_cpu_ms_per_delivery": cpu.server_cpu * 1000 / n,
            "db_cpu_ms_per_delivery": cpu.db_cpu * 1000 / n,
            "driver_cpu_ms_per_delivery": cpu.driver_cpu * 1000 / n,
        }
        drain["database"] = await trio.to_thread.run_sync(store.outcome, now_us - len(ids), now_us)
        result["drain"] = drain
        log(
            f"  {n:,} deliveries: launch -> ready {drain['launch_to_ready_s']:.2f} s, -> first receipt "
            f"{drain['launch_to_first_s']:.2f} s, -> last {drain['launch_to_last_s']:.2f} s"
        )
        log(
            f"  {drain['from_launch_per_s']:.0f}/s from launch, {drain['from_first_per_s']:.0f}/s from the "
            f"first receipt, {drain['middle_80_per_s']:.0f}/s over the middle 80%; duplicates "
            f"{drain['duplicates']}"
        )
        log(f"  {cpu.describe(n, 'delivery')}")
        log(f"  database afterwards: {drain['database']}")
        rate = drain["from_launch_per_s"]
        met = rate >= TARGET_DRAIN_PER_S
        self.verdicts.append(
            f"{setup.backend} {setup.workers}w drain of {n:,} queued deliveries: {rate:.0f}/s from launch "
            f"({drain['middle_80_per_s']:.0f}/s steady) (target >= {TARGET_DRAIN_PER_S:.0f}/s: "
            + ("MET" if met else f"MISSED, {TARGET_DRAIN_PER_S / rate:.1f}x short")
            + ")"
        )
        log(self.verdicts[-1])

    # -- backends ------------------------------------------------------------------------------

    def sqlite(self) -> None:
        cwd = self.work / "sqlite"
        cwd.mkdir()
        db = cwd / "bench.sqlite3"
        env = fgcpay_env(f"sqlite:///{db}", FGCPAY_WEBHOOK_ALLOW_PRIVATE="1")
        trio.run(self.run, Setup("sqlite", env, cwd, 1, SqliteStore(db)))

    def postgres(self) -> None:
        from pg_durable import DURABLE_OPTIONS, find_pg_bin, start_durable_cluster

        if find_pg_bin() is None:
            self.verdicts.append(
                "PostgreSQL skipped: no server binaries (apt-get install -y postgresql)"
            )
            log(self.verdicts[-1])
            return
        cluster = start_durable_cluster()
        try:
            cluster.psql("CREATE DATABASE bench")
            cwd = self.work / "postgres"
            cwd.mkdir()
            url = cluster.url("bench")
            env = fgcpay_env(url, FGCPAY_WEBHOOK_ALLOW_PRIVATE="1")
            log(
                f"PostgreSQL: 127.0.0.1:{cluster.port} ({DURABLE_OPTIONS}), {self.args.pg_workers} workers"
            )
            setup = Setup(
                "postgres", env, cwd, self.args.pg_workers, PgStore(url), cluster.postmaster_pid()
            )
            trio.run(self.run, setup)
        finally:
            cluster.stop()

    def report(self, started: float) -> None:
        a = self.args
        print()
        print("=" * 100)
        print(
            f"fgcpay webhook benchmark, {os.cpu_count()} CPUs, Python {sys.version.split()[0]}, "
            f"{time.strftime('%Y-%m-%d %H:%M:%S')}, {time.monotonic() - started:.0f} s total"
        )
        if a.patch:
            print(
                f"PATCHED service (bench/patched_serve.py --patch {a.patch}): not the application as it is"
            )
        print(
            f"latency: {a.payments} payments one at a time after {a.warmup} warm-up; drain: {a.backlog:,} "
            "queued deliveries"
        )
        print()
        for backend, r in self.results.items():
            lat = r.get("latency")
            if lat:
                print(f"{backend} ({r['workers']} worker(s)), payment -> webhook receipt, ms:")
                print(f"  303 received -> receipt     {fmt_summary(lat['from_303'])}")
                print(f"  confirm sent -> receipt     {fmt_summary(lat['from_sent'])}")
                print(
                    f"  other CPU {lat['cpu']['other_cpu_pct']:.0f}%; duplicates {lat['duplicates']}"
                )
            d = r.get("drain")
            if d:
                print(
                    f"{backend} ({r['workers']} worker(s)), draining {d['backlog']:,} queued deliveries:"
                )
                print(
                    f"  launch -> ready {d['launch_to_ready_s']:.2f} s, -> first receipt {d['launch_to_first_s']:.2f} s,"
                    f" -> last receipt {d['launch_to_last_s']:.2f} s"
                )
                print(
                    f"  {d['from_launch_per_s']:.0f} deliveries/s from launch, {d['from_first_per_s']:.0f}/s from"
                    f" the first receipt, {d['middle_80_per_s']:.0f}/s over the middle 80%"
                )
                cpu = d["cpu"]
                print(
                    f"  server CPU {d['server_cpu_ms_per_delivery']:.2f} ms/delivery"
                    + (f" (+pg {d['db_cpu_ms_per_delivery']:.2f})" if cpu["db_cpu_s"] else "")
                    + f" ({cpu['server_cpu_s'] / cpu['seconds'] * 100:.0f}% of one core); receiver+driver"
                    f" {d['driver_cpu_ms_per_delivery']:.2f} ms/delivery; other {cpu['other_cpu_pct']:.0f}%"
                )
                print(
                    f"  receiver hits {d['receiver_hits']:,}, duplicates {d['duplicates']}; database: {d['database']}"
                )
            print()
        for verdict in self.verdicts:
            print("* " + verdict)
        for text in self.profiles:
            print()
            print(text)
        print("=" * 100)


def main() -> int:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--payments", type=int, default=300, help="payments timed one at a time")
    parser.add_argument("--warmup", type=int, default=20)
    parser.add_argument("--backlog", type=int, default=10_000, help="queued deliveries to drain")
    parser.add_argument("--drain-timeout", type=float, default=300.0)
    parser.add_argument("--pg", action="store_true", help="also PostgreSQL (durable cluster)")
    parser.add_argument("--pg-only", action="store_true")
    parser.add_argument("--pg-workers", type=int, default=2)
    parser.add_argument(
        "--profile",
        choices=("auto", "always", "never"),
        default="auto",
        help="py-spy a second drain when the drain target is missed (auto), always, or never",
    )
    parser.add_argument("--profile-seconds", type=int, default=10)
    parser.add_argument("--quiet-wait", type=float, default=30.0)
    parser.add_argument("--tests-wait", type=float, default=600.0)
    parser.add_argument(
        "--patch",
        help="start the service through bench/patched_serve.py with these "
        "patches (comma-separated; A/B of suggested app changes, 1 worker)",
    )
    parser.add_argument("--json", type=Path)
    parser.add_argument("--keep", action="store_true")
    args = parser.parse_args()
    QUIET["wait"], QUIET["tests_wait"] = args.quiet_wait, args.tests_wait

    started = time.monotonic()
    work = Path(tempfile.mkdtemp(prefix="fgcpay-webhooks-"))
    bench = Bench(args, work)
    log(f"working directory {work}; {os.cpu_count()} CPUs; loadavg {loadavg()}")
    try:
        if not args.pg_only:
            bench.sqlite()
        if args.pg or args.pg_only:
            bench.postgres()
    except KeyboardInterrupt:
        log("interrupted")
    finally:
        bench.report(started)
        if args.json:
            args.json.write_text(json.dumps(
                {"results": bench.results, "verdicts": bench.verdicts, "profiles": bench.profiles}, indent=2
            ))  # fmt: skip
        if args.keep:
            log(f"kept {work}")
        else:
            shutil.rmtree(work, ignore_errors=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
