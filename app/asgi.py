"""fgcpay as an ASGI application, for hypercorn run with the operator's own config:

    hypercorn --worker-class trio [--workers N] [--config hypercorn.toml] fgcpay.asgi:app

`fgcpay serve` stays the zero-configuration path; this one serves the same service with
hypercorn's bind, TLS, HTTP/2, timeouts and access log as the operator configures them.

The lifespan. Each worker's ASGI lifespan task reads the settings as `fgcpay serve`
does (`asgi_settings`: the bind is hypercorn's, which the public URL follows), opens the database once as `fgcpay migrate` does (migrations are applied under the lock
that keeps workers starting together from racing; after `release: fgcpay migrate` there
is nothing left to apply), then opens the whole service with `open_service` in that same
task (its root nursery is opened and closed there), builds the Quart app, runs the
Quart app's own lifespan, and reports `lifespan.startup.complete`. Hypercorn sends
`lifespan.shutdown` once its connections have finished or its graceful timeout has cut
them: the Quart app shuts down, the service's root scope is cancelled, storage commits
what is queued and closes, then `lifespan.shutdown.complete`. A request that reaches the
app while the service is not running is answered 503 with the ApiError JSON.

A service that cannot start says why in one line on standard error, in `fgcpay serve`'s
words (an unreachable database with its host and port, a setting by its name), and the
worker exits with status 2; so does hypercorn's main process where it loaded
`fgcpay.hypercorn_config` (hypercorn 0.18 alone exits 0 then). The traceback is shown
only with FGCPAY_LOG_LEVEL=DEBUG.

Stopping. Hypercorn's main process stops its workers (SIGTERM or SIGINT to it) through
an event each worker polls. Importing this module makes a worker serving this app also
stop, the same way, on SIGTERM to the worker itself (hypercorn then starts another in its
place) and when its main process is gone, even killed by SIGKILL: as with `fgcpay serve`,
no worker outlives it. A SIGTERM that comes while the worker starts is acted on once it
serves; one that comes while it drains changes nothing: hypercorn's main process, once
one worker has exited, sends SIGTERM to the others, which would otherwise end a drain
midway. With `--workers 0` (in hypercorn's own process) none of this applies: SIGINT
drains, SIGTERM ends the process at once, as hypercorn does.

On the wire, `fgcpay.server`'s HTTP/1.1 adjustments (the hang fix, the linger before a
close, the ApiError answer to a request that cannot be parsed) apply to this app's
connections under any hypercorn config. What stays the operator's: the limits
`fgcpay serve` sets (`fgcpay.hypercorn_config.ServeDefaults`, which the Procfile loads;
an own config should set them too), HTTP/2 and HTTP/3 connections (hypercorn's own protocol,
unadjusted), and hypercorn's access log (off unless configured; the app logs one JSON
line per request either way).
"""

from __future__ import annotations

import logging
import multiprocessing
import os
import signal
import sys
import traceback
from collections.abc import AsyncIterator, Awaitable, Callable, Iterator, Mapping
from contextlib import asynccontextmanager, contextmanager
from functools import partial
from multiprocessing.process import BaseProcess
from multiprocessing.synchronize import Event as EventType
from types import FrameType
from typing import Any

import attrs
import hypercorn.trio.run
import trio
from fgcpay import server
from fgcpay.core.logs import JsonFormatter, log_event, logger
from fgcpay.core.settings import PREFIX, Settings, database_shown, load_settings
from fgcpay.domain import errors, ids
from fgcpay.service import Service, gil_switch_interval, open_service, start_up_heap_frozen
from fgcpay.startup import check_database, one_line
from fgcpay.web.errors import JSON_TYPE, error_body
from fgcpay.web.plumbing import protocol_error_answer
from fgcpay.web.proxies import behind_proxies
from fgcpay.web_app import create_app
from hypercorn.typing import (
    ASGIFramework,
    ASGIReceiveCallable,
    ASGIReceiveEvent,
    ASGISendCallable,
    ASGISendEvent,
    HTTPScope,
    LifespanScope,
    LifespanState,
    Scope,
    WebsocketScope,
)
from hypercorn.utils import LifespanFailureError, check_multiprocess_shutdown_event
from quart_trio import QuartTrio


def asgi_settings(env: Mapping[str, str] | None = None) -> Settings:
    """The settings `fgcpay serve` reads, from the same environment (`load_settings`).

    Hypercorn binds, not fgcpay, so where FGCPAY_HOST or FGCPAY_PORT is unset, HOST and
    PORT stand in for it: Procfile hosts set PORT, and the Procfile's web line binds
    `${HOST:-0.0.0.0}:${PORT:-8000}`. Without FGCPAY_PUBLIC_URL the public URL is then
    derived from them as `fgcpay serve --host $HOST --port $PORT` derives it.
    """
    env = dict(os.environ if env is None else env)
    if not env.get(PREFIX + "HOST") and env.get("HOST"):
        env[PREFIX + "HOST"] = env["HOST"]
    if not env.get(PREFIX + "PORT") and env.get("PORT", "").isdigit():
        env[PREFIX + "PORT"] = env["PORT"]
    return load_settings(env)


@attrs.frozen
class _Running:
    quart: QuartTrio
    service: Service
    # The Quart app as served: behind trusted proxies (`fgcpay.web.proxies`), if any.
    served: ASGIFramework


class ServiceApp(server.ServedApp):
    """The ASGI application: the whole service, opened by the lifespan of each worker."""

    def __init__(self) -> None:
        # Set once startup completed, unset once shutdown began.
        self.running: _Running | None = None
        self.sigterm_noted = False  # see _sigterm_deferred

    async def __call__(
        self, scope: Scope, receive: ASGIReceiveCallable, send: ASGISendCallable
    ) -> None:
        if scope["type"] == "lifespan":
            await self._lifespan(scope, receive, send)
            return
        running = self.running
        if running is None:
            await _not_serving(scope, send)
            return
        await running.served(scope, receive, send)

    async def protocol_error_answer(
        self, status: int, path: str | None, client: str
    ) -> tuple[int, list[tuple[str, str]], bytes] | None:
        running = self.running
        if running is None:  # no connection is served then: hypercorn's answer will do
            return None
        return await protocol_error_answer(running.service, status, path, client)

    async def _lifespan(
        self, scope: LifespanScope, receive: ASGIReceiveCallable, send: ASGISendCallable
    ) -> None:
        if (await receive())["type"] != "lifespan.startup":
            return
        with _sigterm_deferred(self):
            await self._open_serve_close(scope, receive, send)

    async def _open_serve_close(
        self, scope: LifespanScope, receive: ASGIReceiveCallable, send: ASGISendCallable
    ) -> None:
        settings: Settings | None = None
        started = False
        try:
            settings = asgi_settings()
            _log_as_json(settings.log_level)
            await check_database(settings)
            async with open_service(settings) as service:
                quart = create_app(service)
                # Hypercorn accepts connections once the startup is complete, and sends
                # the shutdown once they are all closed: all of them get our protocol.
                with start_up_heap_frozen(), gil_switch_interval(), server.installed():
                    async with _quart_lifespan(quart, scope["state"]):
                        served = behind_proxies(
                            quart, settings.trusted_proxy_hops, settings.public_url_set
                        )
                        self.running = _Running(quart, service, served)
                        log_event(
                            "starting",
                            public_url=settings.public_url,
                            database=database_shown(settings.database_url),
                            env=settings.env,
                            server="hypercorn",
                        )
                        await send({"type": "lifespan.startup.complete"})
                        started = True
                        await receive()  # lifespan.shutdown, once hypercorn has drained
                        self.running = None
        except Exception as error:
            self.running = None
            if not started:
                await _cannot_start(send, error, settings)
                return
            # A part of the service failed: the worker must not serve on without it.
            log_event(
                "the service failed",
                logging.ERROR,
                error=one_line(error),
                exc_info_text="".join(traceback.format_exception(error))[-4000:],
            )
            await send({"type": "lifespan.shutdown.failed", "message": one_line(error)})
            return
        log_event("stopped")
        await send({"type": "lifespan.shutdown.complete"})


def _log_as_json(level: str) -> None:
    """fgcpay's lines as JSON on stderr, at FGCPAY_LOG_LEVEL, as `fgcpay serve` writes
    them. Only fgcpay's: the rest (hypercorn's error and access logs, and the root logger)
    is the operator's, through hypercorn's config (`--log-config` and the like)."""
    handler = logging.StreamHandler(sys.stderr)
    handler.setFormatter(JsonFormatter())
    logger.handlers[:] = [handler]
    logger.setLevel(level)
    logger.propagate = False


async def _cannot_start(
    send: ASGISendCallable, error: Exception, settings: Settings | None
) -> None:
    """Say why in one line, report `lifespan.startup.failed`, and end the worker."""
    line = one_line(error)
    if settings is not None and settings.log_level == "DEBUG":
        traceback.print_exception(error)
    print(f"fgcpay: {line}", file=sys.stderr, flush=True)
    try:
        await send({"type": "lifespan.startup.failed", "message": line})
    except LifespanFailureError:
        # Hypercorn takes a failed startup in by raising this from `send`; let through,
        # it would end the worker with a traceback (multiprocessing prints it) and status
        # 1, when the line above says it all. Nothing of ours is open any more.
        os._exit(2)


@asynccontextmanager
async def _quart_lifespan(quart: QuartTrio, state: LifespanState) -> AsyncIterator[None]:
    """The Quart app's own lifespan around the block, driven as an ASGI server drives it:
    its startup, the nursery it keeps for background tasks, its shutdown."""
    to_app, app_inbox = trio.open_memory_channel[ASGIReceiveEvent](1)
    app_outbox, from_app = trio.open_memory_channel[ASGISendEvent](1)
    scope: LifespanScope = {
        "type": "lifespan",
        "asgi": {"spec_version": "2.0", "version": "3.0"},
        "state": state,
    }

    async def step(event: ASGIReceiveEvent, complete: str) -> None:
        await to_app.send(event)
        said = await from_app.receive()
        if said["type"] != complete:
            raise RuntimeError(f"the app's {event['type']} failed: {said.get('message')}")

    async with trio.open_nursery() as nursery:
        nursery.start_soon(quart, scope, app_inbox.receive, app_outbox.send)
        try:
            await step({"type": "lifespan.startup"}, "lifespan.startup.complete")
            yield
            await step({"type": "lifespan.shutdown"}, "lifespan.shutdown.complete")
        finally:
            # Its task has ended after a shutdown; after a failure it waits for a message.
            nursery.cancel_scope.cancel()


async def _not_serving(scope: HTTPScope | WebsocketScope, send: ASGISendCallable) -> None:
    """503 and the ApiError JSON: the service is not running (its startup has not
    completed, or its shutdown has begun). Hypercorn sends no request then; this guards
    against a server that would."""
    request_id = ids.request_id()
    error = errors.Unavailable("The service is starting or stopping; please retry.")
    body = error_body(error.code, error.message, error.details_json(), request_id)
    headers = [
        (b"content-type", JSON_TYPE.encode()),
        (b"content-length", str(len(body)).encode()),
        (b"request-id", request_id.encode()),
        (b"retry-after", str(error.retry_after_seconds).encode()),
        (b"cache-control", b"no-store"),
    ]
    log_event(
        "request",
        request_id=request_id,
        method=scope.get("method"),
        path=scope["path"],
        status=error.status,
        service_running=False,
    )
    if scope["type"] == "http":
        await send({"type": "http.response.start", "status": error.status, "headers": headers})
        await send({"type": "http.response.body", "body": body, "more_body": False})
    elif "websocket.http.response" in scope.get("extensions", {}):
        await send(
            {"type": "websocket.http.response.start", "status": error.status, "headers": headers}
        )
        await send({"type": "websocket.http.response.body", "body": body, "more_body": False})
    else:
        await send({"type": "websocket.close", "code": 1013, "reason": "try again later"})


@contextmanager
def _sigterm_deferred(app: ServiceApp) -> Iterator[None]:
    """In a worker that hypercorn's main process started, SIGTERM does not end the worker
    at once while its service starts, serves or drains: it is noted, and acted on while
    the worker serves (`stop_when_told`: stop accepting, drain, exit). One that arrives
    during the drain changes nothing, as it must: hypercorn's main process sends SIGTERM
    to the workers still draining once the first has exited. In hypercorn's own process
    (`--workers 0`) nothing changes."""
    if multiprocessing.parent_process() is None:
        yield
        return

    def note(signum: int, frame: FrameType | None) -> None:
        app.sigterm_noted = True

    previous = signal.signal(signal.SIGTERM, note)
    try:
        yield
    finally:
        signal.signal(signal.SIGTERM, previous)


def _install_worker_stop(app: ServiceApp) -> None:
    """Make hypercorn's trio worker stop also on SIGTERM to itself and when its main
    process is gone, where it serves `app`. Hypercorn looks its stop trigger up (by name,
    in `hypercorn.trio.run`) after it has loaded the application, so replacing it at
    import applies to the worker that imported this module, and to no other."""
    polls_main_process = check_multiprocess_shutdown_event  # hypercorn's own trigger

    async def stop_when_told(
        shutdown_event: EventType, sleep: Callable[[float], Awaitable[Any]]
    ) -> None:
        main_process = multiprocessing.parent_process()
        if app.running is None or main_process is None:  # another app: hypercorn's way
            await polls_main_process(shutdown_event, sleep)
            return
        async with trio.open_nursery() as nursery:

            async def then_stop(wait: Callable[[], Awaitable[None]]) -> None:
                await wait()
                nursery.cancel_scope.cancel()

            told = partial(polls_main_process, shutdown_event, sleep)
            nursery.start_soon(then_stop, partial(_told, told))
            nursery.start_soon(then_stop, partial(_sigterm, app))
            nursery.start_soon(then_stop, partial(_gone, main_process))
        running = app.running
        if running is not None:
            # Hypercorn waits for open connections: the event streams end now (1001).
            running.service.event_streams.close_all()

    hypercorn.trio.run.check_multiprocess_shutdown_event = stop_when_told  # type: ignore[attr-defined]


async def _told(by_main_process: Callable[[], Awaitable[None]]) -> None:
    await by_main_process()
    log_event("shutting down", reason="hypercorn's main process says so")


async def _sigterm(app: ServiceApp) -> None:
    """Return on SIGTERM to this worker, or at once if one came while it started."""
    with trio.open_signal_receiver(signal.SIGTERM) as signals:
        if not app.sigterm_noted:
            async for _ in signals:
                break
    log_event("shutting down", signal="SIGTERM")


async def _gone(main_process: BaseProcess) -> None:
    """Return once hypercorn's main process has ended, however: its sentinel, a pipe only
    it writes to, becomes readable then (the kernel closes it), and trio wakes at once."""
    await trio.lowlevel.wait_readable(main_process.sentinel)
    log_event("shutting down", reason="hypercorn's main process is gone")


app = ServiceApp()
_install_worker_stop(app)
