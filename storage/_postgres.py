"""PostgreSQL backend: psycopg 3 (its C build) on worker threads, writes committed in groups.

The database is driven the way the SQLite backend drives it: repository functions are
plain synchronous code run on a thread that owns a connection, so nothing crosses into
another event loop and nothing blocks the trio thread.

- Writes queue to one writer thread per process (`GroupThread`): it runs whatever is
  queued as one transaction and commits once; one WAL flush serves the group. The
  callers run first side by side with no savepoints (two round trips fewer each), the
  calls of a function with a batched form (`_database.batched`) as one call of it; if one
  raises, that transaction is rolled back and the group runs again with each caller
  alone in a savepoint of its own, so one caller's error rolls back only its own work.
- One lock order across processes: each pass of a group (and a caller run again alone)
  first takes, in one statement, the advisory locks of the keys its callers declared
  (`_database.locks`), sorted, so two processes' groups that want the same rows wait for
  each other there, in one order, and never deadlock on them halfway through.
- Reads run on pooled connections in autocommit mode; each read is one statement or a
  few statements that need no common snapshot. A read whose function has a batched form
  (the API key lookup of every request) queues to one reader thread of its own instead
  (`GroupThread`, with a connection of the pool): it takes every such read queued so far
  and runs each function's calls as one statement, so a burst of requests costs one
  thread hop and one round trip, not one each. Each statement starts after every read of
  its group was asked for, so a read still sees everything committed before it was asked
  (a key revoked before a request arrives refuses that request).
- LISTEN (every channel the process follows) runs on a connection and a thread of its
  own, and reconnects after a restart.

`FGCPAY_DB_POOL_SIZE` bounds every connection a process opens: the writer's, the
listener's and the readers' (the rest). Every connection carries `statement_timeout`, so
a statement past the bound is cancelled by the server itself, and `application_name`
`fgcpay/<pid>`, so an operator sees in pg_stat_activity which process holds what.

Measured against asyncpg through trio-asyncio before it was replaced (docs/decisions/0001-postgresql-psycopg-on-threads.md).
"""

from __future__ import annotations

import hashlib
import json
import logging
import math
import os
import re
import select
import threading
from collections.abc import Callable, Iterator, Mapping, Sequence
from contextlib import contextmanager
from functools import lru_cache
from typing import Any, Self

import psycopg
import trio
from fgcpay.core.logs import log_event
from fgcpay.core.metrics import ConnectionUse
from psycopg.rows import dict_row

from ._database import (
    DatabaseUnavailable,
    LockKey,
    RepoFn,
    Row,
    Shared,
    StorageError,
    batched_form,
    declared_keys,
    select_one,
)
from ._migrations import Migration, pg_apply_migrations
from ._threads import Connections, GroupThread, Job, run_many, runs_of

MIN_POOL_SIZE = 3
"""The writer, the listener and at least one reader."""

GROUPED_READER_FROM = 4
"""The pool size from which one reader connection serves the grouped reads (below it,
they take a pooled connection each, as every other read)."""

_RETRIES = 3
"""Times a caller's transaction is run again after a deadlock or serialization failure."""

_PLACEHOLDER = re.compile(r"\?(::\w+\[\])?")


def _placeholder(match: re.Match[str]) -> str:
    # An array (`?::text[]`, the batched writes' columns) goes in binary: in text, psycopg
    # escapes every element with a regular expression, which cost 9 ms of the writer's
    # time per 384 rows of an event against 0.9 ms in binary.
    return "%s" if match.group(1) is None else "%b" + match.group(1)


@lru_cache(maxsize=1024)
def to_pg(sql: str) -> str:
    """`?` placeholders to psycopg's `%s`, or `%b` for an array (`?::type[]`); our SQL has
    no `?` in literals, and a literal `%` is doubled."""
    return _PLACEHOLDER.sub(_placeholder, sql.replace("%", "%%"))


# SQLSTATE classes that mean the database is unreachable or refusing work for now, not
# that the statement was wrong: 08 connection, 53 insufficient resources, 57 operator
# intervention (shutdown, cannot connect now, statement timeout), and a read-only server.
_UNAVAILABLE_CLASSES = ("08", "53", "57")
_READ_ONLY = "25006"
# Deadlock and serialization failure: the transaction may simply be run again.
_RETRYABLE = frozenset({"40P01", "40001"})


def _is_unavailable(error: BaseException) -> bool:
    if isinstance(error, OSError | psycopg.OperationalError | psycopg.InterfaceError):
        return True
    state = getattr(error, "sqlstate", None) or ""
    return state.startswith(_UNAVAILABLE_CLASSES) or state == _READ_ONLY


def _unavailable(error: BaseException) -> DatabaseUnavailable:
    return DatabaseUnavailable(f"PostgreSQL is unavailable: {type(error).__name__}")


# -- the lock order ---------------------------------------------------------------------

AdvisoryKey = tuple[int, bool]
"""An advisory lock: its 64-bit key, and whether it is taken shared."""

# Rows come out of a function scan in the order the function returned them (it reads
# them back from a tuplestore), `unnest` returns an array's elements in storage order
# (PostgreSQL's documentation of `unnest`), and a plain aggregate takes its input one row
# at a time: so the locks are taken one after the other in the order of the arrays.
_TAKE_KEYS = (
    "SELECT count(CASE WHEN s THEN pg_advisory_xact_lock_shared(k) ELSE pg_advisory_xact_lock(k)"
    " END) FROM unnest(?::bigint[], ?::boolean[]) AS u(k, s)"
)


@lru_cache(maxsize=65536)
def advisory_key(key: LockKey) -> int:
    """The advisory lock of `key`: 63 bits of a hash that every process computes alike
    (BLAKE2b; Python's `hash` of a string differs from process to process), made negative,
    so it is never the migrations' lock (`_migrations.PG_LOCK_KEY`, positive, in the same
    single-bigint key space; `pg_advisory_lock(int, int)` locks lie in another, which never
    overlaps this one). Two keys sharing a lock only wait for each other needlessly."""
    digest = hashlib.blake2b(json.dumps(key).encode(), digest_size=8, person=b"fgcpay-locks")
    return -1 - (int.from_bytes(digest.digest(), "big") >> 1)


def _job_keys(job: Job) -> list[AdvisoryKey]:
    return [
        (advisory_key(key.key), True) if isinstance(key, Shared) else (advisory_key(key), False)
        for key in declared_keys(job.fn, job.args, job.kwargs)
    ]


def _in_order(keys: Sequence[AdvisoryKey]) -> list[AdvisoryKey]:
    """Each key once (alone where any caller takes it alone), in the one order."""
    shared: dict[int, bool] = {}
    for key, is_shared in keys:
        shared[key] = shared.get(key, True) and is_shared
    return sorted(shared.items())


def _take_keys(cur: psycopg.Cursor[Any], keys: Sequence[AdvisoryKey]) -> None:
    """Take the advisory locks `keys` (in order, for the transaction) in one statement."""
    if keys:
        cur.execute(to_pg(_TAKE_KEYS), ([key for key, _ in keys], [s for _, s in keys]))


# -- watching the statements sent (tests only) -------------------------------------------

_observer: Callable[[str], None] | None = None


class _ObservedCursor(psycopg.Cursor[Any]):
    """A cursor that hands each statement to the observer before sending it: used only on
    connections opened inside `observing_statements`."""

    def execute(self, query: Any, *args: Any, **kwargs: Any) -> Self:
        _observe(query)
        return super().execute(query, *args, **kwargs)

    def executemany(self, query: Any, *args: Any, **kwargs: Any) -> None:
        _observe(query)
        super().executemany(query, *args, **kwargs)


def _observe(query: object) -> None:
    observer = _observer
    if observer is not None:
        observer(query if isinstance(query, str) else repr(query))


@contextmanager
def observing_statements(observer: Callable[[str], None]) -> Iterator[None]:
    """Hand every statement (as sent, with psycopg's placeholders) that a connection
    opened inside this block sends, on any thread, to `observer`, until the block ends.
    For tests/test_citus_statements.py, which checks that each names its merchant; every
    other connection keeps psycopg's own cursor, so nothing is paid for it otherwise."""
    global _observer
    previous, _observer = _observer, observer
    try:
        yield
    finally:
        _observer = previous


def _is_broken(conn: psycopg.Connection[Any]) -> bool:
    return conn.closed or conn.broken


def _is_usable(conn: psycopg.Connection[Any]) -> bool:
    """Whether an idle connection may be used. The server ends its side of a connection
    when it restarts (with an error message, then end of file); psycopg learns of it only
    when a call fails. An idle connection has nothing to read, so a readable socket means
    it is gone (or holds a stray notice): it is replaced rather than used."""
    if _is_broken(conn):
        return False
    readable, _, _ = select.select([conn.fileno()], [], [], 0)
    return not readable


def _close(conn: psycopg.Connection[Any]) -> None:
    conn.close()


class PgTx:
    dialect = "postgresql"

    def __init__(self, cur: psycopg.Cursor[Any]) -> None:
        self._cur = cur

    def fetch(self, sql: str, *args: Any) -> Sequence[Row]:
        return self._cur.execute(to_pg(sql), args).fetchall()

    def fetchrow(self, sql: str, *args: Any) -> Row | None:
        row: Row | None = self._cur.execute(to_pg(sql), args).fetchone()
        return row

    def fetchval(self, sql: str, *args: Any) -> Any:
        row = self._cur.execute(to_pg(sql), args).fetchone()
        return None if row is None else next(iter(row.values()))

    def execute(self, sql: str, *args: Any) -> int:
        return max(self._cur.execute(to_pg(sql), args).rowcount, 0)

    def execute_many(self, sql: str, rows: Sequence[Sequence[Any]]) -> None:
        self._cur.executemany(to_pg(sql), rows)

    def notify(self, channel: str, payload: str) -> None:
        self._cur.execute("SELECT pg_notify(%s, %s)", (channel, payload))


class PostgresDatabase:
    """Open with `start` (on a thread: it blocks), close with `stop`."""

    dialect = "postgresql"

    def __init__(self, url: str, pool_size: int, timeout_seconds: float = 5.0) -> None:
        if pool_size < MIN_POOL_SIZE:
            raise StorageError(f"the PostgreSQL pool needs at least {MIN_POOL_SIZE} connections")
        self.url = url
        self.pool_size = pool_size
        # Bounds connecting, waiting for a pooled connection and each statement, so a
        # database that is down or hung is answered 503 in seconds, never a hang.
        self.timeout_seconds = timeout_seconds
        grouped = pool_size >= GROUPED_READER_FROM
        self._readers = Connections(pool_size - 2 - int(grouped), self._connect, _close, _is_usable)
        self._writer = GroupThread("fgcpay-pg-writer", "write", self._commit_group)
        self._writer_conn: psycopg.Connection[Any] | None = None
        self._grouped = (
            GroupThread("fgcpay-pg-reader", "read", self._read_group) if grouped else None
        )
        self._grouped_conn: psycopg.Connection[Any] | None = None
        # The listener's thread is its own: it never takes a reader's place.
        self._listen_limiter = trio.CapacityLimiter(1)

    def _connect(self) -> psycopg.Connection[Any]:
        timeout_ms = int(self.timeout_seconds * 1000)
        try:
            conn = psycopg.connect(
                self.url,
                autocommit=True,
                row_factory=dict_row,
                connect_timeout=max(1, math.ceil(self.timeout_seconds)),
                application_name=f"fgcpay/{os.getpid()}",
                options=f"-c statement_timeout={timeout_ms}",
                # A server that vanished without closing the socket (a crashed host, a
                # dropped network) is noticed in seconds, not after the kernel's minutes.
                tcp_user_timeout=timeout_ms,
                keepalives=1,
                keepalives_idle=max(1, math.ceil(self.timeout_seconds)),
                keepalives_interval=1,
                keepalives_count=3,
            )
        except psycopg.Error as error:
            raise _unavailable(error) from error
        if _observer is not None:
            conn.cursor_factory = _ObservedCursor
        return conn

    # -- lifetime -------------------------------------------------------------------

    async def stop(self) -> None:
        """Commit the queued writes, then close every connection."""
        await self._writer.stop()
        if self._grouped is not None:
            await self._grouped.stop()
        self._readers.close_all()
        for conn in (self._writer_conn, self._grouped_conn):
            if conn is not None:
                conn.close()
        self._writer_conn = self._grouped_conn = None

    def start(self, migrations: list[Migration]) -> None:
        """Connect, apply what migrations are missing and start the writer (blocking)."""
        try:
            self._writer_conn = self._connect()
        except DatabaseUnavailable as error:
            raise StorageError(f"cannot connect to PostgreSQL: {error.__cause__}") from None
        try:
            pg_apply_migrations(self._writer_conn, migrations)
        except psycopg.Error as error:
            self._writer_conn.close()
            raise StorageError(f"PostgreSQL migrations failed: {error}") from None
        self._writer.start()
        if self._grouped is not None:
            self._grouped.start()

    # -- Database -------------------------------------------------------------------

    async def read(self, fn: RepoFn[..., Any], *args: Any, **kwargs: Any) -> Any:
        if self._grouped is not None and not kwargs and batched_form(fn) is not None:
            try:
                with trio.fail_after(self.timeout_seconds):
                    return await self._grouped.submit(fn, args, kwargs)
            except trio.TooSlowError:
                raise DatabaseUnavailable(
                    f"PostgreSQL did not answer within {self.timeout_seconds:g} s"
                ) from None

        def work(conn: psycopg.Connection[Any]) -> Any:
            with conn.cursor() as cur:
                try:
                    return fn(PgTx(cur), *args, **kwargs)
                except psycopg.Error as error:
                    if _is_unavailable(error):
                        raise _unavailable(error) from error
                    raise

        try:
            # Bounds the wait for a free connection; a statement is bounded by the server.
            with trio.fail_after(self.timeout_seconds):
                return await self._readers.run(work, _is_broken)
        except trio.TooSlowError:
            raise DatabaseUnavailable(
                f"PostgreSQL did not answer within {self.timeout_seconds:g} s"
            ) from None

    async def write(self, fn: RepoFn[..., Any], *args: Any, **kwargs: Any) -> Any:
        return await self._writer.submit(fn, args, kwargs)

    async def ping(self) -> None:
        await self.read(select_one)

    def connection_use(self) -> list[ConnectionUse]:
        grouped = self._grouped
        return [
            ConnectionUse(
                "read",
                self._readers.in_use + int(grouped is not None and grouped.busy),
                self._readers.size + int(grouped is not None),
            ),
            ConnectionUse("write", int(self._writer.busy), 1),
        ]

    # -- the grouped reader's thread ------------------------------------------------

    def _read_group(self, batch: list[Job]) -> None:
        """Every read queued so far, each function's calls as one call of its batched
        form, in autocommit: each statement sees what was committed before it began, and
        so before any of these reads was asked for. A batched call that fails is run
        again call by call, so each caller hears its own answer."""
        conn = self._grouped_conn
        if conn is None or not _is_usable(conn):
            if conn is not None:
                conn.close()
            self._grouped_conn = None
            conn = self._grouped_conn = self._connect()  # or every caller hears 503
        answered: set[Job] = set()
        try:
            with conn.cursor() as cur:
                tx = PgTx(cur)
                for run in runs_of(batch):
                    if run.many is not None:
                        try:
                            run_many(run, tx)
                            answered.update(run.jobs)
                            continue
                        except Exception:
                            if _is_broken(conn):
                                raise
                    for job in run.jobs:
                        self._read_one(conn, tx, job)
                        answered.add(job)
        except psycopg.Error as error:  # the connection is gone: the rest hear why
            failure = _unavailable(error) if _is_unavailable(error) else error
            for job in batch:
                if job not in answered:
                    job.error, job.result = failure, None
            if _is_broken(conn):
                conn.close()
                self._grouped_conn = None

    @staticmethod
    def _read_one(conn: psycopg.Connection[Any], tx: PgTx, job: Job) -> None:
        try:
            job.result = job.fn(tx, *job.args, **job.kwargs)
        except psycopg.Error as error:
            if _is_broken(conn):
                raise
            job.error = _unavailable(error) if _is_unavailable(error) else error
        except BaseException as error:  # handed to the caller
            job.error = error

    # -- the writer thread ----------------------------------------------------------

    def _commit_group(self, batch: list[Job]) -> None:
        keys: dict[Job, list[AdvisoryKey]] = {}
        for job in batch:
            try:
                keys[job] = _job_keys(job)
            except Exception as error:  # a declaration that cannot read its call's arguments
                job.error = error
        batch = [job for job in batch if job in keys]
        if not batch:
            return
        group_keys = _in_order([key for job in batch for key in keys[job]])
        conn = self._writer_conn
        if conn is None or not _is_usable(conn):
            # Lost with the database (a restart): a fresh one, or every caller hears 503.
            if conn is not None:
                conn.close()
            self._writer_conn = None
            conn = self._writer_conn = self._connect()
        if len(batch) > 1:
            try:
                stopped = self._run_without_savepoints(conn, batch, group_keys)
            except psycopg.Error as error:
                # The COMMIT itself failed: whether it took is unknown, so nothing is run
                # again; every caller hears why (as when a whole group fails). Or the keys
                # could not be taken (in time): no caller's fault, none is run.
                stopped = error
            else:
                if stopped is None:
                    return  # committed
                if not _is_broken(conn):
                    stopped = None  # a caller's own error: run the group again, carefully
            if stopped is not None:
                if isinstance(stopped, psycopg.Error):
                    self._fail_group(batch, [], stopped)
                else:
                    for job in batch:
                        job.error, job.result = stopped, None
                if _is_broken(conn):
                    conn.close()
                    self._writer_conn = None
                return
        retry: list[Job] = []
        try:
            with conn.cursor() as cur, conn.transaction():
                _take_keys(cur, group_keys)
                tx = PgTx(cur)
                if len(batch) == 1:
                    # Alone in its group: its error may roll back the whole transaction,
                    # so no savepoint (two round trips) is needed.
                    batch[0].result = batch[0].fn(tx, *batch[0].args, **batch[0].kwargs)
                else:
                    for job in batch:
                        self._run_in_savepoint(conn, tx, job, retry)
        except psycopg.Error as error:
            self._fail_group(batch, retry, error)
            if _is_broken(conn):
                conn.close()
                self._writer_conn = None
                return
            if len(batch) == 1 and getattr(error, "sqlstate", None) in _RETRYABLE:
                retry = list(batch)
            else:
                return
        except BaseException as error:  # a lone job's own error, handed to its caller
            for job in batch:  # (with several, each job's own was caught in its savepoint)
                if job.error is None:
                    job.error, job.result = error, None
            return
        for job in retry:
            self._run_alone(conn, job, _in_order(keys[job]))

    @staticmethod
    def _run_without_savepoints(
        conn: psycopg.Connection[Any], batch: list[Job], keys: Sequence[AdvisoryKey]
    ) -> BaseException | None:
        """Run every caller of the group in one transaction with no savepoint each: two
        round trips fewer per caller (a renewal is seven statements with them, five
        without), and the calls of a function with a batched form as one call of it (a
        burst of renewals: five statements for the whole group). None once committed; else the error that stopped it, with nothing
        committed and no caller's result kept: the group is then run again with each
        caller in a savepoint, so that only that caller's work is lost (repository
        functions are plain SQL with no other effect, so running one again after a
        rollback is safe), unless the connection is lost. Raises only when the COMMIT
        fails, or the group's `keys` cannot be taken."""
        stopped: BaseException | None = None
        committing = locked = False
        try:
            with conn.cursor() as cur, conn.transaction():
                _take_keys(cur, keys)
                locked = True
                tx = PgTx(cur)
                for run in runs_of(batch):
                    try:
                        if run.many is not None:
                            run_many(run, tx)
                        else:
                            job = run.jobs[0]
                            job.result = job.fn(tx, *job.args, **job.kwargs)
                    except Exception as error:
                        stopped = error
                        raise psycopg.Rollback() from None  # rolled back, and swallowed
                committing = True  # leaving the block sends the COMMIT
        except (psycopg.Error, psycopg.Rollback) as error:
            # The COMMIT failed, or taking the keys did; or the rollback did too, the
            # connection being lost (psycopg then lets the Rollback through).
            if committing or not locked:
                raise
            stopped = stopped or error
        if stopped is not None:
            for job in batch:
                job.result = None
        return stopped

    @staticmethod
    def _run_in_savepoint(
        conn: psycopg.Connection[Any], tx: PgTx, job: Job, retry: list[Job]
    ) -> None:
        try:
            with conn.transaction():  # SAVEPOINT; RELEASE, or ROLLBACK TO on error
                job.result = job.fn(tx, *job.args, **job.kwargs)
        except psycopg.Error as error:
            if _is_broken(conn):
                raise  # the connection is gone: the whole group fails
            if error.sqlstate in _RETRYABLE:
                retry.append(job)  # run again alone once the group has committed
            else:
                job.error = _unavailable(error) if _is_unavailable(error) else error
        except BaseException as error:  # handed to the caller, never swallowed
            job.error = error

    @staticmethod
    def _fail_group(batch: list[Job], retry: list[Job], error: psycopg.Error) -> None:
        # Nothing of the group committed: every caller hears why.
        failure: BaseException = _unavailable(error) if _is_unavailable(error) else error
        for job in batch:
            if job.error is None or job in retry:
                job.error, job.result = failure, None

    def _run_alone(
        self, conn: psycopg.Connection[Any], job: Job, keys: Sequence[AdvisoryKey]
    ) -> None:
        job.error = job.result = None
        for attempt in range(_RETRIES):
            try:
                with conn.cursor() as cur, conn.transaction():
                    _take_keys(cur, keys)
                    job.result = job.fn(PgTx(cur), *job.args, **job.kwargs)
                return
            except psycopg.Error as error:
                if error.sqlstate in _RETRYABLE and attempt + 1 < _RETRIES and not _is_broken(conn):
                    continue
                job.error = _unavailable(error) if _is_unavailable(error) else error
                return
            except BaseException as error:
                job.error = error
                return

    # -- LISTEN ---------------------------------------------------------------------

    async def listen(
        self,
        channels: Mapping[str, Callable[[str], None]],
        on_reconnect: Callable[[], None],
        *,
        task_status: trio.TaskStatus[None] = trio.TASK_STATUS_IGNORED,
    ) -> None:
        """LISTEN on every channel of `channels` on one connection of its own, calling
        the channel's function (on the trio thread) for each NOTIFY; reconnects, with
        backoff, when the connection drops, then calls `on_reconnect` (what was notified
        meanwhile was lost)."""
        token = trio.lowlevel.current_trio_token()
        started = False
        delay = 0.5

        def deliver(channel: str, payload: str) -> None:
            heard = channels.get(channel)
            if heard is not None:
                token.run_sync_soon(heard, payload)

        while True:
            stop = threading.Event()
            try:
                conn = await trio.to_thread.run_sync(
                    self._listening, list(channels), limiter=self._listen_limiter
                )
            except DatabaseUnavailable as error:
                log_event("listener cannot connect", logging.WARNING, error=str(error))
            else:
                delay = 0.5
                if not started:
                    started = True
                    task_status.started()
                else:
                    on_reconnect()
                try:
                    await trio.to_thread.run_sync(
                        self._pump,
                        conn,
                        deliver,
                        stop,
                        abandon_on_cancel=True,
                        limiter=self._listen_limiter,
                    )
                finally:
                    stop.set()  # the thread closes the connection within a poll
                log_event("listener lost its connection", logging.WARNING)
            await trio.sleep(delay)
            delay = min(delay * 2, 10.0)

    def _listening(self, channels: list[str]) -> psycopg.Connection[Any]:
        conn = self._connect()
        try:
            for channel in channels:
                conn.execute(f"LISTEN {channel}")
        except psycopg.Error as error:
            conn.close()
            raise _unavailable(error) from error
        return conn

    @staticmethod
    def _pump(
        conn: psycopg.Connection[Any],
        deliver: Callable[[str, str], None],
        stop: threading.Event,
    ) -> None:
        """Hand each notification (channel, payload) to `deliver` until `stop` is set or
        the connection drops; the stop flag is looked at every half second."""
        try:
            while not stop.is_set():
                for notify in conn.notifies(timeout=0.5):
                    deliver(notify.channel, notify.payload)
        except (psycopg.Error, trio.RunFinishedError):
            pass
        finally:
            conn.close()
