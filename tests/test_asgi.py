"""The whole service under plain hypercorn (issue 14, item 1): `hypercorn --worker-class
trio fgcpay.asgi:app`, as a real process.

On PostgreSQL with two workers and hypercorn's own defaults, and on SQLite with one
worker and the Procfile's config: a merchant made with the CLI, a checkout session
created over HTTP and paid on the hosted page, its webhook received signed, then SIGTERM
to hypercorn and a clean exit with nothing left undelivered. Then what an operator meets
around it: a service that cannot start, workers that follow their main process, and the
ASGI lifespan itself, in process.
"""

from __future__ import annotations

import json
import os
import signal
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest
import trio
from fgcpay.asgi import ServiceApp, asgi_settings
from fgcpay.core.logs import logger
from fgcpay.service import hypercorn_config
from fgcpay.webhooks import verify_delivery
from helpers import TEST_SECRET, make_settings, open_stream, valid_body, wait_until
from hosted import TOKEN
from hypercorn.config import Config
from processes import PROCFILE_CONFIG, HypercornProcess, ended_within, worker_pids
from receiver import reserve_port, start_receiver
from trio_websocket import ConnectionClosed

PROMPT_SECONDS = 5.0  # an idle stop takes a fraction of a second


def _workers(database_url: str) -> int:
    # Several workers need PostgreSQL (SQLite has one writer per file).
    return 2 if database_url.startswith("postgresql://") else 1


def _hypercorn(tmp_path: Path, database_url: str, config: str | None) -> HypercornProcess:
    settings = {"LOG_LEVEL": "INFO", "SECRET_KEY": TEST_SECRET}
    workers = _workers(database_url)
    return HypercornProcess(
        cwd=tmp_path, database_url=database_url, workers=workers, settings=settings, config=config
    )


def _logged(service: HypercornProcess, message: str) -> int:
    """How many of fgcpay's JSON lines in the service's output say `message`."""
    lines = service.log.read_text().splitlines()
    return sum(json.loads(line).get("msg") == message for line in lines if line.startswith("{"))


async def _every_worker_serving(service: HypercornProcess) -> None:
    async def all_started() -> bool:
        return _logged(service, "starting") == service.workers

    await wait_until(all_started, within=30, what="each worker's `starting` line")


async def _answer_to_unparsable_request(url: str) -> tuple[int, dict[str, str], Any]:
    """A request with a header line h11 cannot parse, under /api/v1: the answer's status,
    headers (lower-case names) and JSON body, read until the server closes."""
    port = int(url.rsplit(":", 1)[1])
    stream = await trio.open_tcp_stream("127.0.0.1", port)
    async with stream:
        await stream.send_all(b"GET /api/v1/checkout/sessions HTTP/1.1\r\nno colon\r\n\r\n")
        await stream.send_eof()  # else the server lingers, reading what a client still sends
        received = b""
        while chunk := await stream.receive_some(65536):
            received += chunk
    head, _, body = received.decode("latin-1").partition("\r\n\r\n")
    status_line, *lines = head.split("\r\n")
    headers = {name.lower(): value.strip() for name, _, value in (x.partition(":") for x in lines)}
    return int(status_line.split(" ")[1]), headers, json.loads(body)


async def test_hypercorn_serves_a_payment_and_its_webhook_then_stops_cleanly(
    tmp_path: Path, database_url: str, nursery: trio.Nursery
) -> None:
    receiver = await start_receiver(nursery)
    # PostgreSQL: issue 14's command line as it is; SQLite: the Procfile's.
    config = None if _workers(database_url) > 1 else PROCFILE_CONFIG
    service = _hypercorn(tmp_path, database_url, config)
    created = await service.command(
        "merchant", "create", "--name", "Hyper", "--email", "hyper@example.com"
    )
    endpoint = await service.command(
        "webhook-endpoint", "create", "--merchant", created["merchant_id"], "--url", receiver.url
    )
    try:
        await service.start()

        await _every_worker_serving(service)
        headers = {"Authorization": f"Bearer {created['api_key']}"}
        async with httpx.AsyncClient(base_url=service.url, headers=headers) as api:
            made = await api.post("/api/v1/checkout/sessions", json=valid_body())
            assert made.status_code == 201, made.text
            session = made.json()
            # The public URL follows PORT, which the Procfile's web line binds.
            assert session["checkout_url"] == f"{service.url}/checkout/{session['id']}"
            # A new connection per request: the page and its form may reach either worker.
            no_reuse = httpx.Limits(max_keepalive_connections=0)
            async with httpx.AsyncClient(base_url=service.url, limits=no_reuse) as browser:
                page = await browser.get(f"/checkout/{session['id']}")
                token = TOKEN.search(page.text)
                assert token, page.text
                form = {"csrf_token": token.group(1), "customer_code": "TEST-0001", "pin": "1234"}
                paid = await browser.post(f"/checkout/{session['id']}", data=form)
            assert paid.status_code == 303, paid.text
            with trio.fail_after(30):
                (delivery,) = await receiver.wait_for(1)
            verify_delivery(delivery.body, delivery.headers, endpoint["secret"])
            event = json.loads(delivery.body)
            assert (event["type"], event["data"]["object"]["id"]) == (
                "checkout.session.paid",
                session["id"],
            )

            async def recorded() -> bool:
                listed = (await api.get("/api/v1/webhook_deliveries")).json()["data"]
                return [d["status"] for d in listed] == ["succeeded"]

            # The receiver answers before the service records the attempt.
            await wait_until(recorded, within=30, what="the delivery recorded as succeeded")
        # Our HTTP/1.1 adjustments apply under hypercorn's own config too.
        status, answered, error = await _answer_to_unparsable_request(service.url)
        assert (status, error["code"]) == (400, "validation_error")
        assert answered["request-id"] == error["request_id"] and "ratelimit" in answered

        # An event stream open on a worker ends with 1001 as the drain begins, rather
        # than holding it for the grace period.
        async with open_stream(service.url, created["api_key"]) as stream:
            started = time.monotonic()
            stopped: list[int] = []

            async def stop() -> None:
                stopped.append(await service.stop(signal.SIGTERM))

            async with trio.open_nursery() as stopping:
                stopping.start_soon(stop)
                with trio.fail_after(PROMPT_SECONDS), pytest.raises(ConnectionClosed) as closed:
                    while True:
                        await stream.ws.get_message()
        assert closed.value.reason is not None and closed.value.reason.code == 1001
        assert stopped == [0]
        assert time.monotonic() - started < PROMPT_SECONDS
    finally:
        service.kill()
    assert service.errors_logged() == []
    # Every worker drained its service to the end.
    assert _logged(service, "stopped") == service.workers
    after = await service.command("webhook", "deliveries", "--merchant", created["merchant_id"])
    assert (after["status"], after["attempt_count"]) == ("succeeded", 1)


@pytest.mark.parametrize("cause", ["unreachable-database", "bad-setting"])
async def test_a_service_that_cannot_start_says_why_in_one_line(tmp_path: Path, cause: str) -> None:
    refusing = reserve_port()  # bound, never listening: connections are refused
    port = refusing.getsockname()[1]
    database_url, said = {
        "unreachable-database": (
            f"postgresql://fgcpay@127.0.0.1:{port}/fgcpay",
            f"fgcpay: cannot connect to PostgreSQL at 127.0.0.1:{port}: ",
        ),
        "bad-setting": (
            "mysql://127.0.0.1/fgcpay",
            "fgcpay: FGCPAY_DATABASE_URL must be a sqlite:// or postgresql:// URL",
        ),
    }[cause]
    service = HypercornProcess(cwd=tmp_path, database_url=database_url)
    with refusing, trio.fail_after(60):
        status = await (await service.launch()).wait()
    printed = service.log.read_text().splitlines()  # hypercorn's output, stderr included
    assert len(printed) == 1 and printed[0].startswith(said), printed
    assert status == 2


async def test_workers_stop_with_their_main_process_and_on_their_own_sigterm(
    tmp_path: Path, database_url: str
) -> None:
    service = _hypercorn(tmp_path, database_url, PROCFILE_CONFIG)
    try:
        await service.start()
        assert service.process is not None
        main = service.process.pid

        await _every_worker_serving(service)
        first = worker_pids(main)[0]
        # SIGTERM to one worker: it drains and exits, and hypercorn starts another.
        os.kill(first, signal.SIGTERM)
        assert ended_within([first], PROMPT_SECONDS)

        async def replaced() -> bool:
            serving = _logged(service, "starting") == service.workers + 1
            return serving and first not in worker_pids(main)

        await wait_until(
            replaced, within=30, what="a new worker serving in the stopped one's place"
        )
        workers = worker_pids(main)
        assert len(workers) == service.workers
        # SIGKILL to hypercorn's main process: no worker outlives it.
        assert await service.stop(signal.SIGKILL) == -signal.SIGKILL
        assert ended_within(workers, PROMPT_SECONDS)
    finally:
        service.kill()
    assert service.errors_logged() == []
    assert _logged(service, "stopped") == service.workers + 1


def test_the_procfile_config_gives_hypercorn_the_limits_fgcpay_serve_sets() -> None:
    procfile = (Path(__file__).parent.parent / "Procfile").read_text()
    assert f" --config {PROCFILE_CONFIG} " in procfile
    loaded = Config.from_object(PROCFILE_CONFIG.removeprefix("python:"))  # as --config does
    served = hypercorn_config(make_settings("sqlite:///unused.sqlite3"))
    for name in ("worker_class", "h11_max_incomplete_size", "keep_alive_timeout", "backlog"):
        assert getattr(loaded, name) == getattr(served, name), name


def test_the_public_url_follows_the_bind_hypercorn_is_given(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(tmp_path)
    secret = {"FGCPAY_SECRET_KEY": TEST_SECRET}
    assert asgi_settings(secret).public_url == "http://127.0.0.1:8000"
    assert asgi_settings({**secret, "PORT": "5000"}).public_url == "http://127.0.0.1:5000"
    procfile_host = {**secret, "HOST": "0.0.0.0", "PORT": "5000"}
    assert asgi_settings(procfile_host).public_url == "http://127.0.0.1:5000"
    ours = {**procfile_host, "FGCPAY_PORT": "9000"}
    assert asgi_settings(ours).public_url == "http://127.0.0.1:9000"
    public = {**ours, "FGCPAY_PUBLIC_URL": "https://pay.example"}
    assert asgi_settings(public).public_url == "https://pay.example"


# --- the lifespan, in process ---


@pytest.fixture
def fgcpay_logger_kept() -> Iterator[None]:
    """The lifespan sends fgcpay's log lines to this test's stderr: put them back after."""
    kept = (logger.handlers[:], logger.level, logger.propagate)
    yield
    logger.handlers[:], level, logger.propagate = kept
    logger.setLevel(level)


async def _get(app: ServiceApp, path: str) -> tuple[int, dict[str, str], bytes]:
    """One GET through the ASGI application, as an ASGI server hands it over."""
    scope: Any = {
        "type": "http",
        "asgi": {"version": "3.0", "spec_version": "2.3"},
        "http_version": "1.1",
        "method": "GET",
        "scheme": "http",
        "path": path,
        "raw_path": path.encode(),
        "query_string": b"",
        "root_path": "",
        "headers": [(b"host", b"127.0.0.1:8000")],
        "client": ("127.0.0.1", 50000),
        "server": ("127.0.0.1", 8000),
        "state": {},
        "extensions": {},
    }
    asked = False
    sent: list[Any] = []

    async def receive() -> Any:
        nonlocal asked
        if asked:
            await trio.sleep_forever()  # no disconnect: the app ends the exchange
        asked = True
        return {"type": "http.request", "body": b"", "more_body": False}

    async def send(message: Any) -> None:
        sent.append(message)

    with trio.fail_after(10):
        await app(scope, receive, send)
    start = next(m for m in sent if m["type"] == "http.response.start")
    headers = {name.decode().lower(): value.decode() for name, value in start["headers"]}
    body = b"".join(m.get("body", b"") for m in sent if m["type"] == "http.response.body")
    return start["status"], headers, body


def _unavailable(answer: tuple[int, dict[str, str], bytes]) -> bool:
    status, headers, body = answer
    error = json.loads(body)
    assert error["request_id"] == headers["request-id"] and "retry-after" in headers
    return status == 503 and error["code"] == "service_unavailable"


@pytest.mark.usefixtures("fgcpay_logger_kept")
async def test_the_lifespan_opens_the_service_and_closes_it_in_its_own_task(
    tmp_path: Path, database_url: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("FGCPAY_DATABASE_URL", database_url)
    monkeypatch.setenv("FGCPAY_SECRET_KEY", TEST_SECRET)
    app = ServiceApp()
    assert _unavailable(await _get(app, "/readyz"))  # before startup
    to_app, inbox = trio.open_memory_channel[Any](1)
    outbox, from_app = trio.open_memory_channel[Any](1)
    scope: Any = {"type": "lifespan", "asgi": {"version": "3.0"}, "state": {}}
    with trio.fail_after(30):
        async with trio.open_nursery() as server:
            server.start_soon(app, scope, inbox.receive, outbox.send)
            await to_app.send({"type": "lifespan.startup"})
            assert await from_app.receive() == {"type": "lifespan.startup.complete"}
            status, _, body = await _get(app, "/readyz")
            assert (status, json.loads(body)) == (200, {"status": "ready"})
            await to_app.send({"type": "lifespan.shutdown"})
            assert await from_app.receive() == {"type": "lifespan.shutdown.complete"}
        # The lifespan task has returned: the service's nursery closed inside it.
    assert _unavailable(await _get(app, "/readyz"))  # after shutdown
