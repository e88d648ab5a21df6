"""Wrong-PIN lockout on the hosted page: atomic across sessions and processes, unknown codes
counted like known ones, test customers locked per merchant, and the operator's unlock.
Also what the page answers when a confirm outlives its ask or the actor cannot load."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import attrs
import httpx
import pytest
import trio
import trio.testing
from fgcpay.actors.checkout_session import CheckoutSessionActor
from fgcpay.core.clock import TrioClock
from fgcpay.core.settings import Settings
from fgcpay.domain.merchants import Merchant
from fgcpay.storage import (
    Database,
    checkout_sessions,
    customers,
    merchants,
    open_database,
    transactions,
)
from fgcpay.storage import _open as storage_module
from fgcpay.storage._database import Tx
from fgcpay.storage._migrations import load_migrations
from helpers import MerchantClient, Server, create, start_server
from hosted import TOKEN, Customer, message, page_status

FGCPAY = [sys.executable, "-m", "fgcpay.cli"]
WRONG = "not right"
LOCKED = "locked"


async def _sessions(merchant: MerchantClient, count: int) -> list[str]:
    return [str((await create(merchant))["id"]) for _ in range(count)]


async def _confirm_at_once(
    servers: list[Server], session_ids: list[str], code: str, pin: str
) -> list[httpx.Response]:
    """One browser per session opens its page; then every form is posted at the same moment."""
    customers = [Customer(servers[n % len(servers)]) for n in range(len(session_ids))]
    tokens = []
    for customer, session_id in zip(customers, session_ids, strict=True):
        found = TOKEN.search((await customer.open(session_id)).text)
        assert found
        tokens.append(found.group(1))
    answers: list[httpx.Response | None] = [None] * len(session_ids)
    go = trio.Event()

    async def post(n: int) -> None:
        await go.wait()
        answers[n] = await customers[n].client.post(
            f"/checkout/{session_ids[n]}",
            data={"csrf_token": tokens[n], "customer_code": code, "pin": pin},
        )

    async with trio.open_nursery() as nursery:
        for n in range(len(session_ids)):
            nursery.start_soon(post, n)
        await trio.testing.wait_all_tasks_blocked()
        go.set()
    for customer in customers:
        await customer.close()
    return [answer for answer in answers if answer is not None]


def _tally(answers: list[httpx.Response]) -> dict[str, int]:
    tally = {"wrong": 0, "locked": 0, "other": 0}
    for answer in answers:
        text = message(answer) or ""
        if answer.status_code == 400 and WRONG in text:
            tally["wrong"] += 1
        elif answer.status_code == 400 and LOCKED in text:
            tally["locked"] += 1
        else:
            tally["other"] += 1
    return tally


async def _pay(server: Server, session_id: str, code: str, pin: str) -> httpx.Response:
    customer = Customer(server)
    try:
        return await customer.pay(session_id, code, pin)
    finally:
        await customer.close()


async def _status(merchant: MerchantClient, session_id: str) -> str:
    return str((await merchant.get(f"/checkout/sessions/{session_id}")).json()["status"])


async def _assert_at_most_five_pins_compared(servers: list[Server], code: str) -> None:
    merchant = await servers[0].merchant()
    session_ids = await _sessions(merchant, 40)
    answers = await _confirm_at_once(servers, session_ids[:39], code, "0000")
    # Five PINs compared: four told "not right", the fifth told the code is now locked;
    # every other attempt refused as locked before its PIN was looked at.
    assert _tally(answers) == {"wrong": 4, "locked": 35, "other": 0}
    last = await _pay(servers[-1], session_ids[39], code, "1234")
    assert last.status_code == 400 and LOCKED in (message(last) or "")
    for session_id in session_ids:
        assert await _status(merchant, session_id) == "created"


@pytest.mark.parametrize("code", ["TEST-0001", "NOBODY-4242"])
async def test_concurrent_wrong_pins_across_sessions_compare_at_most_five(
    nursery: trio.Nursery, settings: Settings, code: str
) -> None:
    server = await start_server(nursery, settings)
    await _assert_at_most_five_pins_compared([server], code)
    await server.shutdown()


async def test_two_services_on_one_database_share_the_lock(
    nursery: trio.Nursery, postgres_settings: Settings
) -> None:
    servers = [await start_server(nursery, postgres_settings) for _ in range(2)]
    await _assert_at_most_five_pins_compared(servers, "TEST-0001")
    for server in servers:
        await server.shutdown()


async def test_many_right_pins_at_once_all_pay(server: Server) -> None:
    # A merchant's test suite paying in parallel with TEST-0001: attempts waiting for the
    # five in flight are decided after them, never told "locked" when nothing was wrong.
    merchant = await server.merchant()
    session_ids = await _sessions(merchant, 20)
    answers = await _confirm_at_once([server], session_ids, "TEST-0001", "1234")
    assert [answer.status_code for answer in answers] == [303] * 20, [
        message(answer) for answer in answers if answer.status_code != 303
    ]
    for session_id in session_ids:
        assert await _status(merchant, session_id) == "paid"


async def test_an_unknown_code_is_answered_and_counted_like_a_wrong_pin(server: Server) -> None:
    merchant = await server.merchant()
    (session_id,) = await _sessions(merchant, 1)
    known = message(await _pay(server, session_id, "TEST-0002", "0000"))
    assert known and WRONG in known
    for _ in range(4):
        answer = await _pay(server, session_id, "NOBODY-7", "1234")
        assert answer.status_code == 400 and message(answer) == known
    fifth = await _pay(server, session_id, "nobody-7", "1234")
    assert LOCKED in (message(fifth) or "")
    assert LOCKED in (message(await _pay(server, session_id, "NOBODY-7", "9999")) or "")
    assert await _status(merchant, session_id) == "created"


async def _lock(server: Server, session_id: str, code: str) -> None:
    for _ in range(5):
        await _pay(server, session_id, code, "0000")
    assert LOCKED in (message(await _pay(server, session_id, code, "1234")) or "")


async def test_test_customers_lock_per_merchant_other_codes_for_all(server: Server) -> None:
    merchant_a = await server.merchant("Merchant A")
    merchant_b = await server.merchant("Merchant B")
    (a_session,) = await _sessions(merchant_a, 1)
    b_session, b_other = await _sessions(merchant_b, 2)
    await _lock(server, a_session, "TEST-0001")
    # Merchant B's customer is not stopped by merchant A's test run.
    assert (await _pay(server, b_session, "TEST-0001", "1234")).status_code == 303
    assert await _status(merchant_b, b_session) == "paid"
    # Any other code counts and locks across all merchants.
    await _lock(server, a_session, "REAL-0042")
    assert LOCKED in (message(await _pay(server, b_other, "REAL-0042", "1234")) or "")


def _cli(tmp_path: Path, database_url: str, *args: str) -> subprocess.CompletedProcess[str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("FGCPAY_")}
    env["FGCPAY_DATABASE_URL"] = database_url
    return subprocess.run(
        [*FGCPAY, *args], cwd=tmp_path, env=env, capture_output=True, text=True, timeout=60
    )


async def test_customer_unlock_lifts_a_lock(
    server: Server, database_url: str, tmp_path: Path
) -> None:
    merchant_a = await server.merchant("Merchant A")
    merchant_b = await server.merchant("Merchant B")
    (a_session,) = await _sessions(merchant_a, 1)
    (b_session,) = await _sessions(merchant_b, 1)
    await _lock(server, a_session, "TEST-0001")
    await _lock(server, b_session, "TEST-0001")

    done = await trio.to_thread.run_sync(
        _cli, tmp_path, database_url, "customer", "unlock", "test-0001", "--merchant", merchant_a.id
    )
    assert done.returncode == 0, done.stderr
    lines = done.stdout.splitlines()
    assert len(lines) == 1
    assert json.loads(lines[0]) == {
        "customer_code": "TEST-0001",
        "merchant_id": merchant_a.id,
        "unlocked": 1,
    }
    assert (await _pay(server, a_session, "TEST-0001", "1234")).status_code == 303
    # Only merchant A's lock was lifted.
    assert LOCKED in (message(await _pay(server, b_session, "TEST-0001", "1234")) or "")

    # Without --merchant every lock on the code goes, a global one included.
    await _lock(server, b_session, "REAL-0042")
    done = await trio.to_thread.run_sync(
        _cli, tmp_path, database_url, "customer", "unlock", "REAL-0042"
    )
    assert done.returncode == 0, done.stderr
    assert json.loads(done.stdout) == {
        "customer_code": "REAL-0042",
        "merchant_id": None,
        "unlocked": 1,
    }
    assert WRONG in (message(await _pay(server, b_session, "REAL-0042", "1234")) or "")
    done = await trio.to_thread.run_sync(
        _cli, tmp_path, database_url, "customer", "unlock", "TEST-0001"
    )
    assert json.loads(done.stdout)["unlocked"] == 1
    assert (await _pay(server, b_session, "TEST-0001", "1234")).status_code == 303


@pytest.mark.parametrize(
    ("args", "words"),
    [
        (["customer", "unlock", "TEST-0001", "--merchant", "mer_nope"], "no merchant mer_nope"),
        (["customer", "unlock", "   "], "customer code"),
        (["customer", "unlock", "X" * 33], "customer code"),
    ],
)
def test_customer_unlock_refuses_bad_input_in_one_line(
    tmp_path: Path, args: list[str], words: str
) -> None:
    url = f"sqlite:///{tmp_path}/db.sqlite3"
    assert _cli(tmp_path, url, "migrate").returncode == 0  # unlock needs a database
    done = _cli(tmp_path, url, *args)
    assert done.returncode == 2
    # One line names the problem (a first line may name the database in use).
    last = done.stderr.strip().splitlines()[-1]
    assert last.startswith("fgcpay:") and words in last, done.stderr
    assert "Traceback" not in done.stderr
    assert done.stdout == ""


async def test_the_migration_keeps_existing_locks(
    empty_database_url: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    """0005 applies to a database that already holds lockout rows, on both backends."""
    before = [m for m in load_migrations() if m.version < 5]
    with monkeypatch.context() as patch:
        patch.setattr(storage_module, "load_migrations", lambda: before)
        async with open_database(empty_database_url, 3) as old:
            await old.write(_old_rows)
    async with open_database(empty_database_url, 3) as db:
        await _assert_migrated(db)


NOW_US = 1_900_000_000_000_000


def _old_rows(tx: Tx) -> None:
    for code, failures, locked_until in (
        ("REAL-0001", 0, NOW_US + 60_000_000),
        ("REAL-0002", 2, None),
        ("TEST-0001", 0, NOW_US + 60_000_000),
    ):
        tx.execute(
            "INSERT INTO pin_failures (customer_code, failures, window_started_at, locked_until)"
            " VALUES (?, ?, ?, ?)",
            code,
            failures,
            NOW_US - 1_000_000,
            locked_until,
        )


async def _assert_migrated(db: Database) -> None:
    # The global lock holds; the test customer's old shared lock no longer stops anyone.
    refused: Any = await db.write(customers.reserve_attempt, "", "REAL-0001", NOW_US)
    assert refused.locked
    # A test customer's counter is its merchant's, made only while the merchant exists.
    await db.write(merchants.insert_merchant, Merchant("mer_a", "A", "a@example.com", 0), None)
    test_customer = await db.write(customers.reserve_attempt, "mer_a", "TEST-0001", NOW_US)
    assert not test_customer.locked and test_customer.customer is not None
    # REAL-0002's two earlier failures still count: three more lock it.
    for n in range(3):
        attempt = await db.write(customers.reserve_attempt, "", "REAL-0002", NOW_US)
        assert not attempt.locked
        locked = await db.write(customers.settle_attempt, "", "REAL-0002", NOW_US, matched=False)
        assert locked == (n == 2)


@pytest.mark.parametrize("commits", [True, False])
async def test_a_confirm_that_outlives_its_ask_shows_the_true_outcome(
    nursery: trio.Nursery,
    settings: Settings,
    clock: trio.testing.MockClock,
    monkeypatch: pytest.MonkeyPatch,
    commits: bool,
) -> None:
    ask_timeout = 5.0
    server = await start_server(
        nursery, attrs.evolve(settings, actor_ask_timeout_seconds=ask_timeout), clock=TrioClock()
    )
    merchant = await server.merchant()
    (session_id,) = await _sessions(merchant, 1)
    real_write = server.db.write
    release = trio.Event()

    async def slow_write(fn: Any, *args: Any, **kwargs: Any) -> Any:
        if fn is customers.attempt:
            if commits:
                # Handed to the writer, a slow commit (mock time) past the ask's deadline:
                # awaited whole (shielded, as storage awaits a write handed over).
                with trio.CancelScope(shield=True):
                    await trio.sleep(ask_timeout * 1.5)
                    return await real_write(fn, *args, **kwargs)
            await release.wait()  # never handed over before the deadline: cancelled
        return await real_write(fn, *args, **kwargs)

    monkeypatch.setattr(server.db, "write", slow_write)
    answer = await _pay(server, session_id, "TEST-0001", "1234")
    assert not answer.headers["content-type"].startswith("application/json"), answer.text
    if commits:
        assert answer.status_code == 303
        assert f"checkout_session_id={session_id}" in answer.headers["location"]
        assert await _status(merchant, session_id) == "paid"
    else:
        assert answer.status_code == 503
        assert answer.headers["content-type"].startswith("text/html")
        assert int(answer.headers["retry-after"]) >= 1
        assert "try again" in (message(answer) or "")
        release.set()
        # The confirm past its deadline was cancelled before it wrote (issue 28): nothing
        # was paid, and the customer's retry pays once.
        with trio.fail_after(60):
            await server.running.service.checkout.settled(session_id)
        assert await _status(merchant, session_id) == "created"
        assert await server.db.read(transactions.for_checkout_session, session_id) == []
        assert (await _pay(server, session_id, "TEST-0001", "1234")).status_code == 303
        customer = Customer(server)
        assert page_status(await customer.open(session_id)) == "paid"
        await customer.close()
        assert len(await server.db.read(transactions.for_checkout_session, session_id)) == 1
    await server.shutdown()


@pytest.mark.parametrize("pin", ["1234", "0000"])
async def test_a_confirm_decides_its_pin_and_payment_in_one_write(
    server: Server, monkeypatch: pytest.MonkeyPatch, pin: str
) -> None:
    """The customer waits for one durable commit, right PIN or wrong: the attempt's
    reservation, the comparison, its count and the payment are one transaction; and the
    session is read once (the page's handler hands what it read to the actor it starts)."""
    merchant = await server.merchant()
    (session_id,) = await _sessions(merchant, 1)
    customer = Customer(server)
    token = TOKEN.search((await customer.open(session_id)).text)
    assert token
    real_read, real_write = server.db.read, server.db.write
    reads: list[object] = []
    writes: list[str] = []

    async def read(fn: Any, *args: Any, **kwargs: Any) -> Any:
        reads.append(fn)
        return await real_read(fn, *args, **kwargs)

    async def write(fn: Any, *args: Any, **kwargs: Any) -> Any:
        writes.append(fn.__name__)
        return await real_write(fn, *args, **kwargs)

    monkeypatch.setattr(server.db, "read", read)
    monkeypatch.setattr(server.db, "write", write)
    answer = await customer.client.post(
        f"/checkout/{session_id}",
        data={"csrf_token": token.group(1), "customer_code": "TEST-0001", "pin": pin},
    )
    monkeypatch.undo()
    await customer.close()
    assert answer.status_code == (303 if pin == "1234" else 400), answer.text
    # (The webhook dispatcher, rung by the payment, claims its delivery meanwhile.)
    assert [name for name in writes if name != "claim_due"] == ["attempt"]
    assert reads.count(checkout_sessions.by_id) == 1
    assert await _status(merchant, session_id) == ("paid" if pin == "1234" else "created")


async def test_an_actor_that_keeps_crashing_answers_the_page_in_html_with_retry_after(
    nursery: trio.Nursery,
    settings: Settings,
    clock: trio.testing.MockClock,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """The session's actor crashes on every message (the page hands it the session it
    read, so it need not load first): each confirm is answered with the page, 503 and
    Retry-After, never JSON; once it recovers, the customer pays."""
    server = await start_server(nursery, settings, clock=TrioClock())
    merchant = await server.merchant()
    (session_id,) = await _sessions(merchant, 1)

    async def down(self: CheckoutSessionActor, *args: Any) -> None:
        raise RuntimeError("database down")

    monkeypatch.setattr(CheckoutSessionActor, "activate", down)
    monkeypatch.setattr(CheckoutSessionActor, "receive", down)
    for _ in range(6):
        answer = await _pay(server, session_id, "TEST-0001", "1234")
        assert answer.status_code == 503, answer.text
        assert answer.headers["content-type"].startswith("text/html")
        assert int(answer.headers["retry-after"]) >= 1
        assert "try again" in (message(answer) or "")
    monkeypatch.undo()
    await trio.sleep(server.running.service.actors.max_backoff_seconds + 1)
    assert (await _pay(server, session_id, "TEST-0001", "1234")).status_code == 303
    await server.shutdown()
