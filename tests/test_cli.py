"""The `fgcpay` command as an operator meets it: merchants and keys, what it says about the
database and public URL it uses, production refusals, and one-line errors.

Every test runs the real command in a subprocess, from its own working directory.
"""

from __future__ import annotations

import json
import os
import signal
import socket
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from urllib.parse import urlsplit, urlunsplit

import httpx
import pytest
from helpers import wait_ready_blocking

FGCPAY = [sys.executable, "-m", "fgcpay.cli"]
SECRET = "s" * 40
PASSWORD = "hunter2-not-in-any-log"


def _env(database_url: str | None, **extra: str) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("FGCPAY_")}
    env.update({"FGCPAY_LOG_LEVEL": "INFO", "FGCPAY_SECRET_KEY": SECRET, **extra})
    if database_url is not None:
        env["FGCPAY_DATABASE_URL"] = database_url
    return env


def _run(
    cwd: Path, database_url: str | None, *args: str, **extra: str
) -> subprocess.CompletedProcess[str]:
    env = _env(database_url, **extra)
    return _run_env(cwd, env, *args)


def _run_env(cwd: Path, env: dict[str, str], *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [*FGCPAY, *args], cwd=cwd, env=env, capture_output=True, text=True, timeout=90
    )


def _ok(cwd: Path, database_url: str, *args: str) -> list[dict[str, object]]:
    result = _run(cwd, database_url, *args)
    assert result.returncode == 0, result.stderr
    return [json.loads(line) for line in result.stdout.splitlines()]


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def _shown(database_url: str) -> str:
    """What the first stderr line must name: SQLite's absolute path, PostgreSQL's URL."""
    if database_url.startswith("sqlite:///"):
        return "sqlite:///" + str(Path(database_url[len("sqlite:///") :]).resolve())
    return database_url


def _with_password(database_url: str) -> str:
    """The same database, its URL carrying a password (the test cluster trusts loopback)."""
    parts = urlsplit(database_url)
    netloc = f"{parts.username}:{PASSWORD}@{parts.hostname}:{parts.port}"
    return urlunsplit(parts._replace(netloc=netloc))


def _failure_lines(result: subprocess.CompletedProcess[str]) -> list[str]:
    """The stderr lines after the one naming the database, other than log lines (JSON,
    such as "migrations applied" before a port turns out to be taken)."""
    lines = result.stderr.splitlines()
    assert lines and lines[0].startswith("fgcpay: database "), result.stderr
    assert "Traceback" not in result.stderr
    return [line for line in lines[1:] if not line.startswith("{")]


def _merchant(cwd: Path, database_url: str, email: str = "owner@acme.test") -> tuple[str, str]:
    (created,) = _ok(cwd, database_url, "merchant", "create", "--name", "Acme", "--email", email)
    return str(created["merchant_id"]), str(created["api_key"])


class _Service:
    """`fgcpay serve` in its own process, on a free port."""

    def __init__(self, cwd: Path, database_url: str | None, *args: str, **extra: str) -> None:
        self.port = _free_port()
        self.url = f"http://127.0.0.1:{self.port}"
        self.process = subprocess.Popen(
            [*FGCPAY, "serve", "--port", str(self.port), *args],
            cwd=cwd,
            env=_env(database_url, FGCPAY_SHUTDOWN_GRACE_SECONDS="2", **extra),
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
        )

    def wait_ready(self) -> None:
        def alive() -> None:
            if self.process.poll() is not None:
                raise AssertionError(self.process.communicate()[1])

        # Polling another process that has no other way to say it is up.
        wait_ready_blocking(self.url, alive=alive)

    def stop(self) -> str:
        if self.process.poll() is None:
            self.process.send_signal(signal.SIGTERM)
        try:
            _, stderr = self.process.communicate(timeout=15)
        except subprocess.TimeoutExpired:
            self.process.kill()
            _, stderr = self.process.communicate()
        return stderr


@pytest.fixture
def service_factory(tmp_path: Path) -> Iterator[list[_Service]]:
    started: list[_Service] = []
    yield started
    for service in started:
        service.stop()


# -- merchants and keys -----------------------------------------------------------------


def test_merchant_list_prints_one_object_per_line(tmp_path: Path, database_url: str) -> None:
    first, _ = _merchant(tmp_path, database_url, "one@acme.test")
    second, _ = _merchant(tmp_path, database_url, "two@acme.test")
    listed = _ok(tmp_path, database_url, "merchant", "list")
    assert [m["id"] for m in listed] == [first, second]
    assert all(set(m) == {"id", "name", "email", "created_at"} for m in listed)
    assert listed[1]["email"] == "two@acme.test" and listed[1]["name"] == "Acme"
    assert str(listed[0]["created_at"]).endswith("Z")


def test_key_create_list_revoke(tmp_path: Path, database_url: str) -> None:
    merchant_id, first_key = _merchant(tmp_path, database_url)
    (created,) = _ok(
        tmp_path, database_url, "key", "create", "--merchant", merchant_id, "--name", "ci"
    )
    assert set(created) == {"id", "api_key"}
    raw = str(created["api_key"])
    assert str(created["id"]).startswith("key_") and raw.startswith("fp_test_") and len(raw) == 40

    listing = _run(tmp_path, database_url, "key", "list", "--merchant", merchant_id)
    assert listing.returncode == 0, listing.stderr
    assert raw not in listing.stdout and first_key not in listing.stdout
    keys = [json.loads(line) for line in listing.stdout.splitlines()]
    assert [k["id"] for k in keys][0] == created["id"]  # newest first
    assert len(keys) == 2
    fields = {"id", "name", "redacted_key", "created_at", "last_used_at", "revoked_at"}
    assert all(set(k) == fields for k in keys)
    assert keys[0]["name"] == "ci" and keys[1]["name"] is None
    assert keys[0]["redacted_key"] == f"{raw[:12]}...{raw[-4:]}"
    assert keys[0]["revoked_at"] is None

    revoke = ["key", "revoke", "--merchant", merchant_id, "--key", str(created["id"])]
    (revoked,) = _ok(tmp_path, database_url, *revoke)
    assert revoked["id"] == created["id"] and str(revoked["revoked_at"]).endswith("Z")
    listed = _ok(tmp_path, database_url, "key", "list", "--merchant", merchant_id)
    after = {k["id"]: k for k in listed}
    assert after[created["id"]]["revoked_at"] == revoked["revoked_at"]
    assert after[keys[1]["id"]]["revoked_at"] is None
    # Revoking again changes nothing and says when it was revoked.
    (again,) = _ok(tmp_path, database_url, *revoke)
    assert again == revoked


def test_key_commands_name_an_unknown_merchant_or_key(tmp_path: Path, database_url: str) -> None:
    merchant_id, _ = _merchant(tmp_path, database_url)
    other_id, _ = _merchant(tmp_path, database_url, "other@acme.test")
    (other_key,) = _ok(tmp_path, database_url, "key", "list", "--merchant", other_id)
    other_key_id = str(other_key["id"])
    for args, named in [
        (["key", "create", "--merchant", "mer_nope"], "mer_nope"),
        (["key", "list", "--merchant", "mer_nope"], "mer_nope"),
        (["key", "revoke", "--merchant", merchant_id, "--key", "key_nope"], "key_nope"),
        # Another merchant's key is not this merchant's to revoke.
        (["key", "revoke", "--merchant", merchant_id, "--key", other_key_id], other_key_id),
        (["key", "create", "--merchant", merchant_id, "--name", "x" * 201], "name"),
    ]:
        result = _run(tmp_path, database_url, *args)
        assert result.returncode == 2, (args, result.stderr)
        (line,) = _failure_lines(result)
        assert named in line and result.stdout == ""
    (still,) = _ok(tmp_path, database_url, "key", "list", "--merchant", other_id)
    assert still["revoked_at"] is None


def test_a_created_key_works_and_a_revoked_key_is_401_at_once(
    tmp_path: Path, database_url: str, service_factory: list[_Service]
) -> None:
    merchant_id, _ = _merchant(tmp_path, database_url)
    service = _Service(tmp_path, database_url)
    service_factory.append(service)
    service.wait_ready()
    (created,) = _ok(tmp_path, database_url, "key", "create", "--merchant", merchant_id)
    headers = {"Authorization": f"Bearer {created['api_key']}"}
    answered = httpx.get(service.url + "/api/v1/webhook_endpoints", headers=headers)
    assert answered.status_code == 200, answered.text
    revoke = ["key", "revoke", "--merchant", merchant_id, "--key", str(created["id"])]
    _ok(tmp_path, database_url, *revoke)
    refused = httpx.get(service.url + "/api/v1/webhook_endpoints", headers=headers)
    assert refused.status_code == 401
    assert refused.json()["code"] == "invalid_api_key"
    assert "revoked" in refused.json()["message"]


# -- which database, which public URL ---------------------------------------------------

MER = "mer_0000000000000000"
EVERY_COMMAND = [
    ["migrate"],
    ["merchant", "create", "--name", "Acme", "--email", "first@acme.test"],
    ["merchant", "list"],
    ["key", "create", "--merchant", MER],
    ["key", "list", "--merchant", MER],
    ["key", "revoke", "--merchant", MER, "--key", "key_0000000000000000"],
    ["webhook-endpoint", "create", "--merchant", MER, "--url", "https://example.com/h"],
    ["event", "redeliver", "--merchant", MER, "--event", "evt_000000000000000000000000"],
    ["customer", "unlock", "TEST-0001"],
    ["webhook", "deliveries", "--merchant", MER],
]


@pytest.mark.parametrize("command", EVERY_COMMAND, ids=lambda c: "-".join(c[:2]))
def test_the_first_stderr_line_names_the_sqlite_file(tmp_path: Path, command: list[str]) -> None:
    """Run from another directory, the relative default is another file: it shows."""
    result = _run(tmp_path, None, *command)
    expected = f"fgcpay: database sqlite:///{tmp_path.resolve()}/var/fgcpay.sqlite3"
    assert result.stderr.splitlines()[0] == expected, result.stderr


def test_the_first_stderr_line_names_the_database_without_its_password(
    tmp_path: Path, database_url: str, service_factory: list[_Service]
) -> None:
    url = _with_password(database_url) if database_url.startswith("postgresql") else database_url
    for command in EVERY_COMMAND:
        result = _run(tmp_path, url, *command)
        first = result.stderr.splitlines()[0]
        assert first == f"fgcpay: database {_shown(database_url)}", (command, result.stderr)
        assert PASSWORD not in result.stderr
    service = _Service(tmp_path, url)
    service_factory.append(service)
    service.wait_ready()
    stderr = service.stop()
    assert stderr.splitlines()[0] == f"fgcpay: database {_shown(database_url)}"
    assert PASSWORD not in stderr
    logs = [json.loads(line) for line in stderr.splitlines() if line.startswith("{")]
    (starting,) = [line for line in logs if line["msg"] == "starting"]
    assert starting["database"] == _shown(database_url)
    assert starting["public_url"] == service.url


def test_serve_says_which_public_url_it_uses(
    tmp_path: Path, service_factory: list[_Service]
) -> None:
    service = _Service(tmp_path, None, FGCPAY_PUBLIC_URL="https://pay.example.com")
    service_factory.append(service)
    service.wait_ready()
    logs = [json.loads(line) for line in service.stop().splitlines() if line.startswith("{")]
    (starting,) = [line for line in logs if line["msg"] == "starting"]
    assert starting["public_url"] == "https://pay.example.com"
    assert starting["database"] == f"sqlite:///{tmp_path.resolve()}/var/fgcpay.sqlite3"


# -- production refusals ----------------------------------------------------------------


@pytest.mark.parametrize("public_url", [None, "http://pay.example.com"])
def test_production_serve_needs_an_https_public_url(tmp_path: Path, public_url: str | None) -> None:
    extra = {"FGCPAY_ENV": "production", "FGCPAY_HOST": "0.0.0.0"}
    if public_url:
        extra["FGCPAY_PUBLIC_URL"] = public_url
    port = str(_free_port())
    result = _run(tmp_path, f"sqlite:///{tmp_path}/db.sqlite3", "serve", "--port", port, **extra)
    assert result.returncode == 2
    (line,) = result.stderr.splitlines()
    assert "FGCPAY_PUBLIC_URL" in line and "https://" in line
    assert not (tmp_path / "db.sqlite3").exists()


def test_production_serve_needs_the_secret_key(tmp_path: Path) -> None:
    env = _env(
        f"sqlite:///{tmp_path}/db.sqlite3",
        FGCPAY_ENV="production",
        FGCPAY_PUBLIC_URL="https://pay.example.com",
    )
    del env["FGCPAY_SECRET_KEY"]
    result = _run_env(tmp_path, env, "serve")
    assert result.returncode == 2
    (line,) = result.stderr.splitlines()
    assert "FGCPAY_SECRET_KEY" in line


def test_production_refuses_several_workers_on_sqlite(tmp_path: Path) -> None:
    result = _run(
        tmp_path,
        f"sqlite:///{tmp_path}/db.sqlite3",
        "serve",
        "--port",
        str(_free_port()),
        "--workers",
        "2",
        FGCPAY_ENV="production",
        FGCPAY_PUBLIC_URL="https://pay.example.com",
    )
    assert result.returncode == 2
    (line,) = _failure_lines(result)
    assert "--workers" in line and "SQLite" in line


def test_several_workers_on_sqlite_are_warned_about_in_development(
    tmp_path: Path, service_factory: list[_Service]
) -> None:
    service = _Service(tmp_path, f"sqlite:///{tmp_path}/db.sqlite3", "--workers", "2")
    service_factory.append(service)
    service.wait_ready()
    logs = [json.loads(line) for line in service.stop().splitlines() if line.startswith("{")]
    warnings = [line for line in logs if line["level"] == "warning" and "SQLite" in line["msg"]]
    assert warnings and warnings[0]["workers"] == 2


# -- one-line errors --------------------------------------------------------------------


def _closed_postgres(tmp_path: Path) -> tuple[str, int]:
    port = _free_port()
    return f"postgresql://fgcpay:{PASSWORD}@127.0.0.1:{port}/fgcpay", port


@pytest.mark.parametrize("command", [["migrate"], ["serve", "--port", "0"], ["merchant", "list"]])
def test_an_unreachable_postgresql_is_one_line(tmp_path: Path, command: list[str]) -> None:
    url, port = _closed_postgres(tmp_path)
    result = _run(tmp_path, url, *command)
    assert result.returncode == 2
    (line,) = _failure_lines(result)
    assert f"127.0.0.1:{port}" in line and "PostgreSQL" in line and "refused" in line
    assert PASSWORD not in result.stderr


def test_debug_shows_the_traceback(tmp_path: Path) -> None:
    url, port = _closed_postgres(tmp_path)
    result = _run(tmp_path, url, "--debug", "migrate")
    assert result.returncode == 2
    assert "Traceback (most recent call last)" in result.stderr
    assert result.stderr.splitlines()[-1].startswith("fgcpay: ")
    assert f"127.0.0.1:{port}" in result.stderr.splitlines()[-1]


def test_a_port_in_use_is_one_line(tmp_path: Path) -> None:
    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        port = taken.getsockname()[1]
        result = _run(tmp_path, f"sqlite:///{tmp_path}/db.sqlite3", "serve", "--port", str(port))
    assert result.returncode == 2
    (line,) = _failure_lines(result)
    assert f"127.0.0.1:{port}" in line and "in use" in line


def test_a_bad_sqlite_path_is_one_line(tmp_path: Path) -> None:
    (tmp_path / "a-file").write_text("")
    result = _run(tmp_path, f"sqlite:///{tmp_path}/a-file/db.sqlite3", "migrate")
    assert result.returncode == 2
    (line,) = _failure_lines(result)
    assert f"{tmp_path}/a-file/db.sqlite3" in line


@pytest.mark.parametrize(
    ("name", "value"),
    [
        ("PORT", "eighty"),
        ("DATABASE_URL", "mysql://x"),
        ("DATABASE_URL", "sqlite://relative.db"),
        ("CHECKOUT_TTL_SECONDS", "10"),
        ("ENV", "staging"),
        ("LOG_LEVEL", "chatty"),
    ],
)
def test_a_bad_setting_is_one_line_naming_it(tmp_path: Path, name: str, value: str) -> None:
    result = _run(tmp_path, None, "migrate", **{"FGCPAY_" + name: value})
    assert result.returncode == 2
    (line,) = result.stderr.splitlines()
    assert "FGCPAY_" + name in line


def test_a_missing_argument_is_one_line(tmp_path: Path) -> None:
    result = _run(tmp_path, None, "key", "create")
    assert result.returncode == 2
    (line,) = result.stderr.splitlines()
    assert "--merchant" in line


def test_an_unwritable_working_directory_is_one_line(tmp_path: Path) -> None:
    """The development secret lives in var/ of the working directory."""
    (tmp_path / "var").write_text("not a directory")
    env = _env(None)
    del env["FGCPAY_SECRET_KEY"]
    result = _run_env(tmp_path, env, "migrate")
    assert result.returncode == 2
    (line,) = result.stderr.splitlines()
    assert "var/secret_key" in line and "FGCPAY_SECRET_KEY" in line


# -- commands on existing data, and the modes of the files the service creates ----------

# Every command that only reads or changes what a database already holds: none creates one.
ON_EXISTING_DATA = [
    command for command in EVERY_COMMAND if command[:2] not in (["migrate"], ["merchant", "create"])
] + [
    ["merchant", "set-password", "--merchant", MER, "--password", PASSWORD],
    ["ledger", "verify"],
    ["refund", "approve", "--merchant", MER, "--refund", "re_test_000000000000000000000000"],
    ["refund", "reject", "--merchant", MER, "--refund", "re_test_000000000000000000000000"],
    ["trigger", "checkout.session.paid", "--merchant", MER],
]


@pytest.mark.parametrize("command", ON_EXISTING_DATA, ids=lambda c: "-".join(c[:2]))
def test_a_command_on_existing_data_refuses_a_missing_sqlite_database(
    tmp_path: Path, command: list[str]
) -> None:
    """In an empty folder, with no secret set: no database, no secret, no folder made."""
    env = _env(None)
    del env["FGCPAY_SECRET_KEY"]
    result = _run_env(tmp_path, env, *command)
    assert result.returncode == 2, result.stderr
    (line,) = _failure_lines(result)
    path = tmp_path.resolve() / "var" / "fgcpay.sqlite3"
    assert line == f"fgcpay: no SQLite database at {path} (fgcpay migrate creates one)"
    assert list(tmp_path.iterdir()) == []


def _mode(path: Path) -> int:
    return path.stat().st_mode & 0o777


@pytest.mark.parametrize("umask", [0o000, 0o022, 0o277])
def test_the_database_and_the_secret_are_the_owners_only_whatever_the_umask(
    tmp_path: Path, umask: int
) -> None:
    env = _env(None)
    del env["FGCPAY_SECRET_KEY"]
    port = _free_port()
    service = subprocess.Popen(
        [*FGCPAY, "serve", "--port", str(port)],
        cwd=tmp_path,
        env={**env, "FGCPAY_SHUTDOWN_GRACE_SECONDS": "2"},
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
        text=True,
        umask=umask,
    )
    try:

        def alive() -> None:
            if service.poll() is not None:
                raise AssertionError(service.communicate()[1])

        wait_ready_blocking(f"http://127.0.0.1:{port}", alive=alive)
        var = tmp_path / "var"
        # While it serves: the database with its WAL and shared-memory files.
        names = {"fgcpay.sqlite3", "fgcpay.sqlite3-wal", "fgcpay.sqlite3-shm", "secret_key"}
        assert {path.name for path in var.iterdir()} == names
        assert {name: _mode(var / name) for name in names} == dict.fromkeys(names, 0o600)
        assert _mode(var) == 0o700
    finally:
        service.send_signal(signal.SIGTERM)
        service.communicate(timeout=15)
    assert service.returncode == 0
    # The commands on existing data use the folder as it is now.
    assert _run_env(tmp_path, env, "merchant", "list").returncode == 0
