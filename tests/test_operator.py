"""The operator's view: the `fgcpay` command, settings, shutdown and logs."""

from __future__ import annotations

import json
import os
import signal
import socket
import subprocess
import sys
import time
from pathlib import Path

import httpx
import pytest
from fgcpay.core.settings import ConfigError, load_settings
from helpers import wait_ready_blocking

FGCPAY = [sys.executable, "-m", "fgcpay.cli"]


def _env(tmp_path: Path, database_url: str, **extra: str) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("FGCPAY_")}
    env.update({"FGCPAY_DATABASE_URL": database_url, "FGCPAY_LOG_LEVEL": "INFO", **extra})
    return env


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def test_merchant_create_prints_id_and_key(tmp_path: Path, empty_database_url: str) -> None:
    result = subprocess.run(
        [
            *FGCPAY,
            "merchant",
            "create",
            "--name",
            "Acme",
            "--email",
            "ops@example.com",
            "--password",
            "long enough pw",
        ],
        cwd=tmp_path,
        env=_env(tmp_path, empty_database_url),
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert result.returncode == 0, result.stderr
    printed = json.loads(result.stdout)
    assert set(printed) == {"merchant_id", "api_key"}
    assert printed["merchant_id"].startswith("mer_") and len(printed["merchant_id"]) == 20
    assert printed["api_key"].startswith("fp_test_") and len(printed["api_key"]) == 40
    assert printed["api_key"] not in result.stderr
    again = subprocess.run(
        [*FGCPAY, "merchant", "create", "--name", "Acme", "--email", "OPS@example.com"],
        cwd=tmp_path,
        env=_env(tmp_path, empty_database_url),
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert again.returncode == 2  # the contract: every command fails with exit status 2
    assert "already exists" in again.stderr


def test_merchant_create_rejects_a_bad_email(tmp_path: Path) -> None:
    result = subprocess.run(
        [*FGCPAY, "merchant", "create", "--name", "Acme", "--email", "not-an-email"],
        cwd=tmp_path,
        env=_env(tmp_path, f"sqlite:///{tmp_path}/db.sqlite3"),
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert result.returncode == 2
    assert "invalid email" in result.stderr
    assert "Traceback" not in result.stderr


def test_migrate_twice_is_fine(tmp_path: Path, empty_database_url: str) -> None:
    for _ in range(2):
        result = subprocess.run(
            [*FGCPAY, "migrate"],
            cwd=tmp_path,
            env=_env(tmp_path, empty_database_url),
            capture_output=True,
            text=True,
            timeout=60,
        )
        assert result.returncode == 0, result.stderr


def _wait_ready(url: str, process: subprocess.Popen[str]) -> None:
    def alive() -> None:
        assert process.poll() is None, process.stderr.read() if process.stderr else ""

    # Polling a separate process that has no other way to say it is up.
    wait_ready_blocking(url, alive=alive)


@pytest.mark.parametrize("workers", [1, 2])
def test_serve_answers_and_exits_cleanly_on_sigterm(
    tmp_path: Path, empty_database_url: str, workers: int
) -> None:
    port = _free_port()
    created = subprocess.run(
        [*FGCPAY, "merchant", "create", "--name", "Acme", "--email", "s@example.com"],
        cwd=tmp_path,
        env=_env(tmp_path, empty_database_url),
        capture_output=True,
        text=True,
        timeout=60,
    )
    key = json.loads(created.stdout)["api_key"]
    process = subprocess.Popen(
        [*FGCPAY, "serve", "--port", str(port), "--workers", str(workers)],
        cwd=tmp_path,
        env=_env(tmp_path, empty_database_url, FGCPAY_SHUTDOWN_GRACE_SECONDS="3"),
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    try:
        url = f"http://127.0.0.1:{port}"
        _wait_ready(url, process)
        response = httpx.get(url + "/api/v1/nowhere", headers={"Authorization": f"Bearer {key}"})
        assert response.status_code == 404
        started = time.monotonic()
        process.send_signal(signal.SIGTERM)
        _, stderr = process.communicate(timeout=15)
        assert process.returncode == 0, stderr
        assert time.monotonic() - started < 3 + 2
    finally:
        if process.poll() is None:
            process.kill()
            process.communicate()
    assert key not in stderr
    lines = [json.loads(line) for line in stderr.splitlines() if line.startswith("{")]
    requests = [
        line for line in lines if line["msg"] == "request" and line["path"] == "/api/v1/nowhere"
    ]
    assert requests and requests[0]["merchant_id"].startswith("mer_")
    assert {"request_id", "method", "path", "status", "duration_ms"} <= set(requests[0])


def test_local_defaults_need_no_configuration(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(tmp_path)
    settings = load_settings({})
    assert settings.database_url == "sqlite:///var/fgcpay.sqlite3"
    assert settings.public_url == "http://127.0.0.1:8000"
    assert len(settings.secret_key) >= 32
    assert (tmp_path / "var" / "secret_key").stat().st_mode & 0o777 == 0o600
    assert load_settings({}).secret_key == settings.secret_key
    assert settings.secret_key not in repr(settings)


def test_production_refuses_to_start_without_a_secret(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(tmp_path)
    with pytest.raises(ConfigError, match="SECRET_KEY"):
        load_settings({"FGCPAY_ENV": "production"})
    result = subprocess.run(
        [*FGCPAY, "migrate"],
        cwd=tmp_path,
        env={**_env(tmp_path, "sqlite:///x.db"), "FGCPAY_ENV": "production"},
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert result.returncode == 2 and "FGCPAY_SECRET_KEY" in result.stderr


@pytest.mark.parametrize(
    ("name", "value"),
    [
        ("PORT", "eighty"),
        ("DATABASE_URL", "mysql://x"),
        ("PUBLIC_URL", "ftp://x"),
        ("WEBHOOK_ALLOW_PRIVATE", "maybe"),
    ],
)
def test_bad_configuration_is_named(
    name: str, value: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(tmp_path)
    with pytest.raises(ConfigError, match=name):
        load_settings({"FGCPAY_" + name: value})


def test_the_procfile_runs_as_written(tmp_path: Path, empty_database_url: str) -> None:
    """`release` then `web`, each run by a shell as a Procfile host does, with $PORT set."""
    procfile = dict(
        line.split(": ", 1)
        for line in (Path(__file__).parent.parent / "Procfile").read_text().splitlines()
        if ": " in line
    )
    assert set(procfile) == {"release", "web"}
    port = _free_port()
    bin_dir = str(Path(sys.executable).parent)
    # HOST keeps the test on loopback; a Procfile host leaves it unset (0.0.0.0).
    env = _env(
        tmp_path,
        empty_database_url,
        PORT=str(port),
        HOST="127.0.0.1",
        FGCPAY_SHUTDOWN_GRACE_SECONDS="3",
    )
    env["PATH"] = bin_dir + os.pathsep + env.get("PATH", "")
    release = subprocess.run(
        ["sh", "-c", procfile["release"]],
        cwd=tmp_path,
        env=env,
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert release.returncode == 0, release.stderr
    web = subprocess.Popen(
        ["sh", "-c", "exec " + procfile["web"]],
        cwd=tmp_path,
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    try:
        _wait_ready(f"http://127.0.0.1:{port}", web)
        started = time.monotonic()
        web.send_signal(signal.SIGTERM)
        _, stderr = web.communicate(timeout=15)
        assert web.returncode == 0, stderr
        assert time.monotonic() - started < 3 + 2
    finally:
        if web.poll() is None:
            web.kill()
            web.communicate()
