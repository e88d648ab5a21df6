"""PostgreSQL backend: asyncpg, run on trio through trio-asyncio.

Each read or write crosses into asyncio once: the whole repository function runs there
on a pooled connection, inside one transaction for a write.
"""

from __future__ import annotations

import logging
import re
from collections.abc import Callable, Sequence
from functools import lru_cache
from typing import Any

import asyncpg
import trio
import trio_asyncio
from fgcpay.logs import log_event

from ._database import DatabaseUnavailable, RepoFn, Row, StorageError
from ._migrations import Migration, pg_apply_migrations

_PLACEHOLDER = re.compile(r"\?")


@lru_cache(maxsize=1024)
def to_pg(sql: str) -> str:
    """`?` placeholders to asyncpg's `$1, $2, ...` (our SQL has no `?` in literals)."""
    counter = iter(range(1, 10_000))
    return _PLACEHOLDER.sub(lambda _: f"${next(counter)}", sql)


async def _keep_session(conn: Any) -> None:
    """Pooled connections carry no session state to reset (no LISTEN, session settings or
    session-level locks: LISTEN has a connection of its own, migrations lock per
    transaction), so asyncpg's reset round trips on every release are skipped."""


# Driver errors that mean the database is unreachable or refusing work for now, not that
# the statement was wrong: connection refused, lost or timed out (OSError covers
# TimeoutError), class 08 (connection), 53 (insufficient resources), 57 (operator
# intervention: shutdown, cannot connect now, statement timeout) and a read-only server.
_UNAVAILABLE: tuple[type[BaseException], ...] = (
    OSError,
    asyncpg.PostgresConnectionError,
    asyncpg.InsufficientResourcesError,
    asyncpg.OperatorInterventionError,
    asyncpg.ReadOnlySQLTransactionError,
)


def _is_unavailable(error: BaseException) -> bool:
    if isinstance(error, _UNAVAILABLE):
        return True
    # asyncpg says "connection is closed" / "pool is closing" as a bare InterfaceError.
    return isinstance(error, asyncpg.InterfaceError) and "clos" in str(error)


def _log_asyncio_error(loop: Any, context: dict[str, Any]) -> None:
    error = context.get("exception")
    log_event(
        "asyncio error in the PostgreSQL driver",
        logging.WARNING,
        detail=str(context.get("message", ""))[:200],
        error_type=type(error).__name__ if error else None,
        error=str(error)[:200] if error else None,
    )


class PgTx:
    dialect = "postgresql"

    def __init__(self, conn: Any) -> None:
        self._conn = conn

    async def fetch(self, sql: str, *args: Any) -> Sequence[Row]:
        rows: Sequence[Row] = await self._conn.fetch(to_pg(sql), *args)
        return rows

    async def fetchrow(self, sql: str, *args: Any) -> Row | None:
        row: Row | None = await self._conn.fetchrow(to_pg(sql), *args)
        return row

    async def fetchval(self, sql: str, *args: Any) -> Any:
        return await self._conn.fetchval(to_pg(sql), *args)

    async def execute(self, sql: str, *args: Any) -> int:
        status: str = await self._conn.execute(to_pg(sql), *args)
        tail = status.rsplit(" ", 1)[-1]
        return int(tail) if tail.isdigit() else 0


class PostgresDatabase:
    """Open with `run` inside a nursery (it holds the trio-asyncio loop and the pool)."""

    dialect = "postgresql"

    def __init__(self, url: str, pool_size: int, timeout_seconds: float = 5.0) -> None:
        self.url = url
        self.pool_size = pool_size
        # Bounds connecting, waiting for a pooled connection and each statement, so a
        # database that is down or hung is answered 503 in seconds, never a hang.
        self.timeout_seconds = timeout_seconds
        self._loop: Any = None
        self._pool: Any = None

    async def run(
        self,
        migrations: list[Migration],
        *,
        task_status: trio.TaskStatus[None] = trio.TASK_STATUS_IGNORED,
    ) -> None:
        async with trio_asyncio.open_loop() as loop:
            self._loop = loop
            # trio-asyncio's default handler turns any stray asyncio error (such as a
            # pooled connection dropped while idle) into a crash of the whole service.
            # asyncpg already recovers from those: log them instead.
            loop.set_exception_handler(_log_asyncio_error)
            try:
                self._pool = await self._aio(asyncpg.create_pool)(
                    self.url,
                    min_size=1,
                    max_size=self.pool_size,
                    reset=_keep_session,
                    # asyncpg arms a 300 s idle timer on every release and cancels it on
                    # the next acquire; trio-asyncio's loop keeps cancelled timers until
                    # they fall due, each holding the request's context (the whole Quart
                    # request). That was the PostgreSQL memory growth (~15 KiB per create).
                    max_inactive_connection_lifetime=0,
                    # For the same reason no other per-call asyncio timer is armed (no
                    # `command_timeout`, no acquire timeout): each call is bounded on trio's
                    # side instead (`_run_tx`), and a statement past the bound is also
                    # cancelled by the server itself (`statement_timeout`).
                    timeout=self.timeout_seconds,
                    server_settings={
                        "statement_timeout": str(int(self.timeout_seconds * 1000)),
                    },
                )
            except (OSError, asyncpg.PostgresError) as error:
                raise StorageError(f"cannot connect to PostgreSQL: {error}") from None
            try:
                await self._aio(self._migrate)(migrations)
                task_status.started()
                await trio.sleep_forever()
            finally:
                pool, self._pool = self._pool, None
                with trio.CancelScope(shield=True):
                    with trio.move_on_after(5) as closing:
                        await self._aio(pool.close)()
                    if closing.cancelled_caught:
                        # Connections still busy after the grace period: cut them, so
                        # the loop closes with nothing left in flight.
                        pool.terminate()

    def _aio(self, fn: Any) -> Any:
        return trio_asyncio.aio_as_trio(fn, loop=self._loop)

    async def _migrate(self, migrations: list[Migration]) -> None:
        async with self._pool.acquire() as conn:
            await pg_apply_migrations(conn, migrations)

    async def _in_tx(self, write: bool, fn: RepoFn[..., Any], args: Any, kwargs: Any) -> Any:
        async with self._pool.acquire() as conn:
            if write:
                async with conn.transaction():
                    return await fn(PgTx(conn), *args, **kwargs)
            # Reads are single statements: each sees one consistent snapshot by itself.
            return await fn(PgTx(conn), *args, **kwargs)

    async def read(self, fn: RepoFn[..., Any], *args: Any, **kwargs: Any) -> Any:
        return await self._run_tx(False, fn, args, kwargs)

    async def write(self, fn: RepoFn[..., Any], *args: Any, **kwargs: Any) -> Any:
        return await self._run_tx(True, fn, args, kwargs)

    async def _run_tx(self, write: bool, fn: RepoFn[..., Any], args: Any, kwargs: Any) -> Any:
        if self._pool is None:
            raise StorageError("the database is closed")
        try:
            with trio.fail_after(self.timeout_seconds):
                return await self._aio(self._in_tx)(write, fn, args, kwargs)
        except trio.TooSlowError:
            raise DatabaseUnavailable(
                f"PostgreSQL did not answer within {self.timeout_seconds:g} s"
            ) from None
        except Exception as error:
            if _is_unavailable(error):
                # The pool replaces the broken connection on a later acquire: recovery
                # needs no restart.
                name = type(error).__name__
                raise DatabaseUnavailable(f"PostgreSQL is unavailable: {name}") from error
            raise

    async def ping(self) -> None:
        async def one(tx: Any) -> Any:
            return await tx.fetchval("SELECT 1")

        await self.read(one)

    async def listen(
        self,
        channel: str,
        on_payload: Callable[[str], None],
        *,
        task_status: trio.TaskStatus[None] = trio.TASK_STATUS_IGNORED,
    ) -> None:
        """LISTEN on `channel` on a connection of its own, calling `on_payload` for each
        NOTIFY; reconnects (with backoff) when the connection drops."""
        started = False
        delay = 0.5
        while True:
            lost = trio.Event()
            conn = None
            try:
                conn = await self._aio(asyncpg.connect)(self.url, timeout=self.timeout_seconds)
                conn.add_termination_listener(lambda _conn, lost=lost: lost.set())
                await self._aio(conn.add_listener)(
                    channel, lambda _conn, _pid, _channel, payload: on_payload(payload)
                )
                delay = 0.5
                if not started:
                    started = True
                    task_status.started()
                await lost.wait()
                log_event("status listener lost its connection", logging.WARNING)
            except Exception as error:  # any driver failure: reconnect, never take the service down
                log_event("status listener cannot connect", logging.WARNING, error=type(error).__name__)
            finally:
                if conn is not None and not conn.is_closed():
                    conn.terminate()
            await trio.sleep(delay)
            delay = min(delay * 2, 10.0)
