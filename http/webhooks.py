"""`/api/v1/webhook_endpoints` and `/api/v1/events`."""

from __future__ import annotations

import json

from fgcpay.domain import endpoints, webhooks
from fgcpay.domain.lists import envelope, parse_list_query, reject_query
from quart import Blueprint, Response, request

from .body import json_object, no_body
from .idempotency import idempotent, idempotent_secret
from .plumbing import current_service, principal
from .responses import json_response

blueprint = Blueprint("webhooks", __name__, url_prefix="/api/v1")


@blueprint.post("/webhook_endpoints")
@idempotent_secret
async def create_webhook_endpoint() -> Response:
    parsed = webhooks.parse_endpoint(await json_object())
    endpoint, secret = await current_service().webhook_endpoints.create(principal().merchant.id, parsed)
    return json_response(endpoints.to_json(endpoint, secret), 201)


@blueprint.get("/webhook_endpoints")
async def list_webhook_endpoints() -> Response:
    """All of the merchant's endpoints in one page (there are few); no query parameters."""
    reject_query(request.args)
    rows = await current_service().webhook_endpoints.all_of(principal().merchant.id)
    return json_response(envelope([endpoints.to_json(row) for row in rows], False, None))


@blueprint.delete("/webhook_endpoints/<endpoint_id>")
async def delete_webhook_endpoint(endpoint_id: str) -> Response:
    deleted = await current_service().webhook_endpoints.delete(principal().merchant.id, endpoint_id)
    return json_response({**endpoints.to_json(deleted), "deleted": True})


@blueprint.post("/webhook_endpoints/<endpoint_id>/rotate_secret")
@idempotent_secret
async def rotate_webhook_secret(endpoint_id: str) -> Response:
    await no_body()
    endpoint, secret = await current_service().webhook_endpoints.rotate_secret(
        principal().merchant.id, endpoint_id
    )
    return json_response(endpoints.to_json(endpoint, secret))


@blueprint.get("/events")
async def list_events() -> Response:
    query = parse_list_query(request.args.to_dict(flat=False), webhooks.EVENT_TYPES, "type")
    rows, has_more = await current_service().webhook_endpoints.events(
        principal().merchant.id, query.status, query.starting_after, query.limit
    )
    data = [json.loads(row.body) for row in rows]
    return json_response(envelope(data, has_more, rows[-1].id if rows else None))


@blueprint.get("/events/<event_id>")
async def get_event(event_id: str) -> Response:
    event = await current_service().webhook_endpoints.event(principal().merchant.id, event_id)
    return Response(event.body, content_type="application/json")


@blueprint.post("/events/<event_id>/redeliver")
@idempotent
async def redeliver_event(event_id: str) -> Response:
    await no_body()
    queued = await current_service().webhook_endpoints.redeliver(principal().merchant.id, event_id)
    return json_response({"object": "redelivery", "event_id": event_id, "deliveries_queued": queued}, 202)
