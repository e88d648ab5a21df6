"""No secret is stored in clear: after every flow that handles one, the whole database
(SQLite: the file and its write-ahead log, byte for byte; PostgreSQL: every row of every
table as text) is searched for each raw secret. On both backends."""

from __future__ import annotations

import logging
import re
from pathlib import Path
from typing import Any

import httpx
import trio
from fgcpay.admin import create_merchant
from fgcpay.core.logs import JsonFormatter
from fgcpay.core.settings import Settings
from fgcpay.domain.ids import API_KEY_PREFIX
from fgcpay.storage._sqlite import sqlite_path
from helpers import PASSWORD as DASHBOARD_PASSWORD
from helpers import TEST_SECRET, MerchantClient, Server, sign_in, signed_up, start_server
from hosted import paid_session
from receiver import start_receiver

PASSWORD = "correct horse battery staple 42"
# The test PIN is 4 digits: meaningful only next to a `pin` name (a form field, a JSON key).
PIN_IN_CONTEXT = re.compile(rb"pin[^a-z0-9]{0,12}1234", re.IGNORECASE)


async def _every_row_as_text(server: Server) -> str:
    """Every row of every table (found in the catalog, not listed by hand), as text."""

    def dump(tx: Any) -> str:
        if tx.dialect == "postgresql":
            tables = [r["table_name"] for r in tx.fetch(
                "SELECT table_name FROM information_schema.tables"
                " WHERE table_schema = current_schema() AND table_type = 'BASE TABLE'"
            )]  # fmt: skip
            rows = [tx.fetch(f'SELECT t::text AS row FROM "{name}" t') for name in tables]
            return "\n".join(r["row"] for table in rows for r in table)
        tables = [
            r["name"] for r in tx.fetch("SELECT name FROM sqlite_master WHERE type = 'table'")
        ]
        out = []
        for name in tables:
            for row in tx.fetch(f'SELECT * FROM "{name}"'):
                out.append(" ".join(str(value) for value in tuple(row)))
        return "\n".join(out)

    text: str = await server.db.read(dump)
    return text


def _sqlite_bytes(database_url: str) -> bytes:
    path = Path(sqlite_path(database_url))
    found = b""
    for suffix in ("", "-wal", "-journal"):
        candidate = Path(str(path) + suffix)
        if candidate.exists():
            found += candidate.read_bytes()
    assert found, path
    return found


async def _secret_flows(server: Server, nursery: trio.Nursery) -> tuple[MerchantClient, list[str]]:
    """Every flow that handles a secret; returns the merchant and the raw secrets seen."""
    merchant = await server.merchant()
    with_password = await create_merchant(server.db, "Pw Shop", "pw@example.com", password=PASSWORD)
    receiver = await start_receiver(nursery)
    create = {"Idempotency-Key": "create-endpoint-1"}
    created = await merchant.post("/webhook_endpoints", json={"url": receiver.url}, headers=create)
    assert created.status_code == 201, created.text
    again = await merchant.post("/webhook_endpoints", json={"url": receiver.url}, headers=create)
    assert again.headers["Idempotent-Replayed"] == "true"
    assert again.status_code == 201 and again.content == created.content, (
        "a replay is the same bytes"
    )
    endpoint = created.json()
    rotate_path = f"/webhook_endpoints/{endpoint['id']}/rotate_secret"
    rotated = await merchant.post(rotate_path, headers={"Idempotency-Key": "rotate-1"})
    assert rotated.status_code == 200, rotated.text
    replayed = await merchant.post(rotate_path, headers={"Idempotency-Key": "rotate-1"})
    assert replayed.headers["Idempotent-Replayed"] == "true" and replayed.content == rotated.content
    await paid_session(server, merchant)  # TEST-0001 with PIN 1234 on the hosted page
    (first,) = await receiver.wait_for(1)
    event_id = httpx.Response(200, content=first.body).json()["id"]
    redeliver = await merchant.post(
        f"/events/{event_id}/redeliver", headers={"Idempotency-Key": "again-1"}
    )
    assert redeliver.status_code == 202, redeliver.text
    await receiver.wait_for(2)
    await server.running.service.dispatcher.wait_for_attempts(2)
    dashboard_secrets = await _dashboard_flows(server)
    raw = [
        *dashboard_secrets,
        merchant.key,
        merchant.key[len(API_KEY_PREFIX) :],
        with_password.api_key,
        PASSWORD,
        TEST_SECRET,
    ]
    for secret in (endpoint["secret"], rotated.json()["secret"]):
        raw += [secret, secret.removeprefix("whsec_")]
    return merchant, raw


async def _dashboard_flows(server: Server) -> list[str]:
    """Sign up, sign in again (a new session), create a key and sign in with a wrong
    password: the password, both session ids and the raw key."""
    dashboard, email = await signed_up(server, name="Dash Shop")
    first_session = dashboard.session_id
    key = await dashboard.create_key("shop server")
    assert (await sign_in(dashboard, email, "wrong password 99")).status_code == 400
    assert (await sign_in(dashboard, email)).status_code == 303
    second_session = dashboard.session_id
    assert first_session and second_session
    await dashboard.aclose()
    return [DASHBOARD_PASSWORD, "wrong password 99", first_session, second_session, key]


def _assert_clean(haystack: bytes, secrets: list[str], where: str) -> None:
    for secret in secrets:
        at = haystack.find(secret.encode())
        before = haystack[max(0, at - 300) : at].decode(errors="replace")
        assert at < 0, f"a secret ({secret[:8]}...) is in clear in {where}, after: {before}"
    assert not PIN_IN_CONTEXT.search(haystack), f"the PIN is in clear in {where}"


async def test_no_secret_is_stored_in_clear(
    nursery: trio.Nursery, settings: Settings, database_url: str
) -> None:
    lines: list[str] = []

    class Capture(logging.Handler):
        def emit(self, record: logging.LogRecord) -> None:
            lines.append(JsonFormatter().format(record))

    handler = Capture()
    root = logging.getLogger()
    level = root.level
    root.addHandler(handler)
    root.setLevel(logging.DEBUG)
    try:
        server = await start_server(nursery, settings)
        merchant, secrets = await _secret_flows(server, nursery)
    finally:
        root.removeHandler(handler)
        root.setLevel(level)
    assert lines, "no log lines captured"
    _assert_clean("\n".join(lines).encode(), secrets, "a log line")
    dump = (await _every_row_as_text(server)).encode()
    assert b"checkout.session.paid" in dump and merchant.id.encode() in dump  # the search sees data
    _assert_clean(dump, secrets, "a table")
    if database_url.startswith("sqlite"):
        _assert_clean(_sqlite_bytes(database_url), secrets, "the SQLite files")
    await server.shutdown()
    if database_url.startswith("sqlite"):
        _assert_clean(_sqlite_bytes(database_url), secrets, "the SQLite files after a checkpoint")


async def test_a_sealed_answer_is_replayed_only_under_the_same_server_secret(
    nursery: trio.Nursery, settings: Settings
) -> None:
    import attrs

    server = await start_server(nursery, settings)
    merchant = await server.merchant()
    key = {"Idempotency-Key": "create-under-old-secret"}
    created = await merchant.post(
        "/webhook_endpoints", json={"url": "https://hooks.example/a"}, headers=key
    )
    assert created.status_code == 201
    await server.shutdown()
    other = await start_server(
        nursery, attrs.evolve(settings, secret_key="another-server-secret-" + "y" * 32)
    )
    merchant.http = other.client
    again = await merchant.post(
        "/webhook_endpoints", json={"url": "https://hooks.example/a"}, headers=key
    )
    assert again.status_code == 409 and again.json()["code"] == "idempotency_key_conflict"
    assert "whsec_" not in again.text
    await other.shutdown()
