#!/usr/bin/env python3
"""fgcpay hosted checkout page benchmark: how fast a payment reaches the page's websocket,
and how many customers per second can pay.

    .venv/bin/python bench/hosted.py                 # SQLite, 1 worker (about 2 minutes)
    .venv/bin/python bench/hosted.py --pg            # then PostgreSQL, 2 workers, too
    .venv/bin/python bench/hosted.py --profile always --json /tmp/hosted.json

The service is started as an operator starts it (`fgcpay serve --port P --workers N`) in
a temporary working directory, bound to 127.0.0.1, and a merchant is made with
`fgcpay merchant create`. The customers are simulated by one trio process using
`bench/minihttp.py` (a minimal keep-alive HTTP/1.1 client that timestamps at the socket)
and trio-websocket.

1. Push latency (one customer at a time, `--sessions` of them after `--warmup`): create a
   session (API), GET its page (CSRF cookie + token), open `/checkout/<id>/ws` and read
   the initial "created" message, then POST the confirm form. Three intervals per
   payment, all on this process's monotonic clock:
     sent->ws   from just before the POST's bytes are written to the moment the "paid"
                websocket message has been read from the socket;
     303->ws    from the moment the 303's status line and headers have been read to the
                "paid" message (negative when the push arrived before the 303);
     sent->303  the confirm POST as the customer sees it.
   Target: sent->ws p99 < 10 ms. With several workers (PostgreSQL), even payments are
   confirmed on the worker that holds the websocket and odd ones on another worker, so
   the push crosses processes via LISTEN/NOTIFY; both halves are reported.
2. Confirms/s: `--clients` customers at once (64), each paying its own pre-created
   sessions one after another (GET page, POST confirm; keep-alive connection per
   customer) for at most `--duration` s. Reports confirms/s, p50/p99 of the confirm POST
   and of the page GET, and the server's CPU per confirm (page + confirm).

This is a measurement, not a test: it never fails on a missed target, it reports it (and,
with --profile auto, profiles the service with py-spy). See docs/performance.md.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import subprocess
import sys
import tempfile
import time
from collections import Counter
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

import trio

sys.path.insert(0, str(Path(__file__).resolve().parent))

import profile_summary  # noqa: E402
from common import (  # noqa: E402
    QUIET,
    CpuWindow,
    Server,
    create_merchant,
    fgcpay_env,
    fgcpay_server,
    fmt_summary,
    loadavg,
    log,
    summary_ms,
    tool,
    wait_for_quiet,
)
from flows import Page, confirm, create_session, open_page, owner_of  # noqa: E402
from minihttp import Connection, clock  # noqa: E402
from trio_websocket import open_websocket_url  # noqa: E402

TARGET_PUSH_P99_MS = 10.0


# -- 1. push latency ------------------------------------------------------------------------


@dataclass
class Push:
    sent_to_ws: float
    headers_to_ws: float
    sent_to_303: float
    ws_pid: int | None = None
    post_pid: int | None = None


class WorkerConnections:
    """With several workers: one keep-alive connection held by each worker process, so a
    confirm can be sent on purpose to the worker that holds the websocket or to another.
    (The kernel hands a new connection to whichever worker accepts first, which is
    mostly the same one when the load is one request at a time.)"""

    def __init__(self, port: int, pids: list[int]) -> None:
        self.port, self.pids = port, pids
        self.by_pid: dict[int, Connection] = {}

    async def get(self, pid: int) -> Connection:
        conn = self.by_pid.get(pid)
        if conn is not None and conn.stream is not None:
            if owner_of(self.port, conn.stream.socket.getsockname()[1], self.pids) == pid:
                return conn
        spare: list[Connection] = []
        try:
            for _ in range(200):
                conn = Connection("127.0.0.1", self.port)
                await conn.request("GET", "/readyz")
                assert conn.stream is not None
                owner = owner_of(self.port, conn.stream.socket.getsockname()[1], self.pids)
                if owner == pid:
                    self.by_pid[pid] = conn
                    return conn
                spare.append(conn)  # kept open meanwhile, so the next one may land elsewhere
            raise RuntimeError(f"no connection landed on worker {pid}")
        finally:
            for other in spare:
                await other.aclose()

    async def aclose(self) -> None:
        for conn in self.by_pid.values():
            await conn.aclose()


async def push_latency(
    port: int, api_key: str, count: int, warmup: int, pids: list[int]
) -> list[Push]:
    """With several workers, even payments confirm on the worker holding the websocket
    and odd ones on another worker (status crosses via PostgreSQL LISTEN/NOTIFY)."""
    api = Connection("127.0.0.1", port)
    browser = Connection("127.0.0.1", port)
    workers = WorkerConnections(port, pids) if len(pids) > 1 else None
    out: list[Push] = []
    for i in range(warmup + count):
        with trio.fail_after(30):
            page = await create_session(api, api_key)
            await open_page(browser, page)
            async with open_websocket_url(f"ws://127.0.0.1:{port}{page.path}/ws") as ws:
                first = json.loads(await ws.get_message())
                if first.get("status") != "created":
                    raise RuntimeError(f"first websocket message {first}")
                ws_pid = post_pid = None
                poster = browser
                if workers is not None:  # which worker holds each connection (outside the timing)
                    ws_pid = owner_of(port, ws.local.port, pids)  # type: ignore[union-attr]
                    if ws_pid is None:
                        raise RuntimeError("cannot tell which worker holds the websocket")
                    post_pid = ws_pid if i % 2 == 0 else next(p for p in pids if p != ws_pid)
                    poster = await workers.get(post_pid)
                got: dict[str, Any] = {}

                async def read_push(got: dict[str, Any] = got) -> None:
                    message = await ws.get_message()
                    got["at"] = clock()
                    got["message"] = json.loads(message)

                async with trio.open_nursery() as nursery:
                    nursery.start_soon(read_push)
                    response = await confirm(poster, page)
                if got["message"].get("status") != "paid":
                    raise RuntimeError(f"push was {got['message']}")
        if i >= warmup:
            out.append(
                Push(
                    sent_to_ws=got["at"] - response.sent_at,
                    headers_to_ws=got["at"] - response.headers_at,
                    sent_to_303=response.headers_at - response.sent_at,
                    ws_pid=ws_pid,
                    post_pid=post_pid,
                )
            )
    await api.aclose()
    await browser.aclose()
    if workers is not None:
        await workers.aclose()
    return out


def push_summary(pushes: list[Push]) -> dict[str, Any]:
    result: dict[str, Any] = {
        "sent_to_ws": summary_ms([p.sent_to_ws for p in pushes]),
        "headers_to_ws": summary_ms([p.headers_to_ws for p in pushes]),
        "sent_to_303": summary_ms([p.sent_to_303 for p in pushes]),
        "push_before_303": sum(1 for p in pushes if p.headers_to_ws < 0),
        "n": len(pushes),
    }
    if any(p.ws_pid for p in pushes):
        same = [p for p in pushes if p.ws_pid and p.ws_pid == p.post_pid]
        cross = [p for p in pushes if p.ws_pid and p.post_pid and p.ws_pid != p.post_pid]
        result["same_worker"] = summary_ms([p.sent_to_ws for p in same])
        result["cross_worker"] = summary_ms([p.sent_to_ws for p in cross])
        result["cross_worker_headers_to_ws"] = summary_ms([p.headers_to_ws for p in cross])
        result["same_worker_sent_to_303"] = summary_ms([p.sent_to_303 for p in same])
        result["cross_worker_sent_to_303"] = summary_ms([p.sent_to_303 for p in cross])
    return result


# -- 2. confirms per second -----------------------------------------------------------------


async def precreate(port: int, api_key: str, count: int, parallel: int = 8) -> list[Page]:
    pages: list[Page] = []

    async def worker(n: int) -> None:
        conn = Connection("127.0.0.1", port)
        for _ in range(n):
            pages.append(await create_session(conn, api_key))
        await conn.aclose()

    async with trio.open_nursery() as nursery:
        for i in range(parallel):
            nursery.start_soon(worker, count // parallel + (1 if i < count % parallel else 0))
    return pages


@dataclass
class LoadOutcome:
    clients: int
    confirms: int
    seconds: float
    confirms_per_s: float
    mid_confirms_per_s: float
    confirm_ms: dict[str, float]
    page_ms: dict[str, float]
    errors: dict[str, int] = field(default_factory=dict)
    cpu: dict[str, float] = field(default_factory=dict)
    server_cpu_ms_per_confirm: float = 0.0
    db_cpu_ms_per_confirm: float = 0.0


async def confirm_load(
    port: int, pages: list[Page], clients: int, duration: float
) -> tuple[int, float, list[float], list[float], list[float], Counter[str]]:
    """`clients` customers at once, each paying its share of `pages` one after another."""
    confirm_s: list[float] = []
    page_s: list[float] = []
    finished_at: list[float] = []
    errors: Counter[str] = Counter()
    shares = [pages[i::clients] for i in range(clients)]
    deadline = clock() + duration

    async def customer(mine: list[Page]) -> None:
        conn = Connection("127.0.0.1", port)
        for page in mine:
            if clock() > deadline:
                break
            try:
                with trio.fail_after(30):
                    r = await open_page(conn, page)
                    page_s.append(r.done_at - r.sent_at)
                    r = await confirm(conn, page)
                    confirm_s.append(r.done_at - r.sent_at)
                    finished_at.append(r.done_at)
            except Exception as error:  # counted, and the customer goes on
                errors[type(error).__name__ + ": " + str(error)[:80]] += 1
                await conn.aclose()
        await conn.aclose()

    started = clock()
    async with trio.open_nursery() as nursery:
        for mine in shares:
            nursery.start_soon(customer, mine)
    return len(confirm_s), clock() - started, confirm_s, page_s, sorted(finished_at), errors


def run_confirm_load(
    server: Server, port: int, pages: list[Page], clients: int, duration: float, db_pid: int | None
) -> LoadOutcome:
    wait_for_quiet()
    log(
        f"confirm load: {clients} customers, {len(pages)} sessions, at most {duration:.0f} s (loadavg {loadavg()})"
    )
    cpu = CpuWindow(server_pids=[server.proc.pid if server.proc else None], db_pid=db_pid).start()
    n, seconds, confirm_s, page_s, done, errors = trio.run(
        confirm_load, port, pages, clients, duration
    )
    cpu.stop()
    lo, hi = int(len(done) * 0.1), int(len(done) * 0.9)
    mid = (hi - lo) / (done[hi] - done[lo]) if hi > lo and done[hi] > done[lo] else 0.0
    outcome = LoadOutcome(
        clients=clients,
        confirms=n,
        seconds=seconds,
        confirms_per_s=n / seconds if seconds else 0.0,
        mid_confirms_per_s=mid,
        confirm_ms=summary_ms(confirm_s),
        page_ms=summary_ms(page_s),
        errors=dict(errors),
        cpu=cpu.as_dict(),
        server_cpu_ms_per_confirm=cpu.server_cpu * 1000 / n if n else 0.0,
        db_cpu_ms_per_confirm=cpu.db_cpu * 1000 / n if n else 0.0,
    )
    log(
        f"  {n} confirms in {seconds:.1f} s = {outcome.confirms_per_s:.1f}/s (middle 80%: {mid:.1f}/s); "
        f"errors {sum(errors.values())}"
    )
    log(f"  confirm POST {fmt_summary(outcome.confirm_ms)}")
    log(f"  page GET     {fmt_summary(outcome.page_ms)}")
    log(f"  {cpu.describe(n, 'confirm (page + confirm)')}")
    return outcome


# -- profiling --------------------------------------------------------------------------------


def pyspy_start(
    pids: list[int], seconds: float, out_dir: Path, label: str, idle: bool = False
) -> list[tuple[subprocess.Popen[bytes], Path]]:
    """py-spy record (100 Hz, per thread, raw) on each pid for `seconds`."""
    spies = []
    for pid in pids:
        raw = out_dir / f"{label}-{pid}.raw"
        argv = [tool("py-spy"), "record", "--threads", "-r", "100", "-d", str(int(seconds)),
                "--format", "raw", "-o", str(raw), "--pid", str(pid)]  # fmt: skip
        if idle:
            argv.append("--idle")
        spies.append(
            (subprocess.Popen(argv, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL), raw)
        )
    return spies


def pyspy_finish(
    spies: list[tuple[subprocess.Popen[bytes], Path]],
    out_dir: Path,
    label: str,
    cpu_ms: float | None,
    seconds: float,
) -> str:
    for spy, _ in spies:
        try:
            spy.wait(timeout=seconds + 60)
        except subprocess.TimeoutExpired:
            spy.terminate()
            spy.wait(timeout=10)
    merged = out_dir / f"{label}.raw"
    with open(merged, "w") as out:
        for _, raw in spies:
            if raw.exists():
                out.write(raw.read_text())
    text = profile_summary.breakdown(str(merged), cpu_ms, int(100 * seconds * len(spies)))
    text += "\n" + profile_summary.summarise(str(merged), 30)
    return text


# -- one backend ---------------------------------------------------------------------------


@dataclass
class Bench:
    args: argparse.Namespace
    work: Path
    results: dict[str, Any] = field(default_factory=dict)
    verdicts: list[str] = field(default_factory=list)
    profiles: list[str] = field(default_factory=list)

    def want_profile(self, missed: bool) -> bool:
        return self.args.profile == "always" or (self.args.profile == "auto" and missed)

    def measure(self, backend: str, server: Server, api_key: str, db_pid: int | None) -> None:
        args = self.args
        port = server.port
        pids = server.worker_pids()
        result: dict[str, Any] = {"workers": server.workers}
        self.results[backend] = result

        # 1. push latency
        wait_for_quiet()
        log(
            f"{backend}: push latency, {args.sessions} payments one at a time (+{args.warmup} warm-up)"
        )
        cpu = CpuWindow(
            server_pids=[server.proc.pid if server.proc else None], db_pid=db_pid
        ).start()
        pushes = trio.run(push_latency, port, api_key, args.sessions, args.warmup, pids)
        cpu.stop()
        summary = push_summary(pushes)
        summary["cpu"] = cpu.as_dict()
        result["push"] = summary
        log(f"  sent->ws  {fmt_summary(summary['sent_to_ws'])}")
        log(
            f"  303->ws   {fmt_summary(summary['headers_to_ws'])}  (push before the 303: {summary['push_before_303']})"
        )
        log(f"  sent->303 {fmt_summary(summary['sent_to_303'])}")
        if "cross_worker" in summary:
            log(f"  same worker  sent->ws {fmt_summary(summary['same_worker'])}")
            log(f"  cross worker sent->ws {fmt_summary(summary['cross_worker'])}")
        log(f"  {cpu.describe()}")
        p99 = summary["sent_to_ws"]["p99"]
        met = p99 < TARGET_PUSH_P99_MS
        self.verdicts.append(
            f"{backend} {server.workers}w push (confirm sent -> 'paid' at the websocket) p99 = {p99:.2f} ms, "
            f"p50 {summary['sent_to_ws']['p50']:.2f} ms (target < {TARGET_PUSH_P99_MS:.0f} ms: "
            + ("MET" if met else f"MISSED by {p99 - TARGET_PUSH_P99_MS:.2f} ms")
            + ")"
        )
        log(self.verdicts[-1])
        if self.want_profile(not met):
            label = f"{backend}-push"
            seconds = args.profile_seconds
            log(f"profiling {label}: payments one at a time under py-spy --idle for {seconds}s")
            spies = pyspy_start(pids, seconds, self.work, label, idle=True)
            time.sleep(0.5)
            deadline = time.monotonic() + seconds
            n = 0
            while time.monotonic() < deadline:
                trio.run(push_latency, port, api_key, 20, 0, [])
                n += 20
            self.profiles.append(
                f"### {label} ({server.workers} worker(s), one payment at a time, py-spy --idle: "
                f"waiting counts)\n" + pyspy_finish(spies, self.work, label, None, seconds)
            )

        # 2. confirms per second
        count = args.clients * args.per_client
        log(f"{backend}: pre-creating {count} sessions for the confirm load")
        pages = trio.run(precreate, port, api_key, count)
        outcome = run_confirm_load(server, port, pages, args.clients, args.duration, db_pid)
        result["load"] = asdict(outcome)
        self.verdicts.append(
            f"{backend} {server.workers}w confirm load ({args.clients} customers): "
            f"{outcome.confirms_per_s:.1f} confirms/s, confirm POST p50 {outcome.confirm_ms['p50']:.1f} / "
            f"p99 {outcome.confirm_ms['p99']:.1f} ms, page GET p50 {outcome.page_ms['p50']:.1f} / "
            f"p99 {outcome.page_ms['p99']:.1f} ms, server CPU {outcome.server_cpu_ms_per_confirm:.2f} ms per "
            "page+confirm" + (f" (+pg {outcome.db_cpu_ms_per_confirm:.2f})" if db_pid else "")
        )
        log(self.verdicts[-1])
        if self.want_profile(not met):
            label = f"{backend}-confirm-load"
            seconds = args.profile_seconds
            extra = trio.run(precreate, port, api_key, args.clients * max(4, args.per_client // 2))
            log(f"profiling {label}: {args.clients} customers under py-spy for {seconds}s")
            spies = pyspy_start(pids, seconds, self.work, label)
            trio.run(confirm_load, port, extra, args.clients, seconds + 2)
            self.profiles.append(
                f"### {label} ({server.workers} worker(s), {args.clients} customers; shares of the "
                "main threads' samples)\n"
                + pyspy_finish(spies, self.work, label, outcome.server_cpu_ms_per_confirm, seconds)
            )

    def sqlite(self) -> None:
        cwd = self.work / "sqlite"
        cwd.mkdir()
        env = fgcpay_env(f"sqlite:///{cwd / 'bench.sqlite3'}", FGCPAY_WEBHOOK_ALLOW_PRIVATE="1")
        _, api_key = create_merchant(env, cwd)
        server = fgcpay_server("fgcpay-sqlite", env, cwd, 1, self.work, self.args.patch)
        log(f"SQLite: {cwd / 'bench.sqlite3'}, `fgcpay serve --workers 1`")
        server.start()
        try:
            self.measure("sqlite", server, api_key, None)
        finally:
            server.stop()

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
            env = fgcpay_env(cluster.url("bench"), FGCPAY_WEBHOOK_ALLOW_PRIVATE="1")
            _, api_key = create_merchant(env, cwd)
            workers = self.args.pg_workers
            server = fgcpay_server("fgcpay-pg", env, cwd, workers, self.work, self.args.patch)
            log(
                f"PostgreSQL: 127.0.0.1:{cluster.port} ({DURABLE_OPTIONS}), `fgcpay serve --workers {workers}`"
            )
            server.start()
            try:
                self.measure("postgres", server, api_key, cluster.postmaster_pid())
            finally:
                server.stop()
        finally:
            cluster.stop()

    def report(self, started: float) -> None:
        a = self.args
        print()
        print("=" * 100)
        print(
            f"fgcpay hosted-page benchmark, {os.cpu_count()} CPUs, Python {sys.version.split()[0]}, "
            f"{time.strftime('%Y-%m-%d %H:%M:%S')}, {time.monotonic() - started:.0f} s total"
        )
        if a.patch:
            print(
                f"PATCHED service (bench/patched_serve.py --patch {a.patch}): not the application as it is"
            )
        print(
            f"push: {a.sessions} payments one at a time after {a.warmup} warm-up; load: {a.clients} "
            f"customers x {a.per_client} sessions, at most {a.duration:.0f} s"
        )
        print()
        for backend, r in self.results.items():
            push = r.get("push")
            if push:
                print(f"{backend} ({r['workers']} worker(s)), push latency, ms:")
                print(f"  confirm sent -> ws 'paid'   {fmt_summary(push['sent_to_ws'])}")
                print(
                    f"  303 received -> ws 'paid'   {fmt_summary(push['headers_to_ws'])}"
                    f"  [push arrived first in {push['push_before_303']}/{push['n']}]"
                )
                print(f"  confirm sent -> 303         {fmt_summary(push['sent_to_303'])}")
                if "cross_worker" in push:
                    print(f"  sent -> ws, same worker     {fmt_summary(push['same_worker'])}")
                    print(f"  sent -> ws, other worker    {fmt_summary(push['cross_worker'])}")
                    print(
                        f"  303 -> ws, other worker     {fmt_summary(push['cross_worker_headers_to_ws'])}"
                    )
                    print(
                        f"  sent -> 303, same worker    {fmt_summary(push['same_worker_sent_to_303'])}"
                    )
                    print(
                        f"  sent -> 303, other worker   {fmt_summary(push['cross_worker_sent_to_303'])}"
                    )
                print(f"  other CPU {push['cpu']['other_cpu_pct']:.0f}%")
            load = r.get("load")
            if load:
                print(
                    f"{backend} ({r['workers']} worker(s)), {load['clients']} customers paying at once:"
                )
                print(
                    f"  {load['confirms']} confirms in {load['seconds']:.1f} s = {load['confirms_per_s']:.1f}"
                    f" confirms/s (middle 80% of completions: {load['mid_confirms_per_s']:.1f}/s); errors "
                    f"{sum(load['errors'].values())}"
                )
                print(f"  confirm POST  {fmt_summary(load['confirm_ms'])}")
                print(f"  page GET      {fmt_summary(load['page_ms'])}")
                cpu = load["cpu"]
                print(
                    f"  server CPU {load['server_cpu_ms_per_confirm']:.2f} ms per page+confirm"
                    + (f" (+pg {load['db_cpu_ms_per_confirm']:.2f})" if cpu["db_cpu_s"] else "")
                    + f", {cpu['server_cpu_s'] / cpu['seconds'] * 100:.0f}% of one core; driver CPU "
                    f"{cpu['driver_cpu_s']:.1f} s; other {cpu['other_cpu_pct']:.0f}%"
                )
                for error, n in load["errors"].items():
                    print(f"  error x{n}: {error}")
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
    parser.add_argument("--sessions", type=int, default=500, help="payments timed one at a time")
    parser.add_argument("--warmup", type=int, default=20, help="untimed payments before those")
    parser.add_argument("--clients", type=int, default=64, help="customers paying at once")
    parser.add_argument("--per-client", type=int, default=40, help="sessions each customer pays")
    parser.add_argument(
        "--duration", type=float, default=30.0, help="at most this long (s) for the load"
    )
    parser.add_argument("--pg", action="store_true", help="also PostgreSQL (durable cluster)")
    parser.add_argument("--pg-only", action="store_true", help="PostgreSQL only")
    parser.add_argument("--pg-workers", type=int, default=2)
    parser.add_argument(
        "--profile",
        choices=("auto", "always", "never"),
        default="auto",
        help="py-spy when the push target is missed (auto), always, or never",
    )
    parser.add_argument("--profile-seconds", type=int, default=10)
    parser.add_argument(
        "--quiet-wait",
        type=float,
        default=30.0,
        help="wait up to this long for an idle machine before each part (0: off)",
    )
    parser.add_argument(
        "--tests-wait",
        type=float,
        default=600.0,
        help="wait up to this long for a running test suite (pytest) to finish (0: off)",
    )
    parser.add_argument(
        "--patch",
        help="start the service through bench/patched_serve.py with these "
        "patches (comma-separated; A/B of suggested app changes, 1 worker)",
    )
    parser.add_argument("--json", type=Path, help="also write the results as JSON here")
    parser.add_argument("--keep", action="store_true", help="keep the temporary directory")
    args = parser.parse_args()
    QUIET["wait"], QUIET["tests_wait"] = args.quiet_wait, args.tests_wait

    started = time.monotonic()
    work = Path(tempfile.mkdtemp(prefix="fgcpay-hosted-"))
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
