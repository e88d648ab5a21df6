"""Opening the database a URL names: the backend, its migrations, and closing it."""

from __future__ import annotations

from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from typing import TYPE_CHECKING

import trio

from ._database import Database
from ._migrations import load_migrations
from ._sqlite import SqliteDatabase, sqlite_path

if TYPE_CHECKING:
    from ._postgres import PostgresDatabase


@asynccontextmanager
async def open_database(
    database_url: str, pool_size: int = 10, timeout_seconds: float = 5.0
) -> AsyncIterator[Database]:
    """Open the database named by `database_url`, apply migrations, and yield it.

    Callers run repository functions through it: `await db.read(checkout_sessions.by_id,
    session_id)`. `timeout_seconds` bounds each wait on the database (connect, pool,
    statement, lock).

    Closing commits the queued writes, then closes every connection.
    """
    migrations = load_migrations()
    db: PostgresDatabase | SqliteDatabase
    if database_url.startswith(("postgresql://", "postgres://")):
        # Imported here: psycopg takes ~70 ms to import, which every command and service
        # on SQLite would otherwise pay at start.
        from ._postgres import PostgresDatabase

        db = PostgresDatabase(database_url, pool_size, timeout_seconds)
    else:
        db = SqliteDatabase(sqlite_path(database_url), timeout_seconds)
    await trio.to_thread.run_sync(db.start, migrations)
    try:
        yield db
    finally:
        # Shielded: the writes the service makes while it stops (leases handed back)
        # commit before the connections close.
        with trio.CancelScope(shield=True):
            await db.stop()
