"""`GET /metrics` as Prometheus reads it: the text parses with prometheus-client's parser; a
payment moves the request and delivery counters; labels are route templates and fixed
words, never ids; the metrics token is asked for and compared; the database's backlogs
are read from partial indexes, on both backends. (Several worker processes:
test_metrics_processes.py.)"""

from __future__ import annotations

import logging
from pathlib import Path

import attrs
import httpx
import pytest
import trio
import trio.testing
from fgcpay.admin import create_merchant
from fgcpay.core.clock import TrioClock
from fgcpay.core.settings import ConfigError, Settings, load_settings
from fgcpay.domain import ids, money
from fgcpay.domain.checkout import CheckoutSession
from fgcpay.domain.endpoints import WebhookEndpoint
from fgcpay.domain.events import new_event
from fgcpay.http.metrics import FACTS_MAX_AGE_SECONDS
from fgcpay.storage import (
    Database,
    backlogs,
    checkout_sessions,
    subscriptions,
    test_clocks,
    webhooks,
)
from fgcpay.storage.backlogs import Backlogs
from helpers import (
    CLIENT_TLS,
    DAY,
    ID_LIKE,
    NOW_US,
    SECOND,
    Server,
    add_endpoint,
    clock_record,
    create,
    make_settings,
    parse_metrics,
    scrape,
    start_server,
    subscription_record,
)
from hosted import Customer, paid_session
from receiver import start_receiver

CREATE = {"method": "POST", "route": "/api/v1/checkout/sessions"}
TOKEN = "metrics-token-" + "k" * 32


async def test_a_payment_moves_the_request_and_delivery_counters(
    server: Server, nursery: trio.Nursery
) -> None:
    receiver = await start_receiver(nursery)
    merchant = await server.merchant()
    await add_endpoint(merchant, receiver.url)
    dispatcher = server.running.service.dispatcher
    attempts = dispatcher.attempts
    # A session whose confirm was refused keeps its actor (the customer may try again).
    refused = await create(merchant)
    customer = Customer(server)
    assert (await customer.pay(refused["id"], pin="0000")).status_code == 400
    await customer.close()
    before = await scrape(server.url)

    session = await paid_session(server, merchant)  # created, then paid on the hosted page
    await receiver.wait_for(1)
    await dispatcher.wait_for_attempts(attempts + 1)
    assert (await merchant.get(f"/checkout/sessions/{session['id']}")).status_code == 200
    async with httpx.AsyncClient(base_url=server.url, verify=CLIENT_TLS) as client:
        # No route: an id in the path must not become a label, nor a made-up method.
        assert (await client.get(f"/nowhere/{session['id']}")).status_code == 404
        assert (await client.request("BREW", "/healthz")).status_code == 405
    after = await scrape(server.url)

    def moved(name: str, **labels: str) -> float:
        return after.value(name, **labels) - before.value(name, **labels)

    assert moved("fgcpay_http_requests_total", **CREATE, status="201") == 1
    assert moved("fgcpay_http_request_duration_seconds_count", **CREATE) == 1
    assert moved("fgcpay_http_request_duration_seconds_bucket", **CREATE, le="+Inf") == 1
    page = {"route": "/checkout/<session_id>"}
    assert moved("fgcpay_http_requests_total", method="GET", **page, status="200") == 1
    assert moved("fgcpay_http_requests_total", method="POST", **page, status="303") == 1
    read = {"method": "GET", "route": "/api/v1/checkout/sessions/<session_id>", "status": "200"}
    assert moved("fgcpay_http_requests_total", **read) == 1
    unmatched = {"method": "GET", "route": "(unmatched)", "status": "404"}
    assert moved("fgcpay_http_requests_total", **unmatched) == 1
    brewed = {"method": "OTHER", "route": "(unmatched)", "status": "405"}
    assert moved("fgcpay_http_requests_total", **brewed) == 1
    assert moved("fgcpay_webhook_delivery_attempts_total", outcome="succeeded") == 1
    assert moved("fgcpay_webhook_delivery_attempts_total", outcome="retry") == 0

    # The database's facts, and this process's gauges, sampled as it answered.
    assert after.value("fgcpay_database_up") == 1
    assert after.value("fgcpay_webhook_deliveries_pending") == 0
    assert after.value("fgcpay_webhook_oldest_due_delivery_age_seconds") == 0
    assert after.value("fgcpay_timer_lag_seconds", timer="expiry") == 0
    assert after.value("fgcpay_timer_lag_seconds", timer="renewal") == 0
    # The refused session's actor; the paid session's ended once paid (it rests).
    assert after.value("fgcpay_actors_live", kind="checkout_session") == 1
    assert ("fgcpay_actors_live", frozenset({("kind", "subscription")})) in after.samples
    assert after.value("fgcpay_actor_mailbox_messages") == 0
    assert after.value("fgcpay_processes") == 1
    for role in ("read", "write"):
        assert after.value("fgcpay_db_connections_max", role=role) >= 1
        assert moved("fgcpay_db_wait_seconds_count", role=role) >= 1
    assert after.types["fgcpay_http_requests"] == "counter"
    assert after.types["fgcpay_http_request_duration_seconds"] == "histogram"
    assert after.types["fgcpay_actors_live"] == "gauge"

    holding_ids = sorted(value for value in after.label_values() if ID_LIKE.search(value))
    assert not holding_ids, holding_ids


async def test_a_failed_attempt_counts_as_a_retry_and_stays_in_the_backlog(
    nursery: trio.Nursery, settings: Settings, clock: trio.testing.MockClock
) -> None:
    server = await start_server(nursery, settings, clock=TrioClock())
    receiver = await start_receiver(nursery)
    receiver.script = lambda n: (503, {})
    merchant = await server.merchant()
    await add_endpoint(merchant, receiver.url)
    dispatcher = server.running.service.dispatcher
    attempts = dispatcher.attempts
    # A session whose confirm was refused keeps its actor (the customer may try again).
    refused = await create(merchant)
    customer = Customer(server)
    assert (await customer.pay(refused["id"], pin="0000")).status_code == 400
    await customer.close()
    before = await scrape(server.url)

    await paid_session(server, merchant)
    await dispatcher.wait_for_attempts(attempts + 1)
    clock.jump(FACTS_MAX_AGE_SECONDS)  # the backlog as the database says it now
    after = await scrape(server.url)

    def moved(outcome: str) -> float:
        name = "fgcpay_webhook_delivery_attempts_total"
        return after.value(name, outcome=outcome) - before.value(name, outcome=outcome)

    assert (moved("retry"), moved("succeeded"), moved("failed")) == (1, 0, 0)
    # Retried in about 5 s: pending, not yet due again.
    assert after.value("fgcpay_webhook_deliveries_pending") == 1
    assert after.value("fgcpay_webhook_oldest_due_delivery_age_seconds") == 0


async def test_the_metrics_token_is_asked_for_and_never_logged(
    nursery: trio.Nursery, tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    settings = attrs.evolve(make_settings(f"sqlite:///{tmp_path}/db.sqlite3"), metrics_token=TOKEN)
    server = await start_server(nursery, settings)
    refused = [
        {},
        {"Authorization": "Bearer " + "x" * len(TOKEN)},
        {"Authorization": f"Bearer {TOKEN}x"},
        {"Authorization": f"Basic {TOKEN}"},
        {"Authorization": f"Bearer {TOKEN[:-1]}"},
    ]
    before = await scrape(server.url, TOKEN)
    with caplog.at_level(logging.DEBUG):
        async with httpx.AsyncClient(base_url=server.url, verify=CLIENT_TLS) as client:
            for headers in refused:
                answer = await client.get("/metrics", headers=headers)
                assert answer.status_code == 401, (headers, answer.text)
                body = answer.json()
                assert body["code"] == "invalid_api_key"
                assert "FGCPAY_METRICS_TOKEN" in body["message"]
                assert body["request_id"] == answer.headers["Request-Id"]
                assert answer.headers["WWW-Authenticate"].startswith("Bearer")
                # A refusal counts against the caller's address, like a failed API key.
                assert "RateLimit" in answer.headers
            answer = await client.get("/metrics", headers={"Authorization": f"Bearer {TOKEN}"})
    assert answer.status_code == 200
    after = parse_metrics(answer.text)
    refusals = {"method": "GET", "route": "/metrics", "status": "401"}
    assert after.value("fgcpay_http_requests_total", **refusals) - before.value(
        "fgcpay_http_requests_total", **refusals
    ) == len(refused)
    logged = "\n".join(f"{record.getMessage()} {vars(record)}" for record in caplog.records)
    assert "/metrics" in logged  # the refusals were logged...
    assert TOKEN not in logged and TOKEN[:-1] not in logged  # ...never what was sent


async def test_production_serves_metrics_only_with_a_token(
    nursery: trio.Nursery, tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    production = attrs.evolve(make_settings(f"sqlite:///{tmp_path}/a.sqlite3"), env="production")
    with caplog.at_level(logging.WARNING):
        closed = await start_server(nursery, production)
    assert any("FGCPAY_METRICS_TOKEN" in r.getMessage() for r in caplog.records)
    async with httpx.AsyncClient(base_url=closed.url, verify=CLIENT_TLS) as client:
        answer = await client.get("/metrics", headers={"Authorization": f"Bearer {TOKEN}"})
    assert answer.status_code == 404
    assert answer.json()["code"] == "not_found"

    guarded = attrs.evolve(production, metrics_token=TOKEN)
    opened = await start_server(nursery, guarded)
    assert (await scrape(opened.url, TOKEN)).value("fgcpay_database_up") == 1


@pytest.mark.parametrize("token", ["too-short", "sixteen chars or more, with spaces", "é" * 20])
def test_a_metrics_token_that_cannot_be_a_bearer_token_is_refused_unshown(
    token: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(tmp_path)
    with pytest.raises(ConfigError, match="FGCPAY_METRICS_TOKEN") as refused:
        load_settings({"FGCPAY_METRICS_TOKEN": token})
    assert token not in str(refused.value)
    settings = load_settings({"FGCPAY_METRICS_TOKEN": TOKEN})
    assert settings.metrics_token == TOKEN and TOKEN not in repr(settings)


# -- the database's facts ------------------------------------------------------------------


async def _merchant_with_endpoint(db: Database) -> str:
    merchant_id = (await create_merchant(db, "Acme", "owner@acme.test")).merchant.id
    endpoint = WebhookEndpoint(
        id="we_" + "0" * 24, merchant_id=merchant_id, url="https://shop.example/hooks",
        enabled_events=("*",), secret_sealed="sealed", previous_secret_sealed=None,
        previous_secret_expires_at=None, created_at=NOW_US, deleted_at=None,
    )  # fmt: skip
    await db.write(webhooks.insert_endpoint, endpoint)
    return merchant_id


def _session(merchant_id: str, status: str, expires_at: int) -> CheckoutSession:
    return CheckoutSession(
        id=ids.checkout_session_id(), merchant_id=merchant_id, status=status, version=1,
        amount_minor=1250, currency=money.CURRENCY, eur_cents=1250, description="Coffee",
        success_url="https://shop.example/thanks", cancel_url="https://shop.example/cart",
        customer_email=None, customer_reference=None, external_reference=None,
        metadata_json="{}", created_at=NOW_US - DAY, updated_at=NOW_US - DAY,
        expires_at=expires_at,
    )  # fmt: skip


async def test_backlogs_count_pending_deliveries_and_name_the_earliest_due_times(
    db: Database,
) -> None:
    assert await db.read(backlogs.backlogs) == Backlogs(0, None, None, None)
    merchant_id = await _merchant_with_endpoint(db)
    for at in (NOW_US - 60 * SECOND, NOW_US + 60 * SECOND):
        resource = ids.checkout_session_id()
        event = new_event(ids.event_id(), merchant_id, "checkout.session.paid", resource, 2, {}, at)
        assert await db.write(webhooks.record_event, event) == 1

    # A session still payable expires at its `expires_at`; a paid one never does.
    for status, expires_at in (("created", NOW_US - 30 * SECOND), ("paid", NOW_US - DAY)):
        await db.write(checkout_sessions.insert, _session(merchant_id, status, expires_at), None)

    # Renewals on the real clock are the sweep's; a test clock's are its advance's.
    active = subscription_record(merchant_id, "active")
    await db.write(subscriptions.insert, active, None)
    clock = clock_record(merchant_id)
    await db.write(test_clocks.insert, clock, None)
    on_clock = subscription_record(
        merchant_id, "active", test_clock_id=clock.id, next_action_at=NOW_US - 9 * DAY
    )
    await db.write(subscriptions.insert, on_clock, None)

    assert await db.read(backlogs.backlogs) == Backlogs(
        deliveries_pending=2,
        next_delivery_at=NOW_US - 60 * SECOND,
        next_expiry_at=NOW_US - 30 * SECOND,
        next_renewal_at=active.next_action_at,
    )
