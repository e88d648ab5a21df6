"""`/api/v1/checkout/sessions`: create, list, retrieve."""

from __future__ import annotations

from fgcpay.domain import checkout
from fgcpay.domain.lists import Page
from fgcpay.web.body import json_object
from fgcpay.web.plumbing import current_service, principal
from quart import Blueprint, Response

from .idempotency import created, idempotent
from .listing import by_status, get_route, linked, list_route
from .operations import operation

blueprint = Blueprint("checkout_sessions", __name__, url_prefix="/api/v1/checkout/sessions")
TAG = "Checkout sessions"


@blueprint.post("")
@operation(
    operation_id="createCheckoutSession",
    summary="Create a one-time checkout session",
    tag=TAG,
    body=checkout.CheckoutSessionCreate,
    status=201,
    answer="Created, status `created`.",
    schema=checkout.CheckoutSessionWire,
    idempotent=True,
    headers=("Deprecation",),
)
@idempotent
async def create_checkout_session() -> Response:
    service = current_service()
    merchant = principal().merchant
    body = await json_object()
    parsed = checkout.parse_create(body)
    session = service.checkout.build(parsed, merchant.id)
    return await created(
        checkout.to_json(session, service.settings.public_url),
        lambda completion: service.checkout.create(session, completion),
        deprecated=parsed.used_amount_minor,
    )


list_route(
    blueprint,
    "",
    query=checkout.CheckoutSessionQuery,
    page=by_status(lambda service: service.checkout.page),
    wire=linked(checkout.to_json),
    operation_id="listCheckoutSessions",
    summary="List checkout sessions, newest first",
    tag=TAG,
    answer="A page of sessions.",
    schema=Page[checkout.CheckoutSessionWire],
)
get_route(
    blueprint,
    "/<session_id>",
    get=lambda service: service.checkout.get,
    wire=linked(checkout.to_json),
    operation_id="getCheckoutSession",
    summary="Retrieve a checkout session",
    tag=TAG,
    answer="The session.",
    schema=checkout.CheckoutSessionWire,
)
