"""What every scenario shares: the machine (CPU and RSS from /proc, waiting for a quiet
machine), the service started as an operator starts it (`fgcpay serve` in a temporary
directory on 127.0.0.1), its database (a SQLite file, or a database on one durable
throwaway PostgreSQL cluster per run), bulk loads into it, and wrk.

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
import tempfile
import time
from collections.abc import AsyncIterator, Sequence
from contextlib import AbstractAsyncContextManager, asynccontextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import trio

BENCH = Path(__file__).resolve().parent
REPO = BENCH.parent
TICK = os.sysconf("SC_CLK_TCK")
CREATE_PATH = "/api/v1/checkout/sessions"
CREATE_BODY = {
    "amount_fgc": "12.50", "currency": "FGC", "description": "bench",
    "success_url": "https://shop.example/ok", "cancel_url": "https://shop.example/cancel",
}  # fmt: skip


def log(message: str) -> None:
    print(f"[{time.strftime('%H:%M:%S')}] {message}", file=sys.stderr, flush=True)


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


def percentile(values: Sequence[float], pct: float) -> float:
    """Nearest rank: p99 of 500 values is the 495th smallest."""
    if not values:
        return math.nan
    ordered = sorted(values)
    return ordered[max(1, math.ceil(pct / 100 * len(ordered))) - 1]


# -- the machine -------------------------------------------------------------------------


def _proc_table() -> dict[int, tuple[int, int]]:
    """pid -> (ppid, utime + stime ticks) of every process we can read."""
    table = {}
    for entry in os.listdir("/proc"):
        if entry.isdigit():
            try:
                rest = Path(f"/proc/{entry}/stat").read_text().rsplit(")", 1)[1].split()
            except OSError:
                continue
            table[int(entry)] = (int(rest[1]), int(rest[11]) + int(rest[12]))
    return table


def process_tree(root: int, table: dict[int, tuple[int, int]] | None = None) -> list[int]:
    table = table or _proc_table()
    found, todo = [], [root]
    while todo:
        pid = todo.pop()
        if pid in table:
            found.append(pid)
            todo.extend(p for p, (ppid, _) in table.items() if ppid == pid)
    return found


def tree_cpu(root: int | None) -> float:
    """CPU seconds of a process and its descendants (0 for None)."""
    if root is None:
        return 0.0
    table = _proc_table()
    return sum(table[p][1] for p in process_tree(root, table)) / TICK


def machine_busy() -> float:
    """CPU seconds the whole machine has spent busy, all CPUs (idle and iowait excluded)."""
    fields = [int(x) for x in Path("/proc/stat").read_text().split("\n", 1)[0].split()[1:9]]
    return (sum(fields) - fields[3] - fields[4]) / TICK


def own_cpu() -> float:
    """This process's CPU and its finished children's (wrk, the fgcpay commands)."""
    me, kids = (resource.getrusage(w) for w in (resource.RUSAGE_SELF, resource.RUSAGE_CHILDREN))
    return me.ru_utime + me.ru_stime + kids.ru_utime + kids.ru_stime


def rss_mib(pid: int) -> float:
    """A process's resident memory (0 once it is gone)."""
    try:
        status = Path(f"/proc/{pid}/status").read_text()
    except OSError:
        return 0.0
    return next(
        (int(x.split()[1]) / 1024 for x in status.splitlines() if x.startswith("VmRSS:")), 0.0
    )


def cmdline(pid: int) -> str:
    try:
        return Path(f"/proc/{pid}/cmdline").read_bytes().replace(b"\0", b" ").decode()
    except OSError:
        return ""


def loadavg() -> str:
    return " ".join(Path("/proc/loadavg").read_text().split()[:3])


@dataclass
class Window:
    """CPU over one measured window: the service's process tree, PostgreSQL's, this driver
    (with its children), and `other`: what the rest of the machine used meanwhile, as a
    share of all its CPUs (a figure taken while `other` is high is disturbed)."""

    server: int | None = None
    db: int | None = None
    t0: float = 0.0
    marks: tuple[float, float, float, float] = (0.0, 0.0, 0.0, 0.0)
    seconds: float = 0.0
    server_cpu: float = 0.0
    db_cpu: float = 0.0
    driver_cpu: float = 0.0
    other_pct: float = 0.0

    def _read(self) -> tuple[float, float, float, float]:
        return tree_cpu(self.server), tree_cpu(self.db), own_cpu(), machine_busy()

    def __enter__(self) -> Window:
        self.t0, self.marks = time.monotonic(), self._read()
        return self

    def __exit__(self, *exc: object) -> None:
        now = self._read()
        self.seconds = time.monotonic() - self.t0
        self.server_cpu, self.db_cpu, self.driver_cpu, busy = (
            b - a for a, b in zip(self.marks, now, strict=True)
        )
        ours = self.server_cpu + self.db_cpu + self.driver_cpu
        capacity = self.seconds * (os.cpu_count() or 1)
        self.other_pct = max(0.0, busy - ours) / capacity * 100 if capacity else 0.0
        OTHERS.append(self.other_pct)

    def per(self, count: int) -> str:
        """Service CPU per operation in ms, `+pg` PostgreSQL's."""
        text = f"{self.server_cpu * 1000 / max(count, 1):.2f}"
        return text + (f" +pg {self.db_cpu * 1000 / max(count, 1):.2f}" if self.db else "")


OTHERS: list[float] = []  # `other` of every window, for the machine line
QUIET = {"tests_wait": 600.0, "wait": 30.0, "threshold": 15.0}


def _test_runs() -> list[int]:
    """Processes whose command line mentions pytest (another engineer's test suite), but
    not this process or its ancestors."""
    table, mine, pid = _proc_table(), set(), os.getpid()
    while pid > 1 and pid not in mine:
        mine.add(pid)
        pid = table.get(pid, (1, 0))[0]
    return [p for p in table if p not in mine and "pytest" in cmdline(p)]


def wait_for_quiet() -> None:
    """Before a measured part: wait (at most QUIET["tests_wait"] s) for a test run on
    this machine to end, then (at most QUIET["wait"] s) for the CPUs to be nearly idle."""
    started, said = time.monotonic(), False
    while QUIET["tests_wait"] > 0 and (runs := _test_runs()):
        if time.monotonic() - started > QUIET["tests_wait"]:
            log(f"a test run is still going (pids {runs[:4]}); measuring anyway")
            break
        if not said:
            log(f"a test run is going (pids {runs[:4]}); waiting for it to end")
            said = True
        time.sleep(3.0)
    deadline = time.monotonic() + QUIET["wait"]
    while QUIET["wait"] > 0:
        busy = machine_busy()
        time.sleep(1.0)
        pct = (machine_busy() - busy) / (os.cpu_count() or 1) * 100
        if pct < QUIET["threshold"]:
            return
        if time.monotonic() > deadline:
            log(f"machine still {pct:.0f}% busy with other work; measuring anyway")
            return


async def quiet() -> None:
    await trio.to_thread.run_sync(wait_for_quiet)


# -- servers -----------------------------------------------------------------------------


@dataclass
class Server:
    """A server subprocess in its own process group, on 127.0.0.1:port."""

    name: str
    argv: list[str]
    env: dict[str, str]
    cwd: Path
    port: int
    ready_path: str = "/readyz"
    proc: subprocess.Popen[bytes] | None = None
    ready_at: float | None = None

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    @property
    def pid(self) -> int | None:
        return self.proc.pid if self.proc else None

    @property
    def log_path(self) -> Path:
        return self.cwd / f"{self.name}.log"

    def start(self) -> None:
        with open(self.log_path, "ab") as out:
            self.proc = subprocess.Popen(
                self.argv, env=self.env, cwd=self.cwd, stdout=out, stderr=subprocess.STDOUT,
                start_new_session=True,
            )  # fmt: skip
        deadline = time.monotonic() + 90
        while time.monotonic() < deadline:
            if self.proc.poll() is not None:
                raise RuntimeError(f"{self.name} exited {self.proc.returncode}:\n{self.tail()}")
            try:
                conn = http.client.HTTPConnection("127.0.0.1", self.port, timeout=2)
                conn.request("GET", self.ready_path)
                if conn.getresponse().status == 200:
                    self.ready_at = time.perf_counter()  # minihttp's clock
                    conn.close()
                    # Workers share one listening socket: let every one finish starting.
                    time.sleep(1.0 if len(self.pids()) > 1 else 0.2)
                    return
                conn.close()
            except OSError:
                pass
            time.sleep(0.05)
        raise RuntimeError(f"{self.name} not ready after 90 s:\n{self.tail()}")

    def tail(self, lines: int = 30) -> str:
        text = self.log_path.read_text(errors="replace") if self.log_path.exists() else ""
        return "\n".join(text.splitlines()[-lines:])

    def pids(self) -> list[int]:
        """The processes that serve requests: the spawned workers, or the one process."""
        if self.proc is None:
            return []
        tree = process_tree(self.proc.pid)
        workers = [p for p in tree if p != self.proc.pid and "spawn_main" in cmdline(p)]
        return workers or [self.proc.pid]

    def all_pids(self) -> list[int]:
        """Every process of the service (supervisor, workers, resource tracker)."""
        return process_tree(self.proc.pid) if self.proc else []

    def stop(self) -> None:
        if self.proc is None or self.proc.poll() is not None:
            return
        self.proc.send_signal(signal.SIGTERM)
        try:
            self.proc.wait(timeout=30)
        except subprocess.TimeoutExpired:
            os.killpg(self.proc.pid, signal.SIGKILL)  # the group we created for it
            self.proc.wait(timeout=10)


@asynccontextmanager
async def running(server: Server) -> AsyncIterator[Server]:
    await trio.to_thread.run_sync(server.start)
    try:
        yield server
    finally:
        await trio.to_thread.run_sync(server.stop)


def echo_server(cwd: Path, workers: int) -> Server:
    """The ceiling: bench/echo_app.py on hypercorn's trio worker, with the settings
    `fgcpay serve` gives hypercorn (keep-alive 5 s, backlog 1024, no access log). Imported
    from bench/ alone: the repository root's `http/` is not the standard library's."""
    port = free_port()
    argv = [tool("hypercorn"), "--worker-class", "trio", "--workers", str(workers),
            "--bind", f"127.0.0.1:{port}", "--keep-alive", "5", "--backlog", "1024",
            "echo_app:app"]  # fmt: skip
    env = {k: v for k, v in os.environ.items() if not k.startswith("FGCPAY_")}
    return Server(f"echo-{workers}w", argv, env | {"PYTHONPATH": str(BENCH)}, cwd, port, "/")


# -- the database ------------------------------------------------------------------------


class Db:
    """The service's database from the driver: SQLite or PostgreSQL, `?` placeholders."""

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
        """Every row in one transaction (COPY on PostgreSQL; tables in the order given, one
        more than once if its foreign keys need it), then ANALYZE of the tables loaded:
        not the whole database, which would record the still empty `events` and
        `deliveries` as empty, and the planner would then scan them (seen: 9,943 rows read
        per delivery claimed, until autovacuum analyzed them again a minute later)."""
        names = ", ".join(dict.fromkeys(t for t, _, _ in tables))
        if self.pg:
            with self.conn.cursor() as cur, self.conn.transaction():
                for table, columns, rows in tables:
                    with cur.copy(f"COPY {table} ({columns}) FROM STDIN") as copy:
                        for row in rows:
                            copy.write_row(row)
            self.conn.execute(f"ANALYZE {names}")
            self.conn.execute("CHECKPOINT")  # the load flushed now, not during the measurement
            return
        self.conn.execute("BEGIN IMMEDIATE")
        for table, columns, rows in tables:
            marks = ", ".join("?" for _ in columns.split(","))
            self.conn.executemany(f"INSERT INTO {table} ({columns}) VALUES ({marks})", rows)
        self.conn.execute("COMMIT")
        for name in names.split(", "):
            self.conn.execute(f"ANALYZE {name}")
        self.conn.execute("PRAGMA wal_checkpoint(TRUNCATE)")

    def close(self) -> None:
        self.conn.close()


def durable_cluster() -> Any:
    """A throwaway PostgreSQL cluster like the tests' (`tests/pg_cluster.py`: temporary
    directory, free port, 127.0.0.1, the `postgres` user as root) but durable as in
    production: initdb syncs, and fsync, synchronous_commit and full_page_writes are on
    (the test cluster turns all three off). Never loosened for a benchmark."""
    sys.path.insert(0, str(REPO / "tests"))
    from pg_cluster import PgCluster, find_pg_bin

    class Durable(PgCluster):
        def start(self) -> None:
            self._run(str(self.bin_dir / "initdb"), "-D", str(self.data_dir), "-U", "fgcpay",
                      "--auth=trust", "--encoding=UTF8")  # fmt: skip
            options = (
                f"-c listen_addresses=127.0.0.1 -c port={self.port} "
                f"-c unix_socket_directories={self.root} {DURABLE} "
                "-c max_connections=100 -c shared_buffers=256MB"
            )
            self._run(str(self.bin_dir / "pg_ctl"), "-D", str(self.data_dir), "-o", options,
                      "-l", str(self.root / "server.log"), "-w", "-t", "60", "start")  # fmt: skip

        def postmaster_pid(self) -> int:
            return int((self.data_dir / "postmaster.pid").read_text().split("\n", 1)[0])

    bin_dir = find_pg_bin()
    if bin_dir is None:
        raise SystemExit("bench: no PostgreSQL server binaries; apt-get install -y postgresql")
    root = Path(tempfile.mkdtemp(prefix="fgcpay-bench-pg-"))
    run_as = None
    if os.geteuid() == 0:  # PostgreSQL refuses to run as root
        run_as = "postgres"
        shutil.chown(root, user=run_as)
        os.chmod(root, 0o700)
    cluster = Durable(bin_dir=bin_dir, root=root, port=free_port(), run_as=run_as)
    cluster.start()
    return cluster


DURABLE = "-c fsync=on -c synchronous_commit=on -c full_page_writes=on"


# -- the service -------------------------------------------------------------------------


@dataclass
class Backend:
    """One backend's fresh database for one scenario, and the `fgcpay` commands on it."""

    name: str  # "sqlite" or "postgres"
    url: str
    cwd: Path
    workers: int
    db_pid: int | None = None
    fgcpay: str = field(default_factory=lambda: tool("fgcpay"))

    @property
    def label(self) -> str:
        return {"sqlite": "SQLite", "postgres": "PostgreSQL"}[self.name]

    def env(self, **extra: str) -> dict[str, str]:
        """What an operator would set for a benchmark: the database, rate limits out of
        the way, warnings only (a scenario that measures with the request log sets
        FGCPAY_LOG_LEVEL=INFO), a loopback webhook receiver allowed."""
        ours = {
            "DATABASE_URL": self.url,
            "RATE_LIMIT_PER_SECOND": "1000000",
            "RATE_LIMIT_BURST": "1000000",
            "LOG_LEVEL": "WARNING",
            "WEBHOOK_ALLOW_PRIVATE": "1",
        }
        env = {k: v for k, v in os.environ.items() if not k.startswith("FGCPAY_")}
        return env | {f"FGCPAY_{k}": v for k, v in ours.items()} | extra  # fmt: skip

    def command(self, *args: str, check: bool = True) -> Any:
        """`fgcpay <args>`: its last line of output as JSON (with check=False, whether it
        exited 0)."""
        done = subprocess.run([self.fgcpay, *args], env=self.env(), cwd=self.cwd,
                              capture_output=True, text=True, timeout=300)  # fmt: skip
        if not check:
            return done.returncode == 0
        if done.returncode != 0:
            raise RuntimeError(f"fgcpay {' '.join(args)}: {done.stdout}{done.stderr}")
        return json.loads(done.stdout.strip().splitlines()[-1])

    def merchant(self, n: int = 0, password: str | None = None) -> tuple[str, str]:
        """`fgcpay merchant create`: (merchant id, API key)."""
        extra = ["--password", password] if password else []
        made = self.command("merchant", "create", "--name", f"Shop {n}", "--email",
                            f"shop{n}@example.com", *extra)  # fmt: skip
        return made["merchant_id"], made["api_key"]

    def ledger_ok(self) -> bool:
        """`fgcpay ledger verify`: every running total agrees with the ledger."""
        return bool(self.command("ledger", "verify", check=False))

    def server(self, tag: str = "fgcpay", workers: int | None = None, **env: str) -> Server:
        """`fgcpay serve --port P --workers N` (not started)."""
        port = free_port()
        argv = [
            self.fgcpay,
            "serve",
            "--port",
            str(port),
            "--workers",
            str(workers or self.workers),
        ]
        return Server(tag, argv, self.env(**env), self.cwd, port)  # fmt: skip

    def serve(
        self, tag: str = "fgcpay", workers: int | None = None, **env: str
    ) -> AbstractAsyncContextManager[Server]:
        """The same, started; stopped (SIGTERM) on leaving."""
        return running(self.server(tag, workers, **env))
