"""What every dashboard page shares: the blueprint, the layout's navigation, rendering with
the hosted page's headers (CSP, no framing, no caching), the session and CSRF cookies,
and the signed-in guard every page but sign-in and sign-up goes through."""

from __future__ import annotations

import functools
import re
import time
from collections.abc import Awaitable, Callable
from typing import Any
from urllib.parse import urlencode

from fgcpay.accounts import Current
from fgcpay.domain import errors
from fgcpay.web import page_security as security
from fgcpay.web.plumbing import current_service
from quart import Blueprint, Response, g, redirect, render_template, request

blueprint = Blueprint(
    "dashboard",
    __name__,
    url_prefix="/dashboard",
    template_folder="templates",
    static_folder="static",
    static_url_path="/static",
)

# Both cookies live under /dashboard only. The session's is SameSite=Lax (a link from an
# email opens a signed-in page); forms are guarded by the CSRF token, whose nonce cookie
# is Strict.
SESSION_COOKIE = "fgc_dashboard_session"
CSRF_COOKIE = "fgc_dashboard_csrf"
COOKIE_PATH = "/dashboard"

# The layout's navigation, in order: (endpoint, label). The payments' pages share one
# entry, their tabs are _listing.TABS.
NAV = [
    ("dashboard.home", "Home"),
    ("dashboard.api_keys", "API keys"),
    ("dashboard.checkout_sessions", "Payments"),
    ("dashboard.webhooks_page", "Webhooks"),
    ("dashboard.sandboxes", "Sandboxes"),
]

View = Callable[..., Awaitable[Response]]


def client_address() -> str:
    # Behind trusted proxies, the client they forwarded (`fgcpay.web.proxies` resolved it).
    client = request.scope.get("client")
    return str(client[0]) if client else "unknown"


def _secure() -> bool:
    settings = current_service().settings
    if settings.trusted_proxy_hops and not settings.public_url_set:
        # The scheme the proxy forwarded: the one the browser uses (`fgcpay.web.proxies`).
        return request.scheme == "https"
    return settings.public_url.startswith("https://")


def _csrf_binding() -> str:
    # Tokens are bound to the session (or its absence): a sign-in changes every token.
    current: Current | None = getattr(g, "dashboard", None)
    return "dashboard:" + (current.session.id_hash if current else "signed-out")


def _nonce() -> str:
    nonce: str | None = getattr(g, "csrf_nonce", None)
    if nonce is None:
        nonce = request.cookies.get(CSRF_COOKIE) or security.new_nonce()
        g.csrf_nonce = nonce
    return nonce


async def csrf_ok() -> bool:
    """Whether the posted form carries the token of this browser's page."""
    form = await request.form
    secret = current_service().settings.secret_key
    nonce = request.cookies.get(CSRF_COOKIE)
    return security.csrf_ok(secret, _csrf_binding(), nonce, form.get("csrf_token"))


def when(us: int | None) -> str:
    """A time as the pages show it: `2026-11-24 19:34 UTC`, or an em dash."""
    if us is None:
        return "\u2014"
    return time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime(us // 1_000_000))


async def render(template: str, status: int = 200, **context: Any) -> Response:
    """A page of the dashboard: the template in the layout, with the headers of the
    hosted page and the CSRF token of this browser for its forms."""
    service = current_service()
    current: Current | None = getattr(g, "dashboard", None)
    nonce = _nonce()
    token = security.csrf_token(service.settings.secret_key, _csrf_binding(), nonce)
    body = await render_template(
        f"dashboard/{template}",
        **context,
        csrf_token=token,
        current=current,
        nav=NAV,
        signup_open=service.settings.dashboard_signup,
        when=when,
    )
    response = Response(body, status=status, content_type="text/html; charset=utf-8")
    response.headers.update(security.page_headers())
    if request.cookies.get(CSRF_COOKIE) != nonce:
        set_cookie(response, CSRF_COOKIE, nonce, samesite="Strict")
    return response


def set_cookie(response: Response, name: str, value: str, samesite: str = "Lax") -> None:
    response.set_cookie(
        name, value, path=COOKIE_PATH, httponly=True, samesite=samesite, secure=_secure()
    )


def clear_cookie(response: Response, name: str) -> None:
    """End a cookie `set_cookie` made (the same path and flags, so the browser matches it)."""
    response.delete_cookie(name, path=COOKIE_PATH, httponly=True, samesite="Lax", secure=_secure())


def see_other(location: str) -> Response:
    response: Response = redirect(location, 303)  # type: ignore[assignment]
    response.headers.update(security.page_headers())
    return response


def to_sign_in() -> Response:
    """Where a signed-out request goes: the sign-in page, back here afterwards with the
    page's query (its filter, its page of a list); a form post is not replayed."""
    location = "/dashboard/sign-in"
    if request.method == "GET" and request.path != "/dashboard":
        here = request.path
        if request.query_string:
            here += "?" + request.query_string.decode("latin-1")
        if safe_next(here) == here:
            location += "?" + urlencode({"next": here})
    return see_other(location)


# A page of the dashboard as `next` may name it: path segments of letters, digits, `_`
# and `-` (every route and id is made of them, so no `..`, `//`, `\` or percent-escape
# can lead elsewhere) and a query of printable ASCII (nothing a Location header refuses).
_NEXT = re.compile(r"/dashboard(?:/[A-Za-z0-9_-]+)*/?(?:\?[\x21-\x7e]*)?")
MAX_NEXT_LENGTH = 2000


def safe_next(value: str | None) -> str:
    """`value` if it is a page of the dashboard (see _NEXT), else the home page."""
    if value and len(value) <= MAX_NEXT_LENGTH and _NEXT.fullmatch(value):
        return value
    return "/dashboard"


async def not_found() -> Response:
    return await render("not_found.html", 404)


async def form_expired() -> Response:
    """A form post without its page's token: refused, nothing changed."""
    return await render("form_expired.html", 400)


def signed_in(view: View) -> View:
    """Only for a signed-in merchant (else to the sign-in page); a form post only with
    its CSRF token (else 400 and nothing changed)."""

    @functools.wraps(view)
    async def guarded(*args: Any, **kwargs: Any) -> Response:
        current = await current_service().accounts.current(request.cookies.get(SESSION_COOKIE))
        if current is None:
            return to_sign_in()
        g.dashboard = current
        if request.method == "POST" and not await csrf_ok():
            return await form_expired()
        return await view(*args, **kwargs)

    return guarded


def current() -> Current:
    """The signed-in merchant of this request (inside `signed_in` views)."""
    found: Current = g.dashboard
    return found


async def error_page(error: errors.ServiceError) -> Response:
    """The page of an error under /dashboard (an unknown page, a wrong method, a form too
    large, the database away, our own failure): the layout's HTML, never the API's JSON.
    `fgcpay.web.errors` sets its status-specific headers (Retry-After, Allow)."""
    if error.status == 404:
        return await not_found()
    if error.status == 503:
        return await render("unavailable.html", 503)
    return await render(
        "error.html",
        error.status,
        message=error.message,
        request_id=getattr(g, "request_id", ""),
    )
