"""`/dashboard/checkout-sessions` and `/dashboard/subscriptions`: the lists, the detail
pages, and cancelling a subscription (after a confirmation) through the subscription's
actor, as `POST /subscriptions/{id}/cancel` does, so `subscription.cancelled` is sent the
same way."""

from __future__ import annotations

from fgcpay.domain import checkout, errors, subscriptions
from fgcpay.domain.checkout import CheckoutSession
from fgcpay.domain.subscriptions import Subscription
from fgcpay.web.plumbing import current_service
from quart import Response, request

from ._listing import Listing, amount, detail_page, find, list_page
from ._pages import blueprint, current, not_found, render, see_other, signed_in, when

SESSIONS: Listing[CheckoutSession] = Listing(
    endpoint="dashboard.checkout_sessions",
    detail="dashboard.checkout_session",
    title="Checkout sessions",
    noun="checkout session",
    query=checkout.CheckoutSessionQuery,
    filter_name="status",
    choices=checkout.STATUSES,
    columns=("Description", "Amount", "Status", "Created"),
    page=lambda service, *page: service.checkout.page(*page),
    get=lambda service, merchant_id, item_id: service.checkout.get(merchant_id, item_id),
    cells=lambda s: (
        s.description,
        amount(s.amount_minor, s.currency),
        s.status,
        when(s.created_at),
    ),
    item_id=lambda s: s.id,
)

SUBSCRIPTIONS: Listing[Subscription] = Listing(
    endpoint="dashboard.subscriptions",
    detail="dashboard.subscription",
    title="Subscriptions",
    noun="subscription",
    query=subscriptions.SubscriptionQuery,
    filter_name="status",
    choices=subscriptions.STATUSES,
    columns=("Description", "Amount", "Status", "Customer", "Created"),
    page=lambda service, *page: service.subscriptions.page(*page),
    get=lambda service, merchant_id, item_id: service.subscriptions.get(merchant_id, item_id),
    cells=lambda s: (
        s.description,
        f"{amount(s.amount_minor, s.currency)} {s.interval}",
        s.status,
        s.merchant_customer_reference,
        when(s.created_at),
    ),
    item_id=lambda s: s.id,
)


def _session_wire(session: CheckoutSession) -> checkout.CheckoutSessionWire:
    return checkout.to_json(session, current_service().settings.public_url)


def _subscription_wire(sub: Subscription) -> subscriptions.SubscriptionWire:
    return subscriptions.to_json(sub, current_service().settings.public_url)


def _cancellable(sub: Subscription) -> bool:
    return subscriptions.STATES.allows(sub.status, subscriptions.CANCELLED)


@blueprint.get("/checkout-sessions")
@signed_in
async def checkout_sessions() -> Response:
    return await list_page(SESSIONS)


@blueprint.get("/checkout-sessions/<item_id>")
@signed_in
async def checkout_session(item_id: str) -> Response:
    return await detail_page(SESSIONS, item_id, _session_wire)


@blueprint.get("/subscriptions", endpoint="subscriptions")
@signed_in
async def subscriptions_list() -> Response:
    return await list_page(SUBSCRIPTIONS)


@blueprint.get("/subscriptions/<item_id>")
@signed_in
async def subscription(item_id: str) -> Response:
    return await _subscription_page(item_id)


async def _subscription_page(item_id: str, status: int = 200, problem: str = "") -> Response:
    return await detail_page(
        SUBSCRIPTIONS,
        item_id,
        _subscription_wire,
        status,
        actions="dashboard/_subscription_actions.html",
        cancellable=_cancellable,
        cancelled=request.args.get("cancelled") == "1",
        problem=problem,
    )


@blueprint.get("/subscriptions/<item_id>/cancel")
@signed_in
async def confirm_cancel(item_id: str) -> Response:
    found = await find(SUBSCRIPTIONS, item_id)
    if found is None:
        return await not_found()
    return await render(
        "subscription_cancel.html", subscription=found, cancellable=_cancellable(found)
    )


@blueprint.post("/subscriptions/<item_id>/cancel")
@signed_in
async def cancel(item_id: str) -> Response:
    try:
        await current_service().subscriptions.cancel(current().merchant.id, item_id)
    except errors.NotFound:
        return await not_found()
    except errors.Conflict as conflict:
        return await _subscription_page(item_id, conflict.status, conflict.message)
    return see_other(f"/dashboard/subscriptions/{item_id}?cancelled=1")
