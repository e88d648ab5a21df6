"""SQLite backend: WAL, synchronous=FULL, one writer thread that commits in groups.

Every write request is queued to one writer thread (`GroupThread`). The writer drains
whatever is queued and runs every caller's transaction in one transaction, then commits
the whole group with a single fsync and wakes each caller. A caller returns only after
its own commit is durable. The callers run first one after the other with nothing
between them (the calls of a function with a batched form as one call of it); should
one of them raise, nothing of that round is kept and the group runs again with each
caller alone inside its own SAVEPOINT, so one failure rolls back only that caller's
work. Repository functions are plain SQL, so running one again after a rollback is
safe (the PostgreSQL writer does the same).
Reads queue the same way to one reader thread with a connection of its own, which runs
each group of reads in one snapshot: in WAL mode a reader never waits for the writer, and
the trio thread never waits for the file.
"""

from __future__ import annotations

import os
import sqlite3
import threading
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import Any

import trio
from fgcpay.core.metrics import ConnectionUse

from ._database import DatabaseUnavailable, RepoFn, Row, StorageError, select_one
from ._migrations import Migration, sqlite_apply_migrations
from ._threads import GroupThread, Job, run_many, runs_of

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
        # (channel, payload) to hand to this process's listeners once the group commits.
        self.notices: list[tuple[str, str]] = []

    def fetch(self, sql: str, *args: Any) -> Sequence[Row]:
        return self._conn.execute(sql, args).fetchall()

    def fetchrow(self, sql: str, *args: Any) -> Row | None:
        row: Row | None = self._conn.execute(sql, args).fetchone()
        return row

    def fetchval(self, sql: str, *args: Any) -> Any:
        row = self._conn.execute(sql, args).fetchone()
        return None if row is None else row[0]

    def execute(self, sql: str, *args: Any) -> int:
        return self._conn.execute(sql, args).rowcount

    def execute_many(self, sql: str, rows: Sequence[Sequence[Any]]) -> None:
        self._conn.executemany(sql, rows)

    def notify(self, channel: str, payload: str) -> None:
        self.notices.append((channel, payload))


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


def _create_private(path: Path) -> None:
    """Create the database file, if missing, readable by its owner only (0600, and a
    folder made for it 0700, whatever the umask: fgcpay.core.settings.private_folder does the
    same for the secret's). Made here, empty (SQLite reads an empty file as an empty
    database), because SQLite would make it 0644; its -wal and -shm files then take the
    database file's mode."""
    folder = path.parent
    folder.parent.mkdir(parents=True, exist_ok=True)
    try:
        folder.mkdir(mode=0o700)
    except FileExistsError:
        pass  # the operator's folder, as it is
    else:
        os.chmod(folder, 0o700)
    try:
        fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
    except FileExistsError:
        return
    try:
        os.fchmod(fd, 0o600)  # the umask may have taken the owner's bits too
    finally:
        os.close(fd)


class SqliteDatabase:
    """The embedded default backend. Open it with `open_sqlite` inside a nursery."""

    dialect = "sqlite"

    def __init__(self, path: str, timeout_seconds: float = 5.0) -> None:
        self.path = path
        self.timeout_seconds = timeout_seconds
        self._writer = GroupThread("fgcpay-sqlite-writer", "write", self._commit_group)
        self._writer_conn: sqlite3.Connection | None = None
        self._reader = GroupThread("fgcpay-sqlite-reader", "read", self._read_group)
        self._reader_conn: sqlite3.Connection | None = None
        self._open = False
        # channel -> the listening functions (and their trio run's token), read by the writer
        # thread after each commit.
        self._listeners: dict[str, list[tuple[trio.lowlevel.TrioToken, Callable[[str], None]]]] = {}
        self._listeners_lock = threading.Lock()

    def _connect(self) -> sqlite3.Connection:
        return _connect(self.path, self.timeout_seconds)

    # -- lifetime -------------------------------------------------------------------

    def start(self, migrations: list[Migration]) -> None:
        if self.path != ":memory:":
            _create_private(Path(self.path))
        self._writer_conn = self._connect()
        sqlite_apply_migrations(self._writer_conn, migrations)
        self._writer.start()
        self._reader_conn = self._connect()
        self._reader.start()
        self._open = True

    async def stop(self) -> None:
        self._open = False
        await self._writer.stop()
        if self._writer_conn is not None:
            self._writer_conn.close()
            self._writer_conn = None
        await self._reader.stop()
        if self._reader_conn is not None:
            self._reader_conn.close()
            self._reader_conn = None

    # -- Database -------------------------------------------------------------------

    async def read(self, fn: RepoFn[..., Any], *args: Any, **kwargs: Any) -> Any:
        if not self._open:
            raise StorageError("the database is closed")
        return await self._reader.submit(fn, args, kwargs)

    def _read_group(self, batch: list[Job]) -> None:
        conn = self._reader_conn
        assert conn is not None
        tx = SqliteTx(conn)
        try:
            # One snapshot for the group: every read in it was asked for before it began.
            conn.execute("BEGIN")
            for job in batch:
                try:
                    job.result = job.fn(tx, *job.args, **job.kwargs)
                except sqlite3.Error as error:
                    translated = _translate(error, "read")
                    job.error = translated if isinstance(translated, DatabaseUnavailable) else error
                except BaseException as error:  # handed to the caller
                    job.error = error
            conn.execute("COMMIT")
        except sqlite3.Error as error:
            _rollback_quietly(conn)
            failure = _translate(error, "read")
            for job in batch:
                if job.error is None:
                    job.error, job.result = failure, None

    async def write(self, fn: RepoFn[..., Any], *args: Any, **kwargs: Any) -> Any:
        if not self._open:
            raise StorageError("the database is closed")
        return await self._writer.submit(fn, args, kwargs)

    async def ping(self) -> None:
        await self.read(select_one)

    def connection_use(self) -> list[ConnectionUse]:
        # One connection each: the reader's thread and the writer's.
        return [
            ConnectionUse("read", int(self._reader.busy), 1),
            ConnectionUse("write", int(self._writer.busy), 1),
        ]

    async def listen(
        self,
        channels: Mapping[str, Callable[[str], None]],
        on_reconnect: Callable[[], None],
        *,
        task_status: trio.TaskStatus[None] = trio.TASK_STATUS_IGNORED,
    ) -> None:
        # One process per file: every change is made here, and heard after its commit
        # (several processes on one file hear only their own: they poll for the rest).
        token = trio.lowlevel.current_trio_token()
        entries = [(channel, (token, heard)) for channel, heard in channels.items()]
        with self._listeners_lock:
            for channel, entry in entries:
                self._listeners.setdefault(channel, []).append(entry)
        try:
            task_status.started()
            await trio.sleep_forever()
        finally:
            with self._listeners_lock:
                for channel, entry in entries:
                    self._listeners[channel].remove(entry)

    def _tell_listeners(self, notices: list[tuple[str, str]]) -> None:
        """On the writer thread, once a group has committed."""
        if not notices:
            return
        with self._listeners_lock:
            found = [
                (token, heard, payload)
                for channel, payload in dict.fromkeys(notices)
                for token, heard in self._listeners.get(channel, ())
            ]
        for token, heard, payload in found:
            try:
                token.run_sync_soon(heard, payload)
            except trio.RunFinishedError:
                pass

    # -- the writer thread ----------------------------------------------------------

    def _commit_group(self, batch: list[Job]) -> None:
        conn = self._writer_conn
        assert conn is not None
        tx = SqliteTx(conn)
        try:
            conn.execute("BEGIN IMMEDIATE")
            if not self._run_plainly(conn, tx, batch):
                # A caller raised: nothing of this round is kept, and the group runs
                # again with each caller in a savepoint, so only that caller's work is lost.
                _rollback_quietly(conn)
                tx = SqliteTx(conn)
                conn.execute("BEGIN IMMEDIATE")
                for job in batch:
                    self._run_job(conn, tx, job)
            conn.execute("COMMIT")
            self._tell_listeners(tx.notices)
        except sqlite3.Error as error:
            # The group as a whole failed (the file cannot be written, or SQLite rolled
            # the transaction back by itself): nothing of it is committed, every caller
            # hears why, and the writer goes on, so writes resume once the file can be
            # written again.
            _rollback_quietly(conn)
            failure = _translate(error, "write")
            for job in batch:
                if job.error is None:
                    job.error, job.result = failure, None

    @staticmethod
    def _run_plainly(conn: sqlite3.Connection, tx: SqliteTx, batch: list[Job]) -> bool:
        """Every caller's call in turn, with no savepoint each: two statements fewer per
        caller, and each statement costs the writer thread the GIL (released while SQLite
        works, taken back after), which the trio thread holds most of the time. False,
        with no result kept, when a call raised (the caller hears it from the round with
        savepoints, which raises it again), or left the transaction rolled back (SQLite
        does that by itself on a full disk or an I/O error): the next caller must not run
        outside it, where each statement would commit by itself."""
        try:
            for run in runs_of(batch):
                if run.many is not None:
                    run_many(run, tx)
                else:
                    job = run.jobs[0]
                    job.result = job.fn(tx, *job.args, **job.kwargs)
                if not conn.in_transaction:
                    break
            else:
                return True
        except BaseException:
            pass
        for job in batch:
            job.result = None
        return False

    @staticmethod
    def _run_job(conn: sqlite3.Connection, tx: SqliteTx, job: Job) -> None:
        conn.execute("SAVEPOINT job")
        announced = len(tx.notices)  # a failed caller's announcements go with its work
        try:
            job.result = job.fn(tx, *job.args, **job.kwargs)
        except sqlite3.Error as error:
            translated = _translate(error, "write")
            job.error = translated if isinstance(translated, DatabaseUnavailable) else error
            if not conn.in_transaction:
                raise  # SQLite rolled back the whole group: fail it all
            conn.execute("ROLLBACK TO job")
            del tx.notices[announced:]
        except BaseException as error:  # handed to the caller, never swallowed
            job.error = error
            conn.execute("ROLLBACK TO job")
            del tx.notices[announced:]
        conn.execute("RELEASE job")
