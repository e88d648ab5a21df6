"""`/api/v1/test_helpers`: test mode's drivers of the real flows, for a merchant's test
suite: pay or expire a checkout session, approve a subscription (no browser, no PIN),
and trigger any event type (`fgcpay.testing`)."""

from __future__ import annotations

from fgcpay.domain import checkout, subscriptions, test_helpers
from fgcpay.testing import flows, triggers
from fgcpay.web.body import json_object, no_body
from fgcpay.web.plumbing import current_service, principal
from fgcpay.web.responses import JSON_TYPE, dump
from quart import Blueprint, Response

from .idempotency import decided_by, idempotent
from .operations import operation

blueprint = Blueprint("test_helpers", __name__, url_prefix="/api/v1/test_helpers")
TAG = "Test helpers"


@blueprint.post("/checkout/sessions/<session_id>/pay")
@operation(
    operation_id="payCheckoutSession",
    summary="Test mode: pay one of your checkout sessions as a test customer",
    description=(
        "The same payment as the hosted page's (its ledger entry, balance, "
        "`checkout.session.paid` event and webhooks), without a browser or a PIN: your API "
        "key vouches for the test customer. `TEST-0002` is 402 `payment_declined` "
        '(`{"reason": "insufficient_funds"}`), `TEST-0003` 402 (`customer_blocked`); '
        "nothing changes then. 409 `checkout_session_not_open` unless the session is "
        "`created` and before its `expires_at`."
    ),
    tag=TAG,
    body=test_helpers.TestPayBody,
    body_optional=True,
    status=200,
    answer="The session, `paid`.",
    schema=checkout.CheckoutSessionWire,
    idempotent=True,
    conflicts=True,
    declines=True,
)
@idempotent
async def pay_session(session_id: str) -> Response:
    service, merchant_id = current_service(), principal().merchant.id
    code = test_helpers.parse_customer_code(
        test_helpers.TestPayBody, await json_object(allow_empty=True)
    )
    # The 200 is stored with the payment's write: a retry after a 503 replays it.
    return await decided_by(
        200,
        lambda answer: flows.pay(service, merchant_id, session_id, code, answer),
        lambda paid: checkout.to_json(paid, service.settings.public_url),
    )


@blueprint.post("/checkout/sessions/<session_id>/expire")
@operation(
    operation_id="expireCheckoutSession",
    summary="Test mode: expire one of your checkout sessions now",
    description=(
        "The session becomes `expired` (its `expires_at` now) and "
        "`checkout.session.expired` is sent, as when its time runs out. 409 "
        "`checkout_session_not_open` unless it is `created`."
    ),
    tag=TAG,
    no_body=True,
    status=200,
    answer="The session, `expired`.",
    schema=checkout.CheckoutSessionWire,
    idempotent=True,
    conflicts=True,
)
@idempotent
async def expire_session(session_id: str) -> Response:
    await no_body()
    service, merchant_id = current_service(), principal().merchant.id
    return await decided_by(
        200,
        lambda answer: flows.expire(service, merchant_id, session_id, answer),
        lambda expired: checkout.to_json(expired, service.settings.public_url),
    )


@blueprint.post("/subscriptions/<subscription_id>/approve")
@operation(
    operation_id="approveSubscription",
    summary="Test mode: approve one of your subscriptions as a test customer",
    description=(
        "The same approval as the hosted page's: the subscription becomes `active`, its "
        "first interval is charged, and `subscription.activated` then `subscription.charged` "
        "are sent; no PIN. `TEST-0004` approves and declines every renewal; `TEST-0002` "
        "and `TEST-0003` are 402 `payment_declined` and change nothing. 409 "
        "`subscription_not_approvable` unless `paused` (and before its `end_date`); 409 "
        "`test_clock_advancing` when an advance of its test clock began while it was being "
        "approved (nothing charged: approve again once the clock is `ready`)."
    ),
    tag=TAG,
    body=test_helpers.TestApproveBody,
    body_optional=True,
    status=200,
    answer="The subscription, `active`.",
    schema=subscriptions.SubscriptionWire,
    idempotent=True,
    conflicts=True,
    declines=True,
)
@idempotent
async def approve_subscription(subscription_id: str) -> Response:
    service, merchant_id = current_service(), principal().merchant.id
    code = test_helpers.parse_customer_code(
        test_helpers.TestApproveBody, await json_object(allow_empty=True)
    )
    return await decided_by(
        200,
        lambda answer: flows.approve(service, merchant_id, subscription_id, code, answer),
        lambda active: subscriptions.to_json(active, service.settings.public_url),
    )


@blueprint.post("/triggers")
@operation(
    operation_id="createTrigger",
    summary="Test mode: make an event of any type, on your object or on new ones",
    description=(
        "Through the real flows (the table in the API reference says what each type does): "
        "on `object` (one of your checkout sessions, subscriptions or refunds that can make "
        "that event, else 409 with the flow's code, such as `checkout_session_not_open`; 404 "
        "for an unknown one; 400 naming `object` for a kind the type does not take), or, "
        "without it, on objects the trigger makes (for `subscription.charged`, "
        "`subscription.payment_failed` and `subscription.ended`, a subscription on a new "
        "test clock, advanced until the event is made). `events` lists every event it "
        "caused, oldest first; they are delivered like any other."
    ),
    tag=TAG,
    body=test_helpers.TriggerBody,
    status=201,
    answer="The trigger: the object the events are about and the events made.",
    schema=test_helpers.TriggerWire,
    idempotent=True,
    conflicts=True,
    finds=True,
)
@idempotent
async def create_trigger() -> Response:
    service, merchant_id = current_service(), principal().merchant.id
    asked = test_helpers.parse_trigger(await json_object())
    done = await triggers.trigger(service, merchant_id, asked.event_type, asked.object_id)
    # Many writes, not one: the 201 is stored after them (`idempotent`), so a retry after
    # a 503 runs the trigger afresh.
    return Response(dump(done.to_json()), status=201, headers={"Content-Type": JSON_TYPE})
