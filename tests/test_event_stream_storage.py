"""The event stream's order in storage, never changed behind a reader: even when two
PostgreSQL transactions commit in the other order than they wrote; an upgraded database's events
placed in the order they were made; and a stream held on one `fgcpay serve` process
hearing what another commits."""

from __future__ import annotations

import json
import sqlite3
from contextlib import closing
from pathlib import Path

import httpx
import psycopg
import trio
from fgcpay.admin import create_merchant
from fgcpay.domain import ids
from fgcpay.domain.events import Event, new_event
from fgcpay.storage import Database, event_stream, merchants, open_database, webhooks
from fgcpay.storage._migrations import load_migrations, pg_apply_migrations, sqlite_apply_migrations
from fgcpay.storage._postgres import PgTx
from fgcpay.storage.event_stream import START, Position
from helpers import NOW_US, TEST_SECRET, open_stream, valid_body, wait_until
from hosted import TOKEN
from processes import ServiceProcess
from psycopg.rows import dict_row


async def _merchant(db: Database) -> tuple[str, str]:
    """A merchant and its key's id."""
    created = await create_merchant(db, "Acme", f"{ids.random_base62(6)}@acme.test")
    (key,) = await db.read(merchants.api_keys_of, created.merchant.id)
    return created.merchant.id, key.id


def _event(merchant_id: str, n: int) -> Event:
    return new_event(
        ids.event_id(), merchant_id, "subscription.created", f"sub_{n}", 1, {"n": n}, NOW_US
    )


async def _streamed(db: Database, merchant_id: str, key_id: str, after: Position) -> list[str]:
    read = await db.read(event_stream.read, merchant_id, key_id, after, 100)
    return [event.id for event, _ in read.events]


async def test_a_transaction_that_commits_last_is_still_streamed_after_one_that_committed_first(
    postgres_url: str,
) -> None:
    """A writes its event first and commits last; B writes after A and commits first. A
    reader that resumes after the last position it read would miss A if positions were
    handed out in write order and read as soon as committed: B's row is held back until
    A ends, then both come, A first."""
    async with open_database(postgres_url, 3) as db:
        merchant_id, key_id = await _merchant(db)
        first, second = _event(merchant_id, 1), _event(merchant_id, 2)
        with (
            psycopg.connect(postgres_url, row_factory=dict_row) as a,
            psycopg.connect(postgres_url, row_factory=dict_row) as b,
        ):
            with a.cursor() as tx_a:
                webhooks.record_events(PgTx(tx_a), [first])  # A's transaction stays open
                with b.cursor() as tx_b:
                    webhooks.record_events(PgTx(tx_b), [second])
                b.commit()  # B is committed and visible...
                assert await db.read(webhooks.event_of, merchant_id, second.id) is not None
                held = await db.read(event_stream.read, merchant_id, key_id, START, 100)
                # ...but not streamed while A, which started before it, may still commit.
                assert held.events == [] and held.held_back
            a.commit()
        read = await db.read(event_stream.read, merchant_id, key_id, START, 100)
        assert [event.id for event, _ in read.events] == [first.id, second.id]
        assert not read.held_back
        # Resuming after either position gives what follows it, and nothing twice.
        (_, at_first), (_, at_second) = read.events
        assert await _streamed(db, merchant_id, key_id, at_first) == [second.id]
        assert await _streamed(db, merchant_id, key_id, at_second) == []


async def test_events_written_in_one_group_commit_stream_in_the_order_written(
    db: Database,
) -> None:
    merchant_id, key_id = await _merchant(db)
    events = [_event(merchant_id, n) for n in range(20)]
    async with trio.open_nursery() as nursery:
        for event in events:  # queued together: most share a group (one transaction)
            nursery.start_soon(db.write, webhooks.record_event, event)
    written = sorted(event.id for event in events)

    async def all_streamed() -> bool:
        # On PostgreSQL the stream holds back what transactions newer than the cluster's
        # oldest open one wrote (another connection's, a database being dropped): they
        # come once it ends, at once on a quiet machine, later under load.
        return len(await _streamed(db, merchant_id, key_id, START)) == len(events)

    await wait_until(all_streamed, within=30, what="every event in the stream")
    streamed = await _streamed(db, merchant_id, key_id, START)
    assert sorted(streamed) == written
    positions = [
        (await db.read(event_stream.anchor_of, merchant_id, event_id)) for event_id in streamed
    ]
    assert [p.position for p in positions if p] == sorted(p.position for p in positions if p)


async def test_an_upgraded_database_streams_its_events_in_the_order_they_were_made(
    empty_database_url: str,
) -> None:
    """0014 places the events a database already has, oldest first, before any new one."""
    before_0014 = [m for m in load_migrations() if m.version < 14]
    merchant = "mer_0000000000000001"
    rows = [
        "INSERT INTO merchants (id, name, email, created_at) VALUES"
        f" ('{merchant}', 'Acme', 'a@acme.test', 1)",
        "INSERT INTO api_keys (id, merchant_id, key_hash, prefix, last4, created_at) VALUES"
        f" ('key_0000000000000001', '{merchant}', 'h', 'fp_test_abcd', 'wxyz', 1)",
    ]
    made = [(f"evt_{n:024d}", created_at) for n, created_at in ((1, 30), (2, 10), (3, 20))]
    for event_id, created_at in made:
        rows.append(
            "INSERT INTO events (id, merchant_id, type, resource_id, sequence, body, created_at)"
            f" VALUES ('{event_id}', '{merchant}', 'subscription.created', '{event_id}', 1,"
            f" '{{}}', {created_at})"
        )
    if empty_database_url.startswith("sqlite:"):
        path = empty_database_url.removeprefix("sqlite:///")
        with closing(sqlite3.connect(path)) as conn, conn:
            sqlite_apply_migrations(conn, before_0014)
            for row in rows:
                conn.execute(row)
        # SQLite's order is the order of insertion.
        expected = [event_id for event_id, _ in made]
    else:
        with psycopg.connect(empty_database_url, autocommit=True, row_factory=dict_row) as pg:
            pg_apply_migrations(pg, before_0014)
            for row in rows:
                pg.execute(row.encode())
        # PostgreSQL has no insertion order to read back: the order they were made.
        expected = [event_id for event_id, _ in sorted(made, key=lambda e: e[1])]

    async with open_database(empty_database_url, 3) as db:
        newer = _event(merchant, 4)
        await db.write(webhooks.record_event, newer)
        streamed = await _streamed(db, merchant, "key_0000000000000001", START)
        assert streamed == [*expected, newer.id]
        anchor = await db.read(event_stream.anchor_of, merchant, expected[-1])
        assert anchor is not None
        assert await _streamed(db, merchant, "key_0000000000000001", anchor.position) == [newer.id]


async def test_a_stream_on_one_process_hears_a_payment_made_through_another(
    postgres_url: str, tmp_path: Path
) -> None:
    services = []
    for name in ("a", "b"):
        (tmp_path / name).mkdir()
        services.append(
            ServiceProcess(
                cwd=tmp_path / name, database_url=postgres_url, settings={"SECRET_KEY": TEST_SECRET}
            )
        )
    a, b = services
    try:
        async with trio.open_nursery() as nursery:
            nursery.start_soon(a.start)
            nursery.start_soon(b.start)
        created = await a.command("merchant", "create", "--name", "Acme", "--email", "a@x.test")
        key = created["api_key"]
        headers = {"Authorization": f"Bearer {key}"}
        async with (
            open_stream(a.url, key) as stream,
            httpx.AsyncClient(base_url=b.url, headers=headers, timeout=30) as on_b,
        ):
            session = (await on_b.post("/api/v1/checkout/sessions", json=valid_body())).json()
            page = await on_b.get(f"/checkout/{session['id']}")
            token = TOKEN.search(page.text)
            assert token, page.text
            paid = await on_b.post(
                f"/checkout/{session['id']}",
                data={"csrf_token": token.group(1), "customer_code": "TEST-0001", "pin": "1234"},
            )
            assert paid.status_code == 303, paid.text
            # B's commit reaches the stream held by A (PostgreSQL's NOTIFY, or A's poll).
            event = json.loads(await stream.raw())
        assert (event["type"], event["data"]["object"]["id"]) == (
            "checkout.session.paid",
            session["id"],
        )
    finally:
        a.kill()
        b.kill()
    assert a.errors_logged() == [] and b.errors_logged() == []
