"""POST/GET/DELETE /sandboxes as a merchant sees them, on both backends: the create and
its key, the list, idempotency and validation, isolation of every resource both ways,
deletion that leaves no row of the sandbox anywhere, the limit and the sandbox's 403."""

from __future__ import annotations

import json
from datetime import datetime, timedelta
from functools import partial
from pathlib import Path
from typing import Any, cast

import attrs
import httpx
import pytest
import trio
import trio.testing
from fgcpay.accounts import sandboxes as sandbox_accounts
from fgcpay.actors import checkout_session as checkout_session_actor
from fgcpay.actors import subscription as subscription_actor
from fgcpay.actors.checkout_session import CheckoutSessions
from fgcpay.admin import CreatedMerchant, create_merchant, verify_ledger
from fgcpay.core.clock import TrioClock
from fgcpay.core.settings import Settings
from fgcpay.domain import ids, limits
from fgcpay.domain.customers import PER_MERCHANT_CODES, lock_scope
from fgcpay.domain.merchants import Merchant, new_api_key
from fgcpay.domain.sandboxes import SandboxRequest, new_sandbox, sandbox_email
from fgcpay.storage import Database, Tx, open_database
from fgcpay.storage import customers as customer_rows
from fgcpay.storage import merchants as merchant_rows
from fgcpay.storage import sandboxes as sandbox_rows
from helpers import (
    TEST_SECRET,
    MerchantClient,
    Server,
    add_endpoint,
    create,
    create_subscription,
    create_test_clock,
    open_stream,
    start_server,
    valid_body,
    wait_until,
)
from hosted import Customer, message
from processes import ServiceProcess
from receiver import start_receiver

FAKE = "0" * 24


async def make_sandbox(
    parent: MerchantClient, **body: Any
) -> tuple[dict[str, Any], MerchantClient]:
    """A new sandbox of `parent` (the 201's body) and a client sending its key."""
    response = await parent.post("/sandboxes", json=body)
    assert response.status_code == 201, response.text
    created: dict[str, Any] = response.json()
    # Its merchant as far as the client needs one: the key is what it sends.
    merchant = Merchant(created["id"], "sandbox", "sandbox@example.com", 0)
    return created, MerchantClient(CreatedMerchant(merchant, created["api_key"]), parent.http)


async def _gone(db: Database, sandbox: dict[str, Any]) -> bool:
    """Whether nothing of the sandbox is left: its row (and so its merchant's) is gone."""
    return await db.read(sandbox_rows.merchant_of, sandbox["id"]) is None


async def test_create_get_list_and_delete(server: Server) -> None:
    parent = await server.merchant()
    created, sandbox = await make_sandbox(parent, name="shard 1")
    assert set(created) == {"id", "object", "name", "api_key", "created_at", "expires_at"}
    assert ids.looks_like_id(created["id"], "sbx_test_", 24)
    assert ids.looks_like_id(created["api_key"], "fp_test_", 32)
    assert (created["object"], created["name"], created["expires_at"]) == (
        "sandbox", "shard 1", None
    )  # fmt: skip
    shown = {k: v for k, v in created.items() if k != "api_key"}
    got = await parent.get(f"/sandboxes/{created['id']}")
    assert got.status_code == 200 and got.json() == shown
    # Its key works: a merchant of its own, with nothing yet.
    assert (await sandbox.get("/checkout/sessions")).json()["data"] == []
    second, _ = await make_sandbox(parent, ttl_seconds=3600)
    assert second["name"] is None and second["expires_at"] is not None
    listed = (await parent.get("/sandboxes")).json()
    assert [s["id"] for s in listed["data"]] == [second["id"], created["id"]]
    assert all("api_key" not in s for s in listed["data"])
    page = (await parent.get("/sandboxes", params={"limit": "1"})).json()
    assert page["has_more"] is True and page["next_cursor"] == second["id"]
    rest = await parent.get("/sandboxes", params={"starting_after": page["next_cursor"]})
    assert [s["id"] for s in rest.json()["data"]] == [created["id"]]
    bad_cursor = await parent.get("/sandboxes", params={"starting_after": f"sbx_test_{FAKE}"})
    assert bad_cursor.status_code == 400

    deleted = await parent.delete(f"/sandboxes/{created['id']}")
    assert deleted.status_code == 200, deleted.text
    assert deleted.json() == {"id": created["id"], "object": "sandbox", "deleted": True}
    refused = await sandbox.get("/checkout/sessions")
    assert refused.status_code == 401 and refused.json()["code"] == "invalid_api_key"
    assert (await parent.get(f"/sandboxes/{created['id']}")).status_code == 404
    assert (await parent.delete(f"/sandboxes/{created['id']}")).status_code == 404
    assert [s["id"] for s in (await parent.get("/sandboxes")).json()["data"]] == [second["id"]]
    other = await server.merchant("Other")
    assert (await other.get(f"/sandboxes/{second['id']}")).status_code == 404
    assert (await other.delete(f"/sandboxes/{second['id']}")).status_code == 404
    assert (await other.get("/sandboxes")).json()["data"] == []
    assert (await parent.get("/sandboxes/junk")).status_code == 404


async def test_idempotent_create_replays_the_same_sandbox_and_key(server: Server) -> None:
    parent = await server.merchant()
    headers = {"Idempotency-Key": "sbx-1"}
    first = await parent.post("/sandboxes", json={"name": "a"}, headers=headers)
    again = await parent.post("/sandboxes", json={"name": "a"}, headers=headers)
    assert first.status_code == again.status_code == 201
    assert again.content == first.content
    assert again.headers["Idempotent-Replayed"] == "true"
    other = await parent.post("/sandboxes", json={"name": "b"}, headers=headers)
    assert other.status_code == 409 and other.json()["code"] == "idempotency_key_conflict"
    assert len((await parent.get("/sandboxes")).json()["data"]) == 1
    # The stored answer holds the key sealed, never in clear.
    key = first.json()["api_key"]
    assert not await server.db.read(_anywhere, [key])


@pytest.mark.parametrize(
    ("body", "fields"),
    [
        ({"name": "x" * 101}, ["name"]),
        ({"name": " "}, ["name"]),
        ({"name": "a\u202eb"}, ["name"]),
        ({"ttl_seconds": 59}, ["ttl_seconds"]),
        ({"ttl_seconds": 604801}, ["ttl_seconds"]),
        ({"ttl_seconds": "60"}, ["ttl_seconds"]),
        ({"ttl_seconds": 60.5}, ["ttl_seconds"]),
        ({"ttl_seconds": True}, ["ttl_seconds"]),
        ({"name": 5, "x": 1}, ["x", "name"]),
    ],
)
async def test_invalid_creates_are_400_naming_each_field(
    server: Server, body: dict[str, Any], fields: list[str]
) -> None:
    parent = await server.merchant()
    refused = await parent.post("/sandboxes", json=body)
    assert refused.status_code == 400, refused.text
    assert refused.json()["code"] == "validation_error"
    assert [d["field"] for d in refused.json()["details"]] == fields
    assert (await parent.get("/sandboxes")).json()["data"] == []


async def test_a_sandbox_key_asking_for_sandboxes_is_403(server: Server) -> None:
    parent = await server.merchant()
    created, sandbox = await make_sandbox(parent)
    for response in (
        await sandbox.post("/sandboxes", json={}),
        await sandbox.get("/sandboxes"),
        await sandbox.get(f"/sandboxes/{created['id']}"),
        await sandbox.delete(f"/sandboxes/{created['id']}"),
    ):
        assert response.status_code == 403, response.text
        assert response.json()["code"] == "sandboxes_not_allowed"
    assert (await parent.get(f"/sandboxes/{created['id']}")).status_code == 200


async def _fill(db: Database, parent_id: str, count: int) -> None:
    """`count` live sandboxes of the parent, straight through storage (as a create would)."""

    def insert_all(tx: Tx) -> None:
        for _ in range(count):
            merchant_id = ids.merchant_id()
            sandbox = new_sandbox(
                SandboxRequest(None, None),
                sandbox_id=ids.sandbox_id(),
                parent_id=parent_id,
                merchant_id=merchant_id,
                now_us=1,
            )
            merchant = Merchant(merchant_id, "x", sandbox_email(merchant_id), 1)
            key = new_api_key(merchant_id, 1).record
            assert sandbox_rows.insert_within(tx, sandbox, merchant, key, None, 10**6) is None

    await db.write(insert_all)


async def test_the_1001st_live_sandbox_is_409_even_when_created_at_once(server: Server) -> None:
    parent = await server.merchant()
    await _fill(server.db, parent.id, 995)
    answers: list[int] = []

    async def one() -> None:
        answers.append((await parent.post("/sandboxes", json={})).status_code)

    async with trio.open_nursery() as nursery:
        for _ in range(12):
            nursery.start_soon(one)
    assert sorted(answers) == [201] * 5 + [409] * 7
    refused = await parent.post("/sandboxes", json={"name": "one more"})
    assert refused.status_code == 409
    assert refused.json()["code"] == "sandbox_limit_reached"
    assert refused.json()["details"] == {"limit": 1000}
    now_us = server.running.service.clock.now_us()
    assert await server.db.read(sandbox_rows.live_count, parent.id, now_us) == 1000
    # Deleting one frees its place.
    newest = (await parent.get("/sandboxes", params={"limit": "1"})).json()["data"][0]
    assert (await parent.delete(f"/sandboxes/{newest['id']}")).status_code == 200
    assert (await parent.post("/sandboxes", json={})).status_code == 201


async def _world(merchant: MerchantClient, receiver_url: str) -> dict[str, str]:
    """One of each resource, made with the merchant's key: a paid session with a refund
    (a transaction, events, deliveries to an endpoint), a subscription, a test clock."""
    endpoint = await add_endpoint(merchant, receiver_url)
    session = await create(merchant)
    paid = await merchant.post(
        f"/test_helpers/checkout/sessions/{session['id']}/pay", json={"customer_code": "TEST-0001"}
    )
    assert paid.status_code == 200, paid.text
    refund = await merchant.post(
        "/refunds", json={"checkout_session_id": session["id"], "amount_fgc": "1.00"}
    )
    assert refund.status_code == 201, refund.text
    subscription = await create_subscription(merchant)
    clock = await create_test_clock(merchant, "2027-01-31T09:00:00Z")
    transactions = (await merchant.get("/transactions")).json()["data"]
    events = (await merchant.get("/events")).json()["data"]
    return {
        "endpoint": endpoint["id"],
        "session": session["id"],
        "refund": refund.json()["id"],
        "subscription": subscription["id"],
        "clock": clock["id"],
        "transaction": transactions[0]["id"],
        "event": events[0]["id"],
    }


async def _balance(merchant: MerchantClient) -> dict[str, Any]:
    """The balance without its `as_of` (the time it was read)."""
    got = await merchant.get("/balance")
    assert got.status_code == 200, got.text
    return {k: v for k, v in got.json().items() if k != "as_of"}


PATHS = {
    "endpoint": "/webhook_endpoints/{}",
    "session": "/checkout/sessions/{}",
    "refund": "/refunds/{}",
    "subscription": "/subscriptions/{}",
    "clock": "/test_clocks/{}",
    "transaction": "/transactions/{}",
    "event": "/events/{}",
}
LISTS = [
    "/webhook_endpoints", "/checkout/sessions", "/refunds", "/subscriptions", "/test_clocks",
    "/transactions", "/events", "/webhook_deliveries",
]  # fmt: skip


async def test_parent_and_sandbox_see_none_of_each_other(server: Server) -> None:
    parent = await server.merchant()
    _, sandbox = await make_sandbox(parent)
    # An address nobody answers on: the deliveries stay in the log, pending or failed.
    url = "http://127.0.0.1:9/hook"
    mine = await _world(parent, url)
    theirs = await _world(sandbox, url)
    for who, other, ids_of in ((parent, sandbox, theirs), (sandbox, parent, mine)):
        for kind, path in PATHS.items():
            own = await other.get(path.format(ids_of[kind]))
            assert own.status_code == 200, (kind, own.text)
            seen = await who.get(path.format(ids_of[kind]))
            assert seen.status_code == 404, (kind, seen.text)
        for path in LISTS:
            listed = (await who.get(path)).json()["data"]
            assert not {item["id"] for item in listed} & set(ids_of.values()), path
    # Each balance is its own: one payment less one pending refund each.
    assert await _balance(parent) == await _balance(sandbox)
    deliveries = (await sandbox.get("/webhook_deliveries")).json()["data"]
    assert deliveries and all(d["endpoint_id"] == theirs["endpoint"] for d in deliveries)


def _anywhere(tx: Tx, needles: list[str]) -> list[str]:
    """Every row of every table (from the schema) holding one of `needles` in a column:
    `table: value` for each."""
    if tx.dialect == "sqlite":
        tables = [
            row["name"]
            for row in tx.fetch(
                "SELECT name FROM sqlite_master WHERE type = 'table' AND name NOT LIKE 'sqlite_%'"
            )
        ]
    else:
        tables = [
            row["table_name"]
            for row in tx.fetch(
                "SELECT table_name FROM information_schema.tables"
                " WHERE table_schema = current_schema() AND table_type = 'BASE TABLE'"
            )
        ]
    found = []
    for table in tables:
        for row in tx.fetch(f"SELECT * FROM {table}"):
            for value in (row[name] for name in cast(Any, row).keys()):
                text = str(value)
                for needle in needles:
                    if needle in text:
                        found.append(f"{table}: {text[:80]}")
    return found


async def test_deletion_leaves_no_row_and_the_parent_untouched(server: Server) -> None:
    parent = await server.merchant()
    created, sandbox = await make_sandbox(parent, name="doomed")
    url = "http://127.0.0.1:9/hook"
    mine = await _world(parent, url)
    theirs = await _world(sandbox, url)
    await make_sandbox(parent)  # a sibling, untouched
    merchant_id = await server.db.read(sandbox_rows.merchant_of, created["id"])
    assert merchant_id is not None
    key_id = (await sandbox.get("/checkout/sessions")).status_code  # in use: a bucket row
    assert key_id == 200
    balance = await _balance(parent)
    needles = [merchant_id, created["id"], created["api_key"][-12:], *theirs.values()]
    assert await server.db.read(_anywhere, needles)  # there before

    deleted = await parent.delete(f"/sandboxes/{created['id']}")
    assert deleted.status_code == 200, deleted.text
    assert await server.db.read(_anywhere, needles) == []
    assert (await sandbox.get("/balance")).status_code == 401
    page = await server.client.get(
        server.url + f"/checkout/{theirs['session']}", follow_redirects=False
    )
    assert page.status_code == 404
    # The parent's objects, balance and ledger are as they were.
    for kind, path in PATHS.items():
        assert (await parent.get(path.format(mine[kind]))).status_code == 200, kind
    assert await _balance(parent) == balance
    checks = await verify_ledger(server.db)
    assert checks and all(check.agrees for check in checks)
    assert len((await parent.get("/sandboxes")).json()["data"]) == 1


async def test_an_empty_body_makes_a_sandbox_too(server: Server) -> None:
    parent = await server.merchant()
    made = await parent.post("/sandboxes")
    assert made.status_code == 201, made.text
    assert (made.json()["name"], made.json()["expires_at"]) == (None, None)


async def test_a_sandbox_expires_within_a_minute_of_expires_at(
    nursery: trio.Nursery, settings: Settings, clock: trio.testing.MockClock
) -> None:
    server = await start_server(nursery, settings, clock=TrioClock())
    parent = await server.merchant()
    created, sandbox = await make_sandbox(parent, ttl_seconds=60)
    lasting, _ = await make_sandbox(parent, ttl_seconds=3600)
    made_at, expires_at = (datetime.fromisoformat(created[k]) for k in ("created_at", "expires_at"))
    assert expires_at - made_at == timedelta(seconds=60)
    await create(sandbox)
    clock.jump(59)
    assert (await sandbox.get("/checkout/sessions")).status_code == 200
    clock.jump(2)
    await wait_until(
        partial(_gone, server.db, created), within=60, every=1, what="the sandbox expired"
    )
    assert (await sandbox.get("/checkout/sessions")).status_code == 401
    assert (await parent.get(f"/sandboxes/{created['id']}")).status_code == 404
    assert [s["id"] for s in (await parent.get("/sandboxes")).json()["data"]] == [lasting["id"]]
    await server.shutdown()


async def test_expiry_and_an_unfinished_deletion_survive_a_restart(
    nursery: trio.Nursery, settings: Settings, clock: trio.testing.MockClock
) -> None:
    service_clock = TrioClock()
    first = await start_server(nursery, settings, clock=service_clock)
    parent = await first.merchant()
    expiring, _ = await make_sandbox(parent, ttl_seconds=120)
    half_deleted, half_key = await make_sandbox(parent)
    await create(half_key)
    # A process that died right after marking it deleted (the key refused, the rows left).
    now = first.running.service.clock.now_us()
    marked = await first.db.write(
        sandbox_rows.begin_delete, half_deleted["id"], parent.id, now, True
    )
    assert marked is not None
    assert (await half_key.get("/checkout/sessions")).status_code == 401
    assert (await parent.get(f"/sandboxes/{half_deleted['id']}")).status_code == 404
    await first.shutdown()
    clock.jump(600)  # the service was down when the sandbox expired
    second = await start_server(nursery, settings, clock=service_clock)
    for sandbox in (expiring, half_deleted):
        await wait_until(
            partial(_gone, second.db, sandbox), within=60, every=1, what="deleted after a restart"
        )
    assert await second.db.read(_anywhere, [expiring["id"], half_deleted["id"]]) == []
    await second.shutdown()


async def test_a_pending_delivery_and_a_due_renewal_are_not_sent_once_deleted(
    nursery: trio.Nursery, settings: Settings, clock: trio.testing.MockClock
) -> None:
    server = await start_server(nursery, settings, clock=TrioClock())
    parent = await server.merchant()
    created, sandbox = await make_sandbox(parent)
    receivers = {}
    for name, merchant in (("parent", parent), ("sandbox", sandbox)):
        subscription = await create_subscription(merchant)
        approved = await merchant.post(
            f"/test_helpers/subscriptions/{subscription['id']}/approve", json={}
        )
        assert approved.status_code == 200, approved.text
        receiver = receivers[name] = await start_receiver(nursery)
        # The first attempt is refused for 15 minutes: a delivery pending, due again later.
        receiver.script = lambda n: (429, {"Retry-After": "900"}) if n == 0 else (200, {})
        await add_endpoint(
            merchant, receiver.url, ["checkout.session.paid", "subscription.charged"]
        )
        session = await create(merchant)
        paid = await merchant.post(f"/test_helpers/checkout/sessions/{session['id']}/pay", json={})
        assert paid.status_code == 200, paid.text
        await receiver.wait_for(1)
    assert (await parent.delete(f"/sandboxes/{created['id']}")).status_code == 200
    clock.jump(32 * 86400)  # past the retry and the first monthly renewal
    # The parent's retry and renewal arrive; the sandbox's would have by then.
    arrived = await receivers["parent"].wait_for(3)
    types = sorted(json.loads(a.body)["type"] for a in arrived)
    assert types == ["checkout.session.paid", "checkout.session.paid", "subscription.charged"]
    await server.running.service.dispatcher.wait_for_attempts(4)
    assert len(receivers["sandbox"].received) == 1
    await server.shutdown()


async def test_a_deleted_sandboxs_key_is_refused_at_once_by_two_processes(
    tmp_path: Path, postgres_url: str
) -> None:
    services = []
    for name in ("a", "b"):
        cwd = tmp_path / name
        cwd.mkdir()
        services.append(
            ServiceProcess(cwd=cwd, database_url=postgres_url, settings={"SECRET_KEY": TEST_SECRET})
        )
    try:
        async with open_database(postgres_url, 3) as db:
            made = await create_merchant(db, "Two hosts", "sandboxes-two@example.com")
        async with trio.open_nursery() as starting:
            for service in services:
                starting.start_soon(service.start)
        a, b = (
            httpx.AsyncClient(base_url=service.url + "/api/v1", timeout=30) for service in services
        )
        async with a, b:
            parent = {"Authorization": f"Bearer {made.api_key}"}
            created = await a.post("/sandboxes", json={"name": "shard"}, headers=parent)
            assert created.status_code == 201, created.text
            key = {"Authorization": f"Bearer {created.json()['api_key']}"}
            for api in (a, b):  # each process has served (and touched) the key
                assert (await api.get("/checkout/sessions", headers=key)).status_code == 200
            session = await b.post("/checkout/sessions", json=valid_body(), headers=key)
            assert session.status_code == 201
            deleted = await b.delete(f"/sandboxes/{created.json()['id']}", headers=parent)
            assert deleted.status_code == 200, deleted.text
            for api, service in zip((a, b), services, strict=True):
                refused = await api.get("/checkout/sessions", headers=key)
                assert refused.status_code == 401, refused.text
                page = await api.get(
                    service.url + f"/checkout/{session.json()['id']}", follow_redirects=False
                )
                assert page.status_code == 404
            # Creates racing for the last places on both processes never pass the bound.
            async with open_database(postgres_url, 3) as db:
                await _fill(db, made.merchant.id, 995)
            answers: list[int] = []

            async def one(api: httpx.AsyncClient) -> None:
                answers.append((await api.post("/sandboxes", headers=parent)).status_code)

            async with trio.open_nursery() as racing:
                for n in range(12):
                    racing.start_soon(one, (a, b)[n % 2])
            assert sorted(answers) == [201] * 5 + [409] * 7
        for service in services:
            assert service.errors_logged() == []
    finally:
        for service in services:
            service.kill()


async def test_a_sandboxs_test_customer_locks_and_rate_limit_are_its_own(
    nursery: trio.Nursery, settings: Settings
) -> None:
    server = await start_server(
        nursery, attrs.evolve(settings, rate_limit_burst=20, rate_limit_per_second=0.001)
    )
    parent = await server.merchant()
    _, sandbox = await make_sandbox(parent)
    locked, free = await create(sandbox), await create(parent)
    customer = Customer(server)
    for _ in range(5):
        await customer.pay(locked["id"], "TEST-0001", "0000")
    refused = await customer.pay(locked["id"], "TEST-0001", "1234")
    assert "locked" in (message(refused) or "")
    # The parent's customer with the same code is not stopped by the sandbox's test run.
    assert (await customer.pay(free["id"], "TEST-0001", "1234")).status_code == 303
    await customer.close()
    # The parent's key runs out of requests; the sandbox's key has a bucket of its own.
    statuses = [(await parent.get("/balance")).status_code for _ in range(30)]
    assert statuses[-1] == 429
    assert (await sandbox.get("/balance")).status_code == 200
    await server.shutdown()


async def test_a_sandboxs_event_stream_carries_only_its_events(server: Server) -> None:
    parent = await server.merchant()
    _, sandbox = await make_sandbox(parent)
    async with open_stream(server.url, sandbox.key) as stream:
        await create_subscription(parent)
        mine = await create_subscription(sandbox)
        frame = await stream.next()
        assert frame["data"]["object"]["id"] == mine["id"], frame


async def test_a_delivery_in_flight_when_its_sandbox_is_deleted_is_dropped_cleanly(
    nursery: trio.Nursery, settings: Settings, clock: trio.testing.MockClock
) -> None:
    server = await start_server(nursery, settings, clock=TrioClock())
    parent = await server.merchant()
    created, sandbox = await make_sandbox(parent)
    hanging, later = await start_receiver(nursery), await start_receiver(nursery)
    hanging.script = lambda n: "hang"  # held until the dispatcher's 10 s timeout
    await add_endpoint(sandbox, hanging.url, ["checkout.session.paid"])
    await add_endpoint(parent, later.url, ["checkout.session.paid"])
    session = await create(sandbox)
    paid = await sandbox.post(f"/test_helpers/checkout/sessions/{session['id']}/pay", json={})
    assert paid.status_code == 200, paid.text
    await hanging.wait_for(1)
    # Deleted while the dispatcher holds its lease and waits for the receiver.
    assert (await parent.delete(f"/sandboxes/{created['id']}")).status_code == 200
    clock.jump(3600)
    # The dispatcher goes on: the parent's next payment is delivered.
    mine = await create(parent)
    paid = await parent.post(f"/test_helpers/checkout/sessions/{mine['id']}/pay", json={})
    assert paid.status_code == 200, paid.text
    (arrived,) = await later.wait_for(1)
    assert json.loads(arrived.body)["data"]["object"]["id"] == mine["id"]
    assert len(hanging.received) == 1
    assert (await server.client.get(server.url + "/readyz")).status_code == 200
    assert await server.db.read(_anywhere, [created["id"], session["id"]]) == []
    await server.shutdown()


async def test_a_deleted_sandboxs_live_actors_passivate(server: Server) -> None:
    service = server.running.service
    parent = await server.merchant()
    created, sandbox = await make_sandbox(parent)
    session, subscription = await create(sandbox), await create_subscription(sandbox)
    kept = await create(parent)
    for made in (session, kept):  # each session's actor started, and live
        assert await service.checkout.settled(made["id"]) is not None
    await service.actors.ask(
        subscription_actor.KIND, subscription["id"], subscription_actor.Snapshot()
    )
    live = {
        checkout_session_actor.KIND: [session["id"], kept["id"]],
        subscription_actor.KIND: [subscription["id"]],
    }
    for kind, actor_ids in live.items():
        assert set(actor_ids) <= set(service.actors.live_ids(kind))
    assert (await parent.delete(f"/sandboxes/{created['id']}")).status_code == 200

    async def passivated() -> bool:
        return not (
            session["id"] in service.actors.live_ids(checkout_session_actor.KIND)
            or subscription["id"] in service.actors.live_ids(subscription_actor.KIND)
        )

    await wait_until(passivated, within=10, what="the sandbox's actors passivated")
    assert kept["id"] in service.actors.live_ids(checkout_session_actor.KIND)


async def test_the_operators_merchant_list_leaves_sandboxes_out(server: Server) -> None:
    parent = await server.merchant()
    created, _ = await make_sandbox(parent)
    listed = {m.id for m in await server.db.read(merchant_rows.all_merchants)}
    assert parent.id in listed
    assert await server.db.read(sandbox_rows.merchant_of, created["id"]) not in listed


async def test_a_deletion_the_request_could_not_finish_is_finished_by_the_timer(
    nursery: trio.Nursery,
    settings: Settings,
    clock: trio.testing.MockClock,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    server = await start_server(nursery, settings, clock=TrioClock())
    parent = await server.merchant()
    created, sandbox = await make_sandbox(parent)
    await create(sandbox)
    real = sandbox_rows.finish
    refused: list[str] = []

    def written_meanwhile(tx: Tx, sandbox_id: str, parent_id: str, merchant_id: str) -> bool:
        # As if something of the sandbox were written during each of the request's passes.
        if len(refused) < sandbox_accounts.PASSES:
            refused.append(sandbox_id)
            return False
        return real(tx, sandbox_id, parent_id, merchant_id)

    monkeypatch.setattr(sandbox_rows, "finish", written_meanwhile)
    assert (await parent.delete(f"/sandboxes/{created['id']}")).status_code == 200
    assert (await sandbox.get("/checkout/sessions")).status_code == 401
    assert (await parent.get(f"/sandboxes/{created['id']}")).status_code == 404
    assert not await _gone(server.db, created)
    clock.jump(31)
    # Polled each mock second: the clock jumps only after half a real second idle.
    await wait_until(
        partial(_gone, server.db, created), within=60, every=1, what="finished by the timer"
    )
    assert await server.db.read(_anywhere, [created["id"]]) == []
    await server.shutdown()


@pytest.mark.parametrize("idempotency_key", [None, "race-1"])
async def test_a_write_authenticated_just_before_its_sandbox_went_is_401_and_leaves_nothing(
    server: Server, monkeypatch: pytest.MonkeyPatch, idempotency_key: str | None
) -> None:
    # A request whose key was good when it arrived, the sandbox deleted (every row of it,
    # its merchant's included) before its write: the write cannot land, and the answer is
    # the 401 its key now gets, never a 500.
    service = server.running.service
    parent = await server.merchant()
    created, sandbox = await make_sandbox(parent)
    merchant_id = await server.db.read(sandbox_rows.merchant_of, created["id"])
    real = CheckoutSessions.create

    async def deleted_first(self: CheckoutSessions, session: Any, completion: Any) -> None:
        await service.sandboxes.delete(parent.id, created["id"])
        await real(self, session, completion)

    monkeypatch.setattr(CheckoutSessions, "create", deleted_first)
    headers = {} if idempotency_key is None else {"Idempotency-Key": idempotency_key}
    raced = await sandbox.post("/checkout/sessions", json=valid_body(), headers=headers)
    assert raced.status_code == 401, raced.text
    assert raced.json()["code"] == "invalid_api_key"
    assert await _gone(server.db, created)
    assert merchant_id is not None
    assert await server.db.read(_anywhere, [created["id"], merchant_id]) == []


async def test_a_pin_attempt_racing_its_sandboxs_deletion_leaves_no_counter(
    server: Server,
) -> None:
    # A hosted page's PIN attempt counted by an actor that still held the session in
    # memory (in another process) after the sandbox was gone: the counter is not made
    # for a merchant that no longer exists, so no row of the sandbox is left behind.
    parent = await server.merchant()
    created, _ = await make_sandbox(parent)
    merchant_id = await server.db.read(sandbox_rows.merchant_of, created["id"])
    assert merchant_id is not None
    assert (await parent.delete(f"/sandboxes/{created['id']}")).status_code == 200
    code = sorted(PER_MERCHANT_CODES)[0]
    scope = lock_scope(code, merchant_id)
    attempt = await server.db.write(customer_rows.reserve_attempt, scope, code, 1)
    assert attempt.locked and attempt.customer is None  # no PIN is compared for it
    assert await server.db.read(_anywhere, [merchant_id]) == []


def _expire_now(tx: Tx, sandbox_id: str) -> None:
    # Past its expires_at, the timer not yet come for it (it comes within a minute).
    tx.execute("UPDATE sandboxes SET expires_at = created_at WHERE id = ?", sandbox_id)


async def test_a_sandbox_past_expires_at_is_neither_shown_nor_counted_before_it_goes(
    server: Server, monkeypatch: pytest.MonkeyPatch
) -> None:
    parent = await server.merchant()
    expired, _ = await make_sandbox(parent, ttl_seconds=3600)
    kept, _ = await make_sandbox(parent, ttl_seconds=3600)
    await server.db.write(_expire_now, expired["id"])
    assert (await parent.get(f"/sandboxes/{expired['id']}")).status_code == 404
    listed = (await parent.get("/sandboxes")).json()["data"]
    assert [s["id"] for s in listed] == [kept["id"]]
    # Not live, so not counted: a place is free for a new one.
    monkeypatch.setattr(limits, "MAX_LIVE_SANDBOXES", 2)
    made = await parent.post("/sandboxes")
    assert made.status_code == 201, made.text
    # Nor deleted by its parent: it is the timer's now, as it would be a minute later.
    assert (await parent.delete(f"/sandboxes/{expired['id']}")).status_code == 404
