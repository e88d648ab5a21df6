"""The probe in CI: schemathesis over the served OpenAPI document, on both backends.

`fgcpay serve` runs as a real process on loopback, a merchant is created with the
`fgcpay` command, and schemathesis loads GET /api/v1/openapi.json from the running
service and sends the merchant's key. Every operation gets its examples, coverage and
fuzzing cases, then a stateful run follows the links schemathesis infers between the
operations (create a session, then fetch it; create an endpoint, then rotate or delete
it; ...). The checks: no 5xx, every status code documented, the documented content type,
bodies that match their schema, and an answer within REQUEST_TIMEOUT seconds.

schemathesis runs as its own command (`python -m schemathesis.cli run`): its pytest
plugin's lazy loading does not work with this pytest, and the command runs every phase
(examples, coverage, fuzzing, stateful) as CI should. The run is reproducible: a fixed
seed, deterministic (derandomized) generation, no example database or cache, one worker.
The budget (README, Testing): at most MAX_EXAMPLES cases per operation and phase, 25 to
45 s per backend on 2 cores; the whole report lands in tests/artifacts/.
"""

from __future__ import annotations

import json
import os
import socket
import subprocess
import sys
from pathlib import Path

import pytest
from helpers import BACKENDS, fresh_postgres_database, wait_ready_blocking
from pg_cluster import PgCluster

FGCPAY = [sys.executable, "-m", "fgcpay.cli"]
SEED = 20261123
MAX_EXAMPLES = 25  # per operation; the coverage phase adds its own cases either way
REQUEST_TIMEOUT = 10.0
PROBE_TIMEOUT = 300  # a hung probe fails the test instead of CI's whole run
ARTIFACTS = Path(__file__).parent / "artifacts"  # the full report of the last run
CHECKS = (
    "not_a_server_error",
    "status_code_conformance",
    "content_type_conformance",
    "response_schema_conformance",
)


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def _env(database_url: str) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("FGCPAY_")}
    env.update(
        FGCPAY_DATABASE_URL=database_url,
        FGCPAY_LOG_LEVEL="WARNING",
        FGCPAY_SHUTDOWN_GRACE_SECONDS="2",
        # The probe sends thousands of requests a minute: a 429 is documented and fine,
        # but it would keep the cases from reaching the code under test.
        FGCPAY_RATE_LIMIT_PER_SECOND="100000",
        FGCPAY_RATE_LIMIT_BURST="1000000",
        FGCPAY_WEBHOOK_CHECK_SECONDS=CHECK_SECONDS,
    )
    return env


def _wait_ready(url: str, process: subprocess.Popen[bytes], log: Path) -> None:
    def alive() -> None:
        assert process.poll() is None, log.read_text()

    # Polling a separate process that has no other way to say it is up.
    wait_ready_blocking(url, alive=alive, log=log.read_text)


CONFIG = """\
# Written by tests/test_schemathesis.py: nothing carried over from an earlier run.
[cache]
enabled = false

[generation]
database = "none"
"""
# A receiver check of an endpoint whose URL accepts connections but never answers (a
# public address the sandbox's network takes and drops) waits out its bound: the probe's
# service bounds checks well under the probe's REQUEST_TIMEOUT.
CHECK_SECONDS = "4"


def _probe(cwd: Path, url: str, key: str) -> subprocess.CompletedProcess[str]:
    """`st run` over the served document: every phase, every operation, one worker."""
    config = cwd / "schemathesis.toml"
    config.write_text(CONFIG)
    return subprocess.run(
        [
            sys.executable, "-m", "schemathesis.cli", "--config-file", str(config), "run",
            url + "/api/v1/openapi.json",
            "--header", f"Authorization: Bearer {key}",
            "--checks", ",".join(CHECKS),
            "--phases", "examples,coverage,fuzzing,stateful",
            "--seed", str(SEED), "--generation-deterministic",
            "--max-examples", str(MAX_EXAMPLES),
            "--request-timeout", str(REQUEST_TIMEOUT),
            "--workers", "1", "--no-color",
        ],
        cwd=cwd, capture_output=True, text=True, timeout=PROBE_TIMEOUT,
    )  # fmt: skip


@pytest.mark.parametrize("backend", BACKENDS)
def test_schemathesis_finds_nothing(
    backend: str, tmp_path: Path, pg_cluster: PgCluster | None
) -> None:
    if backend == "sqlite":
        database_url = f"sqlite:///{tmp_path}/fgcpay.sqlite3"
    else:
        database_url = fresh_postgres_database(pg_cluster)
    env = _env(database_url)
    created = subprocess.run(
        [*FGCPAY, "merchant", "create", "--name", "Probe", "--email", "probe@example.com"],
        cwd=tmp_path, env=env, capture_output=True, text=True, timeout=60,
    )  # fmt: skip
    assert created.returncode == 0, created.stderr
    key = json.loads(created.stdout)["api_key"]
    port = _free_port()
    log = tmp_path / "serve.log"
    with log.open("wb") as sink:
        process = subprocess.Popen(
            [*FGCPAY, "serve", "--port", str(port)], cwd=tmp_path, env=env, stdout=sink, stderr=sink
        )
    try:
        url = f"http://127.0.0.1:{port}"
        _wait_ready(url, process, log)
        probe = _probe(tmp_path, url, key)
    finally:
        process.terminate()
        try:
            process.wait(timeout=15)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait()
    ARTIFACTS.mkdir(exist_ok=True)
    (ARTIFACTS / f"schemathesis-{backend}.txt").write_text(probe.stdout + probe.stderr)
    assert key not in probe.stdout + probe.stderr
    assert probe.returncode == 0, probe.stdout[-20_000:] + probe.stderr[-5_000:]
    assert "Traceback" not in log.read_text(), log.read_text()[-5_000:]
