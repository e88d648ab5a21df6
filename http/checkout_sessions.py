"""`/api/v1/checkout/sessions`: create, list, retrieve."""

from __future__ import annotations

from fgcpay.domain import checkout
from fgcpay.domain.lists import Page, envelope, parse_list_query
from fgcpay.web.body import json_object
from fgcpay.web.plumbing import current_service, principal
from fgcpay.web.responses import json_response
from quart import Blueprint, Response, request

from .idempotency import created, idempotent
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


@blueprint.get("")
@operation(
    operation_id="listCheckoutSessions",
    summary="List checkout sessions, newest first",
    tag=TAG,
    query=checkout.CheckoutSessionQuery,
    status=200,
    answer="A page of sessions.",
    schema=Page[checkout.CheckoutSessionWire],
)
async def list_checkout_sessions() -> Response:
    service = current_service()
    query = parse_list_query(checkout.CheckoutSessionQuery, request.args.to_dict(flat=False))
    rows, has_more = await service.checkout.page(
        principal().merchant.id, query.status, query.starting_after, query.limit
    )
    public_url = service.settings.public_url
    data = [checkout.to_json(row, public_url) for row in rows]
    return json_response(envelope(data, has_more, rows[-1].id if rows else None))


@blueprint.get("/<session_id>")
@operation(
    operation_id="getCheckoutSession",
    summary="Retrieve a checkout session",
    tag=TAG,
    status=200,
    answer="The session.",
    schema=checkout.CheckoutSessionWire,
)
async def get_checkout_session(session_id: str) -> Response:
    service = current_service()
    session = await service.checkout.get(principal().merchant.id, session_id)
    return json_response(checkout.to_json(session, service.settings.public_url))
