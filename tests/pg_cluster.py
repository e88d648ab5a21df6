"""A throwaway PostgreSQL cluster for the tests, started from the installed server binaries.

initdb + pg_ctl into a temporary directory, a free port, listening on 127.0.0.1 only.
PostgreSQL refuses to run as root, so as root (CI) the cluster runs as the `postgres`
system user that Debian's package creates.
"""

from __future__ import annotations

import glob
import os
import shutil
import socket
import subprocess
import tempfile
from pathlib import Path

import attrs


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

    def stop_server(self) -> None:
        """Stop PostgreSQL as an outage would, keeping its data (`start_server` resumes)."""
        pg_ctl = str(self.bin_dir / "pg_ctl")
        self._run(pg_ctl, "-D", str(self.data_dir), "-m", "immediate", "-w", "stop")

    def stop(self) -> None:
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


def start_cluster() -> PgCluster:
    """Start a cluster; raises FileNotFoundError when no PostgreSQL binaries exist."""
    bin_dir = find_pg_bin()
    if bin_dir is None:
        raise FileNotFoundError("no PostgreSQL server binaries (initdb, pg_ctl) found")
    root = Path(tempfile.mkdtemp(prefix="fgcpay-pg-"))
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
