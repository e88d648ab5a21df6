"""Ready for Citus, checked (issue 33): every statement the storage layer sends to
PostgreSQL during a representative run names the merchant of each merchant-owned table it
touches (tests/citus_check.py says what counts), so with the tables distributed by
merchant (docs/scaling.md) each routes to one shard; except the few operator and
cross-merchant statements allowlisted below, each with its reason.

How the statements are captured: `storage._postgres.observing_statements` gives every
connection opened inside it a cursor that hands each statement to the test, as sent. Not
pg_stat_statements: that needs the extension preloaded into the suite's one shared
cluster (a restart of it, for every test), counts every other test's statements beside
this one's, and loses the text of a statement past its `max` entries; the cursor sees
exactly this run's statements, on every connection (writer, readers, listener) and in
every operator command run inside the block, at no cost to any other test.
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterator
from typing import Any

import attrs
import httpx
import psycopg
import pytest
import trio
import trio.testing
from citus_check import DISTRIBUTED, REFERENCE, normalized, unrouted
from fgcpay import admin, commands
from fgcpay.core.clock import TrioClock
from fgcpay.core.settings import Settings
from fgcpay.storage import merchants
from fgcpay.storage._postgres import observing_statements
from helpers import (
    PASSWORD,
    MerchantClient,
    Server,
    add_endpoint,
    create,
    create_subscription,
    create_test_clock,
    open_dashboard,
    open_stream,
    sign_in,
    signed_up,
    start_server,
    wait_until,
)
from hosted import Customer
from receiver import start_receiver


@attrs.frozen
class Allowed:
    """Statements that may name no merchant: a regular expression per statement (searched
    in the normalized text), and why. docs/scaling.md lists the same, by these names."""

    name: str
    reason: str
    patterns: tuple[str, ...]


ALLOWLIST = (
    Allowed(
        "timers",
        "The durable timers' sweeps read what is due across all merchants (every process"
        " sweeps); with Citus each is one multi-shard read, then the step itself names its"
        " merchant (it is the actor's conditional write). A burst's batched steps lock"
        " their rows first, across merchants, in one statement: the migration 'batches per"
        " merchant' in docs/scaling.md.",
        (
            r"^SELECT id FROM subscriptions WHERE id = ANY\(%b::text\[\]\) AND .* FOR UPDATE"
            r" SKIP LOCKED$",
            r"^SELECT DISTINCT merchant_id FROM event_streams WHERE merchant_id IN \(%s(, %s)+\)",
            r" FROM webhook_endpoints WHERE merchant_id IN \(%s(, %s)+\) AND deleted_at IS NULL$",
            r"^SELECT id FROM checkout_sessions WHERE status = 'created' AND expires_at <= ",
            r"^SELECT MIN\(expires_at\) FROM checkout_sessions WHERE status = 'created'$",
            r" FROM subscriptions WHERE test_clock_id IS NULL AND next_action_at IS NOT NULL",
            r" FROM test_clocks WHERE status = 'advancing' ORDER BY updated_at, id LIMIT %s$",
            r" FROM sandboxes WHERE deleted_at IS NULL AND expires_at IS NOT NULL",
            r" FROM sandboxes WHERE deleted_at IS NOT NULL",
        ),
    ),
    Allowed(
        "housekeeping",
        "Purges of what has lapsed, in every merchant's rows (idempotency records, dashboard"
        " sessions) or in tables keyed by no merchant (sign-in counters, rate-limit"
        " buckets): a multi-shard DELETE each, batched, SKIP LOCKED inside each shard.",
        (
            r"^DELETE FROM idempotency_keys WHERE .* FROM idempotency_keys WHERE expires_at <= ",
            r"^DELETE FROM dashboard_sessions WHERE id_hash IN \(SELECT id_hash FROM"
            r" dashboard_sessions WHERE last_seen_at < ",
            r"^DELETE FROM sign_in_failures WHERE subject IN \(SELECT subject FROM",
            r"^DELETE FROM rate_limit_buckets WHERE bucket_key IN \(SELECT bucket_key FROM"
            r" rate_limit_buckets WHERE stamp_us < ",
        ),
    ),
    Allowed(
        "outbox",
        "The dispatcher claims due deliveries of every merchant in one statement, settles"
        " them by id and lease, and records attempts in delivery_attempts, which has no"
        " merchant_id: the migrations 'delivery_attempts.merchant_id' and 'a claim per"
        " shard' in docs/scaling.md.",
        (
            r"^WITH endpoint_room AS \(",
            r"^SELECT MIN\(CASE WHEN d.lease_expires_at IS NOT NULL",
            r"^UPDATE deliveries SET lease_owner = NULL, lease_expires_at = NULL WHERE"
            r" lease_owner = %s AND status = 'pending'$",
            r"^UPDATE deliveries SET status = %s, attempts = attempts \+ 1, .* WHERE id = %s"
            r" AND lease_owner = %s$",
            r"^UPDATE deliveries SET status = a.status, .* WHERE deliveries.id = a.id AND"
            r" deliveries.lease_owner = %s RETURNING deliveries.id$",
            r"\bdelivery_attempts\b",
        ),
    ),
    Allowed(
        "streams of a process",
        "A process renews and closes its own event streams' rows, of any merchant, by owner"
        " and id: a multi-shard write every few seconds per process, never per request.",
        (
            r"^DELETE FROM event_streams WHERE owner = %s AND id NOT IN ",
            r"^UPDATE event_streams SET expires_at = %s WHERE id IN ",
        ),
    ),
    Allowed(
        "credentials",
        "A request carries only its credential (an API key, a dashboard cookie, a sign-in's"
        " email), which is how its merchant is found: the migration 'credentials name their"
        " merchant' in docs/scaling.md.",
        (
            r"^SELECT \* FROM merchants WHERE email = %s$",
            r" FROM api_keys k JOIN merchants m ON m.id = k.merchant_id WHERE k.key_hash = %s$",
            # The lookups of requests arriving together, in one statement (the grouped reader).
            r" FROM api_keys k JOIN merchants m ON m.id = k.merchant_id"
            r" WHERE k.key_hash = ANY\(%b::text\[\]\)$",
            r" FROM dashboard_sessions WHERE id_hash = %s$",
            r"^DELETE FROM dashboard_sessions WHERE id_hash = %s$",
        ),
    ),
    Allowed(
        "ids alone",
        "An actor starts from its id alone (the hosted page's URL, a NOTIFY, a sweep's id),"
        " and reads its record by it: the migration 'ids name their merchant' in"
        " docs/scaling.md.",
        (
            r" FROM checkout_sessions WHERE id = %s$",
            r" FROM subscriptions WHERE id = %s$",
        ),
    ),
    Allowed(
        "operator",
        "The operator's commands over all merchants: `fgcpay ledger verify` without"
        " --merchant, `fgcpay merchant list`, `fgcpay customer unlock` without --merchant.",
        (
            r"^SELECT merchant_id, SUM\(l_paid_minor\) AS l_paid_minor",
            r"^SELECT t.merchant_id, t.id, t.refund_reserved_minor, COALESCE\(SUM",
            r"^SELECT \* FROM merchants WHERE sandbox_of IS NULL ORDER BY created_at, id$",
            r"^SELECT COUNT\(\*\) FROM pin_failures WHERE customer_code = %s AND locked_until > %s$",
            r"^UPDATE pin_failures SET failures = 0, locked_until = NULL, window_started_at = %s"
            r" WHERE customer_code = %s$",
        ),
    ),
)


def _session() -> dict[str, str]:
    return {
        "amount_fgc": "12.50",
        "currency": "FGC",
        "description": "Two flat whites",
        "success_url": "https://shop.example/thanks",
        "cancel_url": "https://shop.example/cart",
    }


def _bearer(key: str) -> dict[str, str]:
    return {"Authorization": f"Bearer {key}"}


async def _clock_ready(merchant: MerchantClient, clock_id: str) -> None:
    async def ready() -> bool:
        found = await merchant.get(f"/test_clocks/{clock_id}")
        return bool(found.json()["status"] == "ready")

    await wait_until(ready, within=60, what="the test clock reads ready")


async def _gone(server: Server, merchant: MerchantClient, sandbox_id: str) -> None:
    async def gone() -> bool:
        found = await server.client.get(f"/sandboxes/{sandbox_id}", headers=merchant.headers())
        return found.status_code == 404

    await wait_until(gone, within=60, what="the lapsed sandbox is deleted")


def _columns(url: str) -> dict[str, frozenset[str]]:
    with psycopg.connect(url) as conn:
        rows = conn.execute(
            "SELECT table_name, column_name FROM information_schema.columns"
            " WHERE table_schema = 'public'"
        ).fetchall()
    found: dict[str, set[str]] = {}
    for table, column in rows:
        found.setdefault(table, set()).add(column)
    return {table: frozenset(names) for table, names in found.items()}


def _allowed(sql: str) -> Allowed | None:
    for allowed in ALLOWLIST:
        if any(re.search(pattern, sql) for pattern in allowed.patterns):
            return allowed
    return None


def _problems(
    sent: list[str], columns: dict[str, frozenset[str]]
) -> tuple[dict[str, list[str]], set[str]]:
    """Each statement sent that does not name its merchants and is not allowlisted (with
    the tables it leaves unnamed); and the allowlist's entries that excused one."""
    problems: dict[str, list[str]] = {}
    used: set[str] = set()
    for sql in dict.fromkeys(normalized(statement) for statement in sent):
        tables = unrouted(sql, columns)
        if not tables:
            continue
        allowed = _allowed(sql)
        if allowed is None:
            problems[sql] = tables
        else:
            used.add(allowed.name)
    return problems, used


@pytest.fixture
def statements() -> Iterator[list[str]]:
    sent: list[str] = []
    with observing_statements(sent.append):
        yield sent


def _ok(response: httpx.Response, status: int = 200) -> dict[str, Any]:
    assert response.status_code == status, response.text
    body: dict[str, Any] = response.json()
    return body


async def _scenario(
    server: Server, settings: Settings, clock: trio.testing.MockClock, nursery: trio.Nursery
) -> tuple[str, str]:
    """A run that touches every part the service has: merchants signing up and in on the
    dashboard, their keys, checkout sessions paid (hosted page, test helper), expired
    (helper, sweep) with idempotent retries, refunds created and reviewed, subscriptions on
    a test clock advanced through renewals and deleted, webhook deliveries retried, the
    event stream, every list paged, the balance, triggers, sandboxes made and deleted
    (by hand and by expiry), the housekeeping of a day. The merchant's id, and a refund of
    its still pending review."""
    receiver = await start_receiver(nursery)
    receiver.script = lambda n: (500, {}) if n == 0 else (200, {})
    merchant = await server.merchant("Acme Coffee")
    other = await server.merchant("Bean There")
    customer = Customer(server)

    # The dashboard: sign-up, a wrong password, sign-in, keys made and revoked, pages.
    # A sign-up; then the operator sets the merchant's password, and it signs in.
    dashboard, _ = await signed_up(server, keep_alive=False)
    await admin.set_password(server.db, merchant.id, PASSWORD)
    email = merchant.created.merchant.email
    again = open_dashboard(server, keep_alive=False)
    assert (await sign_in(again, email, "not the password at all")).status_code == 400
    assert (await sign_in(again, email)).status_code == 303
    made_key = await again.create_key("ci")
    (made,) = [k for k in await server.db.read(merchants.api_keys_of, merchant.id) if k.name]
    revoke = f"/dashboard/api-keys/{made.id}/revoke"
    assert (await again.submit(revoke, {})).status_code == 303
    assert (await server.client.get("/balance", headers=_bearer(made_key))).status_code == 401

    # Webhooks: an endpoint whose first delivery fails (retried 5 s later), one for `other`.
    endpoint = _ok(await merchant.post("/webhook_endpoints", json={"url": receiver.url}), 201)
    others = await add_endpoint(other, receiver.url, ["checkout.session.paid"])
    # Faults injected into `other`'s deliveries: each raises its endpoint's counter.
    faults = {"faults": {"duplicate": 1, "seed": 7}}
    _ok(await other.patch(f"/webhook_endpoints/{others['id']}", json=faults))
    other_paid = await create(other)
    _ok(await other.post(f"/test_helpers/checkout/sessions/{other_paid['id']}/pay", json={}))

    async with open_stream(server.url, merchant.key) as stream:
        # Checkout sessions: created (one idempotently twice), paid on the hosted page and
        # by the test helper, expired by the helper and by the sweep.
        once = {"Idempotency-Key": "order-42"}
        first = _ok(await merchant.post("/checkout/sessions", json=_session(), headers=once), 201)
        replay = await merchant.post("/checkout/sessions", json=_session(), headers=once)
        assert _ok(replay, 201)["id"] == first["id"]
        assert (await customer.pay(first["id"])).status_code == 303
        paid = await create(merchant)
        _ok(await merchant.post(f"/test_helpers/checkout/sessions/{paid['id']}/pay", json={}))
        declined = await create(merchant)
        wrong = await customer.pay(declined["id"], pin="0000")
        assert wrong.status_code == 400, wrong.text
        expired = await create(merchant)
        _ok(await merchant.post(f"/test_helpers/checkout/sessions/{expired['id']}/expire"))
        assert (await stream.next())["type"] == "checkout.session.paid"

        # Refunds: one approved, one rejected; the ledger's rows with them.
        refund = _ok(
            await merchant.post(
                "/refunds", json={"checkout_session_id": first["id"], "amount_fgc": "2.00"}
            ),
            201,
        )
        _ok(await merchant.post(f"/test_helpers/refunds/{refund['id']}/approve"))
        rejected = _ok(
            await merchant.post("/refunds", json={"checkout_session_id": paid["id"]}), 201
        )
        _ok(await merchant.post(f"/test_helpers/refunds/{rejected['id']}/reject"))

        # A subscription on a test clock: approved on the hosted page, renewed by advances.
        test_clock = await create_test_clock(merchant, "2027-01-31T09:00:00Z")
        sub = await create_subscription(merchant, test_clock=test_clock["id"])
        assert (await customer.pay(sub["id"])).status_code == 303
        for frozen in ("2027-02-28T09:00:00Z", "2027-04-30T09:00:00Z"):
            advance = f"/test_clocks/{test_clock['id']}/advance"
            _ok(await merchant.post(advance, json={"frozen_time": frozen}))
            await _clock_ready(merchant, test_clock["id"])
        helper_sub = await create_subscription(merchant)
        approve = f"/test_helpers/subscriptions/{helper_sub['id']}/approve"
        _ok(await merchant.post(approve, json={}))
        _ok(await merchant.post(f"/subscriptions/{helper_sub['id']}/cancel"))
        charge = await merchant.get("/transactions", params={"subscription_id": sub["id"]})
        charge_id = _ok(charge)["data"][0]["id"]
        # A refund of a charge on the clock: deleting the clock deletes it too.
        _ok(await merchant.post("/refunds", json={"transaction_id": charge_id}), 201)
        # Triggers, with objects made for them.
        for event_type in ("subscription.payment_failed", "refund.created"):
            _ok(await merchant.post("/test_helpers/triggers", json={"event_type": event_type}), 201)
        _ok(await merchant.delete(f"/test_clocks/{test_clock['id']}"))
        to_review = {"checkout_session_id": paid["id"], "amount_fgc": "1.00"}
        pending = _ok(await merchant.post("/refunds", json=to_review), 201)

        # The sweep expires what is past its time; the retried delivery goes out.
        await create(merchant)
        clock.jump(settings.checkout_ttl_seconds + 1)
        await receiver.wait_for(4)  # the retry; `other`'s, twice
        _ok(await other.delete(f"/webhook_endpoints/{others['id']}"))

        # Reads: every list, paged, filtered; one of each; the balance; the delivery log.
        for path in ("/checkout/sessions", "/subscriptions", "/refunds", "/transactions",
                     "/events", "/webhook_deliveries", "/test_clocks"):  # fmt: skip
            page = _ok(await merchant.get(path, params={"limit": 1}))
            assert page["data"], path
            one = page["data"][0]["id"]
            _ok(await merchant.get(f"{path}/{one}"))
            _ok(await merchant.get(path, params={"limit": 2, "starting_after": one}))
        _ok(await merchant.get("/checkout/sessions", params={"status": "paid"}))
        of_first = {"checkout_session_id": first["id"]}
        payment_id = _ok(await merchant.get("/transactions", params=of_first))["data"][-1]["id"]
        _ok(await merchant.get("/events", params={"type": "checkout.session.paid"}))
        _ok(await merchant.get("/balance"))
        _ok(await merchant.get("/webhook_endpoints"))
        _ok(await merchant.get(f"/webhook_endpoints/{endpoint['id']}"))
        event_id = (await stream.next())["id"]
        _ok(await merchant.post(f"/events/{event_id}/redeliver"), 202)
        _ok(await merchant.post(f"/webhook_endpoints/{endpoint['id']}/rotate_secret", json={}))
        _ok(await merchant.post(f"/webhook_endpoints/{endpoint['id']}/check"))
        # The dashboard's pages: each list, and one of each.
        shown = {
            "checkout-sessions": first["id"], "subscriptions": helper_sub["id"],
            "refunds": refund["id"], "transactions": payment_id, "events": event_id,
            "webhooks": endpoint["id"],
        }  # fmt: skip
        for page_path in ("/dashboard", "/dashboard/sandboxes", "/dashboard/api-keys",
                          *(f"/dashboard/{kind}" for kind in shown),
                          *(f"/dashboard/{kind}/{one}" for kind, one in shown.items())):  # fmt: skip
            assert (await again.get(page_path)).status_code == 200, page_path

    # Five wrong PINs lock the code for this merchant (the operator lifts it below).
    locked = await create(merchant)
    for _ in range(5):
        assert (await customer.pay(locked["id"], pin="0000")).status_code == 400

    signed_out = await again.submit("/dashboard/sign-out", {}, page="/dashboard")
    assert signed_out.status_code == 303, signed_out.text

    # Sandboxes: one made and deleted with rows of its own, one left to expire.
    sandbox = _ok(await merchant.post("/sandboxes", json={"name": "shard 1"}), 201)
    in_sandbox = _bearer(sandbox["api_key"])
    in_it = await server.client.post("/checkout/sessions", json=_session(), headers=in_sandbox)
    _ok(in_it, 201)
    _ok(await server.client.get("/sandboxes", headers=merchant.headers()))
    _ok(await server.client.delete(f"/sandboxes/{sandbox['id']}", headers=merchant.headers()))
    lapsing = _ok(await merchant.post("/sandboxes", json={"ttl_seconds": 60}), 201)
    # A day on: the sandbox lapses, housekeeping purges what has lapsed.
    clock.jump(86400 + 1)
    await _gone(server, merchant, lapsing["id"])
    await again.aclose()
    await dashboard.aclose()
    await customer.close()
    return merchant.id, pending["id"]


async def test_every_statement_names_its_merchant(
    statements: list[str],
    postgres_settings: Settings,
    nursery: trio.Nursery,
    clock: trio.testing.MockClock,
    capsys: pytest.CaptureFixture[str],
) -> None:
    settings = attrs.evolve(postgres_settings, checkout_ttl_seconds=120)
    server = await start_server(nursery, settings, clock=TrioClock())
    merchant_id, refund_id = await _scenario(server, settings, clock, nursery)
    await server.shutdown()
    # The operator's commands, on the same database.
    assert await commands.key_create(settings, merchant_id, "ops") == 0
    key_id = json.loads(capsys.readouterr().out.splitlines()[-1])["id"]
    assert await commands.key_list(settings, merchant_id) == 0
    assert await commands.key_revoke(settings, merchant_id, key_id) == 0
    assert await commands.refund_review(settings, merchant_id, refund_id, "approve") == 0
    assert await commands.trigger(settings, merchant_id, "checkout.session.paid", None) == 0
    assert await commands.webhook_deliveries(settings, merchant_id, None, None, None) == 0
    assert await commands.sandbox_list(settings, merchant_id) == 0
    assert await commands.customer_unlock(settings, "TEST-0003", merchant_id) == 0
    assert await commands.customer_unlock(settings, "TEST-0001", None) == 0
    assert await commands.ledger_verify(settings, merchant_id) == 0
    assert await commands.ledger_verify(settings, None) == 0
    assert await commands.merchant_list(settings) == 0
    assert statements, "the statements were captured"
    columns = _columns(settings.database_url)
    # Every table has its place in docs/scaling.md (a new one must be given one), and each
    # distributed one its distribution column (delivery_attempts' is migration M1's).
    assert set(columns) == set(DISTRIBUTED) | REFERENCE, set(columns) ^ (
        set(DISTRIBUTED) | REFERENCE
    )
    lacking = {table for table, key in DISTRIBUTED.items() if key not in columns[table]}
    assert lacking == {"delivery_attempts"}, lacking
    problems, used = _problems(statements, columns)
    assert not problems, "statements that name no merchant:\n" + "\n".join(
        f"- {tables}: {sql}" for sql, tables in problems.items()
    )
    # An entry nothing needs any more goes (the list stays as short as the code allows).
    assert used == {allowed.name for allowed in ALLOWLIST}, "unused: " + ", ".join(
        sorted({allowed.name for allowed in ALLOWLIST} - used)
    )


_COLUMNS = {
    "checkout_sessions": frozenset({"id", "merchant_id", "status", "version", "expires_at"}),
    "transactions": frozenset({"id", "merchant_id", "refund_id", "checkout_session_id"}),
    "refunds": frozenset({"id", "merchant_id", "transaction_id"}),
    "api_keys": frozenset({"id", "merchant_id", "key_hash"}),
    "merchants": frozenset({"id", "email"}),
}


@pytest.mark.parametrize(
    ("sql", "unnamed"),
    [
        ("SELECT id FROM checkout_sessions WHERE id = %s AND merchant_id = %s", []),
        ("SELECT id FROM checkout_sessions WHERE id = %s", ["checkout_sessions"]),
        # Under OR, the merchant may be any: not named.
        (
            "SELECT id FROM checkout_sessions WHERE id = %s OR merchant_id = %s",
            ["checkout_sessions"],
        ),
        (
            "SELECT id FROM checkout_sessions WHERE merchant_id = ANY(%b::text[])",
            ["checkout_sessions"],
        ),
        # A subquery that names it does not name it for the statement around it.
        (
            "DELETE FROM checkout_sessions WHERE (id) IN"
            " (SELECT id FROM checkout_sessions WHERE merchant_id = %s LIMIT %s)",
            ["checkout_sessions"],
        ),
        (
            "UPDATE checkout_sessions SET status = %s WHERE id = (SELECT id FROM checkout_sessions"
            " WHERE id = %s AND merchant_id = %s FOR UPDATE SKIP LOCKED) AND merchant_id = %s",
            [],
        ),
        # A join names a table by the key of one named: both, or neither.
        (
            "SELECT k.id FROM api_keys k JOIN merchants m ON m.id = k.merchant_id"
            " WHERE k.merchant_id = %s",
            [],
        ),
        (
            "SELECT k.id FROM api_keys k JOIN merchants m ON m.id = k.merchant_id"
            " WHERE k.key_hash = %s",
            ["api_keys k", "merchants m"],
        ),
        (
            "SELECT id FROM transactions t WHERE merchant_id = %s AND EXISTS (SELECT 1 FROM"
            " refunds r WHERE r.transaction_id = t.id AND r.merchant_id = t.merchant_id)",
            [],
        ),
        (
            "SELECT id FROM transactions t WHERE merchant_id = %s AND EXISTS (SELECT 1 FROM"
            " refunds r WHERE r.transaction_id = t.id)",
            ["refunds r"],
        ),
        ("INSERT INTO checkout_sessions (id, merchant_id) VALUES (%s, %s)", []),
        ("INSERT INTO checkout_sessions (id) VALUES (%s)", ["checkout_sessions"]),
        # A batch names each row's merchant by a column of its arrays.
        (
            "UPDATE checkout_sessions SET version = checkout_sessions.version + 1"
            " FROM unnest(%b::text[], %b::text[]) AS given(given_id, given_merchant)"
            " WHERE checkout_sessions.id = given_id AND checkout_sessions.merchant_id = given_merchant",
            [],
        ),
        (
            "WITH c AS (SELECT id FROM checkout_sessions WHERE status = 'created') SELECT * FROM c",
            ["checkout_sessions"],
        ),
        ("SELECT pg_notify('fgcpay_status', %s)", []),
        ("SELECT * FROM a_new_table WHERE id = %s", ["a_new_table?"]),
    ],
)
def test_the_check_finds_each_table_a_statement_leaves_unnamed(
    sql: str, unnamed: list[str]
) -> None:
    assert unrouted(sql, _COLUMNS) == unnamed
