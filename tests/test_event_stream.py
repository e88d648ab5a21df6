"""The event stream, `GET /api/v1/events/stream` (a websocket), on both backends: each
event as its webhook body, in stream order, live and resumed after the last one seen; the
type filter; the refusals of the handshake; a revoked key, the per-merchant limit, a
shutdown; and the window a stream resumes from."""

from __future__ import annotations

import json
from typing import Any

import pytest
import trio
from fgcpay.admin import revoke_api_key
from fgcpay.domain import event_stream as rules
from fgcpay.domain import ids
from fgcpay.domain.events import EVENT_RETENTION_US, new_event
from fgcpay.storage import event_stream, merchants
from fgcpay.storage import webhooks as webhook_rows
from helpers import (
    MerchantClient,
    Server,
    bearer,
    create_subscription,
    open_stream,
    stream_refusal,
    stream_url,
    wait_until,
)
from hosted import paid_session
from trio_websocket import ConnectionClosed, open_websocket_url


async def _newest_event(merchant: MerchantClient) -> dict[str, Any]:
    listed = (await merchant.get("/events", params={"limit": "1"})).json()["data"]
    event: dict[str, Any] = listed[0]
    return event


async def _revoke_key(server: Server, merchant: MerchantClient) -> None:
    (key,) = await server.db.read(merchants.api_keys_of, merchant.id)
    await revoke_api_key(server.db, merchant.id, key.id)


async def _closed(stream: Any, within: float) -> tuple[int, str]:
    """Read until the service closes the stream; its close code and reason."""
    with trio.fail_after(within):
        try:
            while True:
                await stream.ws.get_message()
        except ConnectionClosed as closed:
            assert closed.reason is not None
            return closed.reason.code, str(closed.reason.reason)


async def test_each_event_comes_as_its_webhook_body_in_commit_order(server: Server) -> None:
    merchant = await server.merchant()
    async with open_stream(server.url, merchant.key) as stream:
        assert stream.hello == {
            "object": "stream",
            "request_id": stream.hello["request_id"],
            "after": None,  # a new merchant has no events yet
            "types": None,
            "ping_seconds": rules.PING_SECONDS,
        }
        subscription = await create_subscription(merchant)
        session = await paid_session(server, merchant)
        created, paid = await stream.raw(), await stream.raw()
    for sent, about, kind in (
        (created, subscription, "subscription.created"),
        (paid, session, "checkout.session.paid"),
    ):
        event = json.loads(sent)
        assert (event["type"], event["data"]["object"]["id"]) == (kind, about["id"])
        # Byte for byte what GET /events/{id} (and every webhook of it) carries.
        assert (await merchant.get(f"/events/{event['id']}")).text == sent


async def test_a_commit_wakes_the_stream_without_waiting_for_its_poll(server: Server) -> None:
    """The commit's notification (PostgreSQL: NOTIFY, heard through LISTEN; SQLite: this
    process's listeners) rings the stream: with its poll an hour away, the event still
    comes at once."""
    server.running.service.event_streams.poll_seconds = 3600
    merchant = await server.merchant()
    async with open_stream(server.url, merchant.key) as stream:
        created = await create_subscription(merchant)
        event = await stream.next(within=5)
    assert event["data"]["object"]["id"] == created["id"]


async def test_a_stream_resumes_after_the_last_event_it_saw_missing_none(server: Server) -> None:
    merchant = await server.merchant()
    async with open_stream(server.url, merchant.key) as stream:
        await create_subscription(merchant)
        first = await stream.next()
    # While no stream is open: two more.
    missed = [(await create_subscription(merchant))["id"] for _ in range(2)]
    async with open_stream(server.url, merchant.key, after=first["id"]) as stream:
        assert stream.hello["after"] == first["id"]
        resumed = [await stream.next(), await stream.next()]
        assert [e["data"]["object"]["id"] for e in resumed] == missed
        last = resumed[-1]["id"]
    async with open_stream(server.url, merchant.key, after=last) as stream:
        newer = await create_subscription(merchant)
        assert (await stream.next())["data"]["object"]["id"] == newer["id"]  # none twice


async def test_without_after_a_stream_starts_after_the_newest_event(server: Server) -> None:
    merchant = await server.merchant()
    await create_subscription(merchant)
    before = await _newest_event(merchant)
    async with open_stream(server.url, merchant.key) as stream:
        assert stream.hello["after"] == before["id"]
        newer = await create_subscription(merchant)
        assert (await stream.next())["data"]["object"]["id"] == newer["id"]


async def test_after_start_sends_the_window_s_events_first(server: Server) -> None:
    """What a client resumes with when its hello said `after: null`: from the first event
    of the last 30 days (an older one is past the window), then the live ones."""
    merchant = await server.merchant()
    old_at = server.running.service.clock.now_us() - EVENT_RETENTION_US - 60_000_000
    old = new_event(ids.event_id(), merchant.id, "subscription.created", "sub_x", 1, {}, old_at)
    await server.db.write(webhook_rows.record_event, old)
    made = [(await create_subscription(merchant))["id"] for _ in range(2)]
    async with open_stream(server.url, merchant.key, after="start") as stream:
        assert stream.hello["after"] is None
        assert [(await stream.next())["data"]["object"]["id"] for _ in made] == made
        newer = await create_subscription(merchant)
        assert (await stream.next())["data"]["object"]["id"] == newer["id"]


async def test_types_chooses_the_events_sent(server: Server) -> None:
    merchant = await server.merchant()
    async with open_stream(
        server.url, merchant.key, types="checkout.session.paid,refund.created"
    ) as stream:
        assert stream.hello["types"] == ["checkout.session.paid", "refund.created"]
        await create_subscription(merchant)  # subscription.created: not sent
        session = await paid_session(server, merchant)
        event = await stream.next()
        assert (event["type"], event["data"]["object"]["id"]) == (
            "checkout.session.paid",
            session["id"],
        )


async def test_the_handshake_refuses_what_the_api_refuses(server: Server) -> None:
    merchant, other = await server.merchant(), await server.merchant("Other")
    await create_subscription(other)
    others_event = (await _newest_event(other))["id"]

    missing = await stream_refusal(server.url, None)
    assert (missing.status, missing.body["code"]) == (401, "invalid_api_key")
    assert missing.headers["www-authenticate"].startswith("Bearer")
    assert missing.headers["request-id"] == missing.body["request_id"]
    # A key in the URL is not a key: URLs end up in logs.
    in_url = await stream_refusal(server.url, None, api_key=merchant.key)
    assert (in_url.status, in_url.body["code"]) == (401, "invalid_api_key")

    for query, field in (
        ({"after": "junk"}, "after"),
        ({"after": "evt_" + "0" * 24}, "after"),  # no such event
        ({"after": others_event}, "after"),  # another merchant's: the same answer
        ({"types": "checkout.session.paid,nope"}, "types"),
        ({"types": ""}, "types"),
        ({"since": "yesterday"}, "since"),
    ):
        refused = await stream_refusal(server.url, merchant.key, **query)
        assert (refused.status, refused.body["code"]) == (400, "validation_error"), query
        assert [problem["field"] for problem in refused.body["details"]] == [field], query
    unknown = await stream_refusal(server.url, merchant.key, after="evt_" + "0" * 24)
    mine_elsewhere = await stream_refusal(server.url, merchant.key, after=others_event)
    assert unknown.body["details"] == mine_elsewhere.body["details"]

    plain = await merchant.get("/events/stream")
    assert (plain.status_code, plain.json()["code"]) == (426, "upgrade_required")
    assert plain.headers["upgrade"] == "websocket"

    await _revoke_key(server, merchant)
    revoked = await stream_refusal(server.url, merchant.key)
    assert (revoked.status, revoked.body["code"]) == (401, "invalid_api_key")
    assert "revoked" in revoked.body["message"]


async def test_revoking_the_key_ends_its_stream_within_a_poll(server: Server) -> None:
    merchant = await server.merchant()
    async with open_stream(server.url, merchant.key) as stream:
        await _revoke_key(server, merchant)
        code, _ = await _closed(stream, within=rules.POLL_SECONDS + 5)
    assert code == rules.CLOSE_KEY_REVOKED


async def test_a_merchant_holds_at_most_five_streams(server: Server) -> None:
    merchant, other = await server.merchant(), await server.merchant("Other")
    async with open_stream(server.url, merchant.key) as first:
        async with trio.open_nursery() as nursery:
            held = trio.Event()
            opened = trio.Semaphore(0)

            async def hold() -> None:
                async with open_stream(server.url, merchant.key):
                    opened.release()
                    await held.wait()

            for _ in range(rules.MOST_STREAMS - 1):
                nursery.start_soon(hold)
            for _ in range(rules.MOST_STREAMS - 1):
                await opened.acquire()
            refused = await stream_refusal(server.url, merchant.key)
            assert (refused.status, refused.body["code"]) == (429, "too_many_streams")
            assert int(refused.headers["retry-after"]) > 0
            assert refused.body["details"]["most_streams"] == rules.MOST_STREAMS
            async with open_stream(server.url, other.key):  # another merchant's own five
                pass
            await first.ws.aclose()
            # Its place is free once the service has heard it leave: the next one opens.
            await _wait_for_open_streams(server, merchant, rules.MOST_STREAMS - 1)
            async with open_stream(server.url, merchant.key):
                pass
            held.set()


async def test_a_shutdown_closes_the_streams_with_1001(server: Server) -> None:
    merchant = await server.merchant()
    async with open_stream(server.url, merchant.key) as stream:
        async with trio.open_nursery() as nursery:
            nursery.start_soon(server.shutdown)
            code, _ = await _closed(stream, within=5)
    assert code == rules.CLOSE_GOING_AWAY


async def test_a_quiet_stream_pings(server: Server, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(rules, "PING_SECONDS", 0.2)
    merchant = await server.merchant()
    async with open_stream(server.url, merchant.key) as stream:
        ping = json.loads(await stream.raw(within=5))
    assert ping["object"] == "ping" and ping["at"].endswith("Z")


async def test_an_after_past_the_window_is_refused_only_when_events_follow_it(
    server: Server,
) -> None:
    merchant = await server.merchant()
    old_at = server.running.service.clock.now_us() - EVENT_RETENTION_US - 60_000_000
    old = new_event(ids.event_id(), merchant.id, "subscription.created", "sub_x", 1, {}, old_at)
    await server.db.write(webhook_rows.record_event, old)
    # Nothing after it: nothing can have been missed.
    async with open_stream(server.url, merchant.key, after=old.id) as stream:
        assert stream.hello["after"] == old.id
        newer = await create_subscription(merchant)
        assert (await stream.next())["data"]["object"]["id"] == newer["id"]
    refused = await stream_refusal(server.url, merchant.key, after=old.id)
    assert refused.status == 400
    assert "older than 30 days" in refused.body["details"][0]["message"]


async def test_a_client_that_sends_messages_is_still_heard_leaving(server: Server) -> None:
    """The stream takes no messages; a chatty client neither blocks it nor keeps its place."""
    merchant = await server.merchant()
    async with open_websocket_url(stream_url(server.url), extra_headers=bearer(merchant.key)) as ws:
        await ws.get_message()
        for n in range(50):
            await ws.send_message(f"hello {n}")
        await _wait_for_open_streams(server, merchant, 1)
    await _wait_for_open_streams(server, merchant, 0)


async def _wait_for_open_streams(server: Server, merchant: MerchantClient, count: int) -> None:
    """Until the merchant holds `count` streams (what the service heard has no event)."""

    async def holds() -> bool:
        now = server.running.service.clock.now_us()
        return await server.db.read(event_stream.open_streams, merchant.id, now) == count

    await wait_until(holds, within=10, what=f"{count} open streams")
