"""The database seam: one `Tx` interface that repository code is written against, and the
`Database` that runs a repository function as a read or as one write transaction.

Repository functions are plain synchronous `def fn(tx, *args)`: the database is driven
one way on both backends. `Database.read` and `Database.write` run them on threads that
own the connections, never on the trio thread, and writes are committed in groups (one
transaction per group, a savepoint per caller only when one of them fails), so one
fsync serves many callers. A function may declare a batched form (`batched`), and the
keys of the rows it locks that a caller in another process may lock too (`locks`).
"""

from __future__ import annotations

import inspect
from collections.abc import Callable, Iterable, Mapping, Sequence
from typing import Any, Concatenate, ParamSpec, Protocol, TypeVar

import attrs
import trio
from fgcpay.core.metrics import ConnectionUse

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


# -- the lock order -----------------------------------------------------------------------
# A group holds the row locks of all its callers until it commits, and takes them in its
# callers' order. Two processes' groups that lock the same two rows the other way round
# (customers of two merchants paying with one test code: the PIN counters (m1, c), (m2, c)
# in one, (m2, c), (m1, c) in the other) wait on each other until PostgreSQL's deadlock
# detector aborts one after `deadlock_timeout` (1 s); that group runs again, so nothing is
# lost, but both writers stood still for a second, every few seconds under load (3-10
# against 160 payments/s with one worker: docs/performance.md, Hosted page). So a
# function that locks rows a caller in another process may lock too declares their keys
# (`locks`), and the PostgreSQL writer takes the keys of every caller of a group, as
# advisory locks, in one order (sorted), in one statement, before it runs any of them:
# two groups wanting the same rows then wait for each other only there, before either
# holds a row, and in that one order, which closes no circle. SQLite has one writer per
# file and ignores the keys. docs/decisions/0003-one-lock-order.md lists what is declared and
# why the rest need not be.

LockKey = tuple[str, ...]
"""What a lock stands for, its kind first: `("pin", code, scope)`. Two functions that lock
one row must name it with the same key; the writer maps a key to one advisory lock."""


@attrs.frozen
class Shared:
    """A key taken in shared mode: callers holding it shared do not wait for each other,
    one taking it alone (a plain key) waits for them all, and they for it. For a key over
    many rows: each caller of one of them shares it, and one that locks them all, unable
    to name them beforehand, takes it alone."""

    key: LockKey


KeysFn = Callable[[tuple[Any, ...], Mapping[str, Any]], list[LockKey | Shared]]
_LOCKS: dict[object, KeysFn] = {}


def locks(keys: Callable[..., Iterable[LockKey | Shared]]) -> Callable[[F], F]:
    """Declare the keys of the rows the decorated repository function locks that a caller
    in another process may lock too. `keys` takes some of the function's parameters, by
    their names (`pin_keys(scope, code)` for `reserve_attempt(tx, scope, code, now_us)`),
    and returns the keys of one call. A function that calls a declaring one declares its
    keys too: the writer reads only the declaration of the function it was handed.

    Declare a row when two processes' groups may both lock it, and a group may hold it
    while it waits for another such row: the counters every request shares, not a
    process's own rows, nor rows taken with SKIP LOCKED (they never wait)."""

    def declare(fn: F) -> F:
        _LOCKS[fn] = _by_name(fn, keys)
        return fn

    return declare


def declares_locks(fn: object) -> bool:
    return fn in _LOCKS


def declared_keys(
    fn: object, args: tuple[Any, ...], kwargs: Mapping[str, Any]
) -> list[LockKey | Shared]:
    """The keys a call of `fn` declared (`locks`); none when it declared nothing."""
    keys = _LOCKS.get(fn)
    return [] if keys is None else keys(args, kwargs)


def _by_name(fn: Callable[..., Any], keys: Callable[..., Iterable[LockKey | Shared]]) -> KeysFn:
    params = list(inspect.signature(fn).parameters.values())[1:]  # after `tx`
    names = [param.name for param in params]
    wanted = list(inspect.signature(keys).parameters)
    unknown = [name for name in wanted if name not in names]
    if unknown:
        raise TypeError(f"{fn.__qualname__} has no parameter {', '.join(unknown)} for its keys")
    spots = [(name, names.index(name), params[names.index(name)].default) for name in wanted]

    def keys_of(args: tuple[Any, ...], kwargs: Mapping[str, Any]) -> list[LockKey | Shared]:
        values = []
        for name, index, default in spots:
            if index < len(args):
                values.append(args[index])
            elif name in kwargs:
                values.append(kwargs[name])
            elif default is not inspect.Parameter.empty:
                values.append(default)
            else:
                raise TypeError(f"{fn.__qualname__}() missing argument {name!r}")
        return list(keys(*values))

    return keys_of


def for_update(tx: Tx) -> str:
    """` FOR UPDATE` on PostgreSQL (a read that locks the rows it returns until the commit,
    so the transaction decides on them alone); nothing on SQLite, whose one writer holds
    every row of the file while it writes."""
    return " FOR UPDATE" if tx.dialect == "postgresql" else ""


def skip_locked(tx: Tx) -> str:
    """` FOR UPDATE SKIP LOCKED` on PostgreSQL (for a purge's subquery, so that it passes
    over rows another transaction holds rather than wait for them); nothing on SQLite,
    whose one writer never waits for another."""
    return " FOR UPDATE SKIP LOCKED" if tx.dialect == "postgresql" else ""


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
