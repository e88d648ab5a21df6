"""`/api/v1/subscriptions`: create, list, retrieve, cancel."""

from __future__ import annotations

from fgcpay.domain import errors, subscriptions
from fgcpay.domain.lists import Page
from fgcpay.web.body import json_object, no_body
from fgcpay.web.plumbing import current_service, principal
from quart import Blueprint, Response

from .idempotency import created, decided_by, idempotent
from .listing import by_status, get_route, linked, list_route
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


list_route(
    blueprint,
    "",
    query=subscriptions.SubscriptionQuery,
    page=by_status(lambda service: service.subscriptions.page),
    wire=linked(subscriptions.to_json),
    operation_id="listSubscriptions",
    summary="List subscriptions, newest first",
    tag=TAG,
    answer="A page of subscriptions.",
    schema=Page[subscriptions.SubscriptionWire],
)
get_route(
    blueprint,
    "/<subscription_id>",
    get=lambda service: service.subscriptions.get,
    wire=linked(subscriptions.to_json),
    operation_id="getSubscription",
    summary="Retrieve a subscription",
    tag=TAG,
    answer="The subscription.",
    schema=subscriptions.SubscriptionWire,
)


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
