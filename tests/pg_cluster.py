"""A throwaway PostgreSQL cluster for the tests, started from the installed server binaries.

initdb + pg_ctl into a temporary directory, a free port, listening on 127.0.0.1 only.
PostgreSQL refuses to run as root, so as root (CI) the cluster runs as the `postgres`
system user that Debian's package creates.

The tests make a database each, hundreds in a run: `copy_database` copies a template over
a connection kept open (a psql process per statement costs tens of milliseconds), and
`drop_soon` drops a finished test's database on a thread of its own while the next test
runs, so that the cluster holds a few databases at a time, in memory where there is room
(`_memory_backed_dir`), and its removal at the end is quick.
"""

from __future__ import annotations

import contextlib
import glob
import os
import queue
import secrets
import shutil
import socket
import subprocess
import tempfile
import threading
from pathlib import Path
from typing import Any

import attrs
import psycopg


def find_pg_bin() -> Path | None:
    """The directory holding initdb and pg_ctl, or None when PostgreSQL is not installed."""
    explicit = os.environ.get("FGCPAY_TEST_PG_BIN")
    candidates = [explicit] if explicit else []
    candidates += sorted(glob.glob("/usr/lib/postgresql/*/bin"), reverse=True)
    on_path = shutil.which("pg_ctl")
    if on_path:
        candidates.append(str(Path(os.path.realpath(on_path)).parent))
    for candidate in candidates:
        if (
            candidate
            and (Path(candidate) / "initdb").exists()
            and (Path(candidate) / "pg_ctl").exists()
        ):
            return Path(candidate)
    return None


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


@attrs.define
class PgCluster:
    bin_dir: Path
    root: Path
    port: int
    run_as: str | None
    _admin: psycopg.Connection[Any] | None = attrs.field(default=None, init=False)
    _drops: queue.SimpleQueue[str | None] = attrs.field(factory=queue.SimpleQueue, init=False)
    _dropper: threading.Thread | None = attrs.field(default=None, init=False)

    @property
    def data_dir(self) -> Path:
        return self.root / "data"

    def url(self, database: str = "postgres") -> str:
        return f"postgresql://fgcpay@127.0.0.1:{self.port}/{database}"

    def _cmd(self, *args: str) -> list[str]:
        if self.run_as:
            return ["runuser", "-u", self.run_as, "--", *args]
        return list(args)

    def _run(self, *args: str) -> None:
        subprocess.run(self._cmd(*args), check=True, capture_output=True, timeout=120)

    def start(self) -> None:
        self._run(
            str(self.bin_dir / "initdb"),
            "-D",
            str(self.data_dir),
            "-U",
            "fgcpay",
            "--auth=trust",
            "--encoding=UTF8",
            "--no-sync",
        )
        self.start_server()

    def start_server(self) -> None:
        """Start PostgreSQL on the cluster's data (again, after `stop_server`)."""
        # Test clusters trade durability for speed; the service's own durability
        # settings are exercised on SQLite, where they are ours to choose.
        options = (
            f"-c listen_addresses=127.0.0.1 -c port={self.port} "
            f"-c unix_socket_directories={self.root} -c fsync=off "
            "-c synchronous_commit=off -c full_page_writes=off -c max_connections=300"
        )
        self._run(
            str(self.bin_dir / "pg_ctl"),
            "-D",
            str(self.data_dir),
            "-o",
            options,
            "-l",
            str(self.root / "server.log"),
            "-w",
            "-t",
            "60",
            "start",
        )

    def durable_database(self, name: str) -> str:
        """A new database that commits as a production one does; its URL.

        Test clusters run with synchronous_commit off, which acknowledges a commit before
        its WAL is written: an immediate stop (`stop_server`) loses it. A test that stops
        the cluster and then reads what was acknowledged needs this. A per-database setting
        wins over the server's command line; fsync stays off, since the host does not
        crash, only PostgreSQL stops.
        """
        self.psql(f"CREATE DATABASE {name}")
        self.psql(f"ALTER DATABASE {name} SET synchronous_commit = on")
        return self.url(name)

    def psql(self, sql: str, database: str = "postgres") -> None:
        self._run(
            str(self.bin_dir / "psql"),
            "-q",
            "-v",
            "ON_ERROR_STOP=1",
            "-d",
            self.url(database),
            "-c",
            sql,
        )

    def execute(self, sql: str) -> None:
        """Run one statement on the `postgres` database, over a connection kept open
        (opened again if a stop broke it)."""
        if self._admin is None or self._admin.closed or self._admin.broken:
            self._admin = psycopg.connect(self.url(), autocommit=True)
        self._admin.execute(sql.encode())

    def copy_database(self, template: str) -> str:
        """A new database copied from `template` (which no one may be connected to); its name.

        FILE_COPY copies the template's files, where the default (WAL_LOG) also writes
        every page of them to the WAL: a third of the time, and of the writing.
        """
        name = "t_" + secrets.token_hex(6)
        self.execute(f"CREATE DATABASE {name} TEMPLATE {template} STRATEGY FILE_COPY")
        return name

    def drop_soon(self, name: str) -> None:
        """Drop the database `name`, closing what is still connected to it, on the
        dropper thread: the caller does not wait, and a failure is left to `stop`, which
        removes every database with the cluster."""
        if self._dropper is None:
            self._dropper = threading.Thread(target=self._drop_each, name="pg-dropper")
            self._dropper.start()
        self._drops.put(name)

    def _drop_each(self) -> None:
        conn: psycopg.Connection[Any] | None = None
        while (name := self._drops.get()) is not None:
            try:
                if conn is None or conn.closed or conn.broken:
                    conn = psycopg.connect(self.url(), autocommit=True)
                conn.execute(f"DROP DATABASE IF EXISTS {name} WITH (FORCE)".encode())
            except psycopg.Error:
                pass  # the server is stopped, say: the database goes with the cluster
        if conn is not None:
            conn.close()

    def stop_server(self) -> None:
        """Stop PostgreSQL as an outage would, keeping its data (`start_server` resumes)."""
        pg_ctl = str(self.bin_dir / "pg_ctl")
        self._run(pg_ctl, "-D", str(self.data_dir), "-m", "immediate", "-w", "stop")

    def stop(self) -> None:
        if self._dropper is not None:
            # What is still queued goes with the cluster's directory, unless dropped first.
            with contextlib.suppress(queue.Empty):
                while True:
                    self._drops.get_nowait()
            self._drops.put(None)
            self._dropper.join(timeout=30)
        if self._admin is not None:
            self._admin.close()
        subprocess.run(
            self._cmd(
                str(self.bin_dir / "pg_ctl"),
                "-D",
                str(self.data_dir),
                "-m",
                "immediate",
                "-w",
                "stop",
            ),
            capture_output=True,
            timeout=60,
        )
        shutil.rmtree(self.root, ignore_errors=True)


# Room to ask of /dev/shm for a cluster: it holds the templates, the few databases of
# tests running or not yet dropped, and the WAL since the last checkpoint (which each
# CREATE DATABASE makes): some 60 MB during a run here, so this leaves a wide margin.
MEMORY_NEEDED = 512 << 20


def _memory_backed_dir() -> str | None:
    """/dev/shm (memory) where it has room to spare, else None (the default temporary
    directory). On this project's shared machine, creating a database's few hundred files
    on the disk took some 250 ms, in memory 10 ms. fsync is off anyway, so what a test
    cluster promises is the same either way."""
    shm = "/dev/shm"
    try:
        usable = os.access(shm, os.W_OK) and shutil.disk_usage(shm).free >= MEMORY_NEEDED
    except OSError:
        return None
    return shm if usable else None


def start_cluster() -> PgCluster:
    """Start a cluster; raises FileNotFoundError when no PostgreSQL binaries exist."""
    bin_dir = find_pg_bin()
    if bin_dir is None:
        raise FileNotFoundError("no PostgreSQL server binaries (initdb, pg_ctl) found")
    root = Path(tempfile.mkdtemp(prefix="fgcpay-pg-", dir=_memory_backed_dir()))
    run_as = None
    if os.geteuid() == 0:
        run_as = "postgres"
        shutil.chown(root, user=run_as)
        os.chmod(root, 0o700)
    cluster = PgCluster(bin_dir=bin_dir, root=root, port=_free_port(), run_as=run_as)
    try:
        cluster.start()
    except BaseException:
        shutil.rmtree(root, ignore_errors=True)
        raise
    return cluster
