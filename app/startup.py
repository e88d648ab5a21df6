"""What every way of starting fgcpay shares (the `fgcpay` command, its workers, and
`fgcpay.asgi` under hypercorn): opening the database with a failure put in the operator's
words, applying the migrations, and the one line that says why a start failed.

It sits below the command and the entry points that use it, and imports nothing above
storage and core, so each of them can use it without importing another.
"""

from __future__ import annotations

import os
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from typing import TYPE_CHECKING

import trio
from fgcpay.core.logs import log_event
from fgcpay.core.settings import ConfigError, Settings, database_location, database_shown

if TYPE_CHECKING:
    from fgcpay.storage import Database


class CommandError(Exception):
    """A failure already put in the operator's words: printed as it is, in one line."""


def root(error: BaseException) -> BaseException:
    """The failure inside trio's exception groups (a nursery wraps what fails in it)."""
    while isinstance(error, BaseExceptionGroup):
        # The first failure that is not only the cancellation another failure caused.
        real = [e for e in error.exceptions if not isinstance(e, trio.Cancelled)]
        error = (real or list(error.exceptions))[0]
    return error


def reason(error: BaseException) -> str:
    """What went wrong, in a few words: the innermost OS error if one caused it (an error
    raised while handling another keeps it as its context), else the error's own text."""
    found = root(error)
    cause: BaseException | None = found
    while cause is not None:
        if isinstance(cause, OSError):
            found = cause
        cause = cause.__cause__ or cause.__context__
    if isinstance(found, OSError):
        if isinstance(found.errno, int) and found.errno > 0:
            # The file an OS error names may be a parent directory of the one asked for.
            named = f" ({found.filename})" if found.filename else ""
            return os.strerror(found.errno) + named
        if isinstance(found, TimeoutError):
            return "timed out"
        if found.strerror:
            return found.strerror
    lines = str(found).strip().splitlines()
    return lines[0] if lines else type(found).__name__


def one_line(error: BaseException) -> str:
    """What went wrong, in the one line a failed command prints (`fgcpay.asgi` says the
    same when the service cannot start)."""
    found = root(error)
    if isinstance(found, CommandError | ConfigError):
        return str(found)
    return f"{type(found).__name__}: {reason(found)}"


@asynccontextmanager
async def database(settings: Settings) -> AsyncIterator[Database]:
    """The database of `settings`; failing to open it (connect, create the file, migrate)
    is a CommandError naming where the database is and why."""
    from fgcpay.storage import open_database

    opened = False
    try:
        # A command is one caller: the smallest pool (writer, listener, one reader).
        async with open_database(settings.database_url, 3, settings.db_timeout_seconds) as db:
            opened = True
            yield db
    except Exception as error:
        if opened:
            raise
        verb = "connect to" if settings.is_postgres else "open"
        where = database_location(settings.database_url)
        raise CommandError(f"cannot {verb} {where}: {reason(error)}") from error


async def check_database(settings: Settings) -> None:
    """Open the database once and close it, as `fgcpay migrate` does: the migrations are
    applied (under the lock that keeps concurrent starters apart), and a failure is a
    CommandError naming where the database is and why."""
    async with database(settings):
        pass


async def migrate(settings: Settings) -> int:
    """`fgcpay migrate`, and `fgcpay serve` before it starts any worker."""
    await check_database(settings)
    log_event("migrations applied", database=database_shown(settings.database_url))
    return 0
