"""Webhooks end to end: events, signing, the outbox and the dispatcher, on both backends."""

from __future__ import annotations

import json
from datetime import UTC, datetime, timedelta

import attrs
import pytest
import trio
import trio.testing
from fgcpay.core.clock import TrioClock
from fgcpay.core.settings import Settings
from fgcpay.storage import webhooks as webhook_rows
from fgcpay.webhooks import WebhookVerificationError, verify_delivery
from helpers import Server, add_endpoint, start_server
from hosted import new_session, paid_session
from receiver import reserve_port, start_receiver, url_of
from standardwebhooks import Webhook

DAY = timedelta(days=1)


async def test_a_paid_session_sends_one_event_to_every_subscribed_endpoint(
    server: Server, nursery: trio.Nursery
) -> None:
    first, second, other = [await start_receiver(nursery) for _ in range(3)]
    merchant = await server.merchant()
    hook_a = await add_endpoint(merchant, first.url)
    hook_b = await add_endpoint(merchant, second.url, ["checkout.session.paid"])
    await add_endpoint(merchant, other.url, ["checkout.session.expired"])
    session = await paid_session(server, merchant)

    for receiver, endpoint in ((first, hook_a), (second, hook_b)):
        (delivery,) = await receiver.wait_for(1)
        event = json.loads(delivery.body)
        assert event["type"] == "checkout.session.paid"
        assert set(event) == {"id", "object", "type", "mode", "created_at", "sequence", "data"}
        assert event["object"] == "event" and event["mode"] == "test"
        assert event["data"]["object"]["id"] == session["id"]
        assert event["data"]["object"]["status"] == "paid"
        assert event["sequence"] == 2
        assert delivery.headers["service-event-id"] == event["id"]
        assert delivery.headers["content-type"] == "application/json"
        # The project's verification function, and a Standard Webhooks library.
        verify_delivery(delivery.body, delivery.headers, endpoint["secret"])
        Webhook(endpoint["secret"]).verify(delivery.body, delivery.headers)
    assert other.received == []
    events = (await merchant.get("/events")).json()["data"]
    assert [e["type"] for e in events] == ["checkout.session.paid"]
    assert events[0]["id"] == json.loads(first.received[0].body)["id"]


async def test_signatures_fail_for_a_wrong_secret_a_tampered_body_or_a_stale_time(
    server: Server, nursery: trio.Nursery
) -> None:
    receiver = await start_receiver(nursery)
    merchant = await server.merchant()
    endpoint = await add_endpoint(merchant, receiver.url)
    await paid_session(server, merchant)
    (delivery,) = await receiver.wait_for(1)
    stamp = int(delivery.headers["service-timestamp"])
    verify_delivery(delivery.body, delivery.headers, endpoint["secret"], now=stamp + 300)
    verify_delivery(delivery.body, delivery.headers, endpoint["secret"], now=stamp - 300)
    service_only = {k: v for k, v in delivery.headers.items() if not k.startswith("webhook-")}
    standard_only = {k: v for k, v in delivery.headers.items() if not k.startswith("service-")}
    for headers in (service_only, standard_only):
        verify_delivery(delivery.body, headers, endpoint["secret"])
        with pytest.raises(WebhookVerificationError):
            verify_delivery(delivery.body, headers, "whsec_" + "A" * 43 + "=")
        with pytest.raises(WebhookVerificationError):
            verify_delivery(delivery.body + b" ", headers, endpoint["secret"])
        with pytest.raises(WebhookVerificationError):
            verify_delivery(delivery.body, headers, endpoint["secret"], now=stamp + 301)
        with pytest.raises(WebhookVerificationError):
            verify_delivery(delivery.body, headers, endpoint["secret"], now=stamp - 301)


async def test_expiry_sends_checkout_session_expired(
    nursery: trio.Nursery, settings: Settings, clock: trio.testing.MockClock
) -> None:
    server = await start_server(
        nursery, attrs.evolve(settings, checkout_ttl_seconds=120), clock=TrioClock()
    )
    receiver = await start_receiver(nursery)
    merchant, session = await new_session(server)
    await add_endpoint(merchant, receiver.url)
    clock.jump(121)
    (delivery,) = await receiver.wait_for(1)
    event = json.loads(delivery.body)
    assert event["type"] == "checkout.session.expired"
    assert event["data"]["object"]["id"] == session["id"]
    assert event["data"]["object"]["status"] == "expired"
    await server.shutdown()


async def test_receiver_down_then_up_is_delivered(
    nursery: trio.Nursery, settings: Settings, clock: trio.testing.MockClock
) -> None:
    server = await start_server(nursery, settings, clock=TrioClock())
    merchant = await server.merchant()
    port = reserve_port()  # bound, not listening: connections are refused
    await add_endpoint(merchant, url_of(port))
    session = await paid_session(server, merchant)
    event = (await merchant.get("/events")).json()["data"][0]
    await server.running.service.dispatcher.wait_for_attempts(1)
    (delivery_row,) = await server.db.read(webhook_rows.deliveries_of_event, event["id"])
    assert delivery_row.status == "pending" and delivery_row.attempts == 1
    assert delivery_row.last_error and "Connect" in delivery_row.last_error
    receiver = await start_receiver(nursery, port)
    (delivery,) = await receiver.wait_for(1)
    assert json.loads(delivery.body)["data"]["object"]["id"] == session["id"]
    await server.shutdown()


async def test_500s_are_retried_on_schedule_then_succeed(
    nursery: trio.Nursery, settings: Settings, clock: trio.testing.MockClock
) -> None:
    server = await start_server(nursery, settings, clock=TrioClock())
    receiver = await start_receiver(nursery)
    receiver.script = lambda n: (500, {}) if n < 3 else (200, {})
    merchant = await server.merchant()
    await add_endpoint(merchant, receiver.url)
    await paid_session(server, merchant)
    arrivals = await receiver.wait_for(4)
    gaps = [b.at - a.at for a, b in zip(arrivals, arrivals[1:], strict=False)]
    for gap, planned in zip(gaps, (5, 300, 1800), strict=True):
        assert planned * 0.9 - 0.5 <= gap <= planned * 1.1 + 0.5, (gaps, planned)
    ids = {json.loads(a.body)["id"] for a in arrivals}
    assert len(ids) == 1, "the event id is constant across retries"
    stamps = [a.headers["service-timestamp"] for a in arrivals]
    assert len(set(stamps)) == 4, "each attempt is signed afresh"
    await server.running.service.dispatcher.wait_for_attempts(4)
    event_id = ids.pop()
    (delivery,) = await server.db.read(webhook_rows.deliveries_of_event, event_id)
    assert (delivery.status, delivery.attempts, delivery.last_status) == ("succeeded", 4, 200)
    await server.shutdown()


async def test_a_hanging_receiver_times_out_and_is_retried(
    nursery: trio.Nursery, settings: Settings, clock: trio.testing.MockClock
) -> None:
    server = await start_server(nursery, settings, clock=TrioClock())
    receiver = await start_receiver(nursery)
    receiver.script = lambda n: "hang" if n == 0 else (204, {})
    merchant = await server.merchant()
    await add_endpoint(merchant, receiver.url)
    await paid_session(server, merchant)
    first, second = await receiver.wait_for(2)
    assert second.at - first.at >= 10 + 5 * 0.9 - 0.5  # 10 s timeout, then ~5 s backoff
    await server.running.service.dispatcher.wait_for_attempts(2)
    event_id = json.loads(first.body)["id"]
    (delivery,) = await server.db.read(webhook_rows.deliveries_of_event, event_id)
    assert delivery.status == "succeeded" and delivery.attempts == 2
    await server.shutdown()


async def test_retry_after_on_429_is_honoured(
    nursery: trio.Nursery, settings: Settings, clock: trio.testing.MockClock
) -> None:
    server = await start_server(nursery, settings, clock=TrioClock())
    receiver = await start_receiver(nursery)
    receiver.script = lambda n: (429, {"Retry-After": "900"}) if n == 0 else (200, {})
    merchant = await server.merchant()
    await add_endpoint(merchant, receiver.url)
    await paid_session(server, merchant)
    first, second = await receiver.wait_for(2)
    assert second.at - first.at >= 900
    await server.shutdown()


async def test_after_the_last_attempt_the_delivery_is_failed(
    nursery: trio.Nursery, settings: Settings, clock: trio.testing.MockClock
) -> None:
    from fgcpay.domain.deliveries import MAX_ATTEMPTS, RETRY_SCHEDULE_SECONDS

    server = await start_server(nursery, settings, clock=TrioClock())
    receiver = await start_receiver(nursery)
    receiver.script = lambda n: (503, {})
    merchant = await server.merchant()
    await add_endpoint(merchant, receiver.url)
    await paid_session(server, merchant)
    dispatcher = server.running.service.dispatcher
    await dispatcher.wait_for_attempts(1)
    for attempt, planned in enumerate(RETRY_SCHEDULE_SECONDS, start=2):
        # Once the last attempt is recorded, straight to the latest moment the jittered
        # retry can be due (about 3 days in all).
        clock.jump(planned * 1.1 + 1)
        await dispatcher.wait_for_attempts(attempt)
    event_id = json.loads(receiver.received[0].body)["id"]
    (delivery,) = await server.db.read(webhook_rows.deliveries_of_event, event_id)
    assert (delivery.status, delivery.attempts, delivery.last_status) == (
        "failed",
        MAX_ATTEMPTS,
        503,
    )
    clock.jump(7 * 86400)
    await merchant.get("/events")  # a full round trip through the service after the jump
    assert len(receiver.received) == MAX_ATTEMPTS
    await server.shutdown()


async def test_redirects_are_not_followed(server: Server, nursery: trio.Nursery) -> None:
    target = await start_receiver(nursery)
    receiver = await start_receiver(nursery)
    receiver.script = lambda n: (307, {"Location": target.url}) if n == 0 else (200, {})
    merchant = await server.merchant()
    await add_endpoint(merchant, receiver.url)
    await paid_session(server, merchant)
    await server.running.service.dispatcher.wait_for_attempts(1)
    assert target.received == []
    event = (await merchant.get("/events")).json()["data"][0]
    (delivery,) = await server.db.read(webhook_rows.deliveries_of_event, event["id"])
    assert (delivery.status, delivery.last_status) == ("pending", 307)


async def test_redeliver_queues_a_new_delivery_of_the_same_event(
    server: Server, nursery: trio.Nursery
) -> None:
    receiver = await start_receiver(nursery)
    merchant = await server.merchant()
    await add_endpoint(merchant, receiver.url)
    await paid_session(server, merchant)
    (first,) = await receiver.wait_for(1)
    event_id = json.loads(first.body)["id"]
    response = await merchant.post(f"/events/{event_id}/redeliver")
    assert response.status_code == 202
    assert response.json() == {"object": "redelivery", "event_id": event_id, "deliveries_queued": 1}
    second = (await receiver.wait_for(2))[1]
    assert second.body == first.body
    assert (await merchant.post("/events/evt_" + "x" * 24 + "/redeliver")).status_code == 404


async def test_events_api_lists_filters_and_retrieves(
    server: Server, nursery: trio.Nursery
) -> None:
    merchant = await server.merchant()
    sessions = [await paid_session(server, merchant) for _ in range(3)]
    page = (await merchant.get("/events", params={"limit": 2})).json()
    assert page["object"] == "list" and page["has_more"] is True and len(page["data"]) == 2
    rest = (await merchant.get("/events", params={"starting_after": page["next_cursor"]})).json()
    listed = page["data"] + rest["data"]
    assert [e["data"]["object"]["id"] for e in listed] == [s["id"] for s in reversed(sessions)]
    assert (await merchant.get("/events", params={"type": "checkout.session.expired"})).json()[
        "data"
    ] == []
    assert (await merchant.get("/events", params={"type": "nope"})).status_code == 400
    one = await merchant.get(f"/events/{listed[0]['id']}")
    assert one.status_code == 200 and one.json() == listed[0]
    other = await server.merchant("Other")
    assert (await other.get(f"/events/{listed[0]['id']}")).status_code == 404
    assert (await other.get("/events")).json()["data"] == []


async def test_endpoint_api(server: Server) -> None:
    merchant = await server.merchant()
    created = await add_endpoint(merchant, "https://hooks.example/fgc", ["checkout.session.paid"])
    assert created["id"].startswith("we_")
    assert created["secret"].startswith("whsec_")
    assert created["enabled_events"] == ["checkout.session.paid"]
    listed = (await merchant.get("/webhook_endpoints")).json()
    assert [e["id"] for e in listed["data"]] == [created["id"]]
    assert "secret" not in listed["data"][0]
    bad = await merchant.post(
        "/webhook_endpoints", json={"url": "ftp://x", "enabled_events": ["nope"]}
    )
    assert bad.status_code == 400
    assert {d["field"] for d in bad.json()["details"]} == {"url", "enabled_events"}
    other = await server.merchant("Other")
    assert (
        await other.http.delete(f"/webhook_endpoints/{created['id']}", headers=other.headers())
    ).status_code == 404
    deleted = await merchant.http.delete(
        f"/webhook_endpoints/{created['id']}", headers=merchant.headers()
    )
    assert deleted.status_code == 200 and deleted.json()["deleted"] is True
    assert (await merchant.get("/webhook_endpoints")).json()["data"] == []


async def test_an_endpoint_is_read_and_changed_field_by_field(server: Server) -> None:
    merchant = await server.merchant()
    created = await add_endpoint(merchant, "https://hooks.example/fgc", ["checkout.session.paid"])
    path = f"/webhook_endpoints/{created['id']}"
    shown = {k: v for k, v in created.items() if k != "secret"}
    read = await merchant.get(path)
    assert read.status_code == 200 and read.json() == shown, read.text

    events = await merchant.patch(path, json={"enabled_events": ["refund.created"]})
    assert events.status_code == 200, events.text
    shown["enabled_events"] = ["refund.created"]
    assert events.json() == shown, "only the field given changes; no secret"
    moved = await merchant.patch(path, json={"url": "https://hooks.example/new"})
    shown["url"] = "https://hooks.example/new"
    assert moved.status_code == 200 and moved.json() == shown, moved.text
    assert (await merchant.patch(path, json={})).json() == shown
    assert (await merchant.get(path)).json() == shown
    assert (await merchant.get("/webhook_endpoints")).json()["data"] == [shown]

    # The create's rules, all named at once; an unknown field; nothing changed.
    for body, fields in (
        ({"url": "ftp://x", "enabled_events": ["nope"]}, {"url", "enabled_events"}),
        ({"enabled_events": []}, {"enabled_events"}),
        ({"url": "https://hooks.example/x", "secret": "whsec_mine"}, {"secret"}),
        ({"faults": {"duplicate": 2}}, {"faults.duplicate"}),
    ):
        refused = await merchant.patch(path, json=body)
        assert refused.status_code == 400, (body, refused.text)
        assert {d["field"] for d in refused.json()["details"]} == fields, body
    not_json = await merchant.patch(path, json=["https://hooks.example/x"])
    assert not_json.status_code == 400
    assert (await merchant.get(path)).json() == shown

    # Another merchant's endpoint, an unknown one and a deleted one are 404.
    other = await server.merchant("Other")
    unknown = f"/webhook_endpoints/we_{'0' * 24}"
    for who, where in ((other, path), (merchant, unknown), (merchant, "/webhook_endpoints/x")):
        assert (await who.get(where)).status_code == 404, where
        answer = await who.patch(where, json={"url": "https://hooks.example/o"})
        assert answer.status_code == 404, where
        assert answer.json()["code"] == "not_found"
    assert (await merchant.get(path)).json() == shown
    assert (await merchant.delete(path)).status_code == 200
    assert (await merchant.get(path)).status_code == 404
    assert (await merchant.patch(path, json={"enabled_events": ["*"]})).status_code == 404


async def test_rotate_secret_says_until_when_the_old_secret_signs(
    nursery: trio.Nursery, settings: Settings, clock: trio.testing.MockClock
) -> None:
    wall = TrioClock()
    server = await start_server(nursery, settings, clock=wall)
    merchant = await server.merchant()
    endpoint = await add_endpoint(merchant, "https://hooks.example/fgc")
    path = f"/webhook_endpoints/{endpoint['id']}"
    before = datetime.fromtimestamp(wall.now_us() // 1000 / 1000, tz=UTC)
    rotated = (await merchant.post(f"{path}/rotate_secret")).json()
    after = datetime.fromtimestamp(wall.now_us() / 1e6, tz=UTC)
    assert rotated["secret"] != endpoint["secret"]
    expires = datetime.fromisoformat(rotated["previous_secret_expires_at"])
    assert before + DAY <= expires <= after + DAY
    assert "previous_secret_expires_at" not in (await merchant.get(path)).json()
    rows = server.running.service.webhook_endpoints
    stored = await rows.get(merchant.id, endpoint["id"])
    assert rows.signing_secrets(stored) == [endpoint["secret"], rotated["secret"]]
    # Until then, and no longer.
    clock.jump((expires - after).total_seconds() - 0.01)
    assert len(rows.signing_secrets(stored)) == 2
    clock.jump(0.02)
    assert rows.signing_secrets(stored) == [rotated["secret"]]
    await server.shutdown()


async def test_rotated_secret_signs_with_both_for_a_day(
    server: Server, nursery: trio.Nursery
) -> None:
    receiver = await start_receiver(nursery)
    merchant = await server.merchant()
    endpoint = await add_endpoint(merchant, receiver.url)
    rotated = (await merchant.post(f"/webhook_endpoints/{endpoint['id']}/rotate_secret")).json()
    assert rotated["secret"] != endpoint["secret"]
    await paid_session(server, merchant)
    (delivery,) = await receiver.wait_for(1)
    assert delivery.headers["service-signature"].count("v1=") == 2
    assert len(delivery.headers["webhook-signature"].split()) == 2
    for secret in (endpoint["secret"], rotated["secret"]):
        verify_delivery(delivery.body, delivery.headers, secret)
        Webhook(secret).verify(delivery.body, delivery.headers)


async def test_private_targets_are_refused_unless_allowed(
    nursery: trio.Nursery, settings: Settings
) -> None:
    server = await start_server(nursery, attrs.evolve(settings, webhook_allow_private=False))
    merchant = await server.merchant()
    for url in (
        "http://127.0.0.1:9/x",
        "http://10.0.0.1/x",
        "http://[::1]/x",
        "http://169.254.169.254/latest",
        "http://localhost/x",
    ):
        response = await merchant.post("/webhook_endpoints", json={"url": url})
        assert response.status_code == 400, url
        assert response.json()["details"][0]["field"] == "url"
    # The same rule when an endpoint is moved.
    endpoint = await add_endpoint(merchant, "https://hooks.example/fgc")
    moved = await merchant.patch(
        f"/webhook_endpoints/{endpoint['id']}", json={"url": "http://10.0.0.1/x"}
    )
    assert moved.status_code == 400 and moved.json()["details"][0]["field"] == "url"
    await server.shutdown()


async def test_the_guard_applies_at_delivery_time_too(
    nursery: trio.Nursery, settings: Settings
) -> None:
    receiver = await start_receiver(nursery)
    permissive = await start_server(nursery, settings)
    merchant = await permissive.merchant()
    await add_endpoint(merchant, receiver.url)  # saved while private targets were allowed
    await permissive.shutdown()
    strict = await start_server(nursery, attrs.evolve(settings, webhook_allow_private=False))
    merchant.http = strict.client
    await paid_session(strict, merchant)
    await strict.running.service.dispatcher.wait_for_attempts(1)
    assert receiver.received == []
    event = (await merchant.get("/events")).json()["data"][0]
    (delivery,) = await strict.db.read(webhook_rows.deliveries_of_event, event["id"])
    assert delivery.last_error and "destination refused" in delivery.last_error
    await strict.shutdown()


def test_signing_matches_the_contract_by_hand() -> None:
    import hashlib
    import hmac

    from fgcpay.domain.signing import signed_headers

    body = b'{"id":"evt_1"}'
    headers = signed_headers("evt_1", body, 1700000000, ["whsec_c2VjcmV0"])
    expected = hmac.new(b"whsec_c2VjcmV0", b"1700000000." + body, hashlib.sha256).hexdigest()
    assert headers["Service-Signature"] == f"v1={expected}"
    assert headers["Service-Timestamp"] == "1700000000"
