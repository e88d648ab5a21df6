"""Two events of one resource never share a sequence; where one change causes two (an
approval: `subscription.activated`, then its first `subscription.charged`), the first has
the lower sequence and is delivered first (contract, "Webhooks"). Through the hosted page
and a webhook receiver over HTTP, on both backends."""

from __future__ import annotations

import json
from typing import Any

import trio
from fgcpay.storage import webhooks as webhook_rows
from fgcpay.storage.webhooks import DeliveryJob
from fgcpay.webhooks._slots import Slots
from helpers import Server, add_endpoint, create_subscription
from hosted import Customer
from receiver import start_receiver

APPROVALS = 8


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
        # Delivered in the order they happened (a charge first was the defect).
        assert [e["type"] for e in events] == [
            "subscription.activated",
            "subscription.charged",
        ], sub_id
        activated, charged = events
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


def _job(delivery_id: str, resource_id: str) -> DeliveryJob:
    return DeliveryJob(
        delivery_id=delivery_id, attempts=0, event_id="evt_" + delivery_id, body="{}",
        url="https://hooks.example/", secret_sealed="", previous_secret_sealed=None,
        previous_secret_expires_at=None, endpoint_id="we_1", merchant_id="mer_1",
        resource_id=resource_id,
    )  # fmt: skip


def test_one_resources_deliveries_go_to_an_endpoint_one_at_a_time() -> None:
    slots = Slots(senders=8, per_endpoint=4, per_merchant=8)
    activated, charged, other = _job("d1", "sub_a"), _job("d2", "sub_a"), _job("d3", "sub_b")
    limits = slots.limits()
    slots.add([activated, charged, other], 10**12, limits, 10, False)
    started, dropped = slots.ready(0)
    # The charge waits for the activation's answer; another resource's passes it.
    assert (started, dropped) == ([activated, other], [])
    assert slots.ready(0) == ([], [])
    slots.answered(activated)
    assert slots.ready(0) == ([charged], [])
