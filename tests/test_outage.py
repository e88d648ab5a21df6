"""An outage of the database is a 503 with `Retry-After`, never a 500, and passes by itself.

`fgcpay serve` runs as a real process. On PostgreSQL the test stops its own cluster under
the running service: every API route, the hosted page (HTML), the page's status JSON,
the websocket and `/readyz` answer "unavailable, retry" within a few seconds; once
PostgreSQL is back, everything serves again (a session is created and paid) without
restarting the service.

On SQLite the realistic outage of a running process is a file that cannot grow (a full
disk or quota). A running process keeps its open file descriptors, so `chmod` or
`chattr +i` change nothing for it, and root ignores permissions anyway; the file size
limit (RLIMIT_FSIZE, set on the live process with prlimit) makes every write to the
database and its WAL fail as a full disk does, for root too, and lifting it is the disk
being freed. Reads still answer; every write answers 503.
"""

from __future__ import annotations

import json
import os
import re
import resource
import socket
import subprocess
import sys
from pathlib import Path
from typing import Any

import attrs
import httpx
import pytest
import trio
from fgcpay.storage import Database, DatabaseUnavailable
from helpers import valid_body, wait_ready
from pg_cluster import PgCluster, start_cluster
from trio_websocket import ConnectionClosed, ConnectionRejected, open_websocket_url

FGCPAY = [sys.executable, "-m", "fgcpay.cli"]
DB_TIMEOUT_SECONDS = 2
# An answer during the outage must come well within this (connect, acquire and statement
# timeouts are DB_TIMEOUT_SECONDS; an actor's ask times out after ASK_TIMEOUT_SECONDS).
ANSWER_WITHIN_SECONDS = 12
ASK_TIMEOUT_SECONDS = 6
TOKEN = re.compile(r'name="csrf_token" value="([^"]+)"')


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


@attrs.define
class ServiceProcess:
    """`fgcpay serve` as an operator runs it; its output kept in a log file."""

    cwd: Path
    database_url: str
    port: int = attrs.field(factory=_free_port)
    process: trio.Process | None = None

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    @property
    def log(self) -> Path:
        return self.cwd / "serve.log"

    def env(self) -> dict[str, str]:
        env = {k: v for k, v in os.environ.items() if not k.startswith("FGCPAY_")}
        env.update(
            FGCPAY_DATABASE_URL=self.database_url,
            FGCPAY_WEBHOOK_ALLOW_PRIVATE="1",
            FGCPAY_SHUTDOWN_GRACE_SECONDS="1",
            FGCPAY_DB_TIMEOUT_SECONDS=str(DB_TIMEOUT_SECONDS),
            FGCPAY_ACTOR_ASK_TIMEOUT_SECONDS=str(ASK_TIMEOUT_SECONDS),
            FGCPAY_EXPIRY_POLL_SECONDS="0.5",
            FGCPAY_WEBHOOK_POLL_SECONDS="0.5",
            FGCPAY_RATE_LIMIT_PER_SECOND="100000",
            FGCPAY_RATE_LIMIT_BURST="1000000",
        )
        return env

    async def command(self, *args: str) -> dict[str, Any]:
        done = await trio.run_process(
            [*FGCPAY, *args], cwd=self.cwd, env=self.env(), capture_stdout=True
        )
        said: dict[str, Any] = json.loads(done.stdout)
        return said

    async def start(self, nursery: trio.Nursery) -> None:
        # The log goes through a pipe, not a file: on SQLite the test limits the size of
        # every file the process writes, and the log must keep flowing meanwhile.
        self.process = await trio.lowlevel.open_process(
            [*FGCPAY, "serve", "--port", str(self.port)],
            cwd=self.cwd, env=self.env(), stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
        )  # fmt: skip
        nursery.start_soon(self.keep_log)
        await _wait_ready(self)

    async def keep_log(self) -> None:
        assert self.process is not None and self.process.stdout is not None
        with self.log.open("ab") as sink:
            async for chunk in self.process.stdout:
                sink.write(chunk)
                sink.flush()

    async def stop(self) -> None:
        if self.process is not None and self.process.returncode is None:
            self.process.terminate()
            with trio.fail_after(15):
                await self.process.wait()


async def _wait_ready(service: ServiceProcess, within: float = 30) -> None:
    def alive() -> None:
        assert service.process is not None and service.process.poll() is None

    # Another process: polling its readiness is the only way to know.
    await wait_ready(service.url, within=within, alive=alive)


def _assert_unavailable_json(response: httpx.Response, what: str) -> None:
    assert response.status_code == 503, (what, response.status_code, response.text)
    assert int(response.headers["Retry-After"]) >= 1, what
    assert response.headers["content-type"].startswith("application/json"), what
    body = response.json()
    assert body["code"] == "service_unavailable", (what, body)
    assert "Traceback" not in response.text and "psycopg" not in response.text, what


def _assert_unavailable_page(response: httpx.Response, what: str) -> None:
    assert response.status_code == 503, (what, response.status_code, response.text)
    assert int(response.headers["Retry-After"]) >= 1, what
    assert response.headers["content-type"].startswith("text/html"), what
    assert "Content-Security-Policy" in response.headers, what
    assert "try again" in response.text.lower(), response.text
    assert "internal_error" not in response.text and "{" not in response.text.split("<body")[-1]


@attrs.frozen
class Fixture:
    api: httpx.AsyncClient
    browser: httpx.AsyncClient
    session_id: str
    endpoint_id: str


async def _prepare(service: ServiceProcess, nursery: trio.Nursery) -> Fixture:
    created = await service.command(
        "merchant", "create", "--name", "Outage", "--email", "outage@example.com"
    )
    await service.start(nursery)
    api = httpx.AsyncClient(
        base_url=service.url + "/api/v1",
        headers={"Authorization": f"Bearer {created['api_key']}"},
        timeout=ANSWER_WITHIN_SECONDS,
    )
    session = await api.post("/checkout/sessions", json=valid_body())
    assert session.status_code == 201, session.text
    endpoint = await api.post("/webhook_endpoints", json={"url": "http://127.0.0.1:9/hook"})
    assert endpoint.status_code == 201, endpoint.text
    browser = httpx.AsyncClient(base_url=service.url, timeout=ANSWER_WITHIN_SECONDS)
    page = await browser.get(f"/checkout/{session.json()['id']}")
    assert page.status_code == 200
    return Fixture(api, browser, session.json()["id"], endpoint.json()["id"])


async def _pay(service: ServiceProcess, session_id: str) -> httpx.Response:
    async with httpx.AsyncClient(base_url=service.url, timeout=ANSWER_WITHIN_SECONDS) as browser:
        page = await browser.get(f"/checkout/{session_id}")
        token = TOKEN.search(page.text)
        assert token, page.text
        return await browser.post(
            f"/checkout/{session_id}",
            data={"csrf_token": token.group(1), "customer_code": "TEST-0001", "pin": "1234"},
        )


def _writes(f: Fixture) -> list[tuple[str, str, dict[str, Any] | None]]:
    return [
        ("POST", "/checkout/sessions", valid_body()),
        ("POST", "/webhook_endpoints", {"url": "http://127.0.0.1:9/other"}),
        ("POST", f"/webhook_endpoints/{f.endpoint_id}/rotate_secret", {}),
        ("DELETE", f"/webhook_endpoints/{f.endpoint_id}", None),
    ]


def _reads(f: Fixture) -> list[tuple[str, str, dict[str, Any] | None]]:
    return [
        ("GET", "/checkout/sessions", None),
        ("GET", f"/checkout/sessions/{f.session_id}", None),
        ("GET", "/webhook_endpoints", None),
        ("GET", "/events", None),
        ("GET", "/events/evt_" + "A" * 24, None),
        ("POST", "/events/evt_" + "A" * 24 + "/redeliver", {}),
        ("GET", "/webhook_deliveries", None),
        ("GET", "/webhook_deliveries/whd_" + "A" * 24, None),
    ]


async def _call(
    f: Fixture, method: str, path: str, body: dict[str, Any] | None, n: int
) -> httpx.Response:
    headers = {"Idempotency-Key": f"outage-{n}-{path}"} if method == "POST" else {}
    with trio.fail_after(ANSWER_WITHIN_SECONDS):
        return await f.api.request(method, path, json=body, headers=headers)


async def _ws_outcome(service: ServiceProcess, session_id: str) -> int | None:
    """The websocket's refusal status (handshake) or close code, whichever comes."""
    url = f"ws://127.0.0.1:{service.port}/checkout/{session_id}/ws"
    with trio.fail_after(ANSWER_WITHIN_SECONDS):
        try:
            async with open_websocket_url(url) as ws:
                await ws.get_message()
                await ws.get_message()
        except ConnectionRejected as rejected:
            return rejected.status_code
        except ConnectionClosed as closed:
            assert closed.reason is not None
            return closed.reason.code
    return None


async def _assert_pays_again(service: ServiceProcess, f: Fixture) -> None:
    await _wait_ready(service, within=40)
    # Readiness is one connection; the pool and actors recover too, within a deadline.
    with trio.fail_after(40):
        while True:
            created = await f.api.post("/checkout/sessions", json=valid_body())
            assert created.status_code in (201, 503), created.text
            if created.status_code == 201:
                break
            await trio.sleep(0.2)
    with trio.fail_after(40):
        while True:
            paid = await _pay(service, created.json()["id"])
            assert paid.status_code in (303, 503), paid.text
            if paid.status_code == 303:
                break
            await trio.sleep(float(paid.headers["Retry-After"]))
    fetched = await f.api.get(f"/checkout/sessions/{created.json()['id']}")
    assert fetched.json()["status"] == "paid"


@pytest.fixture
def own_cluster() -> Any:
    try:
        cluster = start_cluster()
    except FileNotFoundError:
        pytest.skip("PostgreSQL server binaries are not installed")
    try:
        yield cluster
    finally:
        cluster.stop()


async def test_postgres_stopped_every_answer_is_503_then_serves_again(
    tmp_path: Path, own_cluster: PgCluster, nursery: trio.Nursery
) -> None:
    # Stopped at once below: what was acknowledged must be there when it is back.
    database_url = own_cluster.durable_database("outage")
    service = ServiceProcess(cwd=tmp_path, database_url=database_url)
    try:
        f = await _prepare(service, nursery)
        own_cluster.stop_server()

        n = 0
        for method, path, body in [*_reads(f), *_writes(f)]:
            n += 1
            _assert_unavailable_json(await _call(f, method, path, body, n), f"{method} {path}")
        with trio.fail_after(ANSWER_WITHIN_SECONDS):
            page = await f.browser.get(f"/checkout/{f.session_id}")
        _assert_unavailable_page(page, "GET page")
        with trio.fail_after(ANSWER_WITHIN_SECONDS):
            posted = await f.browser.post(
                f"/checkout/{f.session_id}",
                data={"csrf_token": "x", "customer_code": "TEST-0001", "pin": "1234"},
            )
        _assert_unavailable_page(posted, "POST page")
        with trio.fail_after(ANSWER_WITHIN_SECONDS):
            status = await f.browser.get(f"/checkout/{f.session_id}/status")
        _assert_unavailable_json(status, "status")
        assert await _ws_outcome(service, f.session_id) == 1013  # try again later
        with trio.fail_after(ANSWER_WITHIN_SECONDS):
            ready = await f.browser.get("/readyz")
        _assert_unavailable_json(ready, "readyz")
        assert service.process is not None and service.process.poll() is None

        own_cluster.start_server()
        await _assert_pays_again(service, f)
        assert '"status":500' not in service.log.read_text().replace(" ", "")
        await f.api.aclose()
        await f.browser.aclose()
    finally:
        await service.stop()


def _limit_file_size(pid: int, limit: int) -> None:
    _soft, hard = resource.prlimit(pid, resource.RLIMIT_FSIZE)
    resource.prlimit(pid, resource.RLIMIT_FSIZE, (limit, hard))


async def test_sqlite_disk_full_writes_are_503_then_serve_again(
    tmp_path: Path, nursery: trio.Nursery
) -> None:
    service = ServiceProcess(cwd=tmp_path, database_url=f"sqlite:///{tmp_path}/fgcpay.sqlite3")
    try:
        f = await _prepare(service, nursery)
        assert service.process is not None
        _limit_file_size(service.process.pid, 0)  # the disk is full

        n = 0
        for method, path, body in _writes(f):
            n += 1
            _assert_unavailable_json(await _call(f, method, path, body, n), f"{method} {path}")
        with trio.fail_after(ANSWER_WITHIN_SECONDS):
            read = await f.api.get(f"/checkout/sessions/{f.session_id}")
        assert read.status_code == 200, read.text  # reading needs no space
        with trio.fail_after(ANSWER_WITHIN_SECONDS):
            paid = await _pay(service, f.session_id)
        _assert_unavailable_page(paid, "POST page")
        assert service.process.poll() is None

        _limit_file_size(service.process.pid, resource.RLIM_INFINITY)  # space freed
        await _assert_pays_again(service, f)
        assert '"status":500' not in service.log.read_text().replace(" ", "")
        await f.api.aclose()
        await f.browser.aclose()
    finally:
        await service.stop()


def _bad_sql(tx: Any) -> Any:
    return tx.fetchval("SELECT no_such_column FROM no_such_table")


async def test_a_bug_in_sql_is_not_an_outage(db: Database) -> None:
    """Bad SQL stays a bug (a 500), on both backends, and the database serves on."""
    with pytest.raises(Exception) as read:
        await db.read(_bad_sql)
    with pytest.raises(Exception) as write:
        await db.write(_bad_sql)
    assert not isinstance(read.value, DatabaseUnavailable)
    assert not isinstance(write.value, DatabaseUnavailable)
    await db.ping()
