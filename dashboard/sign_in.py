"""`/dashboard/sign-up`, `/dashboard/sign-in` and `/dashboard/sign-out`."""

from __future__ import annotations

from fgcpay.accounts import Refused, SignedIn
from fgcpay.web.plumbing import current_service
from quart import Response, request

from ._pages import (
    SESSION_COOKIE,
    blueprint,
    clear_cookie,
    client_address,
    csrf_ok,
    form_expired,
    not_found,
    render,
    safe_next,
    see_other,
    set_cookie,
    signed_in,
)


def _signed_in(signed: SignedIn, location: str) -> Response:
    response = see_other(location)
    set_cookie(response, SESSION_COOKIE, signed.session_id)
    return response


@blueprint.get("/sign-up")
async def sign_up_page() -> Response:
    if not current_service().settings.dashboard_signup:
        return await not_found()
    return await render("sign_up.html", form={}, refused=Refused())


@blueprint.post("/sign-up")
async def sign_up() -> Response:
    service = current_service()
    if not service.settings.dashboard_signup:
        return await not_found()
    if not await csrf_ok():
        return await form_expired()
    form = await request.form
    # Sign-ups are limited per address like failed API calls (the same buckets).
    verdict = await service.rate_limiter.take("ip:" + client_address())
    if not verdict.allowed:
        refused = Refused("Too many requests from your network. Try again in a minute.")
        return await render("sign_up.html", 429, form=form, refused=refused)
    outcome = await service.accounts.sign_up(
        form.get("name", ""),
        form.get("email", ""),
        form.get("password", ""),
        request.cookies.get(SESSION_COOKIE),
    )
    if isinstance(outcome, Refused):
        return await render("sign_up.html", 400, form=form, refused=outcome)
    return _signed_in(outcome, "/dashboard")


@blueprint.get("/sign-in")
async def sign_in_page() -> Response:
    return await render(
        "sign_in.html", email="", next=safe_next(request.args.get("next")), refused=Refused()
    )


@blueprint.post("/sign-in")
async def sign_in() -> Response:
    if not await csrf_ok():
        return await form_expired()
    form = await request.form
    email = form.get("email", "")
    outcome = await current_service().accounts.sign_in(
        email, form.get("password", ""), client_address(), request.cookies.get(SESSION_COOKIE)
    )
    next_page = safe_next(form.get("next"))
    if isinstance(outcome, Refused):
        status = 429 if outcome.locked else 400
        return await render(
            "sign_in.html", status, email=email[:320], next=next_page, refused=outcome
        )
    return _signed_in(outcome, next_page)


@blueprint.post("/sign-out")
@signed_in
async def sign_out() -> Response:
    session_id = request.cookies.get(SESSION_COOKIE)
    if session_id:
        await current_service().accounts.sign_out(session_id)
    response = see_other("/dashboard/sign-in")
    clear_cookie(response, SESSION_COOKIE)
    return response
