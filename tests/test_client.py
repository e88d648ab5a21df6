"""Issue 32: the Python client (clients/python, `fgcpay_client`) against a real `fgcpay
serve`, one process per backend for the whole module (PostgreSQL: a cluster of the
module's own, which the outage test stops). Each test that is about the client's behaviour
runs with the blocking `Fgcpay` and with `AsyncFgcpay` (the `flavor` parameter; the
blocking one in a worker thread, so that this test's trio loop, and the webhook receiver
in it, keep running); the asyncio test runs `AsyncFgcpay` under asyncio.

The client's retry waits go through its transport's `sleep`, which the retry tests
replace with one that records the wait asked and does what the test needs meanwhile
(bring the database back; or wait out the rate limit for real): a retry's wait is
observed, never guessed."""

from __future__ import annotations

import asyncio
import datetime
import json
import os
import re
import resource
import secrets
import sqlite3
import subprocess
import sys
from collections.abc import Awaitable, Callable, Iterator
from pathlib import Path
from typing import Any

import attrs
import httpx
import pytest
import trio
from fgcpay.domain.signing import signed_headers
from fgcpay_client import (
    ApiError,
    AsyncFgcpay,
    Fgcpay,
    WebhookVerificationError,
    verify_webhook,
)
from fgcpay_client.generated.models import CheckoutSession
from helpers import CLIENT_TLS, subscription_body, valid_body, wait_ready_blocking
from pg_cluster import PgCluster, start_cluster
from processes import FGCPAY, ServiceProcess
from receiver import reserve_port, start_receiver, url_of

ROOT = Path(__file__).parent.parent
CLIENT_README = ROOT / "clients" / "python" / "README.md"
# One token a second after a burst of 270 per key: every test makes its own key (a
# sandbox, with a bucket of its own), 270 is room for the paging test's 250 sessions and
# its 6 pages, and the rate-limit test empties a bucket in one concurrent burst.
BURST = 270
SETTINGS = {"RATE_LIMIT_PER_SECOND": "1", "RATE_LIMIT_BURST": str(BURST)}
PAGED = 250


@attrs.define
class Served:
    """The module's `fgcpay serve`, its parent merchant's key, and how to take its
    database away and give it back (`stop_database`, `start_database`)."""

    service: ServiceProcess
    process: subprocess.Popen[bytes]
    key: str
    cluster: PgCluster | None

    @property
    def url(self) -> str:
        return self.service.url

    def stop_database(self) -> None:
        if self.cluster is not None:
            self.cluster.stop_server()
        else:  # a full disk, as tests/test_outage.py makes one: every write fails
            _limit_file_size(self.process.pid, 0)

    def start_database(self) -> None:
        if self.cluster is not None:
            self.cluster.start_server()
        else:
            _limit_file_size(self.process.pid, resource.RLIM_INFINITY)

    def rows(self, sql: str, *args: Any) -> list[tuple[Any, ...]]:
        """A query on the service's database, read beside it."""
        url = self.service.database_url
        if url.startswith("sqlite"):
            with sqlite3.connect(url.split("///", 1)[1]) as conn:
                return conn.execute(sql, args).fetchall()
        import psycopg

        with psycopg.connect(url, autocommit=True) as pg:
            return pg.execute(sql.replace("?", "%s"), args).fetchall()


def _limit_file_size(pid: int, limit: int) -> None:
    _soft, hard = resource.prlimit(pid, resource.RLIMIT_FSIZE)
    resource.prlimit(pid, resource.RLIMIT_FSIZE, (limit, hard))


@pytest.fixture(scope="module", params=["sqlite", "postgresql"])
def served(
    request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[Served]:
    cwd = tmp_path_factory.mktemp(f"client-{request.param}")
    cluster = None
    if request.param == "sqlite":
        database_url = f"sqlite:///{cwd}/fgcpay.sqlite3"
    else:
        try:
            cluster = start_cluster()
        except FileNotFoundError as error:
            if os.environ.get("FGCPAY_REQUIRE_POSTGRES") == "1":
                pytest.fail(f"PostgreSQL is required here but {error}")
            pytest.skip("PostgreSQL server binaries are not installed")
        # Stopped at once by the outage test: what was acknowledged must be there after.
        database_url = cluster.durable_database("client")
    service = ServiceProcess(cwd=cwd, database_url=database_url, settings=SETTINGS)
    try:
        made = subprocess.run(
            [*FGCPAY, "merchant", "create", "--name", "Client Co", "--email", "c@client.test"],
            cwd=cwd, env=service.env(), capture_output=True, check=True,
        )  # fmt: skip
        with service.log.open("ab") as sink:
            process = subprocess.Popen(
                service.argv(), cwd=cwd, env=service.env(), stdout=sink, stderr=sink
            )
        try:
            wait_ready_blocking(service.url, log=service.log.read_text)
            yield Served(service, process, json.loads(made.stdout)["api_key"], cluster)
        finally:
            process.terminate()
            process.wait(timeout=15)
        assert not service.errors_logged()  # no error, no traceback: 503s are warnings
    finally:
        if cluster is not None:
            cluster.stop()


async def sandbox_key(served: Served) -> str:
    """A new merchant of its own (a sandbox), with a rate-limit bucket of its own."""
    async with httpx.AsyncClient(verify=CLIENT_TLS) as http:
        made = await http.post(
            served.url + "/api/v1/sandboxes",
            json={},
            headers={"Authorization": f"Bearer {served.key}"},
        )
    assert made.status_code == 201, made.text
    return str(made.json()["api_key"])


# -- the two clients behind one awaitable face ----------------------------------------------


@attrs.define
class Client:
    """`Fgcpay` or `AsyncFgcpay`, called alike: `await api("checkout_sessions", "create",
    ...)`; `await api.all("events", ...)` is every item `list(...)` yields. Requests it
    sends are counted in `sent` (httpx's event hooks, on the client's `http_client`)."""

    flavor: str
    key: str
    sync: Fgcpay | None = None
    asynchronous: AsyncFgcpay | None = None
    sent: list[httpx.Request] = attrs.field(factory=list)
    answers: list[tuple[int, str | None]] = attrs.field(factory=list)  # status, Retry-After

    @classmethod
    def open(cls, flavor: str, key: str, url: str, **options: Any) -> Client:
        client = cls(flavor, key)

        def answered(response: httpx.Response) -> None:
            client.answers.append((response.status_code, response.headers.get("Retry-After")))

        if flavor == "sync":
            hooks: dict[str, list[Callable[..., Any]]] = {
                "request": [client.sent.append],
                "response": [answered],
            }
            http = httpx.Client(verify=CLIENT_TLS, event_hooks=hooks)
            client.sync = Fgcpay(key, url, http_client=http, **options)
        else:

            async def note(request: httpx.Request) -> None:
                client.sent.append(request)

            async def note_answer(response: httpx.Response) -> None:
                answered(response)

            hooks = {"request": [note], "response": [note_answer]}
            ahttp = httpx.AsyncClient(verify=CLIENT_TLS, event_hooks=hooks)
            client.asynchronous = AsyncFgcpay(key, url, http_client=ahttp, **options)
        return client

    def _resource(self, name: str) -> Any:
        return getattr(self.sync or self.asynchronous, name)

    async def __call__(self, resource: str, method: str, *args: Any, **kwargs: Any) -> Any:
        bound = getattr(self._resource(resource), method)
        if self.sync is not None:
            return await trio.to_thread.run_sync(lambda: bound(*args, **kwargs))
        return await bound(*args, **kwargs)

    async def all(self, resource: str, **filters: Any) -> list[Any]:
        listing = self._resource(resource).list
        if self.sync is not None:
            return await trio.to_thread.run_sync(lambda: list(listing(**filters)))
        return [item async for item in listing(**filters)]

    def on_retry(self, sleep: Callable[[float], Awaitable[None]]) -> None:
        """Replace the client's wait before a retry with `sleep` (for the blocking client,
        run from its worker thread back in this trio loop)."""
        if self.sync is not None:
            self.sync._transport.sleep = lambda seconds: trio.from_thread.run(sleep, seconds)
        else:
            assert self.asynchronous is not None
            self.asynchronous._transport.sleep = sleep

    async def close(self) -> None:
        if self.sync is not None:
            self.sync.close()
            self.sync._transport.http.close()
        if self.asynchronous is not None:
            await self.asynchronous.aclose()
            await self.asynchronous._transport.http.aclose()


@pytest.fixture(params=["sync", "async"])
def flavor(request: pytest.FixtureRequest) -> str:
    return str(request.param)


async def opened(flavor: str, served: Served, **options: Any) -> Client:
    return Client.open(flavor, await sandbox_key(served), served.url, **options)


# -- every method, once -----------------------------------------------------------------------


async def test_every_resource_method(served: Served, flavor: str) -> None:
    api = await opened(flavor, served)
    try:
        session = await api("checkout_sessions", "create", **valid_body())
        assert isinstance(session, CheckoutSession)
        assert (session.status, session.amount_fgc) == ("created", "12.50")
        assert (await api("checkout_sessions", "retrieve", session.id)).id == session.id
        assert [s.id for s in await api.all("checkout_sessions")] == [session.id]
        paid = await api("test_helpers", "pay", session.id, customer_code="TEST-0001")
        assert paid.status == "paid" and paid.paid_at is not None
        other = await api("checkout_sessions", "create", idempotency_key="order-2", **valid_body())
        again = await api("checkout_sessions", "create", idempotency_key="order-2", **valid_body())
        assert again.id == other.id  # the caller's key, replayed
        assert (await api("test_helpers", "expire", other.id)).status == "expired"

        refund = await api("refunds", "create", checkout_session_id=session.id, amount_fgc="2")
        assert (refund.status, refund.amount_fgc) == ("pending_review", "2.00")
        assert (await api("refunds", "retrieve", refund.id)).id == refund.id
        assert [r.id for r in await api.all("refunds", status="pending_review")] == [refund.id]

        transactions = await api.all("transactions")
        assert [t.checkout_session_id for t in transactions] == [session.id]
        payment = await api("transactions", "retrieve", transactions[0].id)
        assert (payment.type_, payment.amount_fgc) == ("payment", "12.50")
        balance = await api("balance", "retrieve")
        assert (balance.paid_total_fgc, balance.refunds_pending_fgc) == ("12.50", "2.00")

        start = datetime.datetime(2026, 1, 1, tzinfo=datetime.UTC)
        clock = await api("test_clocks", "create", frozen_time=start, name="client")
        assert clock.frozen_time == start
        assert (await api("test_clocks", "retrieve", clock.id)).name == "client"
        assert [c.id for c in await api.all("test_clocks")] == [clock.id]
        later = start + datetime.timedelta(days=3)
        assert (await api("test_clocks", "advance", clock.id, later)).frozen_time == later

        subscription = await api(
            "subscriptions", "create", **subscription_body(test_clock=clock.id)
        )
        assert subscription.status == "paused"
        assert (await api("subscriptions", "retrieve", subscription.id)).id == subscription.id
        approved = await api("test_helpers", "approve", subscription.id, customer_code="TEST-0001")
        assert approved.status == "active"
        assert [s.id for s in await api.all("subscriptions", status="active")] == [subscription.id]
        assert (await api("subscriptions", "cancel", subscription.id)).status == "cancelled"
        assert (await api("test_clocks", "delete", clock.id)).deleted is True

        trigger = await api("test_helpers", "trigger", "refund.created")
        assert trigger.event_type == "refund.created" and trigger.events
        event = await api("events", "retrieve", trigger.events[-1])
        assert event.type_ == "refund.created"
        assert trigger.events[-1] in [e.id for e in await api.all("events", type="refund.created")]

        endpoint = await api("webhook_endpoints", "create", url="https://shop.example/hooks")
        assert endpoint.secret.startswith("whsec_")
        assert (await api("webhook_endpoints", "retrieve", endpoint.id)).url == endpoint.url
        assert [e.id for e in await api.all("webhook_endpoints")] == [endpoint.id]
        changed = await api(
            "webhook_endpoints", "update", endpoint.id, enabled_events=["refund.created"]
        )
        assert changed.enabled_events == ["refund.created"]
        assert (await api("webhook_endpoints", "delete", endpoint.id)).deleted is True
    finally:
        await api.close()

    parent = Client.open(flavor, served.key, served.url)  # a sandbox cannot make sandboxes
    try:
        made = await parent("sandboxes", "create", name="client test")
        assert made.api_key.startswith("fp_test_")
        assert (await parent("sandboxes", "retrieve", made.id)).name == "client test"
        assert made.id in [s.id for s in await parent.all("sandboxes")]
        assert (await parent("sandboxes", "delete", made.id)).deleted is True
    finally:
        await parent.close()


# -- lists ------------------------------------------------------------------------------------


@pytest.fixture(scope="module")
def paged(served: Served) -> tuple[str, list[str]]:
    """A merchant with PAGED checkout sessions: its key, and their ids newest first."""

    async def make() -> tuple[str, list[str]]:
        key = await sandbox_key(served)
        ids: list[str] = []
        limits = httpx.Limits(max_connections=8)
        async with httpx.AsyncClient(verify=CLIENT_TLS, limits=limits) as http:

            async def one(n: int) -> None:
                made = await http.post(
                    served.url + "/api/v1/checkout/sessions",
                    json=valid_body(description=f"item {n}"),
                    headers={"Authorization": f"Bearer {key}"},
                )
                assert made.status_code == 201, made.text
                ids.append(made.json()["id"])

            async with trio.open_nursery() as nursery:
                for n in range(PAGED):
                    nursery.start_soon(one, n)
        return key, ids

    return trio.run(make)


async def test_list_iterates_every_page(
    served: Served, paged: tuple[str, list[str]], flavor: str
) -> None:
    key, ids = paged
    api = Client.open(flavor, key, served.url)
    try:
        listed = await api.all("checkout_sessions", limit=100)
        pages = [r.url.params.get("starting_after") for r in api.sent]
        assert len(pages) == 3  # limit is the page size: 100 + 100 + 50
        assert pages[0] is None and pages[1] == listed[99].id and pages[2] == listed[199].id
        assert len(listed) == PAGED and sorted(s.id for s in listed) == sorted(ids)
        created = [s.created_at for s in listed]  # newest first (ids break ties)
        assert created == sorted(created, reverse=True)
    finally:
        await api.close()


# -- retries ----------------------------------------------------------------------------------


def _created_with(served: Served, description: str) -> int:
    return int(
        served.rows("SELECT count(*) FROM checkout_sessions WHERE description = ?", description)[0][
            0
        ]
    )


async def _empty_bucket(served: Served, key: str) -> None:
    """Spend the key's whole burst at once: answers turn 429."""
    limits = httpx.Limits(max_connections=20)
    async with httpx.AsyncClient(verify=CLIENT_TLS, limits=limits) as http:

        async def spend(_: int) -> None:
            await http.get(
                served.url + "/api/v1/balance", headers={"Authorization": f"Bearer {key}"}
            )

        async with trio.open_nursery() as nursery:
            for n in range(BURST + 10):
                nursery.start_soon(spend, n)


async def test_a_429_is_retried_after_retry_after_and_creates_one_object(served: Served) -> None:
    """Both clients on one key: the blocking one's create finds the bucket the burst
    emptied, the async one's the bucket that retry emptied again."""
    key = await sandbox_key(served)
    for flavor in ("sync", "async"):
        api = Client.open(flavor, key, served.url)
        waits: list[float] = []

        async def wait_for_real(seconds: float, waits: list[float] = waits) -> None:
            # The bucket refills in the service's real time: the client must wait it out.
            waits.append(seconds)
            await trio.sleep(seconds)

        api.on_retry(wait_for_real)
        try:
            # One token a second: a create sent right after the bucket was emptied finds
            # it empty unless this machine stalled for up to a second in between; then
            # the burst is spent again.
            for tries in range(1, 4):
                if flavor == "sync" or tries > 1:
                    await _empty_bucket(served, key)
                description = f"retried {secrets.token_hex(4)}"
                api.sent.clear()
                api.answers.clear()
                session = await api(
                    "checkout_sessions", "create", **valid_body(description=description)
                )
                if waits:
                    break
            assert [status for status, _ in api.answers] == [429, 201], f"{flavor}, {tries} tries"
            assert waits == [float(api.answers[0][1] or "nan")]  # its Retry-After
            assert len({r.headers["Idempotency-Key"] for r in api.sent}) == 1
            assert _created_with(served, description) == 1
            assert session.description == description
        finally:
            await api.close()


async def test_a_503_while_the_database_is_stopped_is_retried_to_success(
    served: Served, flavor: str
) -> None:
    api = await opened(flavor, served, max_retries=2)
    waits: list[float] = []

    async def bring_the_database_back(seconds: float) -> None:
        waits.append(seconds)
        await trio.to_thread.run_sync(served.start_database)

    api.on_retry(bring_the_database_back)
    description = f"outage {secrets.token_hex(4)}"
    served.stop_database()
    try:
        session = await api("checkout_sessions", "create", **valid_body(description=description))
    finally:
        if not waits:
            served.start_database()
    try:
        assert [status for status, _ in api.answers] == [503, 201]
        assert waits == [float(api.answers[0][1] or "nan")]  # its Retry-After
        assert api.sent[0].headers["Idempotency-Key"] == api.sent[1].headers["Idempotency-Key"]
        assert session.status == "created"
        assert _created_with(served, description) == 1
    finally:
        await api.close()


async def test_a_connection_error_is_retried_and_then_raised(flavor: str) -> None:
    """Nothing listens: each try fails to connect; max_retries more tries, then the error."""
    with reserve_port() as refusing:
        url = url_of(refusing).removesuffix("/hooks")
        api = Client.open(flavor, "fp_test_x", url, max_retries=2)
        waits: list[float] = []

        async def note(seconds: float) -> None:
            waits.append(seconds)

        api.on_retry(note)
        try:
            with pytest.raises(httpx.ConnectError):
                await api("balance", "retrieve")
        finally:
            await api.close()
    assert len(api.sent) == 3 and len(waits) == 2
    assert 0.25 <= waits[0] <= 0.5 and 0.5 <= waits[1] <= 1.0  # backoff, jittered


# -- errors -----------------------------------------------------------------------------------


async def test_an_error_answer_raises_api_error_with_its_fields(
    served: Served, flavor: str
) -> None:
    api = await opened(flavor, served)
    try:
        unknown = "cs_test_" + "x" * 24
        with pytest.raises(ApiError) as missing:
            await api("checkout_sessions", "retrieve", unknown)
        assert (missing.value.status, missing.value.code) == (404, "not_found")
        assert missing.value.message == "No such checkout session."
        assert missing.value.details == {"id": unknown}
        assert re.fullmatch(r"req_[0-9A-Za-z]{16}", missing.value.request_id or "")

        with pytest.raises(ApiError) as invalid:
            await api("checkout_sessions", "create", **valid_body(amount_fgc="0", colour="red"))
        assert (invalid.value.status, invalid.value.code) == (400, "validation_error")
        named = {detail["field"] for detail in invalid.value.details}
        assert {"amount_fgc", "colour"} <= named  # an unknown field reaches the service
    finally:
        await api.close()


# -- webhooks ---------------------------------------------------------------------------------


async def test_a_webhook_is_received_and_verified(served: Served, nursery: trio.Nursery) -> None:
    receiver = await start_receiver(nursery)
    api = await opened("async", served)
    try:
        endpoint = await api("webhook_endpoints", "create", url=receiver.url)
        trigger = await api("test_helpers", "trigger", "checkout.session.paid")
        (delivery,) = await receiver.wait_for(1)
    finally:
        await api.close()
        receiver.stop.set()
    event = verify_webhook(delivery.body, delivery.headers, endpoint.secret)
    assert (event["id"], event["type"]) == (trigger.events[-1], "checkout.session.paid")
    assert event["data"]["object"]["id"] == trigger.object_id
    families = {
        "service": ("service-signature", "service-timestamp"),
        "standard": ("webhook-signature", "webhook-timestamp", "webhook-id"),
    }
    for name, own in families.items():
        other = {h for f, hs in families.items() if f != name for h in hs}
        alone = {k: v for k, v in delivery.headers.items() if k not in other}
        assert verify_webhook(delivery.body, alone, endpoint.secret)["id"] == event["id"], name
        with pytest.raises(WebhookVerificationError):
            verify_webhook(delivery.body + b" ", alone, endpoint.secret)
        assert set(own) <= set(alone)


def test_verify_webhook_checks_both_families_rotation_and_time() -> None:
    """Signed by the service's own signing code, verified by the client's."""
    secret, old = "whsec_" + "A" * 43 + "=", "whsec_" + "B" * 43 + "="
    body = b'{"id": "evt_1", "object": "event", "type": "refund.created"}'
    now = int(datetime.datetime.now(datetime.UTC).timestamp())
    rotating = signed_headers("evt_1", body, now, [old, secret])
    families = [
        {k: v for k, v in rotating.items() if not k.startswith("webhook-")},
        {k: v for k, v in rotating.items() if not k.startswith("Service-")},
    ]
    for headers in families:
        assert verify_webhook(body, headers, secret)["id"] == "evt_1"
        assert verify_webhook(body, {k.upper(): v for k, v in headers.items()}, old)
        with pytest.raises(WebhookVerificationError, match="no signature matches"):
            verify_webhook(body, headers, "whsec_" + "C" * 43 + "=")
        with pytest.raises(WebhookVerificationError, match="no signature matches"):
            verify_webhook(body.replace(b"refund", b"refunt"), headers, secret)
    for skew in (-301, 301):
        stale = signed_headers("evt_1", body, now + skew, [secret])
        with pytest.raises(WebhookVerificationError, match="tolerance"):
            verify_webhook(body, stale, secret)
        assert verify_webhook(body, stale, secret, tolerance=400)["id"] == "evt_1"
    with pytest.raises(WebhookVerificationError, match="no signature header"):
        verify_webhook(body, {"Service-Timestamp": str(now)}, secret)


# -- the async client under asyncio, and the README's example -------------------------------


async def test_the_async_client_runs_under_asyncio(served: Served) -> None:
    key = await sandbox_key(served)

    async def under_asyncio() -> tuple[str, list[str]]:
        asyncio.get_running_loop()  # raises unless asyncio runs this
        async with AsyncFgcpay(key, served.url) as client:
            made = await client.checkout_sessions.create(**valid_body())
            listed = [s.id async for s in client.checkout_sessions.list(limit=1)]
            return made.id, listed

    made, listed = await trio.to_thread.run_sync(asyncio.run, under_asyncio())
    assert listed == [made]


def readme_example() -> str:
    """The ```python block of clients/python/README.md under "## Create a checkout session"."""
    text = CLIENT_README.read_text()
    section = text.split("\n## Create a checkout session\n", 1)[1]
    blocks: list[str] = re.findall(r"```python\n(.*?)```", section, re.S)
    return blocks[0]


async def test_the_client_readme_example_runs_verbatim(served: Served) -> None:
    key = await sandbox_key(served)
    env = {**os.environ, "FGCPAY_API_KEY": key, "FGCPAY_URL": served.url}
    done = await trio.run_process(
        [sys.executable, "-c", readme_example()], env=env, capture_stdout=True, check=False,
        capture_stderr=True,
    )  # fmt: skip
    assert done.returncode == 0, done.stderr.decode()
    assert re.search(rb"http://127\.0\.0\.1:\d+/checkout/cs_test_\w{24}", done.stdout), done.stdout
