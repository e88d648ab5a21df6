"""`/api/v1/webhook_deliveries`: the delivery log (each delivery with its attempts)."""

from __future__ import annotations

from fgcpay.domain import webhooks
from fgcpay.domain.lists import ListQuery, Page
from fgcpay.webhooks.delivery_log import DeliveryLog
from quart import Blueprint

from .listing import get_route, list_route

blueprint = Blueprint("deliveries", __name__, url_prefix="/api/v1")
TAG = "Webhook deliveries"

list_route(
    blueprint,
    "/webhook_deliveries",
    query=webhooks.WebhookDeliveryQuery,
    page=lambda service, merchant_id, query: DeliveryLog(service.db).page(
        merchant_id,
        webhooks.DeliveryQuery(
            ListQuery(limit=query.limit, status=query.status, starting_after=query.starting_after),
            query.endpoint_id,
            query.event_id,
        ),
    ),
    wire=lambda _: webhooks.delivery_to_json,
    operation_id="listWebhookDeliveries",
    summary="List webhook deliveries, each with its attempts, newest first",
    description=(
        "The delivery log: every delivery of an event to an endpoint (a redelivery is a new "
        "delivery), with every attempt (time, status code, latency, error, first 2 KiB of the "
        "answer). Filters combine."
    ),
    tag=TAG,
    answer="A page of deliveries.",
    schema=Page[webhooks.WebhookDeliveryWire],
)
get_route(
    blueprint,
    "/webhook_deliveries/<delivery_id>",
    get=lambda service: DeliveryLog(service.db).get,
    wire=lambda _: webhooks.delivery_to_json,
    operation_id="getWebhookDelivery",
    summary="Retrieve a webhook delivery with its attempts",
    tag=TAG,
    answer="The delivery.",
    schema=webhooks.WebhookDeliveryWire,
)
