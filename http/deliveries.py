"""`/api/v1/webhook_deliveries`: the delivery log (each delivery with its attempts)."""

from __future__ import annotations

from fgcpay.domain import webhooks
from fgcpay.domain.lists import envelope
from fgcpay.webhooks.delivery_log import DeliveryLog
from quart import Blueprint, Response, request

from .plumbing import current_service, principal
from .responses import json_response

blueprint = Blueprint("deliveries", __name__, url_prefix="/api/v1")


def _log() -> DeliveryLog:
    return DeliveryLog(current_service().db)


@blueprint.get("/webhook_deliveries")
async def list_webhook_deliveries() -> Response:
    query = webhooks.parse_delivery_query(request.args.to_dict(flat=False))
    rows, has_more = await _log().page(principal().merchant.id, query)
    data = [webhooks.delivery_to_json(row) for row in rows]
    return json_response(envelope(data, has_more, rows[-1].id if rows else None))


@blueprint.get("/webhook_deliveries/<delivery_id>")
async def get_webhook_delivery(delivery_id: str) -> Response:
    delivery = await _log().get(principal().merchant.id, delivery_id)
    return json_response(webhooks.delivery_to_json(delivery))
