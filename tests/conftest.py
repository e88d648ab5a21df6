"""Shared fixtures: both storage backends, a real service over loopback, the browser check.

What tests share that is not a fixture lives in helpers/, and tests import it from there."""

from __future__ import annotations

import logging
import os
from collections.abc import AsyncIterator, Iterator
from pathlib import Path

import pytest
import trio
import trio.testing
from fgcpay.core.settings import Settings
from fgcpay.storage import Database, open_database
from helpers import (
    BACKENDS,
    PG_EMPTY,
    PG_TEMPLATE,
    Server,
    browser_missing,
    close_browser,
    copy_sqlite_database,
    make_settings,
    migrate,
    new_postgres_database,
    start_server,
)
from pg_cluster import PgCluster, start_cluster


@pytest.fixture(autouse=True)
def logging_left_as_found() -> Iterator[None]:
    """A test that changes the level of the root logger or of fgcpay's must put it back.

    The tests of a process share these loggers. Left at DEBUG, the root logger had every
    library's debug records made, and pytest keeps a test's records (with their
    arguments) until the test ends: trio-websocket's hold its connection, so a client that
    gave up in the handshake kept its socket open, and a later test in the same process
    saw its stream's place held (it failed in two workers only, where the order of
    files changes)."""
    loggers = [logging.getLogger(), logging.getLogger("fgcpay")]
    before = [(logger.level, logger.propagate) for logger in loggers]
    yield
    after = [(logger.level, logger.propagate) for logger in loggers]
    assert after == before, f"the test left (level, propagate) of (root, fgcpay) {after}"


@pytest.fixture(scope="session")
def pg_cluster() -> Iterator[PgCluster | None]:
    try:
        cluster = start_cluster()
    except FileNotFoundError as error:
        if os.environ.get("FGCPAY_REQUIRE_POSTGRES") == "1":
            pytest.fail(f"PostgreSQL is required here but {error}")
        yield None
        return
    try:
        cluster.execute(f"CREATE DATABASE {PG_TEMPLATE}")
        migrate(cluster.url(PG_TEMPLATE))
        yield cluster
    finally:
        cluster.stop()


@pytest.fixture(scope="session")
def sqlite_template(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A SQLite database the migrations were applied to, closed: `database_url` copies it."""
    path = tmp_path_factory.mktemp("template") / "fgcpay.sqlite3"
    migrate(f"sqlite:///{path}")
    return path


@pytest.fixture(params=BACKENDS)
def database_url(
    request: pytest.FixtureRequest,
    tmp_path: Path,
    pg_cluster: PgCluster | None,
    sqlite_template: Path,
) -> Iterator[str]:
    """A fresh database on each backend, migrated as the service leaves it on its first
    start (a copy of a template: a few milliseconds, where migrating takes up to 100).
    Tests of the migrations, or of a first start on a new database, take
    `empty_database_url`."""
    if request.param == "sqlite":
        yield copy_sqlite_database(sqlite_template, tmp_path / "fgcpay.sqlite3")
        return
    yield from _postgres_database(pg_cluster, PG_TEMPLATE)


@pytest.fixture(params=BACKENDS)
def empty_database_url(
    request: pytest.FixtureRequest, tmp_path: Path, pg_cluster: PgCluster | None
) -> Iterator[str]:
    """A fresh database on each backend with nothing in it yet, not even the migrations:
    for the tests of the migrations and of an operator's first start."""
    if request.param == "sqlite":
        yield f"sqlite:///{tmp_path}/fgcpay.sqlite3"
        return
    yield from _postgres_database(pg_cluster, PG_EMPTY)


@pytest.fixture
def postgres_url(pg_cluster: PgCluster | None) -> Iterator[str]:
    """A fresh PostgreSQL database, migrated, for what only PostgreSQL does (several processes)."""
    yield from _postgres_database(pg_cluster, PG_TEMPLATE)


def _postgres_database(pg_cluster: PgCluster | None, template: str) -> Iterator[str]:
    name = new_postgres_database(pg_cluster, template)
    assert pg_cluster is not None
    yield pg_cluster.url(name)
    pg_cluster.drop_soon(name)


@pytest.fixture
def postgres_settings(postgres_url: str) -> Settings:
    return make_settings(postgres_url)


@pytest.fixture
def settings(database_url: str) -> Settings:
    return make_settings(database_url)


@pytest.fixture
async def db(database_url: str) -> AsyncIterator[Database]:
    async with open_database(database_url, 5) as opened:
        yield opened


@pytest.fixture
def clock() -> trio.testing.MockClock:
    """Trio's MockClock for tests of time: `clock.jump(seconds)` moves service time.

    It also jumps by itself once every task has been idle for a real half second, so a
    shutdown waiting out a grace period ends without the test jumping for it; real I/O
    (sockets, database threads) always completes well inside that.
    """
    return trio.testing.MockClock(autojump_threshold=0.5)


@pytest.fixture
async def server(nursery: trio.Nursery, settings: Settings) -> AsyncIterator[Server]:
    srv = await start_server(nursery, settings)
    try:
        yield srv
    finally:
        await srv.client.aclose()
        srv.stop.set()


@pytest.fixture(scope="session")
def browser_session() -> Iterator[None]:
    """Ends the run's chromium (helpers.browser) after the last test."""
    yield
    close_browser()


@pytest.fixture
def need_browser(browser_session: None) -> None:
    """Skips a browser test where chromium or Playwright is missing, or fails it where the
    browser tests must run (FGCPAY_REQUIRE_BROWSER=1, as in CI). Browser test modules use
    it for every test: `pytestmark = pytest.mark.usefixtures("need_browser")`."""
    missing = browser_missing()
    if missing:
        if os.environ.get("FGCPAY_REQUIRE_BROWSER") == "1":
            pytest.fail(f"the browser tests must run here, but {missing}")
        pytest.skip(missing)


# The slowest tests (5 to 45 s each on 2 cores; `pytest --durations=0` finds them), run
# first. The suite runs in two pytest-xdist workers (pyproject's addopts: `-n 2 --dist
# worksteal`): a worker idle at the end steals queued tests from the other, so the short
# ones balance the two out behind these, rather than one worker running a long test
# alone while the other has finished. Only whole files or tests without module-scoped
# fixtures are listed (moving one of those would set its fixture up twice).
SLOWEST_FIRST = (
    "test_schemathesis.py::",
    "test_webhook_faults.py::test_sigkill_after_the_commit_loses_no_webhook",
    "test_pg_faults.py::test_postgres_restarted_under_load",
    "test_sandboxes_served.py::test_fifty_sandboxes_made_at_once",
    "test_testing_guide.py::",
    "test_crash.py::test_sigkill_under_load",
    "test_page_a11y.py::",
    "test_dashboard_a11y.py::",
)


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    items.sort(key=lambda item: not any(slow in item.nodeid for slow in SLOWEST_FIRST))
