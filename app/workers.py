"""`fgcpay serve`'s processes: bind the listening socket, migrate once, then serve in
this process or, with `--workers N`, supervise N worker processes sharing the socket.

The supervisor starts the workers (spawned), forwards SIGTERM and SIGINT to them through
the shutdown line, stops them all once one fails, and exits 1 then; a worker stops on a
signal to itself, or when the supervisor stops or dies (even by SIGKILL). The service
each worker runs is `fgcpay.service.serve`.
"""

from __future__ import annotations

import logging
import multiprocessing
import os
import signal
from collections.abc import Awaitable, Callable
from functools import partial
from multiprocessing.connection import Connection, wait
from typing import Any

import trio
from fgcpay.core.logs import configure_logging, log_event
from fgcpay.core.settings import Settings, database_shown
from fgcpay.service import hypercorn_config, serve, wait_for_signal
from fgcpay.startup import CommandError, migrate, reason


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
    """Run `workers` processes sharing the listening socket; SIGTERM stops them all."""
    ctx = multiprocessing.get_context("spawn")
    # The shutdown line: a pipe whose writing end only this process holds (a spawned
    # worker inherits no descriptor it was not given), so a worker outlives neither a
    # stop nor this process's death, even by SIGKILL.
    line, stop_line = ctx.Pipe(duplex=False)
    processes = [
        ctx.Process(target=_worker_entry, args=(settings, sockets, line), name=f"fgcpay-worker-{i}")
        for i in range(workers)
    ]

    def stop(signum: int, frame: Any) -> None:
        stop_line.close()  # idempotent

    for process in processes:
        process.start()
    line.close()
    # Each worker has its own copy now. Ours would keep the port listening, with nobody
    # accepting, once the workers stop accepting: connections must be refused instead.
    for sock in sockets.insecure_sockets:
        sock.close()
    signal.signal(signal.SIGTERM, stop)
    signal.signal(signal.SIGINT, stop)
    exit_code = 0
    running = list(processes)
    while running:
        # Whichever worker ends first: if it failed, stop the others too.
        for sentinel in wait([p.sentinel for p in running]):
            ended = next(p for p in running if p.sentinel == sentinel)
            ended.join()
            running.remove(ended)
            if ended.exitcode != 0:
                exit_code = 1
                stop_line.close()
    # The workers shared their metrics through a directory derived from this process
    # (fgcpay.core.metrics): nobody reads it once they have all ended.
    from fgcpay.core.metrics_files import remove_workers_directory

    remove_workers_directory()
    return exit_code
