"""Numbered SQL migrations (`storage/migrations/NNNN_name.sql`), applied once each, in order.

One file serves both backends: the schema keeps to SQL that SQLite and PostgreSQL read
alike (TEXT, BIGINT, no booleans, times as BIGINT microseconds since the epoch, UTC).
Applying is idempotent and safe to run from several processes at once.
"""

from __future__ import annotations

import re
import sqlite3
from importlib import resources
from typing import Any

import attrs

_NAME = re.compile(r"^(\d{4})_([a-z0-9_]+)\.sql$")

CREATE_TABLE = (
    "CREATE TABLE IF NOT EXISTS schema_migrations ("
    " version BIGINT PRIMARY KEY, name TEXT NOT NULL, applied_at BIGINT NOT NULL)"
)
# Any constant works; it only has to be the same in every process of this service.
PG_LOCK_KEY = 0x66676370


@attrs.frozen
class Migration:
    version: int
    name: str
    sql: str


def load_migrations() -> list[Migration]:
    """The migrations shipped in the package, in version order."""
    found = []
    for entry in resources.files("fgcpay.storage.migrations").iterdir():
        match = _NAME.match(entry.name)
        if match:
            found.append(Migration(int(match.group(1)), match.group(2), entry.read_text("utf-8")))
    found.sort(key=lambda m: m.version)
    versions = [m.version for m in found]
    if len(set(versions)) != len(versions):
        raise RuntimeError("two migrations share a version number")
    return found


def _now_us() -> int:
    import time

    return time.time_ns() // 1000


def sqlite_apply_migrations(conn: sqlite3.Connection, migrations: list[Migration]) -> list[int]:
    """Apply what is missing, each migration in its own IMMEDIATE transaction."""
    conn.execute(CREATE_TABLE)
    applied_now = []
    for migration in migrations:
        conn.execute("BEGIN IMMEDIATE")
        try:
            done = conn.execute(
                "SELECT 1 FROM schema_migrations WHERE version = ?", (migration.version,)
            ).fetchone()
            if done is None:
                for statement in split_statements(migration.sql):
                    conn.execute(statement)
                conn.execute(
                    "INSERT INTO schema_migrations (version, name, applied_at) VALUES (?, ?, ?)",
                    (migration.version, migration.name, _now_us()),
                )
                applied_now.append(migration.version)
            conn.execute("COMMIT")
        except BaseException:
            conn.execute("ROLLBACK")
            raise
    return applied_now


def pg_apply_migrations(conn: Any, migrations: list[Migration]) -> list[int]:
    """Apply what is missing in one transaction on a psycopg connection (autocommit
    mode); an advisory lock keeps processes that start together from racing."""
    applied_now = []
    with conn.transaction():
        # The service's per-statement bound is for requests; a migration of a large table
        # (or waiting for another starter's lock) may take longer.
        conn.execute("SET LOCAL statement_timeout = 0")
        conn.execute("SELECT pg_advisory_xact_lock(%s)", (PG_LOCK_KEY,))
        conn.execute(CREATE_TABLE)
        done = {row["version"] for row in conn.execute("SELECT version FROM schema_migrations")}
        for migration in migrations:
            if migration.version in done:
                continue
            # No parameters: sent as one simple query, so a migration may hold several
            # statements (and `%` needs no escaping).
            conn.execute(migration.sql.encode())
            conn.execute(
                "INSERT INTO schema_migrations (version, name, applied_at) VALUES (%s, %s, %s)",
                (migration.version, migration.name, _now_us()),
            )
            applied_now.append(migration.version)
    return applied_now


def split_statements(sql: str) -> list[str]:
    """Split a migration on `;` at line ends; our migrations keep to that form."""
    lines = [line for line in sql.splitlines() if not line.strip().startswith("--")]
    return [part.strip() for part in "\n".join(lines).split(";\n") if part.strip().strip(";")]
