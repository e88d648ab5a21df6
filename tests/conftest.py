"""Shared fixtures: both storage backends, a real service over loopback, merchants."""

from __future__ import annotations

import os
import secrets
from collections.abc import AsyncIterator, Iterator
from pathlib import Path

import attrs
import httpx
import pytest
import trio
import trio.testing
from fgcpay.admin import CreatedMerchant, create_merchant
from fgcpay.clock import Clock
from fgcpay.service import Running, serve
from fgcpay.settings import Settings
from fgcpay.storage import Database, open_database
from pg_cluster import PgCluster, start_cluster

BACKENDS = ["sqlite", "postgresql"]
TEST_SECRET = "test-secret-key-" + "x" * 32


@pytest.fixture(scope="session")
def pg_cluster() -> Iterator[PgCluster | None]:
    try:
        cluster = start_cluster()
    except FileNotFoundError as error:
        if os.environ.get("FGCPAY_REQUIRE_POSTGRES") == "1":
            pytest.fail(f"PostgreSQL is required here but {error}")
        yield None
        return
    try:
        yield cluster
    finally:
        cluster.stop()


@pytest.fixture(params=BACKENDS)
def database_url(request: pytest.FixtureRequest, tmp_path: Path, pg_cluster: PgCluster | None) -> str:
    """A fresh, empty database on each backend."""
    if request.param == "sqlite":
        return f"sqlite:///{tmp_path}/fgcpay.sqlite3"
    return fresh_postgres_database(pg_cluster)


@pytest.fixture
def postgres_url(pg_cluster: PgCluster | None) -> str:
    """A fresh PostgreSQL database, for what only PostgreSQL does (several processes)."""
    return fresh_postgres_database(pg_cluster)


def fresh_postgres_database(pg_cluster: PgCluster | None) -> str:
    if pg_cluster is None:
        pytest.skip("PostgreSQL server binaries (initdb, pg_ctl) are not installed")
    name = "t_" + secrets.token_hex(6)
    pg_cluster.psql(f"CREATE DATABASE {name}")
    return pg_cluster.url(name)


@pytest.fixture
def postgres_settings(postgres_url: str) -> Settings:
    return make_settings(postgres_url)


@pytest.fixture
def settings(database_url: str) -> Settings:
    return make_settings(database_url)


def make_settings(database_url: str) -> Settings:
    return Settings(
        env="test",
        database_url=database_url,
        host="127.0.0.1",
        port=0,
        public_url="http://127.0.0.1:0",
        secret_key=TEST_SECRET,
        shutdown_grace_seconds=2.0,
        db_pool_size=5,
        # Test receivers listen on 127.0.0.1, as in the local quick start.
        webhook_allow_private=True,
    )


@pytest.fixture
async def db(database_url: str) -> AsyncIterator[Database]:
    async with open_database(database_url, 5) as opened:
        yield opened


@pytest.fixture
def clock() -> trio.testing.MockClock:
    """Trio's MockClock for tests of time: `clock.jump(seconds)` moves service time.

    It also jumps by itself once every task has been idle for a real half second, so a
    shutdown waiting out a grace period ends without the test jumping for it; real I/O
    (sockets, database threads) always completes well inside that.
    """
    return trio.testing.MockClock(autojump_threshold=0.5)


@attrs.define
class Server:
    """A running service on 127.0.0.1 and an HTTP client for it."""

    running: Running
    client: httpx.AsyncClient
    stop: trio.Event
    stopped: trio.Event

    async def shutdown(self) -> None:
        """Stop serving and wait until the service has ended."""
        await self.client.aclose()
        self.stop.set()
        await self.stopped.wait()

    @property
    def url(self) -> str:
        return self.running.urls[0]

    @property
    def db(self) -> Database:
        return self.running.service.db

    async def merchant(self, name: str = "Acme Coffee") -> MerchantClient:
        email = f"{secrets.token_hex(4)}@example.com"
        created = await create_merchant(self.db, name, email)
        return MerchantClient(created, self.client)


@attrs.define
class MerchantClient:
    """A merchant and a client that sends its key."""

    created: CreatedMerchant
    http: httpx.AsyncClient

    @property
    def id(self) -> str:
        return self.created.merchant.id

    @property
    def key(self) -> str:
        return self.created.api_key

    def headers(self, extra: dict[str, str] | None = None) -> dict[str, str]:
        return {"Authorization": f"Bearer {self.key}", **(extra or {})}

    async def get(self, path: str, **kwargs: object) -> httpx.Response:
        return await self.http.get(path, headers=self.headers(kwargs.pop("headers", None)), **kwargs)  # type: ignore[arg-type]

    async def post(self, path: str, **kwargs: object) -> httpx.Response:
        return await self.http.post(path, headers=self.headers(kwargs.pop("headers", None)), **kwargs)  # type: ignore[arg-type]


async def start_server(
    nursery: trio.Nursery, settings: Settings, clock: Clock | None = None
) -> Server:
    """Serve on 127.0.0.1:<free port> until `Server.stop` is set.

    With a test clock (MockClock time) the client opens a connection per request: a
    clock jump times out the server's keep-alive, which httpx's real-time pool cannot know.
    And the dispatcher and the expiry sweep do not poll for other processes' work (there
    are none; they still wake for their own due times): each poll would cost the
    autojumping clock a real half second.
    """
    if clock is not None:
        week = 7 * 86400.0
        settings = attrs.evolve(settings, webhook_poll_seconds=week, expiry_poll_seconds=week)
    stop = trio.Event()
    stopped = trio.Event()

    async def run(task_status: trio.TaskStatus[Running]) -> None:
        try:
            await serve(settings, shutdown_trigger=stop.wait, clock=clock, task_status=task_status)
        finally:
            stopped.set()

    running: Running = await nursery.start(run)
    limits = httpx.Limits(max_keepalive_connections=0 if clock else 20)
    client = httpx.AsyncClient(base_url=running.urls[0] + "/api/v1", timeout=30, limits=limits)
    return Server(running=running, client=client, stop=stop, stopped=stopped)


@pytest.fixture
async def server(nursery: trio.Nursery, settings: Settings) -> AsyncIterator[Server]:
    srv = await start_server(nursery, settings)
    try:
        yield srv
    finally:
        await srv.client.aclose()
        srv.stop.set()
