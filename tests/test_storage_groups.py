"""Group commit: a caller that fails in a group (both backends), and two processes'
writers that deadlock each other (PostgreSQL).

Each process commits its callers' writes in groups, so a group holds the row locks of
all its callers until it commits. Two processes can then wait on each other; PostgreSQL
breaks the cycle by aborting one transaction. The caller whose work was aborted must not
hear an error for it: its transaction is run again once the other has committed. Where
the rows are ones the repository functions declare (`storage._database.locks`: the PIN
counters every payment with a code locks), the writers take them in one order, so no
cycle forms and no group is aborted and run again.

The two databases stand for two processes (each has its own writer connection); the
repository functions run on the writer threads, so threading events order them.
"""

from __future__ import annotations

import ast
import importlib
import inspect
import pkgutil
import threading
from collections import Counter
from pathlib import Path
from typing import Any

import psycopg
import trio
import trio.testing
from fgcpay import storage
from fgcpay.admin import create_merchant
from fgcpay.domain.customers import lock_scope
from fgcpay.domain.dashboard import DashboardSession
from fgcpay.domain.merchants import Merchant
from fgcpay.storage import (
    Tx,
    customers,
    dashboard_sessions,
    idempotency,
    merchants,
    open_database,
    rate_limits,
    sign_in_attempts,
)
from fgcpay.storage._database import declares_locks
from helpers import NOW_US, wait_until

WAIT = 10.0  # a bound on each wait, far above PostgreSQL's 1 s deadlock_timeout


def _create(tx: Tx) -> None:
    tx.execute("CREATE TABLE counters (id BIGINT PRIMARY KEY, value BIGINT NOT NULL)")
    tx.execute("INSERT INTO counters (id, value) VALUES (1, 0), (2, 0)")


def _bump(tx: Tx, first: int, second: int, holding: threading.Event, other: threading.Event) -> str:
    """Lock `first`, let the other side lock its row, then update `second`."""
    tx.execute("UPDATE counters SET value = value + 1 WHERE id = ?", first)
    holding.set()
    assert other.wait(WAIT), "the other writer never took its lock"
    tx.execute("UPDATE counters SET value = value + 1 WHERE id = ?", second)
    return f"{first}->{second}"


def _gate(tx: Tx, entered: threading.Event, opened: threading.Event) -> None:
    # Holds this writer until the next callers are queued, so they form one group.
    entered.set()
    assert opened.wait(WAIT)


def _neighbour(tx: Tx) -> str:
    tx.execute("INSERT INTO counters (id, value) VALUES (3, 1)")
    return "neighbour"


def _values(tx: Tx) -> dict[int, int]:
    return {row["id"]: row["value"] for row in tx.fetch("SELECT id, value FROM counters")}


async def test_a_deadlock_between_two_writers_fails_no_caller(postgres_url: str) -> None:
    a_holds, b_holds = threading.Event(), threading.Event()
    entered, gate = threading.Event(), threading.Event()
    results: dict[str, Any] = {}
    async with open_database(postgres_url, 3) as a, open_database(postgres_url, 3) as b:
        await a.write(_create)

        async def write(name: str, db: Any, *args: Any) -> None:
            results[name] = await db.write(*args)

        with trio.fail_after(3 * WAIT):
            async with trio.open_nursery() as nursery:
                nursery.start_soon(write, "gate", a, _gate, entered, gate)
                assert await trio.to_thread.run_sync(entered.wait, WAIT)
                # One group on A: the deadlocking caller and a neighbour in savepoints.
                nursery.start_soon(write, "a", a, _bump, 1, 2, a_holds, b_holds)
                nursery.start_soon(write, "neighbour", a, _neighbour)
                await trio.testing.wait_all_tasks_blocked()  # both queued behind the gate
                gate.set()
                # Alone on B, the other way round.
                nursery.start_soon(write, "b", b, _bump, 2, 1, b_holds, a_holds)
        assert results == {"gate": None, "a": "1->2", "neighbour": "neighbour", "b": "2->1"}
        assert await a.read(_values) == {1: 2, 2: 2, 3: 1}


def _counted(
    tx: Tx,
    runs: Counter[str],
    name: str,
    holding: threading.Event | None = None,
    released: threading.Event | None = None,
) -> str:
    """Count a run of its group; with events, hold the group (and the rows it has locked
    so far) until released."""
    runs[name] += 1
    if holding is not None and released is not None:
        holding.set()
        assert released.wait(WAIT), "the group was never released"
    return name


def _writer_waits_on_a_lock(tx: Tx) -> bool:
    # Run on a reader's connection: any other connection of this database waiting on a
    # lock is a writer's (the holding one waits on its caller, not on a lock).
    return bool(
        tx.fetchval(
            "SELECT COUNT(*) FROM pg_stat_activity WHERE datname = current_database()"
            " AND pid <> pg_backend_pid() AND wait_event_type = 'Lock'"
        )
    )


def _pin_counters(tx: Tx, code: str) -> dict[str, int]:
    rows = tx.fetch("SELECT scope, in_flight FROM pin_failures WHERE customer_code = ?", code)
    return {row["scope"]: row["in_flight"] for row in rows}


async def test_two_writers_lock_the_pin_counters_of_two_merchants_in_one_order(
    postgres_url: str,
) -> None:
    """Customers of two merchants pay with one test code at once, and each process's group
    reserves the two merchants' PIN counters the other way round: A's group (one, then
    two) holds the first while B's group (two, then one) starts. B must wait for A before
    it locks either counter, rather than lock `two` and meet A halfway: then nothing
    deadlocks, no group is aborted and run again (each ran once), and every customer's
    attempt is reserved once."""
    code = "TEST-0001"
    one, two = lock_scope(code, "mer_one"), lock_scope(code, "mer_two")
    runs: Counter[str] = Counter()
    a_holds, a_released = threading.Event(), threading.Event()
    results: dict[str, Any] = {}
    async with open_database(postgres_url, 3) as a, open_database(postgres_url, 3) as b:
        # A test customer's counter is its merchant's, made only while the merchant exists.
        for merchant_id in (one, two):
            made = Merchant(merchant_id, merchant_id, f"{merchant_id}@example.com", 0)
            await a.write(merchants.insert_merchant, made, None)

        async def write(name: str, db: Any, *call: Any) -> None:
            results[name] = await db.write(*call)

        opened = {"a": threading.Event(), "b": threading.Event()}
        with trio.fail_after(3 * WAIT):
            async with trio.open_nursery() as nursery:
                for name, db in (("a", a), ("b", b)):
                    entered = threading.Event()
                    nursery.start_soon(write, f"gate {name}", db, _gate, entered, opened[name])
                    assert await trio.to_thread.run_sync(entered.wait, WAIT)
                # Queued behind the gates, in this order: one group on each writer.
                for name, db, call in [
                    ("a one", a, (customers.reserve_attempt, one, code, NOW_US)),
                    ("a", a, (_counted, runs, "a", a_holds, a_released)),
                    ("a two", a, (customers.reserve_attempt, two, code, NOW_US)),
                    ("b two", b, (customers.reserve_attempt, two, code, NOW_US)),
                    ("b", b, (_counted, runs, "b")),
                    ("b one", b, (customers.reserve_attempt, one, code, NOW_US)),
                ]:
                    nursery.start_soon(write, name, db, *call)
                    await trio.testing.wait_all_tasks_blocked()
                opened["a"].set()
                assert await trio.to_thread.run_sync(a_holds.wait, WAIT)  # A holds `one`
                opened["b"].set()
                await wait_until(
                    lambda: a.read(_writer_waits_on_a_lock),
                    within=WAIT,
                    what="B's writer waits on a lock held by A",
                )
                a_released.set()
        assert runs == {"a": 1, "b": 1}, "a group was aborted (deadlock) and run again"
        reservations = ("a one", "a two", "b two", "b one")
        assert {name: (results[name].locked, results[name].busy) for name in reservations} == (
            dict.fromkeys(reservations, (False, False))
        )
        assert await a.read(_pin_counters, code) == {one: 2, two: 2}


def _called(module: object, call: ast.expr) -> object:
    """What a call `fn(...)` or `module.fn(...)` in `module`'s source calls, if it can tell."""
    if isinstance(call, ast.Name):
        return getattr(module, call.id, None)
    if isinstance(call, ast.Attribute) and isinstance(call.value, ast.Name):
        return getattr(getattr(module, call.value.id, None), call.attr, None)
    return None


def test_a_function_that_calls_one_declaring_locks_declares_them_too() -> None:
    """The writer reads the declaration of the function it was handed, not of those that
    function calls: one that runs a declaring function in its transaction (`attempt` reserves
    and settles the PIN attempt) must declare its keys too, or the rows are locked out of
    order again."""
    undeclared = []
    for found in pkgutil.iter_modules(storage.__path__):
        if found.ispkg:  # the migrations: SQL
            continue
        module = importlib.import_module(f"{storage.__name__}.{found.name}")
        for fn in ast.parse(inspect.getsource(module)).body:
            if not isinstance(fn, ast.FunctionDef) or declares_locks(getattr(module, fn.name)):
                continue
            for node in ast.walk(fn):
                if isinstance(node, ast.Call) and declares_locks(_called(module, node.func)):
                    undeclared.append(f"{found.name}.{fn.name} calls {ast.unparse(node.func)}")
    assert undeclared == []


def _stale_rows(tx: Tx, merchant_id: str) -> None:
    # One row for each purge, all past keeping; a dashboard session to touch.
    tx.execute(
        "INSERT INTO idempotency_keys (merchant_id, method, path, idempotency_key,"
        " request_hash, state, owner, locked_until, created_at, expires_at)"
        " VALUES (?, 'POST', '/api/v1/checkout/sessions', 'k', 'h', 'done', 'o', 0, 0, 1)",
        merchant_id,
    )
    tx.execute(
        "INSERT INTO rate_limit_buckets (bucket_key, tokens, stamp_us, granted)"
        " VALUES ('bucket', 1, 0, 0)"
    )
    tx.execute(
        "INSERT INTO sign_in_failures (subject, failures, in_flight, window_started_at,"
        " locked_until) VALUES ('subject', 0, 0, 0, NULL)"
    )
    for id_hash in ("idle", "seen"):
        dashboard_sessions.insert(tx, DashboardSession(id_hash, merchant_id, 0, 0), None)


def _hold_rows(conn: psycopg.Connection[Any]) -> None:
    for table, where in [
        ("idempotency_keys", "idempotency_key = 'k'"),
        ("rate_limit_buckets", "bucket_key = 'bucket'"),
        ("sign_in_failures", "subject = 'subject'"),
        ("dashboard_sessions", "id_hash IN ('idle', 'seen')"),
        ("api_keys", "TRUE"),
    ]:
        conn.execute(f"SELECT 1 FROM {table} WHERE {where} FOR UPDATE")


async def test_purges_and_touches_pass_over_rows_another_transaction_holds(
    postgres_url: str,
) -> None:
    """What only deletes rows past keeping, or records a use, never waits for a row
    another transaction holds (`SKIP LOCKED`), so it is never the waiting side of a
    circle: the row is left for the next purge, or is being written already."""
    async with open_database(postgres_url, 3) as db:
        merchant_id = (await create_merchant(db, "Acme", "owner@acme.test")).merchant.id
        (key,) = await db.read(merchants.api_keys_of, merchant_id)
        await db.write(_stale_rows, merchant_id)

        async def purge_and_touch() -> list[Any]:
            await db.write(merchants.touch_api_key, merchant_id, key.id, NOW_US)
            await db.write(dashboard_sessions.touch, merchant_id, "seen", NOW_US)
            purged = [
                await db.write(idempotency.purge_expired, NOW_US, 10),
                await db.write(rate_limits.purge_full, 1, 10),
                await db.write(sign_in_attempts.purge_stale, NOW_US, 10),
                await db.write(dashboard_sessions.purge_idle, 1, 10),
            ]
            (touched,) = await db.read(merchants.api_keys_of, merchant_id)
            session = await db.read(dashboard_sessions.by_hash, "seen")
            return [*purged, touched.last_used_at, session and session.last_seen_at]

        with psycopg.connect(postgres_url) as holder, trio.fail_after(WAIT):
            _hold_rows(holder)
            assert await purge_and_touch() == [0, 0, 0, 0, None, 0]
            holder.commit()
            assert await purge_and_touch() == [1, 1, 1, 1, NOW_US, NOW_US]


def _insert(tx: Tx, counter_id: int) -> int:
    tx.execute("INSERT INTO counters (id, value) VALUES (?, 0)", counter_id)
    return counter_id


async def _one_group(db: Any, calls: dict[str, tuple[Any, ...]]) -> dict[str, Any]:
    """Run `calls` (name -> function and arguments) as one group, in order, behind a gate;
    each name's result, or its error's class name."""
    entered, gate = threading.Event(), threading.Event()
    results: dict[str, Any] = {}

    async def write(name: str, *args: Any) -> None:
        try:
            results[name] = await db.write(*args)
        except Exception as error:
            results[name] = type(error).__name__

    with trio.fail_after(WAIT):
        async with trio.open_nursery() as nursery:
            nursery.start_soon(write, "gate", _gate, entered, gate)
            assert await trio.to_thread.run_sync(entered.wait, WAIT)
            for name, call in calls.items():
                nursery.start_soon(write, name, *call)
                await trio.testing.wait_all_tasks_blocked()
            gate.set()
    del results["gate"]
    return results


async def test_a_failing_caller_loses_only_its_own_work(database_url: str) -> None:
    """A group runs first without a savepoint per caller; one caller failing sends it
    round again with savepoints, so only that caller's work is lost."""
    async with open_database(database_url, 3) as db:
        await db.write(_create)
        results = await _one_group(
            db, {"before": (_insert, 10), "clash": (_insert, 1), "after": (_insert, 11)}
        )
        clash = "UniqueViolation" if db.dialect == "postgresql" else "IntegrityError"
        assert results == {"before": 10, "clash": clash, "after": 11}
        assert sorted(await db.read(_values)) == [1, 2, 10, 11]


def _rolled_back_and_swallowed(tx: Tx) -> str:
    # What SQLite does by itself on a full disk or an I/O error (the whole transaction
    # rolled back), by a caller that then goes on as if nothing had happened.
    tx.execute("INSERT INTO counters (id, value) VALUES (20, 0)")
    tx.execute("ROLLBACK")
    return "swallowed"


async def test_a_caller_that_hides_a_rolled_back_transaction_fails_its_whole_group(
    tmp_path: Path,
) -> None:
    """SQLite: the callers after it must not run outside the transaction (each statement
    would then commit by itself): nothing of the group is kept, and every caller hears it."""
    async with open_database(f"sqlite:///{tmp_path}/groups.sqlite3", 3) as db:
        await db.write(_create)
        results = await _one_group(
            db, {"hider": (_rolled_back_and_swallowed,), "after": (_insert, 11)}
        )
        assert "swallowed" not in results.values() and 11 not in results.values()
        assert sorted(await db.read(_values)) == [1, 2]


def _announce(tx: Tx, payload: str, fail: bool = False) -> str:
    tx.notify("groups", payload)
    if fail:
        raise ValueError("this caller fails after its announcement")
    return payload


async def test_a_failed_callers_announcement_is_not_heard(database_url: str) -> None:
    heard: list[str] = []
    kept = trio.Event()

    def hear(payload: str) -> None:
        heard.append(payload)
        if payload == "kept":
            kept.set()

    async with open_database(database_url, 3) as db, trio.open_nursery() as nursery:
        await db.write(_create)
        await nursery.start(db.listen, {"groups": hear}, lambda: None)
        results = await _one_group(
            db, {"failed": (_announce, "failed", True), "kept": (_announce, "kept")}
        )
        assert results == {"failed": "ValueError", "kept": "kept"}
        with trio.fail_after(WAIT):
            await kept.wait()  # the notices of one commit are handed over in order
        assert heard == ["kept"]
        nursery.cancel_scope.cancel()
