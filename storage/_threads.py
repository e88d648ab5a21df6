"""What both backends share to drive the database off the trio thread: a bounded set of
connections used from worker threads for reads, and one writer thread that commits the
queued writes in groups.

Drivers block, so every database call runs on a thread that owns a connection for the
duration of the call; the trio thread only hands the work over and waits for an event.
"""

from __future__ import annotations

import queue
import threading
from collections.abc import Callable
from typing import Any, Generic, TypeVar

import attrs
import trio

from ._database import RepoFn, StorageError

C = TypeVar("C")

MAX_GROUP = 512
"""The most callers one group transaction commits together."""


class Connections(Generic[C]):
    """At most `size` connections, opened when first needed, each used by one thread at
    a time. `run` borrows one on a worker thread. A connection found broken after a call,
    or not `usable` when taken from the idle ones, is closed and replaced by a fresh one,
    so the pool recovers by itself after the database restarts."""

    def __init__(
        self,
        size: int,
        connect: Callable[[], C],
        close: Callable[[C], None],
        usable: Callable[[C], bool] = lambda conn: True,
    ) -> None:
        self.size = size
        self._connect = connect
        self._close = close
        self._usable = usable
        self._idle: queue.SimpleQueue[C] = queue.SimpleQueue()
        self._open = 0
        self._lock = threading.Lock()
        # Bounds the threads that hold a connection, so no more than `size` are ever open.
        self.limiter = trio.CapacityLimiter(size)
        self.closed = False

    async def run(self, work: Callable[[C], Any], is_broken: Callable[[C], bool]) -> Any:
        """Run `work(conn)` on a worker thread with a pooled connection."""
        if self.closed:
            raise StorageError("the database is closed")
        return await trio.to_thread.run_sync(self._in_thread, work, is_broken, limiter=self.limiter)

    def _in_thread(self, work: Callable[[C], Any], is_broken: Callable[[C], bool]) -> Any:
        conn = self._borrow()
        try:
            result = work(conn)
        except BaseException:
            if is_broken(conn) or self.closed:
                self._discard(conn)
            else:
                self._idle.put(conn)
            raise
        if self.closed:
            self._discard(conn)
        else:
            self._idle.put(conn)
        return result

    def _borrow(self) -> C:
        while True:
            try:
                conn = self._idle.get_nowait()
            except queue.Empty:
                break
            if self._usable(conn):
                return conn
            self._discard(conn)  # died while idle (the server restarted): a fresh one
        with self._lock:
            self._open += 1
        try:
            return self._connect()
        except BaseException:
            with self._lock:
                self._open -= 1
            raise

    def _discard(self, conn: C) -> None:
        with self._lock:
            self._open -= 1
        try:
            self._close(conn)
        except Exception:  # closing a broken connection may fail too; it is gone either way
            pass

    @property
    def open_count(self) -> int:
        return self._open

    def close_all(self) -> None:
        """Close the idle connections; ones in use close when their call returns."""
        self.closed = True
        while True:
            try:
                conn = self._idle.get_nowait()
            except queue.Empty:
                return
            self._discard(conn)


@attrs.define(eq=False)
class WriteJob:
    """One caller's write transaction, waiting in the queue of a `GroupWriter`."""

    fn: RepoFn[..., Any]
    args: tuple[Any, ...]
    kwargs: dict[str, Any]
    token: trio.lowlevel.TrioToken
    done: trio.Event = attrs.field(factory=trio.Event)
    result: Any = None
    error: BaseException | None = None


_STOP = object()


class GroupWriter:
    """One thread that takes every write queued so far and hands them, as one group, to
    `commit_group`, which must run each job (in a savepoint of its own, so one caller's
    error rolls back only that caller's work), commit, and set each job's `result` or
    `error`. A caller returns only after its own commit is durable."""

    def __init__(self, name: str, commit_group: Callable[[list[WriteJob]], None]) -> None:
        self._name = name
        self._commit_group = commit_group
        self._queue: queue.SimpleQueue[WriteJob | object] = queue.SimpleQueue()
        self._thread: threading.Thread | None = None
        self.groups = 0  # groups committed or failed; read by the benchmarks

    def start(self) -> None:
        self._thread = threading.Thread(target=self._loop, name=self._name, daemon=True)
        self._thread.start()

    async def stop(self) -> None:
        """Commit what is queued, then end the thread; a write that arrives later hears
        that the database is closed."""
        if self._thread is not None:
            self._queue.put(_STOP)
            await trio.to_thread.run_sync(self._thread.join)
            self._thread = None
        closed = StorageError("the database is closed")
        while True:
            try:
                job = self._queue.get_nowait()
            except queue.Empty:
                return
            if isinstance(job, WriteJob):
                job.error = closed
                self._wake([job])

    async def submit(self, fn: RepoFn[..., Any], args: tuple[Any, ...], kwargs: dict[str, Any]) -> Any:
        if self._thread is None:
            raise StorageError("the database is closed")
        job = WriteJob(fn, args, kwargs, trio.lowlevel.current_trio_token())
        self._queue.put(job)
        # A caller cancelled meanwhile stops waiting; its job still commits or rolls back
        # whole, and whatever it wrote (an event, an idempotency record) says which.
        await job.done.wait()
        if job.error is not None:
            raise job.error
        return job.result

    def _loop(self) -> None:
        stopping = False
        while not stopping:
            first = self._queue.get()
            if first is _STOP:
                break
            batch: list[WriteJob] = [first]  # type: ignore[list-item]
            while len(batch) < MAX_GROUP:
                try:
                    item = self._queue.get_nowait()
                except queue.Empty:
                    break
                if item is _STOP:
                    stopping = True
                    break
                batch.append(item)  # type: ignore[arg-type]
            try:
                self._commit_group(batch)
            except BaseException as error:  # nothing of the group committed: each caller hears why
                for job in batch:
                    if job.error is None:
                        job.error, job.result = error, None
            self.groups += 1
            self._wake(batch)

    @staticmethod
    def _wake(batch: list[WriteJob]) -> None:
        for job in batch:
            try:
                job.token.run_sync_soon(job.done.set)
            except trio.RunFinishedError:
                pass
