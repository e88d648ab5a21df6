"""The databases tests run on: each test gets a new one, copied from a template that the
service's own migrations were applied to once per run (migrating costs a PostgreSQL
database some 100 ms, a copy a few), or an empty one for the tests of the migrations and
of a first start."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest
import trio
from fgcpay.storage import open_database
from pg_cluster import PgCluster

# The PostgreSQL template the conftest migrates (`migrate`) once per run; `template1`,
# the cluster's default, is the empty one.
PG_TEMPLATE = "fgcpay_template"
PG_EMPTY = "template1"


def migrate(database_url: str) -> None:
    """Apply the migrations as the service does when it starts: through `open_database`."""

    async def opened_and_closed() -> None:
        async with open_database(database_url, 3):
            pass

    trio.run(opened_and_closed)


def copy_sqlite_database(template: Path, path: Path) -> str:
    """A copy of the migrated SQLite `template` at `path` (closed, so one file is all of
    it); its URL."""
    shutil.copyfile(template, path)
    return f"sqlite:///{path}"


def new_postgres_database(pg_cluster: PgCluster | None, template: str = PG_TEMPLATE) -> str:
    """The name of a new database copied from `template`; skips the test where PostgreSQL
    is not installed. The caller drops it (`PgCluster.drop_soon`), or leaves it to the
    end of the run."""
    if pg_cluster is None:
        pytest.skip("PostgreSQL server binaries (initdb, pg_ctl) are not installed")
    return pg_cluster.copy_database(template)


def fresh_postgres_database(pg_cluster: PgCluster | None) -> str:
    """The URL of a new, migrated PostgreSQL database, kept until the end of the run."""
    name = new_postgres_database(pg_cluster)
    assert pg_cluster is not None
    return pg_cluster.url(name)
