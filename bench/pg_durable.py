"""A throwaway PostgreSQL cluster for the benchmark, with durable settings.

Built on `tests/pg_cluster.py` (same binaries lookup, temporary directory, free port,
127.0.0.1 only, `postgres` system user when run as root), but unlike the test cluster it
keeps PostgreSQL's durability: initdb syncs its files, and the server runs with
`fsync=on`, `synchronous_commit=on` and `full_page_writes=on` (the defaults), so every
acknowledged commit has been flushed to disk, as in production.
"""

from __future__ import annotations

import os
import shutil
import sys
import tempfile
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO / "tests"))

from pg_cluster import PgCluster, _free_port, find_pg_bin  # noqa: E402

DURABLE_OPTIONS = "-c fsync=on -c synchronous_commit=on -c full_page_writes=on"


class DurablePgCluster(PgCluster):  # type: ignore[misc]
    def start(self) -> None:
        self._run(
            str(self.bin_dir / "initdb"),
            "-D", str(self.data_dir),
            "-U", "fgcpay",
            "--auth=trust",
            "--encoding=UTF8",
        )  # fmt: skip
        options = (
            f"-c listen_addresses=127.0.0.1 -c port={self.port} "
            f"-c unix_socket_directories={self.root} {DURABLE_OPTIONS} "
            "-c max_connections=100 -c shared_buffers=256MB"
        )
        self._run(
            str(self.bin_dir / "pg_ctl"),
            "-D", str(self.data_dir),
            "-o", options,
            "-l", str(self.root / "server.log"),
            "-w", "-t", "60",
            "start",
        )  # fmt: skip

    def postmaster_pid(self) -> int | None:
        try:
            return int((self.data_dir / "postmaster.pid").read_text().split("\n", 1)[0])
        except (OSError, ValueError):
            return None


def start_durable_cluster() -> DurablePgCluster:
    """Start a durable cluster; raises FileNotFoundError when no PostgreSQL binaries exist."""
    bin_dir = find_pg_bin()
    if bin_dir is None:
        raise FileNotFoundError("no PostgreSQL server binaries (initdb, pg_ctl) found")
    root = Path(tempfile.mkdtemp(prefix="fgcpay-bench-pg-"))
    run_as = None
    if os.geteuid() == 0:
        run_as = "postgres"
        shutil.chown(root, user=run_as)
        os.chmod(root, 0o700)
    cluster = DurablePgCluster(bin_dir=bin_dir, root=root, port=_free_port(), run_as=run_as)
    try:
        cluster.start()
    except BaseException:
        shutil.rmtree(root, ignore_errors=True)
        raise
    return cluster
