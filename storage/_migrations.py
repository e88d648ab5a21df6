"""Numbered SQL migrations (`storage/migrations/NNNN_name.sql`), applied once each, in order.

One file serves both backends: the schema keeps to SQL that SQLite and PostgreSQL read
alike (TEXT, BIGINT, no booleans, times as BIGINT microseconds since the epoch, UTC).
Where a backend needs what the other cannot read (a PostgreSQL sequence, a column default
that calls a function), the migration is a pair of files of the same number and name,
`NNNN_name.sqlite.sql` and `NNNN_name.postgresql.sql`, and each backend applies its own.
Applying is idempotent and safe to run from several processes at once.
"""

from __future__ import annotations

import re
import sqlite3
from importlib import resources
from typing import Any

import attrs

_NAME = re.compile(r"^(\d{4})_([a-z0-9_]+)(?:\.(sqlite|postgresql))?\.sql$")
DIALECTS = ("sqlite", "postgresql")

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
    dialect: str | None = None  # the one backend this file is for; None: both

    def applies_to(self, dialect: str) -> bool:
        return self.dialect in (None, dialect)


def load_migrations() -> list[Migration]:
    """The migrations shipped in the package, in version order (a backend's own files
    beside each other under one version)."""
    found = []
    for entry in resources.files("fgcpay.storage.migrations").iterdir():
        match = _NAME.match(entry.name)
        if match:
            version, name, dialect = int(match.group(1)), match.group(2), match.group(3)
            found.append(Migration(version, name, entry.read_text("utf-8"), dialect))
    found.sort(key=lambda m: (m.version, m.dialect or ""))
    for dialect in DIALECTS:
        versions = [m.version for m in found if m.applies_to(dialect)]
        if len(set(versions)) != len(versions):
            raise RuntimeError(f"two {dialect} migrations share a version number")
    by_version: dict[int, set[str | None]] = {}
    for m in found:
        by_version.setdefault(m.version, set()).add(m.dialect)
    for version, dialects in by_version.items():
        if None not in dialects and dialects != set(DIALECTS):
            raise RuntimeError(f"migration {version:04d} has a file for one backend only")
    return found


def _now_us() -> int:
    import time

    return time.time_ns() // 1000


def sqlite_apply_migrations(conn: sqlite3.Connection, migrations: list[Migration]) -> list[int]:
    """Apply what is missing, each migration in its own IMMEDIATE transaction."""
    conn.execute(CREATE_TABLE)
    applied_now = []
    for migration in migrations:
        if not migration.applies_to("sqlite"):
            continue
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
            if migration.version in done or not migration.applies_to("postgresql"):
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
