"""`fgcpay serve`'s processes: bind the listening socket, migrate once, then serve in
this process or, with `--workers N`, supervise N worker processes sharing the socket.

The supervisor starts the workers (spawned) and forwards SIGTERM and SIGINT to them
through the shutdown line. A worker that ends while the service runs (killed, crashed,
or stopped by a signal to itself) is started again in its place, as an OTP supervisor
restarts a child, within a budget: past `RESTARTS` in `RESTART_PERIOD_SECONDS` a restart
is not curing it (a bad deploy, a database refusing every worker), so the supervisor
stops them all and exits 1, for the platform to see. A worker stops on a signal to
itself, or when the supervisor stops or dies (even by SIGKILL). The service each worker
runs is `fgcpay.service.serve`.
"""

from __future__ import annotations

import logging
import multiprocessing
import os
import signal
import time
from collections.abc import Awaitable, Callable
from functools import partial
from multiprocessing.connection import Connection, wait
from typing import Any

import trio
from fgcpay.core.logs import configure_logging, log_event
from fgcpay.core.settings import Settings, database_shown
from fgcpay.core.supervision import Budget
from fgcpay.service import hypercorn_config, serve, wait_for_signal
from fgcpay.startup import CommandError, migrate, reason

# The workers' restart budget: at most this many restarts within the period.
RESTARTS = 5
RESTART_PERIOD_SECONDS = 60.0


def serve_workers(settings: Settings, host: str | None, port: int | None, workers: int) -> int:
    """Serve on `host`:`port` (the settings' where None) with `workers` (at least 1)
    processes; the exit status: 0 once stopped, 1 if a worker failed."""
    if workers > 1 and not settings.is_postgres:
        # Every worker would queue behind the one writer of the SQLite file.
        if settings.production:
            raise CommandError(
                "--workers above 1 needs PostgreSQL in production (FGCPAY_DATABASE_URL):"
                " SQLite has one writer"
            )
        log_event(
            "several workers on SQLite share one writer; use PostgreSQL to scale out",
            logging.WARNING,
            workers=workers,
        )
    explicit_public = bool(os.environ.get("FGCPAY_PUBLIC_URL"))
    settings = settings.with_bind(
        host or settings.host, settings.port if port is None else port, explicit_public
    )
    # Migrate once, before any worker starts, so workers never race on the schema.
    trio.run(migrate, settings)
    try:
        sockets = hypercorn_config(settings, workers).create_sockets()
    except OSError as error:
        address = f"{settings.host}:{settings.port}"
        raise CommandError(f"cannot listen on {address}: {reason(error)}") from error
    if settings.port == 0 and sockets.insecure_sockets:
        # "Any free port": say (and link to) the one the system chose.
        bound = int(sockets.insecure_sockets[0].getsockname()[1])
        settings = settings.with_bind(settings.host, bound, explicit_public)
    log_event(
        "starting",
        public_url=settings.public_url,
        database=database_shown(settings.database_url),
        bind=f"{settings.host}:{settings.port}",
        workers=workers,
        env=settings.env,
    )
    if workers == 1:
        for sock in sockets.insecure_sockets:
            sock.listen(1024)
        trio.run(_run_worker, settings, sockets, None)
        return 0
    return _supervise(settings, sockets, workers)


def _worker_entry(settings: Settings, sockets: Any, shutdown_line: Connection) -> None:
    configure_logging(settings.log_level)
    for sock in sockets.insecure_sockets:
        sock.listen(1024)
    trio.run(_run_worker, settings, sockets, shutdown_line)


async def _run_worker(settings: Settings, sockets: Any, shutdown_line: Connection | None) -> None:
    async def trigger() -> None:
        # Whichever comes first: a signal to this process, or the supervisor's word.
        async with trio.open_nursery() as nursery:

            async def then_stop(wait: Callable[[], Awaitable[None]]) -> None:
                await wait()
                nursery.cancel_scope.cancel()

            nursery.start_soon(then_stop, wait_for_signal)
            if shutdown_line is not None:
                nursery.start_soon(then_stop, partial(_supervisor_done, shutdown_line))

    await serve(settings, sockets=sockets, shutdown_trigger=trigger)


async def _supervisor_done(shutdown_line: Connection) -> None:
    """Return once the supervisor closed its end of the shutdown line or died (the
    kernel closes it then, whatever killed the process): either way the line's reading
    end becomes readable, at end of file, and trio wakes at once."""
    await trio.lowlevel.wait_readable(shutdown_line.fileno())
    log_event("shutting down", reason="supervisor stopping or gone")


def _supervise(settings: Settings, sockets: Any, workers: int) -> int:
    """Run `workers` processes sharing the listening socket, each replaced when it ends
    (within the budget); SIGTERM stops them all."""
    ctx = multiprocessing.get_context("spawn")
    # The shutdown line: a pipe whose writing end only this process holds (a spawned
    # worker inherits no descriptor it was not given), so a worker outlives neither a
    # stop nor this process's death, even by SIGKILL. Its reading end is kept here to
    # hand to the workers started in a dead one's place.
    line, stop_line = ctx.Pipe(duplex=False)
    stopping = False

    def start(number: int) -> multiprocessing.process.BaseProcess:
        process = ctx.Process(
            target=_worker_entry, args=(settings, sockets, line), name=f"fgcpay-worker-{number}"
        )
        process.start()
        return process

    def stop(signum: int | None = None, frame: Any = None) -> None:
        nonlocal stopping
        stopping = True
        stop_line.close()  # idempotent
        # Ours would keep the port listening, with nobody accepting, once the workers
        # stop accepting: connections must be refused instead.
        for sock in sockets.insecure_sockets:
            sock.close()

    signal.signal(signal.SIGTERM, stop)
    signal.signal(signal.SIGINT, stop)
    running = {start(number): number for number in range(workers)}
    budget = Budget(RESTARTS, RESTART_PERIOD_SECONDS)
    exit_code = 0
    while running:
        for sentinel in wait([p.sentinel for p in running]):
            ended = next(p for p in running if p.sentinel == sentinel)
            ended.join()
            number = running.pop(ended)
            if stopping:
                continue
            if budget.spend(time.monotonic()):
                log_event(
                    "workers keep ending: stopping the service",
                    logging.ERROR,
                    exit_code=ended.exitcode,
                    restarts=RESTARTS,
                    period_seconds=RESTART_PERIOD_SECONDS,
                )
                exit_code = 1
                stop()
                continue
            log_event(
                "a worker ended; starting another in its place",
                logging.WARNING,
                pid=ended.pid,
                exit_code=ended.exitcode,
            )
            try:
                running[start(number)] = number
            except (OSError, ValueError):
                if not stopping:  # a stop between the check and the start closed the socket
                    raise
    # The workers shared their metrics through a directory derived from this process
    # (fgcpay.core.metrics): nobody reads it once they have all ended.
    from fgcpay.core.metrics_files import remove_workers_directory

    remove_workers_directory()
    return exit_code
