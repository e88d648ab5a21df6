"""Issue 31's acceptance, black box: a real `fgcpay serve` on each backend (two workers on
PostgreSQL) driven over HTTP as a merchant's CI drives it. Fifty sandboxes made at once,
each a merchant of its own: what each makes is seen by its key alone, and its webhook
endpoint receives its events alone; a deleted sandbox's key is refused at once by every
worker and none of its rows remain (the database read directly, every table); the
1,001st live sandbox is 409 and a sandbox's key cannot make one (403).

Expiry: `ttl_seconds` is 60 at least and a served process has no clock to jump, so the
minute is skipped by moving the sandbox's `expires_at` back in the database (while the
service runs, and while it is down after a kill -9); the in-process tests drive the
timer with a MockClock, and `python -m bench sandboxes` times a real minute."""

from __future__ import annotations

import json
import os
import re
import signal
import sqlite3
import time
from collections.abc import Awaitable, Callable, Iterator
from contextlib import contextmanager
from datetime import datetime
from pathlib import Path
from typing import Any

import httpx
import pytest
import trio
from fgcpay.webhooks import WebhookVerificationError, verify_delivery
from helpers import CLIENT_TLS, subscription_body, valid_body, wait_until
from processes import FGCPAY, ServiceProcess, ended_within, worker_pids
from receiver import start_receiver

SANDBOX_ID = re.compile(r"sbx_test_[0-9A-Za-z]{24}")
# Past any burst of the tests (a thousand creates with one key): the limits are not what
# these tests are about.
UNLIMITED = {"RATE_LIMIT_PER_SECOND": "1000000", "RATE_LIMIT_BURST": "1000000"}
SANDBOXES = 50


def bearer(key: str) -> dict[str, str]:
    return {"Authorization": f"Bearer {key}"}


def api_client(service: ServiceProcess, connections: int = 100) -> httpx.AsyncClient:
    return httpx.AsyncClient(
        base_url=service.url + "/api/v1",
        timeout=60,
        verify=CLIENT_TLS,
        limits=httpx.Limits(max_connections=connections),
    )


async def started(tmp_path: Path, database_url: str, **settings: str) -> tuple[ServiceProcess, str]:
    """`fgcpay serve` (1 worker on SQLite, 2 on PostgreSQL) and a merchant's key."""
    workers = 1 if database_url.startswith("sqlite") else 2
    service = ServiceProcess(
        cwd=tmp_path, database_url=database_url, workers=workers, settings=UNLIMITED | settings
    )
    made = await service.command("merchant", "create", "--name", "Parent", "--email", "p@p.test")
    await service.start()
    return service, str(made["api_key"])


async def made(api: httpx.AsyncClient, key: str, path: str, body: dict[str, Any]) -> dict[str, Any]:
    answer = await api.post(path, json=body, headers=bearer(key))
    assert answer.status_code == 201, (path, answer.text)
    created: dict[str, Any] = answer.json()
    return created


async def listed(api: httpx.AsyncClient, key: str, path: str) -> list[str]:
    """The ids of every object of a list, page after page (webhook endpoints, 16 at most,
    come in one page: that list takes no paging)."""
    found: list[str] = []
    params: dict[str, str | int] = {} if path == "/webhook_endpoints" else {"limit": 100}
    while True:
        page = await api.get(path, params=params, headers=bearer(key))
        assert page.status_code == 200, (path, page.text)
        found += [item["id"] for item in page.json()["data"]]
        if not page.json()["has_more"]:
            return found
        params["starting_after"] = found[-1]


async def balance_of(api: httpx.AsyncClient, key: str) -> dict[str, Any]:
    """The balance, less its `as_of`."""
    shown = await api.get("/balance", headers=bearer(key))
    assert shown.status_code == 200, shown.text
    return {k: v for k, v in shown.json().items() if k != "as_of"}


async def at_once(count: int, job: Callable[[int], Awaitable[None]]) -> None:
    async with trio.open_nursery() as nursery:
        for i in range(count):
            nursery.start_soon(job, i)


# -- the database, read directly -------------------------------------------------------------


@contextmanager
def database(url: str) -> Iterator[Callable[..., list[tuple[Any, ...]]]]:
    """The service's database opened beside it: a query function (`?` placeholders)."""
    if url.startswith("sqlite"):
        conn = sqlite3.connect(url.split("///", 1)[1], isolation_level=None)  # autocommit
        try:
            yield lambda sql, *args: conn.execute(sql, args).fetchall()
        finally:
            conn.close()
        return
    import psycopg

    def pg_query(sql: str, *args: Any) -> list[tuple[Any, ...]]:
        cursor = pg.execute(sql.replace("?", "%s"), args)
        return cursor.fetchall() if cursor.description is not None else []

    with psycopg.connect(url, autocommit=True) as pg:
        yield pg_query


def text_columns(query: Callable[..., list[tuple[Any, ...]]], sqlite: bool) -> dict[str, list[str]]:
    """Every table of the schema and its text columns, as the database describes them now
    (a table added later is counted too)."""
    if sqlite:
        tables = [t for (t,) in query("SELECT name FROM sqlite_master WHERE type = 'table'")]
        return {
            t: [c[1] for c in query(f"PRAGMA table_info({t})") if c[2].upper() == "TEXT"]
            for t in tables
            if not t.startswith("sqlite_")
        }
    rows = query(
        "SELECT table_name, column_name FROM information_schema.columns"
        " WHERE table_schema = current_schema() AND data_type = 'text'"
    )
    found: dict[str, list[str]] = {}
    for table, column in rows:
        found.setdefault(table, []).append(column)
    return found


def rows_left(url: str, merchant_id: str, ids: set[str]) -> dict[str, int]:
    """What remains of a merchant: per table, the rows whose `merchant_id` is it (every
    table with that column), and the rows of any table with a text column holding the
    merchant's id or one of `ids` (its objects, keys, events, deliveries), whole or in
    part (a rate-limit bucket's key, a lock scope, an event's body)."""
    left: dict[str, int] = {}
    with database(url) as query:
        schema = text_columns(query, url.startswith("sqlite"))
        assert {"merchants", "checkout_sessions", "events", "deliveries"} <= schema.keys()
        for table, columns in schema.items():
            if "merchant_id" in columns:
                (n,) = query(f"SELECT COUNT(*) FROM {table} WHERE merchant_id = ?", merchant_id)[0]
                if n:
                    left[f"{table}.merchant_id"] = n
            if not columns:
                continue
            for needle in sorted({merchant_id, *ids}):
                mention = " OR ".join(f"{c} LIKE ?" for c in columns)
                (n,) = query(
                    f"SELECT COUNT(*) FROM {table} WHERE {mention}",
                    *[f"%{needle}%"] * len(columns),
                )[0]
                if n:
                    left[f"{table} mentioning {needle}"] = n
    return left


def merchant_of(url: str, session_id: str) -> str:
    with database(url) as query:
        ((merchant_id,),) = query(
            "SELECT merchant_id FROM checkout_sessions WHERE id = ?", session_id
        )
    return str(merchant_id)


def ids_of(url: str, merchant_id: str) -> set[str]:
    """The ids of a merchant's rows that name their owner elsewhere: its API keys (a
    rate-limit bucket's key), deliveries (their attempts), events and objects."""
    found: set[str] = set()
    with database(url) as query:
        for table in ("api_keys", "checkout_sessions", "subscriptions", "test_clocks",
                      "refunds", "transactions", "webhook_endpoints", "events",
                      "deliveries"):  # fmt: skip
            found |= {i for (i,) in query(f"SELECT id FROM {table} WHERE merchant_id = ?",
                                            merchant_id)}  # fmt: skip
    return found


# -- which worker holds a connection ------------------------------------------------------------


def holder(service: ServiceProcess, client_port: int) -> int | None:
    """The worker process holding the server side of our connection from `client_port`:
    the socket's inode in /proc/net/tcp, found among the workers' descriptors."""
    assert service.process is not None
    want = (f"0100007F:{service.port:04X}", f"0100007F:{client_port:04X}")
    lines = Path("/proc/net/tcp").read_text().splitlines()[1:]
    inode = next((p[9] for p in map(str.split, lines) if (p[1], p[2]) == want), None)
    if inode is None:
        return None
    for pid in worker_pids(service.process.pid) or [service.process.pid]:
        try:
            fds = list(Path(f"/proc/{pid}/fd").iterdir())
        except OSError:
            continue
        for fd in fds:
            try:
                if fd.readlink().name == f"socket:[{inode}]":
                    return pid
            except OSError:
                continue
    return None


async def one_per_worker(service: ServiceProcess, key: str) -> dict[int, httpx.AsyncClient]:
    """A kept-alive connection to each worker, each having just served `key` (200): the
    worker knows the key, as it would from a CI run's last request."""
    assert service.process is not None
    workers = set(worker_pids(service.process.pid) or [service.process.pid])
    held: dict[int, httpx.AsyncClient] = {}
    spare: list[httpx.AsyncClient] = []
    try:
        with trio.fail_after(30):
            while held.keys() != workers:
                # Kept open meanwhile: the next connection lands on another accept.
                client = api_client(service, connections=1)
                answer = await client.get("/balance", headers=bearer(key))
                assert answer.status_code == 200, answer.text
                stream = answer.extensions["network_stream"]
                pid = holder(service, stream.get_extra_info("client_addr")[1])
                if pid is not None and pid not in held:
                    held[pid] = client
                else:
                    spare.append(client)
    finally:
        for client in spare:
            await client.aclose()
    return held


# -- fifty sandboxes at once ----------------------------------------------------------------------


async def test_fifty_sandboxes_made_at_once_each_see_only_their_own_objects_and_events(
    tmp_path: Path, database_url: str, nursery: trio.Nursery
) -> None:
    receiver = await start_receiver(nursery)
    service, parent = await started(tmp_path, database_url)
    try:
        async with api_client(service) as api:
            sandboxes: list[dict[str, Any]] = [{}] * SANDBOXES

            async def make(i: int) -> None:
                sandboxes[i] = await made(api, parent, "/sandboxes", {"name": f"shard {i}"})

            began = time.monotonic()
            await at_once(SANDBOXES, make)
            took = time.monotonic() - began
            assert len({s["id"] for s in sandboxes}) == SANDBOXES
            assert len({s["api_key"] for s in sandboxes}) == SANDBOXES, "each its own key"
            for i, sandbox in enumerate(sandboxes):
                assert SANDBOX_ID.fullmatch(sandbox["id"]), sandbox
                assert sandbox["api_key"].startswith("fp_test_") and sandbox["api_key"] != parent
                assert (sandbox["object"], sandbox["name"], sandbox["expires_at"]) == (
                    "sandbox", f"shard {i}", None
                )  # fmt: skip
            shown = await listed(api, parent, "/sandboxes")
            assert sorted(shown) == sorted(s["id"] for s in sandboxes), "every one listed"
            one = await api.get(f"/sandboxes/{sandboxes[0]['id']}", headers=bearer(parent))
            assert one.status_code == 200 and "api_key" not in one.json(), "shown once"
            assert took < 30, took

            # The same objects made by the parent and in each sandbox.
            keys = [parent] + [s["api_key"] for s in sandboxes]
            owned: list[dict[str, Any]] = [{}] * len(keys)
            secrets: dict[str, str] = {}  # event id -> the secret of its maker's endpoint

            async def fill(n: int) -> None:
                key = keys[n]
                objects = {
                    "session": await made(api, key, "/checkout/sessions",
                                          valid_body(description=f"order of {n}")),
                    "subscription": await made(api, key, "/subscriptions", subscription_body()),
                    "clock": await made(api, key, "/test_clocks",
                                        {"frozen_time": "2030-01-01T00:00:00Z"}),
                    "endpoint": await made(api, key, "/webhook_endpoints",
                                           {"url": receiver.url,
                                            "enabled_events": ["checkout.session.paid"]}),
                }  # fmt: skip
                paid = await made(api, key, "/test_helpers/triggers",
                                  {"event_type": "checkout.session.paid",
                                   "object": objects["session"]["id"]})  # fmt: skip
                for event in paid["events"]:
                    secrets[event] = objects["endpoint"]["secret"]
                owned[n] = objects | {"events": paid["events"]}

            await at_once(len(keys), fill)

            # Each key sees its own and nothing of the others', by id or in a list.
            kinds = {"session": "/checkout/sessions", "subscription": "/subscriptions",
                     "clock": "/test_clocks", "endpoint": "/webhook_endpoints"}  # fmt: skip

            async def seen_alone(n: int) -> None:
                key, other = keys[n], keys[(n + 1) % len(keys)]
                for kind, path in kinds.items():
                    mine = owned[n][kind]["id"]
                    assert await listed(api, key, path) == [mine], (n, kind)
                    assert (await api.get(f"{path}/{mine}", headers=bearer(key))).status_code == 200
                    theirs = owned[(n + 1) % len(keys)][kind]["id"]
                    refused = await api.get(f"{path}/{theirs}", headers=bearer(key))
                    assert refused.status_code == 404, (n, kind, refused.text)
                    refused = await api.get(f"{path}/{mine}", headers=bearer(other))
                    assert refused.status_code == 404, (n, kind, refused.text)
                    if n:  # the parent's key neither
                        refused = await api.get(f"{path}/{mine}", headers=bearer(parent))
                        assert refused.status_code == 404, (n, kind, refused.text)
                events = await api.get("/events", params={"limit": 100}, headers=bearer(key))
                objects = {e["data"]["object"]["id"] for e in events.json()["data"]}
                mine = {owned[n]["session"]["id"], owned[n]["subscription"]["id"]}
                assert objects == mine, (n, objects)
                # The delivery log: the deliveries of its own event to its own endpoint.
                log = await api.get("/webhook_deliveries", headers=bearer(key))
                assert log.status_code == 200, log.text
                sent = {(d["event_id"], d["endpoint_id"]) for d in log.json()["data"]}
                assert sent == {(e, owned[n]["endpoint"]["id"]) for e in owned[n]["events"]}
                balance = (await api.get("/balance", headers=bearer(key))).json()
                assert (balance["paid_total_fgc"], balance["transaction_count"]) == ("12.50", 1)

            await at_once(len(keys), seen_alone)
            refused = await api.post("/sandboxes", json={}, headers=bearer(sandboxes[0]["api_key"]))
            assert refused.status_code == 403, refused.text
            assert refused.json()["code"] == "sandboxes_not_allowed"
            assert await listed(api, parent, "/sandboxes") == shown, "nothing made"

        # Each endpoint received its own sandbox's event, signed with its own secret.
        arrived = await receiver.wait_for(len(keys))
        assert sorted(json.loads(got.body)["id"] for got in arrived) == sorted(secrets)
        for got in arrived:
            event = json.loads(got.body)["id"]
            verify_delivery(got.body, got.headers, secrets[event])
            for other in set(secrets.values()) - {secrets[event]}:
                with pytest.raises(WebhookVerificationError):
                    verify_delivery(got.body, got.headers, other)
        assert not service.errors_logged()
    finally:
        service.kill()


# -- deletion -------------------------------------------------------------------------------------


async def test_a_deleted_sandboxs_key_is_refused_at_once_by_every_worker_and_none_of_its_rows_remain(
    tmp_path: Path, database_url: str, nursery: trio.Nursery
) -> None:
    receiver = await start_receiver(nursery)
    service, parent = await started(tmp_path, database_url)
    try:
        async with api_client(service) as api:
            create = await api.post(
                "/sandboxes", json={"name": "ci run 7", "ttl_seconds": 3600},
                headers=bearer(parent) | {"Idempotency-Key": "ci-run-7"},
            )  # fmt: skip
            assert create.status_code == 201, create.text
            sandbox = create.json()
            key, path = sandbox["api_key"], f"/sandboxes/{sandbox['id']}"
            assert sandbox["expires_at"] is not None

            # Rows of every kind: a paid session, a charged subscription on a test clock,
            # an approved refund, an endpoint and its deliveries, idempotency records.
            parents = await made(api, parent, "/test_helpers/triggers",
                                 {"event_type": "checkout.session.paid"})  # fmt: skip
            ledger = await balance_of(api, parent)
            await made(api, key, "/webhook_endpoints", {"url": receiver.url})
            session = await made(api, key, "/checkout/sessions", valid_body())
            events = []
            for body in ({"event_type": "checkout.session.paid", "object": session["id"]},
                         {"event_type": "subscription.charged"},
                         {"event_type": "refund.approved"}):  # fmt: skip
                fired = await api.post(
                    "/test_helpers/triggers", json=body,
                    headers=bearer(key) | {"Idempotency-Key": body["event_type"]},
                )  # fmt: skip
                assert fired.status_code == 201, fired.text
                events += fired.json()["events"]
            await receiver.wait_for(len(events))
            merchant = merchant_of(service.database_url, session["id"])
            ids = await trio.to_thread.run_sync(ids_of, service.database_url, merchant)
            assert set(events) <= ids and session["id"] in ids
            before = await trio.to_thread.run_sync(rows_left, service.database_url, merchant, ids)
            assert before, "the check finds the sandbox's rows while they exist"

            workers = await one_per_worker(service, key)
            try:
                deleted = await api.delete(path, headers=bearer(parent))
                assert deleted.status_code == 200, deleted.text
                assert deleted.json() == {"id": sandbox["id"], "object": "sandbox", "deleted": True}
                # At once, on every worker: on the connections that just served the key...
                for pid, client in workers.items():
                    refused = await client.get("/balance", headers=bearer(key))
                    assert refused.status_code == 401, (pid, refused.text)
            finally:
                for client in workers.values():
                    await client.aclose()

            # ...and on fresh ones, wherever the kernel hands them.
            async def fresh(_: int) -> None:
                async with api_client(service, connections=1) as alone:
                    refused = await alone.get("/checkout/sessions", headers=bearer(key))
                    assert refused.status_code == 401, refused.text

            await at_once(8, fresh)
            assert (await api.get(path, headers=bearer(parent))).status_code == 404
            assert (await api.delete(path, headers=bearer(parent))).status_code == 404
            assert sandbox["id"] not in await listed(api, parent, "/sandboxes")
            page = await api.get(service.url + f"/checkout/{session['id']}")
            assert page.status_code == 404, "its hosted pages are gone"

            left = await trio.to_thread.run_sync(rows_left, service.database_url, merchant, ids)
            assert left == {}, left
            # The parent's own rows are untouched, and its ledger agrees with its balance.
            assert await balance_of(api, parent) == ledger
            again = await api.get(f"/checkout/sessions/{parents['object_id']}",
                                  headers=bearer(parent))  # fmt: skip
            assert again.status_code == 200
        verified = await trio.run_process(
            [*FGCPAY, "ledger", "verify"], cwd=service.cwd, env=service.env(),
            capture_stdout=True, capture_stderr=True, check=False,
        )  # fmt: skip
        assert verified.returncode == 0, verified.stdout + verified.stderr
        assert not service.errors_logged()
    finally:
        service.kill()


# -- limits ---------------------------------------------------------------------------------------


async def test_the_1001st_live_sandbox_is_409_until_one_is_deleted(
    tmp_path: Path, database_url: str
) -> None:
    service, parent = await started(tmp_path, database_url)
    try:
        async with api_client(service, connections=8) as api:
            made_ids: list[str] = []
            todo = iter(range(1000))  # shared: each create is asked by one connection

            async def maker(_: int) -> None:
                for _n in todo:
                    made_ids.append((await made(api, parent, "/sandboxes", {}))["id"])

            began = time.monotonic()
            await at_once(8, maker)
            took = time.monotonic() - began
            assert len(set(made_ids)) == 1000
            over = await api.post("/sandboxes", json={"name": "one too many"},
                                  headers=bearer(parent))  # fmt: skip
            assert over.status_code == 409, over.text
            assert over.json()["code"] == "sandbox_limit_reached"
            assert len(await listed(api, parent, "/sandboxes")) == 1000, "nothing made"

            gone = await api.delete(f"/sandboxes/{made_ids[0]}", headers=bearer(parent))
            assert gone.status_code == 200
            await made(api, parent, "/sandboxes", {"name": "in its place"})
            again = await api.post("/sandboxes", json={}, headers=bearer(parent))
            assert again.status_code == 409, again.text
        assert took < 60, f"1,000 sandboxes made in {took:.1f} s"
        assert not service.errors_logged()
    finally:
        service.kill()


# -- expiry ---------------------------------------------------------------------------------------


def skip_the_minute(url: str, sandbox_id: str) -> None:
    """As if the sandbox's 60 seconds had passed: its `expires_at` moved 61 s back."""
    with database(url) as query:
        query("UPDATE sandboxes SET expires_at = expires_at - 61000000 WHERE id = ?", sandbox_id)


async def gone(api: httpx.AsyncClient, parent: str, sandbox: dict[str, Any]) -> None:
    """Wait (5 s at most) until the sandbox's key is refused (it is from the deletion's
    first write), then check the parent no longer sees it (it did not from `expires_at`
    on)."""

    async def refused() -> bool:
        found = await api.get("/balance", headers=bearer(sandbox["api_key"]))
        assert found.status_code in (200, 401), found.text
        return found.status_code == 401

    # Another process's timer: polling what it serves is the only way to see it act.
    await wait_until(refused, within=5, what=f"{sandbox['id']} deleted")
    found = await api.get(f"/sandboxes/{sandbox['id']}", headers=bearer(parent))
    assert found.status_code == 404, found.text
    assert sandbox["id"] not in await listed(api, parent, "/sandboxes")


async def test_a_sandbox_past_its_expires_at_is_deleted_by_the_timer_even_after_a_kill(
    tmp_path: Path, database_url: str
) -> None:
    # The timer's longest sleep: a due time moved in the database is seen this soon.
    service, parent = await started(tmp_path, database_url, EXPIRY_POLL_SECONDS="0.2")
    try:
        async with api_client(service) as api:
            short, other, kept = [
                await made(api, parent, "/sandboxes", {"ttl_seconds": ttl})
                for ttl in (60, 60, 3600)
            ]
            for sandbox, ttl in ((short, 60), (other, 60), (kept, 3600)):
                created, expires = (
                    datetime.fromisoformat(sandbox[f].replace("Z", "+00:00"))
                    for f in ("created_at", "expires_at")
                )
                assert (expires - created).total_seconds() == ttl, sandbox
            session = await made(api, short["api_key"], "/checkout/sessions", valid_body())
            merchant = merchant_of(service.database_url, session["id"])
            ids = await trio.to_thread.run_sync(ids_of, service.database_url, merchant)

            # While the service runs.
            await trio.to_thread.run_sync(skip_the_minute, service.database_url, short["id"])
            await gone(api, parent, short)
            left = await trio.to_thread.run_sync(rows_left, service.database_url, merchant, ids)
            assert left == {}, left

            # Killed (-9) before the minute is up, started again after it: the due time
            # is in the database, and the restarted service deletes it.
            assert service.process is not None
            workers = worker_pids(service.process.pid)
            assert await service.stop(signal.SIGKILL) == -signal.SIGKILL
            for pid in workers:  # their master gone, the workers are killed as it was
                os.kill(pid, signal.SIGKILL)
            assert ended_within(workers, 10)
            await trio.to_thread.run_sync(skip_the_minute, service.database_url, other["id"])
            await service.start()
            await gone(api, parent, other)
            alive = await api.get(f"/sandboxes/{kept['id']}", headers=bearer(parent))
            assert alive.status_code == 200, "one not yet expired stays"
            assert (await api.get("/balance", headers=bearer(kept["api_key"]))).status_code == 200
    finally:
        service.kill()
