"""`/api/v1/checkout/sessions`: create, list, retrieve."""

from __future__ import annotations

from fgcpay.domain import checkout
from fgcpay.domain.lists import envelope, parse_list_query
from quart import Blueprint, Response, request

from .body import json_object
from .idempotency import idempotent, pending, stored_headers
from .plumbing import current_service, principal
from .responses import JSON_TYPE, dump, json_response

blueprint = Blueprint("checkout_sessions", __name__, url_prefix="/api/v1/checkout/sessions")


@blueprint.post("")
@idempotent
async def create_checkout_session() -> Response:
    service = current_service()
    merchant = principal().merchant
    body = await json_object()
    parsed = checkout.parse_create(body)
    session = service.checkout.build(parsed, merchant.id)
    text = dump(checkout.to_json(session, service.settings.public_url))
    headers = {"Content-Type": JSON_TYPE}
    if parsed.used_amount_minor:
        headers["Deprecation"] = "true"
    claim = pending()
    completion = claim.completion(201, stored_headers(headers), text) if claim else None
    await service.checkout.create(session, completion)
    if claim:
        claim.recorded = True
    return Response(text, status=201, headers=headers)


@blueprint.get("")
async def list_checkout_sessions() -> Response:
    service = current_service()
    query = parse_list_query(request.args.to_dict(flat=False), checkout.STATUSES)
    rows, has_more = await service.checkout.page(
        principal().merchant.id, query.status, query.starting_after, query.limit
    )
    public_url = service.settings.public_url
    data = [checkout.to_json(row, public_url) for row in rows]
    return json_response(envelope(data, has_more, rows[-1].id if rows else None))


@blueprint.get("/<session_id>")
async def get_checkout_session(session_id: str) -> Response:
    service = current_service()
    session = await service.checkout.get(principal().merchant.id, session_id)
    return json_response(checkout.to_json(session, service.settings.public_url))
