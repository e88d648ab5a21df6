"""`/api/v1/webhook_deliveries`: the delivery log (each delivery with its attempts)."""

from __future__ import annotations

from fgcpay.domain.deliveries import (
    WebhookDeliveryQuery,
    WebhookDeliveryWire,
    delivery_to_json,
    parse_delivery_query,
)
from fgcpay.domain.lists import Page, envelope
from fgcpay.web.plumbing import current_service, principal
from fgcpay.web.responses import json_response
from fgcpay.webhooks.delivery_log import DeliveryLog
from quart import Blueprint, Response, request

from .operations import operation

blueprint = Blueprint("deliveries", __name__, url_prefix="/api/v1")


def _log() -> DeliveryLog:
    return DeliveryLog(current_service().db)


@blueprint.get("/webhook_deliveries")
@operation(
    operation_id="listWebhookDeliveries",
    summary="List webhook deliveries, each with its attempts, newest first",
    description=(
        "The delivery log: every delivery of an event to an endpoint (a redelivery is a new "
        "delivery), with every attempt (time, status code, latency, error, first 2 KiB of the "
        "answer). Filters combine."
    ),
    tag="Webhook deliveries",
    query=WebhookDeliveryQuery,
    status=200,
    answer="A page of deliveries.",
    schema=Page[WebhookDeliveryWire],
)
async def list_webhook_deliveries() -> Response:
    query = parse_delivery_query(request.args.to_dict(flat=False))
    rows, has_more = await _log().page(principal().merchant.id, query)
    data = [delivery_to_json(row) for row in rows]
    return json_response(envelope(data, has_more, rows[-1].id if rows else None))


@blueprint.get("/webhook_deliveries/<delivery_id>")
@operation(
    operation_id="getWebhookDelivery",
    summary="Retrieve a webhook delivery with its attempts",
    tag="Webhook deliveries",
    status=200,
    answer="The delivery.",
    schema=WebhookDeliveryWire,
)
async def get_webhook_delivery(delivery_id: str) -> Response:
    delivery = await _log().get(principal().merchant.id, delivery_id)
    return json_response(delivery_to_json(delivery))
