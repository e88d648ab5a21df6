"""The database seam: one `Tx` interface that repository code is written against, and the
`Database` that runs a repository function as a read or as one write transaction.

Repository functions are plain synchronous `def fn(tx, *args)`: the database is driven
one way on both backends. `Database.read` and `Database.write` run them on threads that
own the connections, never on the trio thread, and writes are committed in groups (one
transaction per group, a savepoint per caller only when one of them fails), so one
fsync serves many callers.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from typing import Any, Concatenate, ParamSpec, Protocol, TypeVar

import trio
from fgcpay.metrics import ConnectionUse

T = TypeVar("T")
P = ParamSpec("P")


class Row(Protocol):
    def __getitem__(self, key: str) -> Any: ...


class Tx(Protocol):
    """One open transaction. SQL uses `?` placeholders on both backends."""

    dialect: str  # "sqlite" or "postgresql"

    def fetch(self, sql: str, *args: Any) -> Sequence[Row]: ...

    def fetchrow(self, sql: str, *args: Any) -> Row | None: ...

    def fetchval(self, sql: str, *args: Any) -> Any: ...

    def execute(self, sql: str, *args: Any) -> int:
        """Run a statement; return the number of rows it changed."""
        ...

    def execute_many(self, sql: str, rows: Sequence[Sequence[Any]]) -> None:
        """Run a statement once per row of arguments."""
        ...

    def notify(self, channel: str, payload: str) -> None:
        """Hand `payload` to the listeners of `channel` once this transaction commits:
        PostgreSQL's NOTIFY (every process that LISTENs); SQLite, one process per file,
        the listeners of this process. A transaction rolled back may still have told its
        listeners: a notification says "look again", never what to find."""
        ...


RepoFn = Callable[Concatenate[Tx, P], T]

# -- batched forms ------------------------------------------------------------------------
# A burst (the renewal sweep after a month's end, a clock's advance) queues hundreds of
# calls of one repository function behind the writer at once. Run one by one, each is a
# round trip per statement; its batched form writes them all with one statement per table
# (PostgreSQL's `unnest` of one array per column), which costs the database and the
# driver a fraction of the work per row.

ManyFn = Callable[[Tx, Sequence[tuple[Any, ...]]], Sequence[Any]]
F = TypeVar("F", bound=Callable[..., Any])
_MANY: dict[object, ManyFn] = {}


def batched(many: ManyFn) -> Callable[[F], F]:
    """Declare `many` the batched form of the decorated repository function: `many(tx,
    [args, ...])` must leave the database as running the function once per args, in that
    order, in one transaction would, and return the list of their results; it may raise
    when any of them would (the writer then runs each alone, so each caller hears its own
    answer). The writers use it when a group holds several calls of the function."""

    def declare(fn: F) -> F:
        _MANY[fn] = many
        return fn

    return declare


def batched_form(fn: object) -> ManyFn | None:
    return _MANY.get(fn)


class Database(Protocol):
    dialect: str

    async def read(self, fn: RepoFn[P, T], *args: P.args, **kwargs: P.kwargs) -> T:
        """Run `fn` against a consistent snapshot; it must not write."""
        ...

    async def write(self, fn: RepoFn[P, T], *args: P.args, **kwargs: P.kwargs) -> T:
        """Run `fn` as one transaction; durable when this returns, rolled back if it raises."""
        ...

    async def ping(self) -> None:
        """Raise unless the database answers."""
        ...

    def connection_use(self) -> list[ConnectionUse]:
        """The connections that run callers' calls (reads, writes; not a listener's), and
        how many of each run one now: for the metrics."""
        ...

    async def listen(
        self,
        channels: Mapping[str, Callable[[str], None]],
        on_reconnect: Callable[[], None],
        *,
        task_status: trio.TaskStatus[None] = trio.TASK_STATUS_IGNORED,
    ) -> None:
        """Until cancelled, call `channels[channel](payload)` for each notification a
        committed transaction sent (`Tx.notify`) on one of the channels, and
        `on_reconnect` each time the listener is back after losing its connection (what
        was notified meanwhile was not heard). PostgreSQL: LISTEN on one connection of
        its own, for every process's commits. SQLite: this process's commits."""
        ...


class StorageError(Exception):
    """The database failed in a way the caller cannot fix (it maps to a 500 or 503)."""


class DatabaseUnavailable(StorageError):
    """The database cannot be reached or cannot take writes now (stopped, connection
    lost, timed out, disk full, read-only): nothing was committed, a retry may succeed.

    The backends raise this in place of their drivers' errors that mean exactly that;
    every other driver error (bad SQL, a violated constraint) stays a bug, a 500.
    """

    retry_after_seconds = 5


def select_one(tx: Tx) -> Any:
    """The query a liveness check runs."""
    return tx.fetchval("SELECT 1")
