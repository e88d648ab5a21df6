"""Many rows in one statement: what the batched forms of the repository functions
(`_database.batched`) are written with.

PostgreSQL gets one array per column and reads them back as rows with `unnest`: one
statement, one round trip and one plan however many rows, and the same text for every
batch size, so the driver's prepared statement serves them all. SQLite, in process and
with no arrays, runs the one-row statement per row; so does a single row on either.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from ._database import Tx

Column = tuple[str, str]
"""A column's name and its PostgreSQL type (`text`, `bigint`), the type of its array."""


def arrays(columns: Sequence[Column], rows: Sequence[Sequence[Any]]) -> list[list[Any]]:
    return [[row[i] for row in rows] for i in range(len(columns))]


def unnest(columns: Sequence[Column]) -> str:
    return "unnest(" + ", ".join(f"?::{kind}[]" for _, kind in columns) + ")"


def insert_rows(
    tx: Tx, table: str, columns: Sequence[Column], rows: Sequence[Sequence[Any]]
) -> None:
    """`INSERT INTO table (columns)` every row (each row's values in the columns' order)."""
    if not rows:
        return
    names = ", ".join(name for name, _ in columns)
    values = f"INSERT INTO {table} ({names}) VALUES ({', '.join('?' for _ in columns)})"
    if len(rows) == 1:
        # One row (a payment, a create): the plain statement, no arrays to build.
        tx.execute(values, *rows[0])
    elif tx.dialect == "postgresql":
        tx.execute(
            f"INSERT INTO {table} ({names}) SELECT * FROM {unnest(columns)}",
            *arrays(columns, rows),
        )
    else:
        tx.execute_many(values, rows)
