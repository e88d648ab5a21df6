"""`/api/v1/webhook_deliveries`: the delivery log (each delivery with its attempts)."""

from __future__ import annotations

from fgcpay.domain.deliveries import (
    WebhookDeliveryQuery,
    WebhookDeliveryWire,
    delivery_query,
    delivery_to_json,
)
from fgcpay.domain.lists import Page
from fgcpay.webhooks.delivery_log import DeliveryLog
from quart import Blueprint

from .listing import get_route, list_route

blueprint = Blueprint("deliveries", __name__, url_prefix="/api/v1")
TAG = "Webhook deliveries"

list_route(
    blueprint,
    "/webhook_deliveries",
    query=WebhookDeliveryQuery,
    page=lambda service, merchant_id, query: DeliveryLog(service.db).page(
        merchant_id, delivery_query(query)
    ),
    wire=lambda _: delivery_to_json,
    operation_id="listWebhookDeliveries",
    summary="List webhook deliveries, each with its attempts, newest first",
    description=(
        "The delivery log: every delivery of an event to an endpoint (a redelivery is a new "
        "delivery), with every attempt (time, status code, latency, error, first 2 KiB of the "
        "answer). Filters combine."
    ),
    tag=TAG,
    answer="A page of deliveries.",
    schema=Page[WebhookDeliveryWire],
)
get_route(
    blueprint,
    "/webhook_deliveries/<delivery_id>",
    get=lambda service: DeliveryLog(service.db).get,
    wire=lambda _: delivery_to_json,
    operation_id="getWebhookDelivery",
    summary="Retrieve a webhook delivery with its attempts",
    tag=TAG,
    answer="The delivery.",
    schema=WebhookDeliveryWire,
)
