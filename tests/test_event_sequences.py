"""Two events of one resource never share a sequence; where one change causes two (an
approval: `subscription.activated`, then its first `subscription.charged`), the first has
the lower sequence and is delivered first (contract, "Webhooks"). Through the hosted page
and a webhook receiver over HTTP, on both backends."""

from __future__ import annotations

import json
from typing import Any

import trio
from fgcpay.storage import webhooks as webhook_rows
from helpers import Server, add_endpoint, create_subscription
from hosted import Customer
from receiver import start_receiver

APPROVALS = 4


async def test_an_approval_sends_activated_then_charged_with_their_own_sequences(
    server: Server, nursery: trio.Nursery
) -> None:
    receiver = await start_receiver(nursery)
    merchant = await server.merchant()
    await add_endpoint(merchant, receiver.url, ["subscription.activated", "subscription.charged"])
    customer = Customer(server)
    made = []
    for _ in range(APPROVALS):
        sub = await create_subscription(merchant)
        approved = await customer.pay(sub["id"])
        assert approved.status_code == 303, approved.text
        made.append(sub["id"])
        # One approval at a time: its two deliveries are the only ones due.
        await receiver.wait_for(2 * len(made))
    await customer.close()

    arrived: dict[str, list[dict[str, Any]]] = {}
    for delivery in receiver.received:
        event = json.loads(delivery.body)
        arrived.setdefault(event["data"]["object"]["id"], []).append(event)
    assert sorted(arrived) == sorted(made)
    for sub_id, events in arrived.items():
        by_type = {e["type"]: e for e in events}
        assert sorted(by_type) == ["subscription.activated", "subscription.charged"], sub_id
        activated, charged = by_type["subscription.activated"], by_type["subscription.charged"]
        # Each with its own sequence, the first caused the lower.
        assert (activated["sequence"], charged["sequence"]) == (2, 3), sub_id
        # The API's event log agrees.
        listed = await merchant.get("/events", params={"limit": "100"})
        mine = [e for e in listed.json()["data"] if e["data"]["object"]["id"] == sub_id]
        assert sorted((e["sequence"], e["type"]) for e in mine) == [
            (1, "subscription.created"),
            (2, "subscription.activated"),
            (3, "subscription.charged"),
        ]
        # The outbox has the activation due first: the claims take each endpoint's
        # deliveries oldest due first, so it is handed to a sender first.
        stored = [
            await server.db.read(webhook_rows.event_of, merchant.id, e["id"])
            for e in (activated, charged)
        ]
        assert stored[0] is not None and stored[1] is not None
        assert stored[0].created_at < stored[1].created_at, sub_id
