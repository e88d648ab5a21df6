"""Helpers shared by the benchmark drivers (`bench/run.py`, `bench/hosted.py`,
`bench/webhooks.py`, `bench/renewals.py`, `bench/ledger.py`): starting and stopping
servers the way an operator does, the service's database (SQLite, or a durable throwaway
PostgreSQL cluster) and bulk loads into it, CPU accounting from /proc, waiting for a
quiet machine (and for a test suite run by someone else to finish), percentiles.

Nothing here binds anything but 127.0.0.1.
"""

from __future__ import annotations

import http.client
import json
import math
import os
import resource
import shutil
import signal
import socket
import sqlite3
import subprocess
import sys
import time
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

BENCH = Path(__file__).resolve().parent
REPO = BENCH.parent

CREATE_BODY = {
    "amount_fgc": "12.50",
    "currency": "FGC",
    "description": "bench",
    "success_url": "https://shop.example/ok",
    "cancel_url": "https://shop.example/cancel",
}
CREATE_PATH = "/api/v1/checkout/sessions"


def log(message: str) -> None:
    print(f"[{time.strftime('%H:%M:%S')}] {message}", flush=True)


def tool(name: str) -> str:
    """A console script of the project's virtualenv (next to this interpreter first)."""
    for candidate in (Path(sys.executable).parent / name, REPO / ".venv" / "bin" / name):
        if candidate.exists():
            return str(candidate)
    found = shutil.which(name)
    if found is None:
        raise SystemExit(f"bench: {name} not found (run with the project's .venv/bin/python)")
    return found


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def machine_busy_seconds() -> float:
    """CPU seconds the whole machine has spent busy (all CPUs), from /proc/stat."""
    fields = [int(x) for x in Path("/proc/stat").read_text().split("\n", 1)[0].split()[1:]]
    idle = fields[3] + (fields[4] if len(fields) > 4 else 0)  # idle + iowait
    return (sum(fields[:8]) - idle) / os.sysconf("SC_CLK_TCK")


def children_cpu_seconds() -> float:
    usage = resource.getrusage(resource.RUSAGE_CHILDREN)
    return usage.ru_utime + usage.ru_stime


def loadavg() -> str:
    try:
        return " ".join(Path("/proc/loadavg").read_text().split()[:3])
    except OSError:
        return "?"


# -- processes ------------------------------------------------------------------------


def _proc_table() -> dict[int, tuple[int, int]]:
    """pid -> (ppid, utime+stime ticks) for every process we can read."""
    table: dict[int, tuple[int, int]] = {}
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        try:
            text = Path(f"/proc/{entry}/stat").read_text()
        except OSError:
            continue
        rest = text.rsplit(")", 1)[1].split()
        # fields after the comm: state ppid ... utime(14th overall -> rest[11]) stime(rest[12])
        table[int(entry)] = (int(rest[1]), int(rest[11]) + int(rest[12]))
    return table


def process_tree(root: int) -> list[int]:
    table = _proc_table()
    children: dict[int, list[int]] = {}
    for pid, (ppid, _) in table.items():
        children.setdefault(ppid, []).append(pid)
    found, todo = [], [root]
    while todo:
        pid = todo.pop()
        if pid in table:
            found.append(pid)
            todo.extend(children.get(pid, []))
    return found


def tree_cpu_seconds(root: int | None) -> float:
    if root is None:
        return 0.0
    table = _proc_table()
    ticks = sum(table[pid][1] for pid in process_tree(root) if pid in table)
    return ticks / os.sysconf("SC_CLK_TCK")


def cmdline(pid: int) -> str:
    try:
        return (
            Path(f"/proc/{pid}/cmdline").read_bytes().replace(b"\0", b" ").decode(errors="replace")
        )
    except OSError:
        return ""


def rss_mib(pid: int) -> float:
    """A process's resident memory in MiB (0 once it is gone)."""
    try:
        for line in Path(f"/proc/{pid}/status").read_text().splitlines():
            if line.startswith("VmRSS:"):
                return int(line.split()[1]) / 1024
    except OSError:
        pass
    return 0.0


@dataclass
class Server:
    """A server subprocess we started (its own process group), bound to 127.0.0.1."""

    name: str
    argv: list[str]
    env: dict[str, str]
    cwd: Path
    port: int
    workers: int
    ready_path: str
    log_dir: Path
    proc: subprocess.Popen[bytes] | None = None
    log_path: Path | None = None
    ready_at: float | None = None

    def start(self) -> None:
        self.log_path = self.log_dir / f"{self.name}.log"
        out = open(self.log_path, "ab")
        self.proc = subprocess.Popen(
            self.argv, env=self.env, cwd=self.cwd, stdout=out, stderr=subprocess.STDOUT,
            start_new_session=True,
        )  # fmt: skip
        out.close()
        deadline = time.monotonic() + 90
        while time.monotonic() < deadline:
            if self.proc.poll() is not None:
                raise RuntimeError(
                    f"{self.name} exited with {self.proc.returncode}:\n{self.tail()}"
                )
            try:
                conn = http.client.HTTPConnection("127.0.0.1", self.port, timeout=2)
                conn.request("GET", self.ready_path)
                status = conn.getresponse().status
                conn.close()
                if status == 200:
                    self.ready_at = time.perf_counter()  # the clock of bench/minihttp.py
                    # let every worker finish starting (they share one listening socket)
                    time.sleep(1.0 if self.workers > 1 else 0.2)
                    return
            except OSError:
                pass
            time.sleep(0.1)
        raise RuntimeError(f"{self.name} not ready after 90 s:\n{self.tail()}")

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    def tail(self, lines: int = 30) -> str:
        if self.log_path is None or not self.log_path.exists():
            return ""
        return "\n".join(self.log_path.read_text(errors="replace").splitlines()[-lines:])

    def cpu_seconds(self) -> float:
        return tree_cpu_seconds(self.proc.pid if self.proc else None)

    def worker_pids(self) -> list[int]:
        """The processes that serve requests (not supervisors or resource trackers)."""
        if self.proc is None:
            return []
        tree = process_tree(self.proc.pid)
        workers = [p for p in tree if p != self.proc.pid and "spawn_main" in cmdline(p)]
        return workers or [self.proc.pid]

    def stop(self) -> None:
        if self.proc is None or self.proc.poll() is not None:
            return
        self.proc.send_signal(signal.SIGTERM)
        try:
            self.proc.wait(timeout=30)
        except subprocess.TimeoutExpired:
            os.killpg(self.proc.pid, signal.SIGKILL)  # the group we created for it
            self.proc.wait(timeout=10)


def ledger_verify(env: dict[str, str], cwd: Path) -> int:
    """`fgcpay ledger verify`'s exit status (0: every total agrees with the ledger)."""
    argv = [tool("fgcpay"), "ledger", "verify"]
    return subprocess.run(argv, env=env, cwd=cwd, capture_output=True, check=False).returncode


def sh_json(argv: list[str], env: dict[str, str], cwd: Path) -> dict[str, Any]:
    done = subprocess.run(argv, env=env, cwd=cwd, capture_output=True, text=True, timeout=120)
    if done.returncode != 0:
        raise RuntimeError(f"{' '.join(argv)} failed:\n{done.stdout}\n{done.stderr}")
    result: dict[str, Any] = json.loads(done.stdout.strip().splitlines()[-1])
    return result


def self_cpu_seconds() -> float:
    """CPU time of this process (all its threads)."""
    usage = resource.getrusage(resource.RUSAGE_SELF)
    return usage.ru_utime + usage.ru_stime


# -- a shared machine ------------------------------------------------------------------

QUIET = {"wait": 30.0, "threshold": 15.0, "tests_wait": 600.0}
TEST_MARKER = "pytest"


def _ancestors() -> set[int]:
    pids, pid = set(), os.getpid()
    table = _proc_table()
    while pid > 1 and pid not in pids:
        pids.add(pid)
        pid = table.get(pid, (1, 0))[0]
    return pids


def test_suite_pids() -> list[int]:
    """Processes whose command line mentions the test runner (as `pgrep -f` would find
    them), other than this process and its ancestors."""
    mine = _ancestors()
    found = []
    for entry in os.listdir("/proc"):
        if entry.isdigit() and int(entry) not in mine and TEST_MARKER in cmdline(int(entry)):
            found.append(int(entry))
    return found


def wait_for_test_suite() -> float:
    """Another engineer runs the test suite on this machine: before a measurement, wait
    (polling every 3 s, at most QUIET["tests_wait"] s) until it has finished. Returns the
    seconds waited."""
    started = time.monotonic()
    announced = False
    while True:
        pids = test_suite_pids()
        if not pids:
            return time.monotonic() - started
        waited = time.monotonic() - started
        if waited > QUIET["tests_wait"]:
            log(
                f"a test run is still going after {waited:.0f} s (pids {pids[:4]}); measuring anyway"
            )
            return waited
        if not announced:
            log(f"a test run is going (pids {pids[:4]}); waiting for it to finish")
            announced = True
        time.sleep(3.0)


def wait_for_quiet() -> None:
    """Before a run: wait for another test run to finish, then (at most QUIET["wait"] s)
    until the machine is nearly idle, so that other work does not end up in the figures."""
    if QUIET["tests_wait"] > 0:
        wait_for_test_suite()
    if QUIET["wait"] <= 0:
        return
    deadline = time.monotonic() + QUIET["wait"]
    cpus = os.cpu_count() or 1
    while True:
        busy0 = machine_busy_seconds()
        time.sleep(1.0)
        pct = (machine_busy_seconds() - busy0) / cpus * 100
        if pct < QUIET["threshold"]:
            return
        if time.monotonic() > deadline:
            log(f"machine still {pct:.0f}% busy with other work; measuring anyway")
            return


@dataclass
class CpuWindow:
    """CPU accounting over one measured window: the server's process tree, the database
    server's, this process (the load generator / receiver) and its children, and what the
    rest of the machine used meanwhile (`other_pct`, share of all CPUs)."""

    server_pids: Sequence[int | None] = ()
    db_pid: int | None = None
    wall0: float = 0.0
    busy0: float = 0.0
    server0: float = 0.0
    db0: float = 0.0
    self0: float = 0.0
    children0: float = 0.0
    seconds: float = 0.0
    server_cpu: float = 0.0
    db_cpu: float = 0.0
    driver_cpu: float = 0.0
    other_pct: float = 0.0

    def _server(self) -> float:
        return sum(tree_cpu_seconds(pid) for pid in self.server_pids)

    def start(self) -> CpuWindow:
        self.wall0, self.busy0 = time.monotonic(), machine_busy_seconds()
        self.server0, self.db0 = self._server(), tree_cpu_seconds(self.db_pid)
        self.self0, self.children0 = self_cpu_seconds(), children_cpu_seconds()
        return self

    def stop(self) -> CpuWindow:
        wall1, busy1 = time.monotonic(), machine_busy_seconds()
        self.seconds = wall1 - self.wall0
        self.server_cpu = self._server() - self.server0
        self.db_cpu = tree_cpu_seconds(self.db_pid) - self.db0
        self.driver_cpu = (self_cpu_seconds() - self.self0) + (
            children_cpu_seconds() - self.children0
        )
        ours = self.server_cpu + self.db_cpu + self.driver_cpu
        capacity = self.seconds * (os.cpu_count() or 1)
        self.other_pct = max(0.0, (busy1 - self.busy0) - ours) / capacity * 100 if capacity else 0.0
        return self

    def describe(self, count: int | None = None, unit: str = "op") -> str:
        text = (
            f"server cpu {self.server_cpu:.1f} s ({self.server_cpu / self.seconds * 100:.0f}% of one core)"
            if self.seconds
            else "server cpu -"
        )
        if count:
            text += f", {self.server_cpu * 1000 / count:.2f} ms/{unit}"
            if self.db_pid:
                text += f" +pg {self.db_cpu * 1000 / count:.2f}"
        text += f"; driver cpu {self.driver_cpu:.1f} s; other {self.other_pct:.0f}%"
        return text

    def as_dict(self) -> dict[str, float]:
        return {
            "seconds": self.seconds, "server_cpu_s": self.server_cpu, "db_cpu_s": self.db_cpu,
            "driver_cpu_s": self.driver_cpu, "other_cpu_pct": self.other_pct,
        }  # fmt: skip


# -- numbers ---------------------------------------------------------------------------


def percentile(values: Sequence[float], pct: float) -> float:
    """Nearest-rank percentile (p99 of 500 values is the 495th smallest)."""
    if not values:
        return math.nan
    ordered = sorted(values)
    rank = max(1, math.ceil(pct / 100 * len(ordered)))
    return ordered[rank - 1]


def summary_ms(values_s: Sequence[float]) -> dict[str, float]:
    """p50/p90/p99/max/mean in milliseconds of durations given in seconds."""
    if not values_s:
        return {"n": 0}
    ms = [v * 1000 for v in values_s]
    return {
        "n": len(ms), "p50": percentile(ms, 50), "p90": percentile(ms, 90),
        "p99": percentile(ms, 99), "max": max(ms), "min": min(ms), "mean": sum(ms) / len(ms),
    }  # fmt: skip


def fmt_summary(s: dict[str, float]) -> str:
    if not s.get("n"):
        return "(no samples)"
    return (
        f"p50 {s['p50']:6.2f}  p90 {s['p90']:6.2f}  p99 {s['p99']:6.2f}  max {s['max']:7.2f}"
        f"  min {s['min']:5.2f} ms  (n={s['n']})"
    )


# -- the service -------------------------------------------------------------------------


def fgcpay_env(database_url: str, **extra: str) -> dict[str, str]:
    """The environment an operator would give `fgcpay` for a benchmark: the database, no
    rate limiting in the way, WARNING logs (no request log lines)."""
    env = {k: v for k, v in os.environ.items() if not k.startswith("FGCPAY_")}
    env.update(
        FGCPAY_DATABASE_URL=database_url,
        FGCPAY_RATE_LIMIT_PER_SECOND="1000000",
        FGCPAY_RATE_LIMIT_BURST="1000000",
        FGCPAY_LOG_LEVEL="WARNING",
    )
    env.update(extra)
    return env


def fgcpay_server(
    name: str, env: dict[str, str], cwd: Path, workers: int, log_dir: Path, patch: str | None = None
) -> Server:
    """`fgcpay serve --port P --workers N` (not started); with `patch`, the same command
    through `bench/patched_serve.py --patch <names>` (A/B of suggested changes)."""
    port = free_port()
    command = [tool("fgcpay")]
    if patch:
        command = [sys.executable, str(BENCH / "patched_serve.py"), "--patch", patch]
    argv = [*command, "serve", "--port", str(port), "--workers", str(workers)]
    return Server(name, argv, env, cwd, port, workers, "/readyz", log_dir)


def create_merchant(env: dict[str, str], cwd: Path) -> tuple[str, str]:
    """`fgcpay merchant create`; returns (merchant_id, api_key)."""
    merchant = sh_json(
        [tool("fgcpay"), "merchant", "create", "--name", "Bench", "--email", "bench@example.com"],
        env, cwd,
    )  # fmt: skip
    return merchant["merchant_id"], merchant["api_key"]


# -- the service's database --------------------------------------------------------------


@contextmanager
def service_database(backend: str, work: Path, name: str) -> Iterator[tuple[str, int | None]]:
    """The database a benchmark's service runs on: a SQLite file in `work`, or database
    `name` on a durable throwaway PostgreSQL cluster (`bench/pg_durable.py`), stopped on
    exit. Yields its URL and PostgreSQL's postmaster pid (None for SQLite)."""
    if backend == "sqlite":
        yield f"sqlite:///{work}/{name}.sqlite3", None
        return
    from pg_durable import start_durable_cluster

    cluster = start_durable_cluster()
    try:
        cluster.psql(f"CREATE DATABASE {name}")
        yield cluster.url(name), cluster.postmaster_pid()
    finally:
        cluster.stop()


class Db:
    """The service's database, from this process: SQLite or PostgreSQL, `?` placeholders."""

    def __init__(self, url: str) -> None:
        self.pg = not url.startswith("sqlite")
        if self.pg:
            import psycopg

            self.conn: Any = psycopg.connect(url, autocommit=True)
        else:
            self.conn = sqlite3.connect(
                url.split("///", 1)[1], isolation_level=None, check_same_thread=False
            )
            self.conn.execute("PRAGMA busy_timeout=30000")

    def value(self, sql: str, *args: Any) -> Any:
        return self.conn.execute(sql.replace("?", "%s") if self.pg else sql, args).fetchone()[0]

    def load(self, tables: list[tuple[str, str, list[tuple[Any, ...]]]]) -> None:
        """Insert every row in one transaction (COPY on PostgreSQL; tables in the order given,
        one table more than once if its foreign keys need it), then ANALYZE the tables loaded."""
        if self.pg:
            with self.conn.cursor() as cur, self.conn.transaction():
                for table, columns, rows in tables:
                    with cur.copy(f"COPY {table} ({columns}) FROM STDIN") as copy:
                        for row in rows:
                            copy.write_row(row)
            # As after any bulk load, the tables loaded; not the whole database: that
            # would record the still empty `events` and `deliveries` as empty, and until
            # autovacuum's next analyze (in the renewal burst, a minute or more into it)
            # the planner would look their rows up by sequential scan (seen: 9,943 rows
            # scanned per delivery claimed, most of PostgreSQL's CPU).
            self.conn.execute(f"ANALYZE {', '.join(dict.fromkeys(t for t, _, _ in tables))}")
            return
        self.conn.execute("BEGIN IMMEDIATE")
        for table, columns, rows in tables:
            marks = ", ".join("?" for _ in columns.split(","))
            self.conn.executemany(f"INSERT INTO {table} ({columns}) VALUES ({marks})", rows)
        self.conn.execute("COMMIT")
        for table in dict.fromkeys(t for t, _, _ in tables):
            self.conn.execute(f"ANALYZE {table}")
