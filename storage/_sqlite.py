"""SQLite backend: WAL, synchronous=FULL, one writer thread that commits in groups.

Every write request is queued to one writer thread. The writer drains whatever is queued,
runs each caller's transaction inside its own SAVEPOINT (so one failure rolls back only
that caller's work), then commits the whole group with a single fsync and wakes each
caller. A caller returns only after its own commit is durable. Reads run inline on the
trio thread on a separate connection: in WAL mode a reader never waits for the writer,
and a point lookup costs less than a thread hop would.
"""

from __future__ import annotations

import queue
import sqlite3
import threading
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import attrs
import trio

from ._database import DatabaseUnavailable, RepoFn, Row, StorageError, drive_sync
from ._migrations import Migration, sqlite_apply_migrations

MAX_GROUP = 512

# Primary result codes that mean the file cannot be written or reached now, not that the
# statement is wrong: busy beyond the timeout, locked, read-only, I/O error, disk full,
# cannot open, and a WAL lock protocol failure.
_UNAVAILABLE_CODES = frozenset({5, 6, 8, 10, 13, 14, 15})


def _translate(error: sqlite3.Error, doing: str) -> StorageError:
    """`DatabaseUnavailable` for an outage (a 503), a plain `StorageError` otherwise."""
    code = getattr(error, "sqlite_errorcode", None)
    name = getattr(error, "sqlite_errorname", type(error).__name__)
    if code is not None and code & 0xFF in _UNAVAILABLE_CODES:
        return DatabaseUnavailable(f"SQLite cannot {doing}: {name}")
    return StorageError(f"SQLite could not {doing}: {error}")


def _rollback_quietly(conn: sqlite3.Connection) -> None:
    # SQLite may already have rolled back by itself (after a full disk or an I/O error).
    if conn.in_transaction:
        try:
            conn.execute("ROLLBACK")
        except sqlite3.Error:
            pass


class SqliteTx:
    dialect = "sqlite"

    def __init__(self, conn: sqlite3.Connection) -> None:
        self._conn = conn

    async def fetch(self, sql: str, *args: Any) -> Sequence[Row]:
        return self._conn.execute(sql, args).fetchall()

    async def fetchrow(self, sql: str, *args: Any) -> Row | None:
        row: Row | None = self._conn.execute(sql, args).fetchone()
        return row

    async def fetchval(self, sql: str, *args: Any) -> Any:
        row = self._conn.execute(sql, args).fetchone()
        return None if row is None else row[0]

    async def execute(self, sql: str, *args: Any) -> int:
        return self._conn.execute(sql, args).rowcount


@attrs.define
class _WriteJob:
    fn: RepoFn[..., Any]
    args: tuple[Any, ...]
    kwargs: dict[str, Any]
    token: trio.lowlevel.TrioToken
    done: trio.Event = attrs.field(factory=trio.Event)
    result: Any = None
    error: BaseException | None = None


_STOP = object()


def sqlite_path(database_url: str) -> str:
    """`sqlite:///relative.db`, `sqlite:////abs/path.db` or `sqlite:///:memory:`."""
    if not database_url.startswith("sqlite:///"):
        raise ValueError("a SQLite URL looks like sqlite:///path/to/file.sqlite3")
    return database_url[len("sqlite:///") :]


def _connect(path: str, timeout_seconds: float) -> sqlite3.Connection:
    conn = sqlite3.connect(
        path, isolation_level=None, check_same_thread=False, timeout=timeout_seconds
    )
    conn.row_factory = sqlite3.Row
    conn.execute("PRAGMA journal_mode=WAL")
    # FULL: a payment that was acknowledged must survive power loss, not only a crash.
    conn.execute("PRAGMA synchronous=FULL")
    conn.execute("PRAGMA foreign_keys=ON")
    # Another process holding the write lock longer than this is an outage: a 503.
    conn.execute(f"PRAGMA busy_timeout={int(timeout_seconds * 1000)}")
    return conn


class SqliteDatabase:
    """The embedded default backend. Open it with `open_sqlite` inside a nursery."""

    dialect = "sqlite"

    def __init__(self, path: str, timeout_seconds: float = 5.0) -> None:
        self.path = path
        self.timeout_seconds = timeout_seconds
        self._queue: queue.SimpleQueue[_WriteJob | object] = queue.SimpleQueue()
        self._reader: sqlite3.Connection | None = None
        self._writer_thread: threading.Thread | None = None
        self._writer_conn: sqlite3.Connection | None = None
        self.commits = 0  # groups committed; read by the benchmark

    # -- lifetime -------------------------------------------------------------------

    def start(self, migrations: list[Migration]) -> None:
        if self.path != ":memory:":
            Path(self.path).parent.mkdir(parents=True, exist_ok=True)
        self._writer_conn = _connect(self.path, self.timeout_seconds)
        sqlite_apply_migrations(self._writer_conn, migrations)
        self._reader = _connect(self.path, self.timeout_seconds)
        self._writer_thread = threading.Thread(
            target=self._writer_loop, name="fgcpay-sqlite-writer", daemon=True
        )
        self._writer_thread.start()

    async def stop(self) -> None:
        if self._writer_thread is not None:
            self._queue.put(_STOP)
            await trio.to_thread.run_sync(self._writer_thread.join)
            self._writer_thread = None
        if self._reader is not None:
            self._reader.close()
            self._reader = None

    # -- Database -------------------------------------------------------------------

    async def read(self, fn: RepoFn[..., Any], *args: Any, **kwargs: Any) -> Any:
        conn = self._reader
        if conn is None:
            raise StorageError("the database is closed")
        await trio.lowlevel.checkpoint()
        try:
            conn.execute("BEGIN")
            try:
                return drive_sync(fn(SqliteTx(conn), *args, **kwargs))
            finally:
                conn.execute("COMMIT")
        except sqlite3.Error as error:
            translated = _translate(error, "read")
            if isinstance(translated, DatabaseUnavailable):
                _rollback_quietly(conn)
                raise translated from error
            raise

    async def write(self, fn: RepoFn[..., Any], *args: Any, **kwargs: Any) -> Any:
        if self._writer_thread is None:
            raise StorageError("the database is closed")
        job = _WriteJob(fn, args, kwargs, trio.lowlevel.current_trio_token())
        self._queue.put(job)
        await job.done.wait()
        if job.error is not None:
            raise job.error
        return job.result

    async def ping(self) -> None:
        async def one(tx: Any) -> Any:
            return await tx.fetchval("SELECT 1")

        await self.read(one)

    # -- the writer thread ----------------------------------------------------------

    def _writer_loop(self) -> None:
        conn = self._writer_conn
        assert conn is not None
        tx = SqliteTx(conn)
        stopping = False
        while not stopping:
            first = self._queue.get()
            if first is _STOP:
                break
            batch = [first]
            while len(batch) < MAX_GROUP:
                try:
                    item = self._queue.get_nowait()
                except queue.Empty:
                    break
                if item is _STOP:
                    stopping = True
                    break
                batch.append(item)
            self._commit_group(conn, tx, batch)  # type: ignore[arg-type]
        conn.close()

    def _commit_group(self, conn: sqlite3.Connection, tx: SqliteTx, batch: list[_WriteJob]) -> None:
        try:
            conn.execute("BEGIN IMMEDIATE")
            for job in batch:
                self._run_job(conn, tx, job)
            conn.execute("COMMIT")
            self.commits += 1
        except sqlite3.Error as error:
            # The group as a whole failed (the file cannot be written, or SQLite rolled
            # the transaction back by itself): nothing of it is committed, every caller
            # hears why, and the writer goes on, so writes resume once the file can be
            # written again.
            _rollback_quietly(conn)
            failure = _translate(error, "write")
            for job in batch:
                if job.error is None:
                    job.error = failure
        self._wake(batch)

    @staticmethod
    def _run_job(conn: sqlite3.Connection, tx: SqliteTx, job: _WriteJob) -> None:
        conn.execute("SAVEPOINT job")
        try:
            job.result = drive_sync(job.fn(tx, *job.args, **job.kwargs))
        except sqlite3.Error as error:
            translated = _translate(error, "write")
            job.error = translated if isinstance(translated, DatabaseUnavailable) else error
            if not conn.in_transaction:
                raise  # SQLite rolled back the whole group: fail it all
            conn.execute("ROLLBACK TO job")
        except BaseException as error:  # handed to the caller, never swallowed
            job.error = error
            conn.execute("ROLLBACK TO job")
        conn.execute("RELEASE job")

    @staticmethod
    def _wake(batch: list[_WriteJob]) -> None:
        for job in batch:
            try:
                job.token.run_sync_soon(job.done.set)
            except trio.RunFinishedError:
                pass
