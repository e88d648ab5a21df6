"""PostgreSQL faults under a running service, with real processes and real clusters.

- Restart under load: `fgcpay serve --workers 2` serves a steady concurrent load
  (creates, lists, `/readyz`) on a cluster of the test's own while PostgreSQL is restarted
  (`pg_ctl restart -m fast`), then stopped and, after a gap, started again. Every answer is
  2xx, 503 with `Retry-After`, or 429; none takes longer than the client's timeout;
  `/readyz` turns 503 and back to 200; creates succeed again within seconds of PostgreSQL
  being back, without restarting the service; every create answered 201 is stored.
- Pool bound: no process holds more than `FGCPAY_DB_POOL_SIZE` connections (counted in
  pg_stat_activity by the `fgcpay/<pid>` application_name each connection carries),
  sampled under a load larger than the pool, and through the reconnections of a restart.
- Statement timeout: a statement running past `FGCPAY_DB_TIMEOUT_SECONDS` is answered
  `DatabaseUnavailable` in about that time, and the server itself has cancelled it.
- After a restart, only calls in flight may hear "unavailable": no later call is handed
  a pooled connection that died with it.
- LISTEN after an outage: a payment made through one process right after PostgreSQL is
  back reaches the status socket held by another process.

Databases the tests stop commit synchronously (`PgCluster.durable_database`), so "acknowledged"
means durable as in production.
"""

from __future__ import annotations

import gc
import json
import os
import re
import subprocess
from collections.abc import Awaitable, Callable, Iterator
from pathlib import Path
from typing import Any

import attrs
import httpx
import psycopg
import pytest
import trio
from fgcpay.storage import DatabaseUnavailable, Tx, open_database
from fgcpay.web.limits import KEEP_ALIVE_SECONDS
from helpers import Server, make_settings, start_server, valid_body, wait_ready, wait_until
from hosted import new_session
from pg_cluster import PgCluster, start_cluster
from processes import ServiceProcess
from trio_websocket import ConnectionClosed, open_websocket_url

POOL_SIZE = 4
DB_TIMEOUT_SECONDS = 2
# Every request must be answered within this; a request still open after it is a hang.
CLIENT_TIMEOUT_SECONDS = 10
# This process standing still for longer than this is a pause of its own (the load's
# tasks wake every few milliseconds; see `Load._watch_pauses`).
PAUSE_SECONDS = 1.0
# Once PostgreSQL accepts connections again, creates succeed within this (well under a
# second measured on a loaded 2-core machine).
RECOVER_WITHIN_SECONDS = 5
SERVICE_SETTINGS = {
    "DB_POOL_SIZE": str(POOL_SIZE),
    "DB_TIMEOUT_SECONDS": str(DB_TIMEOUT_SECONDS),
    "ACTOR_ASK_TIMEOUT_SECONDS": "4",
    "RATE_LIMIT_PER_SECOND": "100000",
    "RATE_LIMIT_BURST": "1000000",
}


@pytest.fixture
def own_cluster() -> Iterator[PgCluster]:
    """A cluster of the test's own: stopping the shared one would break other tests."""
    try:
        cluster = start_cluster()
    except FileNotFoundError as error:
        if os.environ.get("FGCPAY_REQUIRE_POSTGRES") == "1":
            pytest.fail(f"PostgreSQL is required here but {error}")
        pytest.skip("PostgreSQL server binaries are not installed")
    try:
        yield cluster
    finally:
        cluster.stop()


def _pg_ctl(cluster: PgCluster, *args: str) -> None:
    command = [str(cluster.bin_dir / "pg_ctl"), "-D", str(cluster.data_dir), *args]
    if cluster.run_as:
        command = ["runuser", "-u", cluster.run_as, "--", *command]
    subprocess.run(command, check=True, capture_output=True, timeout=120)


def _restart_fast(cluster: PgCluster) -> None:
    """`pg_ctl restart -m fast`: sessions are terminated, the server is back at once
    (with the options of its last start). The log file keeps pg_ctl's pipe free."""
    log = str(cluster.root / "server.log")
    _pg_ctl(cluster, "restart", "-m", "fast", "-w", "-t", "60", "-l", log)


# -- the load -----------------------------------------------------------------------


@attrs.frozen
class Answer:
    """One request of the load and what came of it (`status` 0: no answer at all)."""

    what: str  # "create", "list" or "readyz"
    started: float
    ended: float
    status: int
    problem: str  # empty when the answer is one the service may give
    session_id: str | None = None


def _problem(what: str, response: httpx.Response) -> str:
    """What is wrong with an answer, or "" when it is an acceptable one."""
    status = response.status_code
    said = f"{what} answered {status}: {response.text[:300]}"
    if status in (503, 429):
        retry_after = response.headers.get("Retry-After", "")
        if not retry_after.isdigit() or int(retry_after) < 1:
            return f"{said} without a Retry-After"
        if any(word in response.text for word in ("Traceback", "psycopg", "asyncpg")):
            return f"{said} (internals in the body)"
        code = response.json().get("code")
        expected = "service_unavailable" if status == 503 else "rate_limited"
        return "" if code == expected else said
    if what == "create":
        return "" if status == 201 and response.json().get("id") else said
    return "" if status == 200 else said


@attrs.define
class Load:
    """Concurrent merchants' clients (creates, some lists) and a `/readyz` poller, each
    request bounded by the client timeout; every answer is kept for the assertions.

    The clients run in the test's own process, which may stand still for seconds (late
    in a full run of the suite it did, 5.8 s, while both workers kept their timers). The
    service then rightly closes each keep-alive connection that was idle for its
    `KEEP_ALIVE_SECONDS`, and a client whose request was on its way out on one of them
    hears "Server disconnected without sending a response" (or a broken pipe): the race
    every keep-alive client knows. As a merchant's client does, such a request is sent
    again once (a create with its same Idempotency-Key) and counted in `retried`; a
    connection dropped by the service at any other time stays a problem."""

    url: str
    api_key: str
    answers: list[Answer] = attrs.field(factory=list)
    stop: trio.Event = attrs.field(factory=trio.Event)
    # What was sent again after this process stood still (see the class docstring).
    retried: list[str] = attrs.field(factory=list)
    _changed: trio.Event = attrs.field(factory=trio.Event)
    # This process's own pauses, (start, end) in trio time, and when it last looked.
    _pauses: list[tuple[float, float]] = attrs.field(factory=list)
    _looked: float = attrs.field(factory=trio.current_time)

    def start(self, nursery: trio.Nursery, clients: int, list_every: int) -> None:
        # The earlier tests of a run leave garbage in reference cycles, which only a full
        # collection frees; such a collection comes when the heap has grown by a quarter,
        # and takes about 1.2 s per million objects here (the run's process held 1.1 GB
        # by then). Done now, before any connection is open, rather than in the load.
        gc.collect()
        nursery.start_soon(self._watch_pauses)
        for n in range(clients):
            nursery.start_soon(self._client, n, list_every)
        nursery.start_soon(self._readiness)

    def count(self, what: str, status: int, since: float = 0.0) -> int:
        """Answers of `what` with `status` to requests started at or after `since`."""
        return sum(
            1 for a in self.answers if a.what == what and a.status == status and a.started >= since
        )

    @property
    def problems(self) -> list[str]:
        return [a.problem for a in self.answers if a.problem]

    def summary(self) -> str:
        counts: dict[tuple[str, int], int] = {}
        for a in self.answers:
            counts[a.what, a.status] = counts.get((a.what, a.status), 0) + 1
        return (
            f"answers {sorted(counts.items())}, problems {self.problems[:5]},"
            f" sent again after a pause of this process {self.retried[:5]}"
        )

    async def wait_until(self, condition: Callable[[], bool], within: float, what: str) -> None:
        """Wait (at most `within` seconds) until `condition` holds; it is looked at after
        each answer."""
        with trio.move_on_after(within):
            while not condition():
                await self._changed.wait()
            return
        raise AssertionError(f"not within {within} s: {what}; {self.summary()}")

    def _record(self, answer: Answer) -> None:
        self.answers.append(answer)
        self._changed.set()
        self._changed = trio.Event()

    async def _watch_pauses(self) -> None:
        """Note each time this process stood still for over `PAUSE_SECONDS`."""
        while not self.stop.is_set():
            await trio.sleep(0.05)  # the watch's pace, not a synchronization
            self._noticed_pause()

    def _noticed_pause(self) -> None:
        now = trio.current_time()
        if now - self._looked > PAUSE_SECONDS:
            self._pauses.append((self._looked, now))
        self._looked = now

    def _idle_past_keep_alive_in_a_pause(self, idle_since: float) -> bool:
        """Whether a connection idle since `idle_since` may have been closed by the
        service's keep-alive timer because this process stood still: idle for at least
        `KEEP_ALIVE_SECONDS` up to now, and a pause of this process in that time."""
        self._noticed_pause()  # a pause just ended, before the watch saw it
        now = trio.current_time()
        return now - idle_since >= KEEP_ALIVE_SECONDS and any(
            end > idle_since for _, end in self._pauses
        )

    async def _call(
        self,
        http: httpx.AsyncClient,
        what: str,
        method: str,
        path: str,
        idle_since: float,
        **kwargs: Any,
    ) -> Answer:
        """One request, on a connection (if kept alive) idle since `idle_since`."""
        started = trio.current_time()
        status, problem, session_id = 0, "", None
        # httpx's own timeout covers each phase; this bounds the request as a whole.
        with trio.move_on_after(CLIENT_TIMEOUT_SECONDS) as bound:
            try:
                try:
                    response = await http.request(method, path, **kwargs)
                except (httpx.RemoteProtocolError, httpx.WriteError) as error:
                    if not self._idle_past_keep_alive_in_a_pause(idle_since):
                        raise
                    self.retried.append(f"{what}: {type(error).__name__} {error}")
                    response = await http.request(method, path, **kwargs)
            except httpx.TimeoutException:
                problem = f"{what}: no answer within {CLIENT_TIMEOUT_SECONDS} s"
            except httpx.TransportError as error:
                problem = f"{what}: {type(error).__name__} {error}"
            else:
                status, problem = response.status_code, _problem(what, response)
                if what == "create" and status == 201:
                    session_id = response.json()["id"]
        if bound.cancelled_caught:
            problem = f"{what}: no answer within {CLIENT_TIMEOUT_SECONDS} s"
        answer = Answer(what, started, trio.current_time(), status, problem, session_id)
        self._record(answer)
        return answer

    async def _client(self, n: int, list_every: int) -> None:
        async with httpx.AsyncClient(
            base_url=self.url + "/api/v1",
            headers={"Authorization": f"Bearer {self.api_key}"},
            timeout=CLIENT_TIMEOUT_SECONDS,
        ) as http:
            i = 0
            idle_since = trio.current_time()
            while not self.stop.is_set():
                i += 1
                if i % list_every == 0:
                    answer = await self._call(
                        http, "list", "GET", "/checkout/sessions", idle_since,
                        params={"limit": 20},
                    )  # fmt: skip
                else:
                    answer = await self._call(
                        http, "create", "POST", "/checkout/sessions", idle_since,
                        json=valid_body(), headers={"Idempotency-Key": f"load-{n}-{i}"},
                    )  # fmt: skip
                idle_since = answer.ended
                if answer.status in (429, 503):
                    # A client backs off (sooner than Retry-After, to see recovery early).
                    await trio.sleep(0.1)

    async def _readiness(self) -> None:
        async with httpx.AsyncClient(base_url=self.url, timeout=CLIENT_TIMEOUT_SECONDS) as http:
            idle_since = trio.current_time()
            while not self.stop.is_set():
                idle_since = (await self._call(http, "readyz", "GET", "/readyz", idle_since)).ended
                await trio.sleep(0.05)  # the poller's pace, not a synchronization


async def _stored_session_ids(url: str, api_key: str) -> set[str]:
    """Every checkout session of the merchant, page by page. A page answered 503 is asked
    again (a pooled connection that died with the restart may still be in a pool; see
    test_no_call_fails_on_a_connection_that_died_with_a_restart)."""
    ids: set[str] = set()
    params: dict[str, Any] = {"limit": 100}
    async with httpx.AsyncClient(
        base_url=url + "/api/v1", headers={"Authorization": f"Bearer {api_key}"}, timeout=30
    ) as http:
        while True:
            with trio.fail_after(RECOVER_WITHIN_SECONDS):
                page = await http.get("/checkout/sessions", params=params)
                while page.status_code == 503:
                    await trio.sleep(0.1)  # a client's retry
                    page = await http.get("/checkout/sessions", params=params)
            assert page.status_code == 200, page.text
            ids.update(item["id"] for item in page.json()["data"])
            if not page.json()["has_more"]:
                return ids
            params["starting_after"] = page.json()["next_cursor"]


# -- pg_stat_activity ---------------------------------------------------------------


@attrs.define
class ConnectionSampler:
    """The most connections each `fgcpay/<pid>` process was seen holding on the database
    of `url` (pg_stat_activity, sampled until `stop`; no sample while the server is down)."""

    url: str
    most: dict[str, int] = attrs.field(factory=dict)
    samples: int = 0
    _conn: psycopg.Connection[Any] | None = None

    def _counts(self) -> list[tuple[str, int]]:
        if self._conn is None or self._conn.closed or self._conn.broken:
            self._conn = psycopg.connect(
                self.url, autocommit=True, connect_timeout=2, application_name="fgcpay-test-monitor"
            )
        rows = self._conn.execute(
            "SELECT application_name, count(*) FROM pg_stat_activity"
            " WHERE datname = current_database() AND application_name LIKE 'fgcpay/%'"
            " GROUP BY application_name"
        ).fetchall()
        return [(str(name), int(count)) for name, count in rows]

    async def run(self, stop: trio.Event) -> None:
        try:
            while not stop.is_set():
                try:
                    counts = await trio.to_thread.run_sync(self._counts)
                except psycopg.OperationalError:
                    pass  # the server is down: nothing to count
                else:
                    self.samples += 1
                    for name, count in counts:
                        self.most[name] = max(self.most.get(name, 0), count)
                await trio.sleep(0.02)  # the sampling pace
        finally:
            if self._conn is not None:
                self._conn.close()

    def assert_within_pool(self) -> None:
        assert self.samples >= 10, self.samples
        over = {name: most for name, most in self.most.items() if most > POOL_SIZE}
        assert not over, f"connections held beyond FGCPAY_DB_POOL_SIZE={POOL_SIZE}: {over}"


def _service_log_problems(service: ServiceProcess) -> list[str]:
    text = service.log.read_text()
    return [
        line[:500]
        for line in text.splitlines()
        if "unhandled error" in line or '"status": 500' in line or '"status":500' in line
    ]


async def _started_service(cwd: Path, database_url: str) -> tuple[ServiceProcess, str]:
    service = ServiceProcess(
        cwd=cwd, database_url=database_url, settings=SERVICE_SETTINGS, workers=2
    )
    created = await service.command(
        "merchant", "create", "--name", "Faults", "--email", "faults@example.com"
    )
    await service.start()
    return service, str(created["api_key"])


# -- the tests ----------------------------------------------------------------------


async def test_postgres_restarted_under_load_answers_2xx_503_or_429_and_serves_again(
    tmp_path: Path, own_cluster: PgCluster
) -> None:
    url = own_cluster.durable_database("faults")
    service, api_key = await _started_service(tmp_path, url)
    try:
        load = Load(service.url, api_key)
        sampler = ConnectionSampler(url)
        async with trio.open_nursery() as nursery:
            load.start(nursery, clients=12, list_every=4)
            nursery.start_soon(sampler.run, load.stop)
            await load.wait_until(lambda: load.count("create", 201) >= 100, 30, "steady load")

            # A fast restart: every session terminated, the server back at once.
            await trio.to_thread.run_sync(_restart_fast, own_cluster)
            back = trio.current_time()
            await load.wait_until(
                lambda: load.count("create", 201, since=back) >= 20,
                RECOVER_WITHIN_SECONDS,
                "creates succeed again after a fast restart",
            )

            # Down for a while (pg_ctl stop -m immediate, as a crash): /readyz and creates
            # say 503 meanwhile; the gap lasts some ten /readyz polls (over half a second).
            await trio.to_thread.run_sync(own_cluster.stop_server)
            down = trio.current_time()
            await load.wait_until(
                lambda: (
                    load.count("readyz", 503, since=down) >= 10
                    and load.count("create", 503, since=down) >= 50
                ),
                CLIENT_TIMEOUT_SECONDS,
                "/readyz and creates answer 503 while PostgreSQL is down",
            )
            assert load.count("create", 201, since=down) == 0, "acknowledged without a database"
            await trio.to_thread.run_sync(own_cluster.start_server)
            back = trio.current_time()
            await load.wait_until(
                lambda: (
                    load.count("readyz", 200, since=back) >= 1
                    and load.count("create", 201, since=back) >= 20
                ),
                RECOVER_WITHIN_SECONDS,
                "/readyz is 200 and creates succeed again after the outage",
            )
            load.stop.set()

        assert not load.problems, load.summary()
        assert service.process is not None and service.process.poll() is None
        # No acknowledged create is lost, through either restart.
        acknowledged = {a.session_id for a in load.answers if a.session_id}
        stored = await _stored_session_ids(service.url, api_key)
        lost = acknowledged - stored
        assert not lost, f"{len(lost)} of {len(acknowledged)} sessions answered 201 are not stored"
        sampler.assert_within_pool()
        assert not _service_log_problems(service), _service_log_problems(service)
    finally:
        await service.stop()


async def test_no_process_holds_more_connections_than_the_pool_size(
    tmp_path: Path, postgres_url: str
) -> None:
    service, api_key = await _started_service(tmp_path, postgres_url)
    try:
        load = Load(service.url, api_key)
        sampler = ConnectionSampler(postgres_url)
        async with trio.open_nursery() as nursery:
            # Many more concurrent requests than connections, half of them reads.
            load.start(nursery, clients=16, list_every=2)
            nursery.start_soon(sampler.run, load.stop)
            await load.wait_until(
                lambda: load.count("create", 201) >= 300 and sampler.samples >= 20,
                30,
                "the load runs while pg_stat_activity is sampled",
            )
            load.stop.set()

        assert not load.problems, load.summary()
        assert {a.status for a in load.answers} <= {200, 201}, load.summary()
        # Both workers were seen, each using its pool, neither beyond it.
        assert len(sampler.most) >= 2, sampler.most
        assert max(sampler.most.values()) >= 3, sampler.most
        sampler.assert_within_pool()
    finally:
        await service.stop()


async def test_no_call_fails_on_a_connection_that_died_with_a_restart(
    own_cluster: PgCluster,
) -> None:
    """Only calls in flight during a restart may hear "unavailable": once PostgreSQL is
    back, a pooled connection that died with it is not handed to a caller."""
    url = own_cluster.durable_database("pooled")
    async with open_database(url, 3, timeout_seconds=DB_TIMEOUT_SECONDS) as db:
        # The reader's and the writer's connections are open and idle.
        assert await db.read(_one) == 1
        assert await db.write(_one) == 1
        await trio.to_thread.run_sync(_restart_fast, own_cluster)  # back when it returns
        failed = []
        for name, run in (("read", db.read), ("write", db.write)):
            try:
                assert await run(_one) == 1
            except DatabaseUnavailable as error:
                failed.append(f"the first {name} after the restart: {error!r}")
        assert not failed, failed


def _slow(tx: Tx) -> Any:
    return tx.fetchval("SELECT pg_sleep(30)")


def _one(tx: Tx) -> Any:
    return tx.fetchval("SELECT 1")


def _sleeping_backends(url: str) -> list[str]:
    """application_name of each backend of the database running the slow statement."""
    with psycopg.connect(url, autocommit=True, connect_timeout=2) as conn:
        rows = conn.execute(
            "SELECT application_name FROM pg_stat_activity"
            " WHERE datname = current_database() AND state = 'active'"
            " AND query = 'SELECT pg_sleep(30)' AND pid <> pg_backend_pid()"
        ).fetchall()
    return [str(row[0]) for row in rows]


async def _timed(
    run: Callable[..., Awaitable[Any]], fn: Callable[[Tx], Any], outcome: dict[str, Any]
) -> None:
    """`await run(fn)`, its result or error and how long it took, into `outcome`."""
    started = trio.current_time()
    try:
        outcome["result"] = await run(fn)
    except Exception as error:
        outcome["error"] = error
    outcome["elapsed"] = trio.current_time() - started


async def test_a_statement_past_the_timeout_is_cancelled_by_the_server(postgres_url: str) -> None:
    timeout = 1.0
    ours = f"fgcpay/{os.getpid()}"

    async def ours_sleeps() -> bool:
        return ours in await trio.to_thread.run_sync(_sleeping_backends, postgres_url)

    async def none_sleeps() -> bool:
        return not await trio.to_thread.run_sync(_sleeping_backends, postgres_url)

    async with open_database(postgres_url, 3, timeout_seconds=timeout) as db:
        for name, run in (("read", db.read), ("write", db.write)):
            outcome: dict[str, Any] = {}
            with trio.fail_after(10):
                async with trio.open_nursery() as nursery:
                    nursery.start_soon(_timed, run, _slow, outcome)
                    # It runs on the server, on a connection named after this process.
                    # Another process (the server): polling is the only way to see it.
                    await wait_until(
                        ours_sleeps,
                        within=timeout,
                        what=f"{name}: pg_sleep seen running",
                        every=0.02,
                    )
            assert isinstance(outcome.get("error"), DatabaseUnavailable), (name, outcome)
            assert 0.9 * timeout <= outcome["elapsed"] <= timeout + 2, (name, outcome)
            # Cancelled by the server: no backend sleeps on (a client that only gave up
            # waiting, or closed its socket, would leave it running for the full 30 s).
            await wait_until(
                none_sleeps,
                within=5,
                what=f"{name}: the backend stops running pg_sleep",
                every=0.02,
            )
            # The connection (or its replacement) serves the next call.
            assert await run(_one) == 1


# -- live status across processes after an outage -------------------------------------

OUTAGE_SECONDS = 2.5
TOKEN = re.compile(r'name="csrf_token" value="([^"]+)"')


async def _until_ready(server: Server) -> None:
    # The service is polled as an operator's probe would.
    await wait_ready(server.url, within=RECOVER_WITHIN_SECONDS)


async def _pay(server: Server, session_id: str) -> None:
    """Pay as a browser does, again after a 503 (a connection lost with the restart)."""
    async with httpx.AsyncClient(base_url=server.url, timeout=CLIENT_TIMEOUT_SECONDS) as browser:
        with trio.fail_after(RECOVER_WITHIN_SECONDS):
            while True:
                page = await browser.get(f"/checkout/{session_id}")
                token = TOKEN.search(page.text)
                if page.status_code == 200 and token:
                    form = {
                        "csrf_token": token.group(1),
                        "customer_code": "TEST-0001",
                        "pin": "1234",
                    }
                    paid = await browser.post(f"/checkout/{session_id}", data=form)
                    if paid.status_code == 303:
                        return
                    assert paid.status_code == 503, paid.text
                else:
                    assert page.status_code == 503, page.text
                await trio.sleep(0.1)  # a customer's retry


async def _status_messages(
    server: Server, session_id: str, into: trio.MemorySendChannel[str]
) -> None:
    """Hold the session's status socket, sending each status on; open it again after a
    close with 1013 (try again later), as the page's script does."""
    url = server.url.replace("http://", "ws://") + f"/checkout/{session_id}/ws"
    while True:
        try:
            async with open_websocket_url(url) as ws:
                while True:
                    status = json.loads(await ws.get_message())["status"]
                    await into.send(status)
                    if status == "paid":
                        return
        except ConnectionClosed as closed:
            assert closed.reason is not None and closed.reason.code == 1013, closed.reason
        await trio.sleep(0.1)  # the script's reconnect delay


async def test_a_payment_reaches_a_socket_held_by_another_process_after_an_outage(
    nursery: trio.Nursery, own_cluster: PgCluster
) -> None:
    """LISTEN comes back with PostgreSQL: a payment made through one process right after
    an outage reaches the status socket held by another (no NOTIFY in the gap is lost)."""
    url = own_cluster.durable_database("live")
    settings = attrs.evolve(make_settings(url), db_timeout_seconds=DB_TIMEOUT_SECONDS)
    # Two services on one database share nothing but PostgreSQL, like two workers.
    first = await start_server(nursery, settings)
    second = await start_server(nursery, settings)
    _, session = await new_session(first)
    session_id = str(session["id"])

    await trio.to_thread.run_sync(own_cluster.stop_server)
    await trio.sleep(OUTAGE_SECONDS)  # the outage's length: the scenario, not a synchronization
    await trio.to_thread.run_sync(own_cluster.start_server)
    await _until_ready(first)
    await _until_ready(second)

    send, receive = trio.open_memory_channel[str](10)
    async with trio.open_nursery() as watching:
        watching.start_soon(_status_messages, second, session_id, send)
        with trio.fail_after(RECOVER_WITHIN_SECONDS):
            assert await receive.receive() == "created"
        await _pay(first, session_id)
        with trio.fail_after(RECOVER_WITHIN_SECONDS):
            # A socket opened again (after a 1013) starts with "created" once more.
            while (status := await receive.receive()) != "paid":
                assert status == "created", status
    await first.shutdown()
    await second.shutdown()
