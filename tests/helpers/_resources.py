"""What a merchant sends over and over in the tests: a valid checkout session, a webhook
endpoint, a subscription, a test clock; and a backlog of webhook events."""

from __future__ import annotations

from typing import Any

import httpx
from fgcpay.domain import ids
from fgcpay.domain.events import new_event
from fgcpay.storage import webhooks

from ._service import MerchantClient, Server
from ._subscriptions import subscription_body


def valid_body(**overrides: Any) -> dict[str, Any]:
    body: dict[str, Any] = {
        "amount_fgc": "12.50",
        "currency": "FGC",
        "description": "Two flat whites",
        "success_url": "https://shop.example/thanks?order=42",
        "cancel_url": "https://shop.example/cart",
    }
    body.update(overrides)
    return {k: v for k, v in body.items() if v is not ...}


async def create(merchant: MerchantClient, **overrides: Any) -> dict[str, Any]:
    response = await merchant.post("/checkout/sessions", json=valid_body(**overrides))
    assert response.status_code == 201, response.text
    created: dict[str, Any] = response.json()
    return created


async def add_endpoint(
    merchant: MerchantClient, url: str, events: list[str] | None = None
) -> dict[str, Any]:
    body: dict[str, Any] = {"url": url}
    if events is not None:
        body["enabled_events"] = events
    response = await merchant.post("/webhook_endpoints", json=body)
    assert response.status_code == 201, response.text
    created: dict[str, Any] = response.json()
    return created


async def create_subscription(merchant: MerchantClient, **overrides: Any) -> dict[str, Any]:
    """`POST /subscriptions` with `subscription_body(**overrides)`; the 201's body."""
    response = await merchant.post("/subscriptions", json=subscription_body(**overrides))
    assert response.status_code == 201, response.text
    created: dict[str, Any] = response.json()
    return created


async def create_test_clock(merchant: MerchantClient, frozen_time: str) -> dict[str, Any]:
    """`POST /test_clocks` at `frozen_time` (an RFC 3339 date-time); the 201's body."""
    response = await merchant.post("/test_clocks", json={"frozen_time": frozen_time})
    assert response.status_code == 201, response.text
    created: dict[str, Any] = response.json()
    return created


async def every_page(api: httpx.AsyncClient, path: str) -> list[dict[str, Any]]:
    """Every object of a list operation (`/checkout/sessions`, `/subscriptions`, ...),
    page after page through `starting_after`, newest first."""
    found: list[dict[str, Any]] = []
    params: dict[str, str | int] = {"limit": 100}
    while True:
        page = await api.get(path, params=params)
        assert page.status_code == 200, page.text
        body = page.json()
        found.extend(body["data"])
        if not body["has_more"]:
            return found
        params["starting_after"] = body["data"][-1]["id"]


async def queue_events(server: Server, merchant_id: str, count: int, at_us: int) -> list[str]:
    """`count` paid-session events of the merchant's, written straight to the outbox (one
    pending delivery per subscribed endpoint, due from `at_us` on, a microsecond apart)
    as a backlog is, then the dispatcher rung; the events' ids, oldest first."""
    events = [
        new_event(
            "evt_" + ids.random_base62(24),
            merchant_id,
            "checkout.session.paid",
            "cs_test_" + ids.random_base62(24),
            2,
            {"object": "checkout.session"},
            at_us + i,
        )  # fmt: skip
        for i in range(count)
    ]
    await server.db.write(webhooks.record_events, events)
    server.running.service.dispatcher.ring()
    return [event.id for event in events]
