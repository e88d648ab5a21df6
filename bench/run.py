#!/usr/bin/env python3
"""fgcpay HTTP benchmark: create-session and list throughput/latency against the
hello-world ceiling of the same stack, on SQLite (1 worker) and PostgreSQL (2 workers).

    .venv/bin/python bench/run.py                 # everything (about 8 minutes)
    .venv/bin/python bench/run.py --skip-pg       # SQLite only
    .venv/bin/python bench/run.py --skip-sqlite   # the PostgreSQL figures of issue 9

PostgreSQL (durable: fsync and synchronous_commit on) reports, from one run with the
ceilings measured in it: creates with 2 workers against the 2-worker hello-world, the
confirm -> websocket push latency on those 2 workers, the same creates on 1 worker (how
much the second adds), and the list p99 on one connection with --pg-rows sessions stored.
    .venv/bin/python bench/run.py --profile always --json /tmp/bench.json

The service is started the way an operator starts it (`fgcpay serve`), in a temporary
working directory, bound to 127.0.0.1; the load comes from wrk over loopback. Every wrk
run is bounded by --duration. This is a measurement, not a test: it never fails on a
missed target, it reports it (and, with --profile auto, profiles it with py-spy).

See docs/performance.md for what the figures mean and the last measured results.
"""

from __future__ import annotations

import argparse
import json
import os
import random
import shutil
import sqlite3
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))

import profile_summary  # noqa: E402
from common import (  # noqa: E402
    BENCH,
    CREATE_BODY,
    CREATE_PATH,
    QUIET,
    Server,
    children_cpu_seconds,
    fgcpay_server,
    free_port,
    loadavg,
    log,
    machine_busy_seconds,
    sh_json,
    tool,
    tree_cpu_seconds,
    wait_for_quiet,
)

BASE62 = "0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz"

TARGET_SQLITE_RATIO = 0.8
TARGET_PG_RATIO = 0.7
TARGET_LIST_P99_MS = 20.0
TARGET_PG_SCALING = 1.8


# -- wrk ------------------------------------------------------------------------------

LUA_TEMPLATE = """
wrk.method = "{method}"
wrk.path = "{path}"
{body}
{headers}
local threads = {{}}
function setup(thread)
  table.insert(threads, thread)
end
function init(args)
  unexpected = 0
  last_bad = 0
end
function response(status, headers, body)
  if status ~= {expected} then
    unexpected = unexpected + 1
    last_bad = status
  end
end
function done(summary, latency, requests)
  local bad, last = 0, 0
  for _, t in ipairs(threads) do
    bad = bad + t:get("unexpected")
    if t:get("last_bad") ~= 0 then last = t:get("last_bad") end
  end
  local e = summary.errors
  io.write(string.format(
    'BENCH_JSON {{"requests":%d,"duration_us":%d,"unexpected":%d,"last_bad_status":%d,' ..
    '"connect_errors":%d,"read_errors":%d,"write_errors":%d,"status_errors":%d,"timeouts":%d,' ..
    '"p50_us":%d,"p90_us":%d,"p99_us":%d,"max_us":%d,"mean_us":%.1f}}\\n',
    summary.requests, summary.duration, bad, last,
    e.connect, e.read, e.write, e.status, e.timeout,
    latency:percentile(50), latency:percentile(90), latency:percentile(99),
    latency.max, latency.mean))
end
"""


def lua_script(
    directory: Path, name: str, method: str, path: str, expected: int,
    headers: dict[str, str], body: str | None = None,
) -> Path:  # fmt: skip
    def quote(text: str) -> str:
        return json.dumps(text)  # a JSON string is a valid Lua string literal here

    script = LUA_TEMPLATE.format(
        method=method,
        path=path,
        expected=expected,
        body=f"wrk.body = {quote(body)}" if body is not None else "",
        headers="\n".join(f"wrk.headers[{quote(k)}] = {quote(v)}" for k, v in headers.items()),
    )
    out = directory / f"{name}.lua"
    out.write_text(script)
    return out


@dataclass
class WrkConfig:
    threads: int
    connections: int
    duration: int

    def describe(self) -> str:
        return f"wrk -t{self.threads} -c{self.connections} -d{self.duration}s --latency"


@dataclass
class LoadResult:
    label: str
    settings: str
    requests: int
    seconds: float
    rps: float
    p50_ms: float
    p90_ms: float
    p99_ms: float
    max_ms: float
    unexpected: int
    socket_errors: int
    timeouts: int
    last_bad_status: int
    server_cpu_ms_per_req: float | None = None
    db_cpu_ms_per_req: float | None = None
    other_cpu_pct: float | None = None  # CPU used by processes outside this benchmark

    def row(self) -> str:
        cpu = f"{self.server_cpu_ms_per_req:.2f}" if self.server_cpu_ms_per_req is not None else "-"
        if self.db_cpu_ms_per_req is not None:
            cpu += f" +pg {self.db_cpu_ms_per_req:.2f}"
        bad = f"{self.unexpected}" + (f" ({self.last_bad_status})" if self.unexpected else "")
        other = f"{self.other_cpu_pct:.0f}%" if self.other_cpu_pct is not None else "-"
        return (
            f"{self.label:<50} {self.rps:>7.1f} {self.p50_ms:>7.1f} {self.p99_ms:>7.1f}"
            f" {self.max_ms:>7.1f} {self.requests:>7} {bad:>7} {self.socket_errors:>4}"
            f" {other:>6}  {cpu}"
        )


RESULT_HEADER = (
    f"{'scenario':<50} {'req/s':>7} {'p50 ms':>7} {'p99 ms':>7} {'max ms':>7}"
    f" {'reqs':>7} {'non-exp':>7} {'sock':>4} {'other':>6}  server cpu ms/req"
)


def run_wrk(
    label: str, url: str, script: Path, cfg: WrkConfig,
    server: Server | None = None, db_pid: int | None = None,
) -> LoadResult:  # fmt: skip
    cmd = [
        "wrk", f"-t{cfg.threads}", f"-c{cfg.connections}", f"-d{cfg.duration}s",
        "--latency", "--timeout", "10s", "-s", str(script), url,
    ]  # fmt: skip
    cpu0 = server.cpu_seconds() if server else 0.0
    db0 = tree_cpu_seconds(db_pid)
    busy0, wrk0, wall0 = machine_busy_seconds(), children_cpu_seconds(), time.monotonic()
    done = subprocess.run(cmd, capture_output=True, text=True, timeout=cfg.duration + 60)
    busy1, wrk1, wall1 = machine_busy_seconds(), children_cpu_seconds(), time.monotonic()
    cpu1 = server.cpu_seconds() if server else 0.0
    db1 = tree_cpu_seconds(db_pid)
    line = next((ln for ln in done.stdout.splitlines() if ln.startswith("BENCH_JSON ")), None)
    if done.returncode != 0 or line is None:
        raise RuntimeError(f"wrk failed ({done.returncode}):\n{done.stdout}\n{done.stderr}")
    data = json.loads(line.split(" ", 1)[1])
    seconds = data["duration_us"] / 1e6
    requests = data["requests"]
    result = LoadResult(
        label=label,
        settings=cfg.describe(),
        requests=requests,
        seconds=seconds,
        rps=requests / seconds if seconds else 0.0,
        p50_ms=data["p50_us"] / 1000,
        p90_ms=data["p90_us"] / 1000,
        p99_ms=data["p99_us"] / 1000,
        max_ms=data["max_us"] / 1000,
        unexpected=data["unexpected"],
        socket_errors=data["connect_errors"] + data["read_errors"] + data["write_errors"],
        timeouts=data["timeouts"],
        last_bad_status=data["last_bad_status"],
    )
    ours = (cpu1 - cpu0) + (db1 - db0) + (wrk1 - wrk0)
    capacity = (wall1 - wall0) * (os.cpu_count() or 1)
    if server and capacity > 0:
        result.other_cpu_pct = max(0.0, (busy1 - busy0) - ours) / capacity * 100
    if server and requests:
        result.server_cpu_ms_per_req = (cpu1 - cpu0) * 1000 / requests
    if db_pid and requests:
        result.db_cpu_ms_per_req = (db1 - db0) * 1000 / requests
    return result


def load(
    label: str, url: str, script: Path, cfg: WrkConfig, warmup: int,
    server: Server | None = None, db_pid: int | None = None,
) -> LoadResult:  # fmt: skip
    wait_for_quiet()  # a test run elsewhere on the machine, then idle CPU
    if warmup > 0:
        run_wrk(label + " (warm-up)", url, script, WrkConfig(cfg.threads, cfg.connections, warmup))
    log(f"{label}: {cfg.describe()} (loadavg {loadavg()})")
    result = run_wrk(label, url, script, cfg, server, db_pid)
    print("    " + result.row(), flush=True)
    if result.other_cpu_pct is not None and result.other_cpu_pct > 10:
        log(
            f"warning: other processes used {result.other_cpu_pct:.0f}% of the machine's CPU "
            "during this run; the figures are disturbed"
        )
    return result


# -- profiling ------------------------------------------------------------------------


def profile_under_load(
    label: str, server: Server, url: str, script: Path, cfg: WrkConfig, seconds: int,
    cpu_ms_per_req: float | None, out_dir: Path,
) -> str:  # fmt: skip
    """py-spy (blocking sampling, 100 Hz, per thread) on every worker while wrk loads it."""
    pyspy = tool("py-spy")
    pids = server.worker_pids()
    raws = [out_dir / f"{label}-{pid}.raw" for pid in pids]
    wrk = subprocess.Popen(
        ["wrk", f"-t{cfg.threads}", f"-c{cfg.connections}", f"-d{seconds + 4}s", "-s", str(script), url],
        stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
    )  # fmt: skip
    try:
        time.sleep(2)
        spies = [
            subprocess.Popen(
                [
                    pyspy,
                    "record",
                    "--threads",
                    "-r",
                    "100",
                    "-d",
                    str(seconds),
                    "--format",
                    "raw",
                    "-o",
                    str(raw),
                    "--pid",
                    str(pid),
                ],
                stdout=subprocess.DEVNULL,
                stderr=subprocess.DEVNULL,
            )  # fmt: skip
            for pid, raw in zip(pids, raws, strict=True)
        ]
        for spy in spies:
            spy.wait(timeout=seconds + 60)
    finally:
        wrk.wait(timeout=seconds + 60)
    merged = out_dir / f"{label}.raw"
    with open(merged, "w") as out:
        for raw in raws:
            if raw.exists():
                out.write(raw.read_text())
    return profile_summary.breakdown(str(merged), cpu_ms_per_req, 100 * seconds * len(pids))


# -- data -----------------------------------------------------------------------------


COLUMNS = (
    "id", "merchant_id", "status", "version", "amount_minor", "currency", "eur_cents",
    "description", "success_url", "cancel_url", "customer_email", "customer_reference",
    "external_reference", "metadata", "created_at", "updated_at", "expires_at", "paid_at",
)  # fmt: skip


def bulk_rows(
    merchant_id: str, count: int, seed: int = 7
) -> tuple[Iterator[tuple[Any, ...]], list[str]]:
    """`count` sessions created over the last 23 hours (oldest first), 80% created (not yet
    expired, so the expiry sweeper has nothing to do), 15% paid, 5% expired.

    Returns the rows and a list that fills with the ids of sampled positions: index 0 is
    the row at 10% of the insert order (i.e. ~90% deep in the newest-first list)."""
    rng = random.Random(seed)
    now = int(time.time() * 1_000_000)
    start = now - 23 * 3600 * 1_000_000
    end = now - 600 * 1_000_000
    step = (end - start) // max(1, count)
    day = 86400 * 1_000_000
    anchors: list[str] = []
    deep_index = count // 10

    def rows() -> Iterator[tuple[Any, ...]]:
        choices = rng.choices
        for i in range(count):
            created = start + i * step + rng.randrange(step or 1)
            sid = "cs_test_" + "".join(choices(BASE62, k=24))
            if i == deep_index:
                anchors.append(sid)
            amount = rng.randrange(100, 100_000)
            roll = rng.random()
            if roll < 0.80:
                status, version, updated, expires, paid = "created", 1, created, created + day, None
            elif roll < 0.95:
                paid = created + rng.randrange(30, 300) * 1_000_000
                status, version, updated, expires = "paid", 2, paid, created + day
            else:
                expires = created + 60 * 1_000_000
                status, version, updated, paid = "expired", 2, expires, None
            yield (
                sid, merchant_id, status, version, amount, "FGC", amount, "bench bulk",
                "https://shop.example/ok", "https://shop.example/cancel", None, None, None,
                "{}", created, updated, expires, paid,
            )  # fmt: skip

    return rows(), anchors


def sqlite_bulk_insert(db_path: Path, merchant_id: str, count: int) -> tuple[str, float]:
    rows, anchors = bulk_rows(merchant_id, count)
    started = time.monotonic()
    conn = sqlite3.connect(db_path, isolation_level=None)
    try:
        conn.execute("PRAGMA journal_mode=WAL")
        conn.execute("PRAGMA synchronous=OFF")  # for the load only; the service uses FULL
        conn.execute("PRAGMA cache_size=-512000")
        conn.execute("PRAGMA temp_store=MEMORY")
        conn.execute("BEGIN")
        conn.executemany(
            f"INSERT INTO checkout_sessions ({', '.join(COLUMNS)})"
            f" VALUES ({', '.join('?' * len(COLUMNS))})",
            rows,
        )
        conn.execute("COMMIT")
        conn.execute("PRAGMA wal_checkpoint(TRUNCATE)")
    finally:
        conn.close()
    return anchors[0], time.monotonic() - started


def pg_bulk_insert(url: str, merchant_id: str, count: int) -> tuple[str, float]:
    import psycopg

    rows, anchors = bulk_rows(merchant_id, count)
    started = time.monotonic()
    with psycopg.connect(url, autocommit=True) as conn:
        conn.execute("SET synchronous_commit = off")  # for the load only
        with conn.cursor() as cur, conn.transaction():
            with cur.copy(f"COPY checkout_sessions ({', '.join(COLUMNS)}) FROM STDIN") as copy:
                for row in rows:
                    copy.write_row(row)
        # As after any bulk load: statistics and the visibility map now, so autovacuum
        # does not start during the measurement, and a checkpoint to flush the load.
        conn.execute("VACUUM (ANALYZE) checkout_sessions")
        conn.execute("CHECKPOINT")
    return anchors[0], time.monotonic() - started


# -- scenarios ------------------------------------------------------------------------


@dataclass
class Bench:
    args: argparse.Namespace
    work: Path
    results: list[LoadResult] = field(default_factory=list)
    verdicts: list[str] = field(default_factory=list)
    profiles: list[str] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)

    @property
    def load_cfg(self) -> WrkConfig:
        return WrkConfig(self.args.threads, self.args.connections, self.args.duration)

    @property
    def list_cfg(self) -> WrkConfig:
        return WrkConfig(1, self.args.list_connections, self.args.list_duration)

    def env(self, database_url: str) -> dict[str, str]:
        env = {k: v for k, v in os.environ.items() if not k.startswith("FGCPAY_")}
        env.update(
            FGCPAY_DATABASE_URL=database_url,
            FGCPAY_RATE_LIMIT_PER_SECOND="1000000",
            FGCPAY_RATE_LIMIT_BURST="1000000",
            FGCPAY_LOG_LEVEL="WARNING",
        )
        return env

    def fgcpay(self, name: str, env: dict[str, str], cwd: Path, workers: int) -> Server:
        return fgcpay_server(name, env, cwd, workers, self.work, self.args.patch)

    def start_hello(self, workers: int, module: str = "hello_app") -> Server:
        """hypercorn's trio worker serving bench/<module>.py (hello_app or shape_app)."""
        port = free_port()
        env = {k: v for k, v in os.environ.items() if not k.startswith("FGCPAY_")}
        argv = [
            tool("hypercorn"), "--worker-class", "trio", "--workers", str(workers),
            "--bind", f"127.0.0.1:{port}", f"{module}:app",
        ]  # fmt: skip
        # cwd=bench/: the app imports as a top-level module, and the repository root
        # (whose `http/` folder must not shadow the standard library) is not on sys.path.
        server = Server(f"{module}-{workers}w", argv, env, BENCH, port, workers, "/", self.work)
        server.start()
        return server

    def create_script(self, api_key: str) -> Path:
        return lua_script(
            self.work, "create", "POST", CREATE_PATH, 201,
            {"Authorization": f"Bearer {api_key}", "Content-Type": "application/json"},
            json.dumps(CREATE_BODY, separators=(",", ":")),
        )  # fmt: skip

    def hello_script(self) -> Path:
        return lua_script(self.work, "hello", "GET", "/", 200, {})

    def list_script(self, name: str, api_key: str, query: str) -> Path:
        return lua_script(
            self.work, name, "GET", f"{CREATE_PATH}?{query}", 200,
            {"Authorization": f"Bearer {api_key}"},
        )  # fmt: skip

    def want_profile(self, missed: bool) -> bool:
        return self.args.profile == "always" or (self.args.profile == "auto" and missed)

    # -- one backend ------------------------------------------------------------------

    def ceiling_and_create(
        self, backend: str, service: Server, api_key: str, workers: int, target: float,
        db_pid: int | None, shape: bool = False,
    ) -> LoadResult:  # fmt: skip
        """The create load and the hello-world ceiling with as many workers; the create."""
        cfg, warm = self.load_cfg, self.args.warmup
        create = load(
            f"{backend} {workers}w: POST create session", service.url, self.create_script(api_key),
            cfg, warm, service, db_pid,
        )  # fmt: skip
        self.results.append(create)
        hello = self.start_hello(workers)
        try:
            ceiling = load(
                f"hello-world ceiling {workers}w: GET /", hello.url, self.hello_script(), cfg, warm,
                hello,
            )  # fmt: skip
            self.results.append(ceiling)
            ratio = create.rps / ceiling.rps if ceiling.rps else 0.0
            met = ratio >= target
            needed = target * ceiling.rps
            gap = (
                ""
                if met
                else (
                    f", missed: create needs {needed:.0f} req/s, {needed - create.rps:.0f} req/s "
                    f"({(needed / create.rps - 1) * 100:.0f}%) more"
                )
            )
            self.verdicts.append(
                f"{backend} {workers}w create/hello = {create.rps:.1f}/{ceiling.rps:.1f} = "
                f"{ratio:.2f}x (target >= {target}x: {'MET' if met else 'MISSED'}{gap})"
            )
            log(self.verdicts[-1])
            if self.want_profile(not met):
                for label, server, script, cpu in (
                    (f"{backend}-create", service, self.create_script(api_key),
                     create.server_cpu_ms_per_req),
                    (f"{backend}-hello", hello, self.hello_script(), ceiling.server_cpu_ms_per_req),
                ):  # fmt: skip
                    log(f"profiling {label} with py-spy for {self.args.profile_seconds}s")
                    text = profile_under_load(
                        label, server, server.url, script, cfg, self.args.profile_seconds, cpu,
                        self.work,
                    )  # fmt: skip
                    self.profiles.append(
                        f"### {label} ({workers} worker(s), {cfg.describe()})\n{text}"
                    )
        finally:
            hello.stop()
        if shape and not self.args.skip_shape:
            server = self.start_hello(workers, "shape_app")
            try:
                result = load(
                    f"shape ceiling {workers}w: POST same body/headers", server.url,
                    self.create_script(api_key), cfg, warm, server,
                )  # fmt: skip
                self.results.append(result)
                self.notes.append(
                    f"{backend} {workers}w create / shape ceiling = {create.rps:.1f}/{result.rps:.1f}"
                    f" = {create.rps / result.rps:.2f}x; shape / hello = "
                    f"{result.rps / ceiling.rps:.2f}x"
                )
            finally:
                server.stop()
        return create

    def one_worker_scaling(
        self, backend: str, env: dict[str, str], cwd: Path, api_key: str, two: LoadResult,
        db_pid: int | None,
    ) -> None:  # fmt: skip
        """The same create load on 1 worker: how much a second worker adds."""
        service = self.fgcpay(f"fgcpay-{backend}-1w", env, cwd, 1)
        service.start()
        try:
            one = load(
                f"{backend} 1w: POST create session", service.url, self.create_script(api_key),
                self.load_cfg, self.args.warmup, service, db_pid,
            )  # fmt: skip
        finally:
            service.stop()
        self.results.append(one)
        ratio = two.rps / one.rps if one.rps else 0.0
        self.verdicts.append(
            f"{backend} create 2w/1w = {two.rps:.1f}/{one.rps:.1f} = {ratio:.2f}x (target >= "
            f"{TARGET_PG_SCALING}x: {'MET' if ratio >= TARGET_PG_SCALING else 'MISSED'})"
        )
        log(self.verdicts[-1])

    def push_latency(self, backend: str, service: Server, api_key: str) -> None:
        """Confirm -> 'paid' at the page's websocket, payments one at a time (bench/hosted.py);
        with 2 workers half of them cross processes through LISTEN/NOTIFY."""
        import importlib.util

        import trio

        # By path: tests/ (on sys.path for the PostgreSQL cluster) has a hosted.py too.
        spec = importlib.util.spec_from_file_location(
            "bench_hosted", Path(__file__).parent / "hosted.py"
        )
        assert spec is not None and spec.loader is not None
        hosted = importlib.util.module_from_spec(spec)
        sys.modules[spec.name] = hosted  # its dataclasses look their module up
        spec.loader.exec_module(hosted)
        TARGET_PUSH_P99_MS = hosted.TARGET_PUSH_P99_MS

        wait_for_quiet()
        pushes = trio.run(
            hosted.push_latency, service.port, api_key, self.args.pushes, 20, service.worker_pids()
        )
        summary = hosted.push_summary(pushes)
        p99 = summary["sent_to_ws"]["p99"]
        cross = summary.get("cross_worker", {}).get("p99")
        self.verdicts.append(
            f"{backend} {service.workers}w confirm -> websocket push p99 = {p99:.2f} ms over "
            f"{summary['n']} payments (p50 {summary['sent_to_ws']['p50']:.2f} ms"
            + (f"; across workers p99 {cross:.2f} ms" if cross is not None else "")
            + f") (target < {TARGET_PUSH_P99_MS:.0f} ms: {'MET' if p99 < TARGET_PUSH_P99_MS else 'MISSED'})"
        )
        log(self.verdicts[-1])

    def list_runs(
        self, backend: str, service: Server, api_key: str, anchor: str, rows: int,
        db_pid: int | None,
    ) -> list[LoadResult]:  # fmt: skip
        variants = [
            ("first page", "limit=20"),
            ("status=paid", "limit=20&status=paid"),
            ("starting_after 90% deep", f"limit=20&starting_after={anchor}"),
        ]
        out = []
        scripts = []
        for name, query in variants:
            script = self.list_script(f"list-{backend}-{len(out)}", api_key, query)
            scripts.append(script)
            result = load(
                f"{backend}: GET list {name}, {rows:,} rows", service.url, script,
                self.list_cfg, self.args.warmup, service, db_pid,
            )  # fmt: skip
            out.append(result)
        # Throughput of the list endpoint at the create-load concurrency, for reference.
        script = self.list_script(f"list-{backend}-sat", api_key, "limit=20")
        sat = WrkConfig(self.load_cfg.threads, self.load_cfg.connections, self.list_cfg.duration)
        out.append(
            load(
                f"{backend}: GET list first page, -c{sat.connections}",
                service.url,
                script,
                sat,
                0,
                service,
                db_pid,
            )  # fmt: skip
        )
        self.results.extend(out)
        worst = max(range(3), key=lambda i: out[i].p99_ms)
        met = out[worst].p99_ms < TARGET_LIST_P99_MS
        each = ", ".join(
            f"{name} {r.p99_ms:.1f}" for (name, _), r in zip(variants, out, strict=False)
        )
        self.verdicts.append(
            f"{backend} list p99 with {rows:,} rows ({self.list_cfg.describe()}): {each} ms "
            f"(target < {TARGET_LIST_P99_MS:.0f} ms: {'MET' if met else 'MISSED'}"
            + (
                ""
                if met
                else f" by {out[worst].p99_ms - TARGET_LIST_P99_MS:.1f} ms on "
                f"'{variants[worst][0]}'"
            )
            + ")"
        )
        log(self.verdicts[-1])
        if self.want_profile(not met):
            label = f"{backend}-list"
            log(f"profiling {label} ('{variants[worst][0]}') with py-spy")
            text = profile_under_load(
                label, service, service.url, scripts[worst], self.list_cfg,
                self.args.profile_seconds, out[worst].server_cpu_ms_per_req, self.work,
            )  # fmt: skip
            self.profiles.append(
                f"### {label}, '{variants[worst][0]}' ({self.list_cfg.describe()})\n{text}"
            )
        return out

    def sqlite(self) -> None:
        cwd = self.work / "sqlite"
        cwd.mkdir()
        db_path = cwd / "bench.sqlite3"
        env = self.env(f"sqlite:///{db_path}")
        log(f"SQLite: {db_path} (WAL, synchronous=FULL), 1 worker")
        merchant = sh_json(
            [tool("fgcpay"), "merchant", "create", "--name", "Bench", "--email", "bench@example.com"],
            env, cwd,
        )  # fmt: skip
        api_key, merchant_id = merchant["api_key"], merchant["merchant_id"]
        service = self.fgcpay("fgcpay-sqlite", env, cwd, 1)
        service.start()
        try:
            self.ceiling_and_create("sqlite", service, api_key, 1, TARGET_SQLITE_RATIO, None, True)
            if self.args.rows <= 0:
                return
            small = self.count_sqlite(db_path)
            r = load(
                f"sqlite: GET list first page, {small:,} rows", service.url,
                self.list_script("list-small", api_key, "limit=20"), self.list_cfg,
                self.args.warmup, service,
            )  # fmt: skip
            self.results.append(r)
        finally:
            service.stop()
        log(
            f"SQLite: bulk-inserting {self.args.rows:,} sessions (one transaction, synchronous=OFF)"
        )
        anchor, took = sqlite_bulk_insert(db_path, merchant_id, self.args.rows)
        total = self.count_sqlite(db_path)
        self.notes.append(f"SQLite bulk insert of {self.args.rows:,} rows: {took:.1f} s")
        log(f"SQLite: inserted in {took:.1f} s; {total:,} sessions stored; restarting the service")
        service = self.fgcpay("fgcpay-sqlite", env, cwd, 1)
        service.start()
        try:
            self.list_runs("sqlite", service, api_key, anchor, total, None)
        finally:
            service.stop()

    @staticmethod
    def count_sqlite(db_path: Path) -> int:
        conn = sqlite3.connect(db_path)
        try:
            return int(conn.execute("SELECT COUNT(*) FROM checkout_sessions").fetchone()[0])
        finally:
            conn.close()

    def postgres(self) -> None:
        from pg_durable import DURABLE_OPTIONS, find_pg_bin, start_durable_cluster

        if find_pg_bin() is None:
            self.verdicts.append(
                "PostgreSQL skipped: no server binaries (initdb, pg_ctl); "
                "apt-get install -y postgresql"
            )
            log(self.verdicts[-1])
            return
        cluster = start_durable_cluster()
        try:
            cluster.psql("CREATE DATABASE bench")
            url = cluster.url("bench")
            pg_pid = cluster.postmaster_pid()
            log(
                f"PostgreSQL: throwaway cluster on 127.0.0.1:{cluster.port} ({DURABLE_OPTIONS}), 2 workers"
            )
            cwd = self.work / "postgres"
            cwd.mkdir()
            env = self.env(url)
            merchant = sh_json(
                [tool("fgcpay"), "merchant", "create", "--name", "Bench", "--email", "bench@example.com"],
                env, cwd,
            )  # fmt: skip
            api_key, merchant_id = merchant["api_key"], merchant["merchant_id"]
            service = self.fgcpay("fgcpay-pg", env, cwd, 2)
            service.start()
            try:
                two = self.ceiling_and_create(
                    "postgres", service, api_key, 2, TARGET_PG_RATIO, pg_pid
                )
                if self.args.pushes > 0:
                    self.push_latency("postgres", service, api_key)
            finally:
                service.stop()
            self.one_worker_scaling("postgres", env, cwd, api_key, two, pg_pid)
            if self.args.pg_rows <= 0:
                return
            log(
                f"PostgreSQL: COPY {self.args.pg_rows:,} sessions, then VACUUM (ANALYZE), CHECKPOINT"
            )
            anchor, took = pg_bulk_insert(url, merchant_id, self.args.pg_rows)
            self.notes.append(
                f"PostgreSQL COPY of {self.args.pg_rows:,} rows + VACUUM (ANALYZE) + CHECKPOINT: {took:.1f} s"
            )
            log(f"PostgreSQL: loaded in {took:.1f} s; restarting the service")
            service = self.fgcpay("fgcpay-pg", env, cwd, 2)
            service.start()
            try:
                total = self.count_pg(url)
                self.list_runs("postgres", service, api_key, anchor, total, pg_pid)
            finally:
                service.stop()
        finally:
            cluster.stop()

    @staticmethod
    def count_pg(url: str) -> int:
        import psycopg

        with psycopg.connect(url) as conn:
            row = conn.execute("SELECT COUNT(*) FROM checkout_sessions").fetchone()
        return int(row[0]) if row else 0

    def report(self, started: float) -> None:
        print()
        print("=" * 110)
        print(
            f"fgcpay benchmark, {os.cpu_count()} CPUs, Python {sys.version.split()[0]}, "
            f"{time.strftime('%Y-%m-%d %H:%M:%S')}, {time.monotonic() - started:.0f} s total"
        )
        print(
            f"create/hello load: {self.load_cfg.describe()}; list latency: "
            f"{self.list_cfg.describe()} (warm-up {self.args.warmup}s before each)"
        )
        print(
            "server cpu ms/req = CPU time of the server's process tree / requests (+pg: of "
            "PostgreSQL's); other = CPU used by processes outside the benchmark, % of the machine"
        )
        print()
        print(RESULT_HEADER)
        for result in self.results:
            print(result.row())
        print()
        for verdict in self.verdicts:
            print("* " + verdict)
        for note in self.notes:
            print("- " + note)
        for text in self.profiles:
            print()
            print(text)
        print("=" * 110)


def main() -> int:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--duration", type=int, default=15, help="seconds per create/hello run")
    parser.add_argument("--warmup", type=int, default=3, help="seconds of warm-up before each run")
    parser.add_argument("--threads", type=int, default=2, help="wrk threads")
    parser.add_argument(
        "--connections", type=int, default=64, help="wrk connections (create/hello)"
    )
    parser.add_argument(
        "--list-connections", type=int, default=1, help="wrk connections (list latency)"
    )
    parser.add_argument("--list-duration", type=int, default=8, help="seconds per list run")
    parser.add_argument(
        "--rows", type=int, default=1_000_000, help="sessions bulk-inserted (SQLite)"
    )
    parser.add_argument(
        "--pg-rows", type=int, default=1_000_000, help="sessions bulk-loaded (PostgreSQL)"
    )
    parser.add_argument(
        "--pushes",
        type=int,
        default=300,
        help="payments one at a time for the PostgreSQL push latency (0 skips it)",
    )
    parser.add_argument("--skip-pg", action="store_true", help="SQLite only")
    parser.add_argument("--skip-sqlite", action="store_true", help="PostgreSQL only")
    parser.add_argument(
        "--profile", choices=("auto", "always", "never"), default="never",
        help="py-spy profile under load: when a target is missed (auto), always, or never",
    )  # fmt: skip
    parser.add_argument("--profile-seconds", type=int, default=10)
    parser.add_argument("--skip-shape", action="store_true", help="skip the request-shape ceiling")
    parser.add_argument(
        "--quiet-wait", type=float, default=30.0,
        help="before each run, wait up to this many seconds for the machine to be idle "
        "(< 15%% CPU busy); 0 disables",
    )  # fmt: skip
    parser.add_argument(
        "--tests-wait", type=float, default=600.0,
        help="before each run, wait up to this many seconds for a test run (a process whose "
        "command line mentions pytest) to finish; 0 disables",
    )  # fmt: skip
    parser.add_argument(
        "--patch",
        help="start fgcpay through bench/patched_serve.py with these patches "
        "(comma-separated): A/B of suggested app changes, or `trace`",
    )
    parser.add_argument("--json", type=Path, help="also write the results as JSON here")
    parser.add_argument("--keep", action="store_true", help="keep the temporary directory")
    args = parser.parse_args()

    if shutil.which("wrk") is None:
        print(
            "bench: wrk is not installed. Install it with `apt-get install -y wrk` "
            "(or from https://github.com/wg/wrk) and run again.",
            file=sys.stderr,
        )
        return 2
    QUIET["wait"] = args.quiet_wait
    QUIET["tests_wait"] = args.tests_wait
    started = time.monotonic()
    work = Path(tempfile.mkdtemp(prefix="fgcpay-bench-"))
    bench = Bench(args, work)
    log(f"working directory {work}; {os.cpu_count()} CPUs; loadavg {loadavg()}")
    try:
        if not args.skip_sqlite:
            bench.sqlite()
        if not args.skip_pg:
            bench.postgres()
    except KeyboardInterrupt:
        log("interrupted")
    finally:
        bench.report(started)
        if args.json:
            args.json.write_text(json.dumps({
                "results": [r.__dict__ for r in bench.results],
                "verdicts": bench.verdicts,
                "notes": bench.notes,
                "profiles": bench.profiles,
            }, indent=2))  # fmt: skip
        if args.keep:
            log(f"kept {work}")
        else:
            shutil.rmtree(work, ignore_errors=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
