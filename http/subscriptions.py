"""`/api/v1/subscriptions`: create, list, retrieve, cancel."""

from __future__ import annotations

from fgcpay.domain import errors, subscriptions
from fgcpay.domain.lists import Page, envelope, parse_list_query
from fgcpay.web.body import json_object, no_body
from fgcpay.web.plumbing import current_service, principal
from fgcpay.web.responses import json_response
from quart import Blueprint, Response, request

from .idempotency import created, decided_by, idempotent
from .operations import operation

blueprint = Blueprint("subscriptions", __name__, url_prefix="/api/v1/subscriptions")
TAG = "Subscriptions"


@blueprint.post("")
@operation(
    operation_id="createSubscription",
    summary="Create a subscription (paused until the customer approves it)",
    tag=TAG,
    body=subscriptions.SubscriptionCreate,
    status=201,
    answer="Created, status `paused`; send the customer to `checkout_url` to approve.",
    schema=subscriptions.SubscriptionWire,
    idempotent=True,
    headers=("Deprecation",),
)
@idempotent
async def create_subscription() -> Response:
    service = current_service()
    merchant = principal().merchant
    body = await json_object()
    # The subscription lives on its test clock's time: read the clock before the rules
    # that depend on the creation time (end_date in the future).
    unknown_clock: errors.ValidationFailed | None = None
    try:
        now_us = await service.subscriptions.creation_time(
            merchant.id, subscriptions.requested_test_clock(body)
        )
    except errors.ValidationFailed as failed:
        unknown_clock, now_us = failed, service.clock.now_us()
    try:
        parsed = subscriptions.parse_create(body, now_us)
    except errors.ValidationFailed as failed:
        if unknown_clock is None:
            raise
        raise errors.ValidationFailed(failed.errors + unknown_clock.errors) from None
    if unknown_clock is not None:
        raise unknown_clock
    subscription = service.subscriptions.build(parsed, merchant.id, now_us)
    return await created(
        subscriptions.to_json(subscription, service.settings.public_url),
        lambda completion: service.subscriptions.create(subscription, completion),
        deprecated=parsed.used_amount_minor,
    )


@blueprint.get("")
@operation(
    operation_id="listSubscriptions",
    summary="List subscriptions, newest first",
    tag=TAG,
    query=subscriptions.SubscriptionQuery,
    status=200,
    answer="A page of subscriptions.",
    schema=Page[subscriptions.SubscriptionWire],
)
async def list_subscriptions() -> Response:
    service = current_service()
    query = parse_list_query(subscriptions.SubscriptionQuery, request.args.to_dict(flat=False))
    rows, has_more = await service.subscriptions.page(
        principal().merchant.id, query.status, query.starting_after, query.limit
    )
    public_url = service.settings.public_url
    data = [subscriptions.to_json(row, public_url) for row in rows]
    return json_response(envelope(data, has_more, rows[-1].id if rows else None))


@blueprint.get("/<subscription_id>")
@operation(
    operation_id="getSubscription",
    summary="Retrieve a subscription",
    tag=TAG,
    status=200,
    answer="The subscription.",
    schema=subscriptions.SubscriptionWire,
)
async def get_subscription(subscription_id: str) -> Response:
    service = current_service()
    found = await service.subscriptions.get(principal().merchant.id, subscription_id)
    return json_response(subscriptions.to_json(found, service.settings.public_url))


@blueprint.post("/<subscription_id>/cancel")
@operation(
    operation_id="cancelSubscription",
    summary="Cancel a subscription: no further charges (409 once cancelled or ended)",
    tag=TAG,
    no_body=True,
    status=200,
    answer="The subscription, `cancelled`.",
    schema=subscriptions.SubscriptionWire,
    idempotent=True,
    conflicts=True,
)
@idempotent
async def cancel_subscription(subscription_id: str) -> Response:
    await no_body()
    service, merchant_id = current_service(), principal().merchant.id
    public_url = service.settings.public_url
    # The 200 is stored with the cancel's write: a retry after a 503 replays it.
    return await decided_by(
        200,
        lambda answer: service.subscriptions.cancel(merchant_id, subscription_id, answer),
        lambda cancelled: subscriptions.to_json(cancelled, public_url),
    )
