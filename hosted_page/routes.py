"""`/checkout/<id>`: the page, the confirm (or approve) form post, polling status and the
websocket, for a checkout session (`cs_test_...`) or a subscription (`sub_test_...`)."""

from __future__ import annotations

import json
from typing import Any

import trio
from fgcpay.actors.authorization import ALREADY_FINAL
from fgcpay.actors.checkout_session import PAID, ConfirmResult
from fgcpay.actors.subscription import APPROVED, ApproveResult
from fgcpay.domain import checkout, errors, limits, subscriptions
from fgcpay.domain.subscriptions import Subscription
from fgcpay.live_status import HubFull
from fgcpay.live_status import Subscription as StatusSubscription
from fgcpay.storage import DatabaseUnavailable, merchants
from fgcpay.web import page_security as security
from fgcpay.web.errors import api_error_response, database_unavailable
from fgcpay.web.plumbing import current_service
from quart import Blueprint, Response, redirect, render_template, request, websocket

from . import views

blueprint = Blueprint(
    "hosted_page",
    __name__,
    template_folder="templates",
    static_folder="static",
    static_url_path="/static/checkout",
)


async def _render(
    template: str,
    context: dict[str, Any],
    status: int = 200,
    *,
    nonce: str | None = None,
    success_url: str | None = None,
) -> Response:
    service = current_service()
    if nonce is None:
        nonce = request.cookies.get(security.CSRF_COOKIE) or security.new_nonce()
    token = security.csrf_token(service.settings.secret_key, context.get("session_id", ""), nonce)
    body = await render_template(template, **context, csrf_token=token)
    response = Response(body, status=status, content_type="text/html; charset=utf-8")
    response.headers.update(security.page_headers(success_url))
    if context.get("session_id"):
        response.set_cookie(
            security.CSRF_COOKIE,
            nonce,
            path=f"/checkout/{context['session_id']}",
            httponly=True,
            samesite="Strict",
            secure=service.settings.public_url.startswith("https://"),
        )
    return response


async def _not_found() -> Response:
    return await _render("not_found.html", {}, 404)


# WebSocket close code 1013 "Try Again Later": the page's script reconnects with backoff.
TRY_AGAIN_LATER = 1013


@blueprint.errorhandler(DatabaseUnavailable)
@blueprint.errorhandler(errors.Unavailable)
async def _unavailable(error: Exception) -> Response:
    """The database (or a session's actor) cannot answer: the page says to try again
    shortly, in HTML with 503 and `Retry-After`; the status poll gets the same as JSON."""
    busy = database_unavailable(error) if isinstance(error, DatabaseUnavailable) else error
    assert isinstance(busy, errors.Unavailable)
    if _is_status_poll():
        return _json_error(busy)
    response = await _render("unavailable.html", {}, 503)
    response.headers["Retry-After"] = str(busy.retry_after_seconds)
    return response


def _is_status_poll() -> bool:
    return request.path.endswith("/status")


def _json_error(error: errors.ServiceError) -> Response:
    """An error of the status poll or of the socket's handshake: the service's one JSON
    error answer (with its `request_id`), and the page's headers."""
    response = api_error_response(error)
    response.headers.update(security.page_headers())
    return response


async def error_page(error: errors.ServiceError) -> Response | None:
    """The page's answer to an error under /checkout that no route answered (a path it
    does not publish, a doubled or trailing slash included): the 404 page. Other errors,
    and any error of the status poll, stay JSON."""
    if error.status != 404 or _is_status_poll():
        return None
    return await _not_found()


async def _find(page_id: str) -> views.Shown | None:
    """The session or subscription a page id names (the id is the capability)."""
    service = current_service()
    if page_id.startswith(subscriptions.SUBSCRIPTION_PREFIX):
        return await service.subscriptions.find(page_id)
    return await service.checkout.find(page_id)


async def _now_of(shown: views.Shown) -> int:
    """The time the page judges `shown` at: a subscription on a test clock lives by the
    clock's time (as its actor does), anything else by the service's."""
    service = current_service()
    if isinstance(shown, Subscription) and shown.test_clock_id is not None:
        try:
            clock = await service.test_clocks.get(shown.merchant_id, shown.test_clock_id)
        except errors.NotFound:
            pass  # deleted, with its subscriptions: the page is about to say not found
        else:
            return clock.frozen_time
    return service.clock.now_us()


async def _context(
    session: views.Shown, message: str | None = None, customer_code: str = ""
) -> dict[str, Any]:
    service = current_service()
    merchant = await service.db.read(merchants.merchant_by_id, session.merchant_id)
    now_us = await _now_of(session)
    context = views.page_context(session, merchant.name if merchant else "", now_us)
    context["message"] = message
    context["customer_code"] = customer_code[:32]  # kept for another try; the PIN never is
    return context


@blueprint.get("/checkout/<session_id>")
async def checkout_page(session_id: str) -> Response:
    session = await _find(session_id)
    if session is None:
        return await _not_found()
    return await _render("checkout.html", await _context(session), success_url=session.success_url)


@blueprint.post("/checkout/<session_id>")
async def confirm(session_id: str) -> Response:
    service = current_service()
    session = await _find(session_id)
    if session is None:
        return await _not_found()
    form = await request.form
    nonce = request.cookies.get(security.CSRF_COOKIE)
    if not security.csrf_ok(service.settings.secret_key, session.id, nonce, form.get("csrf_token")):
        context = await _context(session, "This page was open too long. Please try again.")
        return await _render("checkout.html", context, 400, success_url=session.success_url)
    if isinstance(session, Subscription):
        return await _approve(session, form.get("customer_code", ""), form.get("pin", ""), nonce)
    try:
        # The session just read: the actor this confirm starts need not read it again.
        result: ConfirmResult = await service.checkout.confirm(
            session.id, form.get("customer_code", ""), form.get("pin", ""), session
        )
    except errors.Unavailable as busy:
        return await _confirm_unanswered(session, busy, form.get("customer_code", ""), nonce)
    if result.outcome == PAID:
        return redirect(views.success_redirect(result.session), 303)  # type: ignore[return-value]
    message = None if result.outcome == ALREADY_FINAL else result.message
    status = 200 if result.outcome == ALREADY_FINAL else 400
    context = await _context(result.session, message, form.get("customer_code", ""))
    return await _render(
        "checkout.html", context, status, nonce=nonce, success_url=session.success_url
    )


async def _confirm_unanswered(
    session: checkout.CheckoutSession,
    busy: errors.Unavailable,
    customer_code: str,
    nonce: str | None,
) -> Response:
    """The confirm got no answer in time (slow or unavailable): show its true outcome.

    The confirm may still commit after its ask lapsed, so the customer is never told of an
    error for a payment that went through: once the session's actor has finished with it,
    a paid session redirects like any success. Only when it is still unpaid does the page
    say to try again (HTML, 503, `Retry-After`); paying twice is impossible.
    """
    settled = await current_service().checkout.settled(session.id)
    if settled is not None and settled.status == checkout.PAID:
        return redirect(views.success_redirect(settled), 303)  # type: ignore[return-value]
    current = settled or session
    back_to = session.success_url
    if settled is not None and settled.status in views.SESSION_STOPS:
        context = await _context(current)  # expired meanwhile: the page says so
        return await _render("checkout.html", context, 200, nonce=nonce, success_url=back_to)
    context = await _context(current, views.TRY_AGAIN, customer_code)
    response = await _render("checkout.html", context, 503, nonce=nonce, success_url=back_to)
    response.headers["Retry-After"] = str(busy.retry_after_seconds)
    return response


async def _approve(sub: Subscription, customer_code: str, pin: str, nonce: str | None) -> Response:
    """The approval form post, answered as a session's confirm: 303 to `success_url` with
    `subscription_id`, the page with the refusal's message (400), or without one once
    there is nothing to approve (200)."""
    try:
        result: ApproveResult = await current_service().subscriptions.approve(
            sub.id, customer_code, pin, sub
        )
    except errors.Unavailable as busy:
        return await _approve_unanswered(sub, busy, customer_code, nonce)
    if result.outcome == APPROVED:
        return redirect(views.success_redirect(result.subscription), 303)  # type: ignore[return-value]
    message = None if result.outcome == ALREADY_FINAL else result.message
    status = 200 if result.outcome == ALREADY_FINAL else 400
    context = await _context(result.subscription, message, customer_code)
    return await _render("checkout.html", context, status, nonce=nonce, success_url=sub.success_url)


async def _approve_unanswered(
    sub: Subscription, busy: errors.Unavailable, customer_code: str, nonce: str | None
) -> Response:
    """The approval got no answer in time: show its true outcome, as `_confirm_unanswered`.

    The actor handles one message at a time, so a snapshot asked now comes after that
    approval committed or gave up; an approved subscription redirects like any success.
    """
    settled = await _settled_subscription(sub.id)
    if settled is not None and settled.approved_at is not None:
        return redirect(views.success_redirect(settled), 303)  # type: ignore[return-value]
    current = settled or sub
    if settled is not None and settled.status in views.SUBSCRIPTION_STOPS:
        context = await _context(current)  # cancelled meanwhile: the page says so
        return await _render(
            "checkout.html", context, 200, nonce=nonce, success_url=sub.success_url
        )
    context = await _context(current, views.TRY_AGAIN, customer_code)
    response = await _render(
        "checkout.html", context, 503, nonce=nonce, success_url=sub.success_url
    )
    response.headers["Retry-After"] = str(busy.retry_after_seconds)
    return response


async def _settled_subscription(subscription_id: str) -> Subscription | None:
    # The actor's word once it has handled what it had queued; else storage's; else None
    # (the page still answers: it says to try again).
    service = current_service()
    try:
        return await service.subscriptions.snapshot(subscription_id)
    except errors.ServiceError:
        pass
    try:
        return await service.subscriptions.find(subscription_id)
    except (DatabaseUnavailable, errors.ServiceError):
        return None


def _status_body(session: views.Shown, now_us: int) -> dict[str, str]:
    return {"id": session.id, "status": views.display_status(session, now_us)}


@blueprint.get("/checkout/<session_id>/status")
async def status(session_id: str) -> Response:
    session = await _find(session_id)
    if session is None:
        return _not_found_json()
    return Response(
        json.dumps(_status_body(session, await _now_of(session))),
        content_type="application/json",
        headers=security.page_headers(),
    )


def _not_found_json() -> Response:
    return _json_error(errors.NotFound("No such checkout session or subscription."))


@blueprint.websocket("/checkout/<session_id>/ws")
async def status_socket(session_id: str) -> Response | None:
    """Sends `{"id", "status"}` at once and after every change; closes once final
    (`views.stops_at`: a subscription's page stays live while active or past due).

    An unknown id is refused in the handshake with 404; a page holding
    `MAX_STATUS_SOCKETS_PER_PAGE` sockets in this process already with 429, and any page
    while the process holds `MAX_STATUS_SOCKETS_PER_PROCESS` with 503 (`domain.limits`):
    the page's script then polls `GET /checkout/<id>/status`. While the database (or the
    session's actor) cannot answer, it closes with 1013 "Try Again Later".
    """
    service = current_service()
    try:
        session = await _find(session_id)
    except (DatabaseUnavailable, errors.Unavailable):
        await websocket.accept()
        await websocket.close(TRY_AGAIN_LATER, "unavailable, try again later")
        return None
    if session is None:
        return _not_found_json()
    try:
        # Subscribed before accepting, so a socket past the bounds is refused in the
        # handshake, and before reading, so no change between the read and now is missed.
        with service.status_hub.subscribe(
            session.id,
            most_each=limits.MAX_STATUS_SOCKETS_PER_PAGE,
            most_in_all=limits.MAX_STATUS_SOCKETS_PER_PROCESS,
        ) as subscription:
            await websocket.accept()
            try:
                await _send_changes(session, subscription)
            except (DatabaseUnavailable, errors.Unavailable):
                await websocket.close(TRY_AGAIN_LATER, "unavailable, try again later")
                return None
            await websocket.close(1000, "final")
    except HubFull as full:
        return _json_error(_too_many_sockets(session.id, full))
    except trio.BusyResourceError:
        # The client closed the connection while a frame of ours was on its way: hypercorn
        # shuts the socket down (its `send_eof`) outside the lock its frames are sent
        # under, and our frame's send meets it. The client has gone; nothing to answer.
        return None
    return None


# How long a refused socket is told to wait: the page polls meanwhile, and its script
# waits at most this long between tries (checkout.js).
SOCKET_RETRY_AFTER_SECONDS = 30


def _too_many_sockets(session_id: str, full: HubFull) -> errors.ServiceError:
    poll = f"GET /checkout/{session_id}/status"
    if full.whole:
        return errors.Unavailable(
            f"This server holds the most live status connections it may ({full.most}):"
            f" poll {poll} instead.",
            retry_after_seconds=SOCKET_RETRY_AFTER_SECONDS,
        )
    return errors.RateLimited(
        SOCKET_RETRY_AFTER_SECONDS,
        f"This page has {full.most} live status connections open already, the most at"
        f" once: close one, or poll {poll} instead.",
    )


async def _send_changes(session: views.Shown, subscription: StatusSubscription) -> None:
    stops = views.stops_at(session)
    fresh = await _find(session.id)
    shown = fresh or session
    current = _status_body(shown, await _now_of(shown))
    await websocket.send(json.dumps(current))
    while current["status"] not in stops:
        update = await subscription.next()
        if update["status"] != current["status"]:
            current = {"id": session.id, "status": update["status"]}
            await websocket.send(json.dumps(current))
