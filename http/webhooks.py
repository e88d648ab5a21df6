"""`/api/v1/webhook_endpoints` and `/api/v1/events`."""

from __future__ import annotations

import json

from fgcpay.domain import endpoints
from fgcpay.domain.endpoint_requests import (
    WebhookEndpointCreate,
    WebhookEndpointUpdate,
    parse_endpoint,
    parse_endpoint_update,
)
from fgcpay.domain.endpoints import WebhookEndpoint
from fgcpay.domain.events import EventQuery, EventWire, RedeliveryWire, redelivery_to_json
from fgcpay.domain.lists import Page
from fgcpay.domain.receiver_check import WebhookCheckWire, report_to_json
from fgcpay.web.body import json_object, no_body
from fgcpay.web.plumbing import current_service, principal
from fgcpay.web.responses import JSON_TYPE, json_response
from fgcpay.web.service import Service
from quart import Blueprint, Response

from .idempotency import idempotent, idempotent_secret
from .listing import get_route, list_route
from .operations import operation

blueprint = Blueprint("webhooks", __name__, url_prefix="/api/v1")
WEBHOOKS = "Webhooks"
EVENTS = "Events"


@blueprint.post("/webhook_endpoints")
@operation(
    operation_id="createWebhookEndpoint",
    summary="Register a webhook endpoint",
    tag=WEBHOOKS,
    body=WebhookEndpointCreate,
    status=201,
    answer="Created; the answer carries the signing secret, shown this once.",
    schema=endpoints.WebhookEndpointWire,
    idempotent=True,
)
@idempotent_secret
async def create_webhook_endpoint() -> Response:
    parsed = parse_endpoint(await json_object())
    endpoint, secret = await current_service().webhook_endpoints.create(
        principal().merchant.id, parsed
    )
    return json_response(endpoints.to_json(endpoint, secret), 201)


async def _all_endpoints(
    service: Service, merchant_id: str, _: None
) -> tuple[list[WebhookEndpoint], bool]:
    """All of the merchant's endpoints in one page (there are few)."""
    return await service.webhook_endpoints.all_of(merchant_id), False


list_route(
    blueprint,
    "/webhook_endpoints",
    query=None,
    page=_all_endpoints,
    wire=lambda _: endpoints.to_json,
    operation_id="listWebhookEndpoints",
    summary="List webhook endpoints (one page; no parameters)",
    tag=WEBHOOKS,
    answer="All endpoints, newest first.",
    schema=Page[endpoints.WebhookEndpointWire],
)
get_route(
    blueprint,
    "/webhook_endpoints/<endpoint_id>",
    get=lambda service: service.webhook_endpoints.get,
    wire=lambda _: endpoints.to_json,
    operation_id="getWebhookEndpoint",
    summary="Retrieve a webhook endpoint (never its secret)",
    tag=WEBHOOKS,
    answer="The endpoint.",
    schema=endpoints.WebhookEndpointWire,
)


@blueprint.patch("/webhook_endpoints/<endpoint_id>")
@operation(
    operation_id="updateWebhookEndpoint",
    summary="Change a webhook endpoint's URL, event types or faults (only the fields given)",
    description=(
        "Each field given is checked as the create checks it; the others are left as they "
        'are (`"faults": null` clears the faults). Deliveries already queued keep their '
        "event types and faults and go to the URL as it is when they are attempted; faults "
        "given count the endpoint's deliveries from the 1st again. The secret is not shown "
        "(rotate_secret replaces it)."
    ),
    tag=WEBHOOKS,
    body=WebhookEndpointUpdate,
    status=200,
    answer="The endpoint as changed.",
    schema=endpoints.WebhookEndpointWire,
)
async def update_webhook_endpoint(endpoint_id: str) -> Response:
    change = parse_endpoint_update(await json_object())
    changed = await current_service().webhook_endpoints.update(
        principal().merchant.id, endpoint_id, change
    )
    return json_response(endpoints.to_json(changed))


@blueprint.delete("/webhook_endpoints/<endpoint_id>")
@operation(
    operation_id="deleteWebhookEndpoint",
    summary="Delete a webhook endpoint; its pending deliveries are marked failed",
    tag=WEBHOOKS,
    status=200,
    answer="Deleted.",
    schema=endpoints.WebhookEndpointWire,
)
async def delete_webhook_endpoint(endpoint_id: str) -> Response:
    deleted = await current_service().webhook_endpoints.delete(principal().merchant.id, endpoint_id)
    body = endpoints.to_json(deleted)
    body["deleted"] = True
    return json_response(body)


@blueprint.post("/webhook_endpoints/<endpoint_id>/rotate_secret")
@operation(
    operation_id="rotateWebhookSecret",
    summary=(
        "Rotate the signing secret; the old one still signs (a second v1= value) for 24 hours"
    ),
    tag=WEBHOOKS,
    no_body=True,
    status=200,
    answer=(
        "The endpoint with its new secret, and `previous_secret_expires_at`: until then the "
        "old secret signs every delivery too."
    ),
    schema=endpoints.WebhookEndpointWire,
    idempotent=True,
)
@idempotent_secret
async def rotate_webhook_secret(endpoint_id: str) -> Response:
    await no_body()
    endpoint, secret = await current_service().webhook_endpoints.rotate_secret(
        principal().merchant.id, endpoint_id
    )
    return json_response(endpoints.rotated_to_json(endpoint, secret))


list_route(
    blueprint,
    "/events",
    query=EventQuery,
    page=lambda service, merchant_id, query: service.webhook_endpoints.events(
        merchant_id, query.type, query.starting_after, query.limit
    ),
    wire=lambda _: lambda event: json.loads(event.body),  # its body as stored
    operation_id="listEvents",
    summary="List events of the last 30 days, newest first",
    tag=EVENTS,
    answer="A page of events.",
    schema=Page[EventWire],
)
get_route(
    blueprint,
    "/events/<event_id>",
    get=lambda service: service.webhook_endpoints.event,
    # As stored: the exact bytes its deliveries sent, not parsed and written again.
    wire=lambda _: lambda event: event.body,
    respond=lambda body: Response(body, content_type=JSON_TYPE),
    operation_id="getEvent",
    summary="Retrieve an event (the exact body its deliveries send)",
    tag=EVENTS,
    answer="The event.",
    schema=EventWire,
)


@blueprint.post("/events/<event_id>/redeliver")
@operation(
    operation_id="redeliverEvent",
    summary="Queue a new delivery of the event to each subscribed endpoint",
    tag=EVENTS,
    no_body=True,
    status=202,
    answer="Queued.",
    schema=RedeliveryWire,
    idempotent=True,
)
@idempotent
async def redeliver_event(event_id: str) -> Response:
    await no_body()
    queued = await current_service().webhook_endpoints.redeliver(principal().merchant.id, event_id)
    return json_response(redelivery_to_json(event_id, queued), 202)


@blueprint.post("/webhook_endpoints/<endpoint_id>/check")
@operation(
    operation_id="checkWebhookEndpoint",
    summary="Check the endpoint's receiver: eight deliveries it must accept or refuse",
    description=(
        "Sends the endpoint, one after another, eight deliveries of an event of type "
        "`webhook_endpoint.check` (not an event: in no list and no delivery log): "
        "`signed`, `redelivery` and `rotated_secrets` must be answered 2xx, "
        "`bad_signature`, `tampered_body`, `stale_timestamp`, `future_timestamp` and "
        "`missing_signature` 4xx. Each delivery waits at most 10 s for its answer and the "
        "whole check at most 25 s. A URL the private-network rule refuses is 400 "
        "`validation_error` on `url`, nothing sent; a check of the same endpoint already "
        "running is 429 `rate_limited`."
    ),
    tag=WEBHOOKS,
    no_body=True,
    status=200,
    answer="The report: each check, passed or not, with what passes it and what came.",
    schema=WebhookCheckWire,
)
async def check_webhook_endpoint(endpoint_id: str) -> Response:
    await no_body()
    service = current_service()
    endpoint = await service.webhook_endpoints.get(principal().merchant.id, endpoint_id)
    report = await service.receiver_checks.check_endpoint(
        endpoint.id, endpoint.url, service.webhook_endpoints.signing_secrets(endpoint)
    )
    return json_response(report_to_json(report, endpoint.id))
