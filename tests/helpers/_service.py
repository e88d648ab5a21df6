"""A real service on 127.0.0.1 for a test, its merchants, and the settings and databases it runs on."""

from __future__ import annotations

import secrets
from typing import Any

import attrs
import httpx
import trio
from fgcpay.admin import CreatedMerchant, create_merchant
from fgcpay.core.clock import Clock
from fgcpay.core.settings import Settings
from fgcpay.service import Running, serve
from fgcpay.storage import Database

BACKENDS = ["sqlite", "postgresql"]
TEST_SECRET = "test-secret-key-" + "x" * 32
# For the tests' HTTP clients (`verify=CLIENT_TLS`): httpx otherwise builds a TLS context
# for every client it makes, loading the CA bundle each time (tens of milliseconds of
# CPU), even for a client that only ever speaks plain HTTP to 127.0.0.1.
CLIENT_TLS = httpx.create_ssl_context()


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

    # The keyword arguments go to httpx as they are (params, json, content, ...); typing each
    # would copy httpx's signature, which checks them.
    async def get(self, path: str, **kwargs: Any) -> httpx.Response:
        return await self.http.get(
            path, headers=self.headers(kwargs.pop("headers", None)), **kwargs
        )

    async def post(self, path: str, **kwargs: Any) -> httpx.Response:
        return await self.http.post(
            path, headers=self.headers(kwargs.pop("headers", None)), **kwargs
        )

    async def delete(self, path: str, **kwargs: Any) -> httpx.Response:
        return await self.http.delete(
            path, headers=self.headers(kwargs.pop("headers", None)), **kwargs
        )

    async def patch(self, path: str, **kwargs: Any) -> httpx.Response:
        return await self.http.patch(
            path, headers=self.headers(kwargs.pop("headers", None)), **kwargs
        )


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
    client = httpx.AsyncClient(
        base_url=running.urls[0] + "/api/v1", timeout=30, limits=limits, verify=CLIENT_TLS
    )
    return Server(running=running, client=client, stop=stop, stopped=stopped)
