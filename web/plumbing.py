"""What every request goes through: request id, size limits (body and head), the whole
body received before any early answer, authentication and rate limits under /api/v1, the
RateLimit and Request-Id headers, one log line, and the request's count and time in the
metrics (by route template, never the path); and the same for a websocket's handshake
under /api/v1 (the event stream), metrics aside. Also the ApiError answer to requests
that cannot be parsed at all (`protocol_error_answer`, used by `fgcpay.server`)."""

from __future__ import annotations

import logging
import time
from collections.abc import Mapping
from typing import Any

from fgcpay.core import metrics
from fgcpay.core.logs import log_event
from fgcpay.domain import errors, ids
from fgcpay.web.limits import BODY_TIMEOUT_SECONDS, MAX_HEADER_BYTES
from quart import Request, Response, current_app, g, request, websocket
from quart.typing import ResponseTypes
from quart_trio import QuartTrio
from werkzeug.exceptions import HTTPException

from .auth import Principal, authenticate, refusal_now
from .body import MAX_BODY_BYTES
from .errors import JSON_TYPE, HeadersTooLarge, error_body
from .rate_limit import RateLimiter, Verdict
from .service import Service

API_PREFIX = "/api/v1"
# Public documents under the prefix that need no key.
PUBLIC_API_PATHS = frozenset({API_PREFIX + "/openapi.json"})
# Answered scrapes are logged at DEBUG: at INFO, one line per scrape per Prometheus
# server would drown the requests that matter. A refused one is logged as any request.
METRICS_ROUTE = "/metrics"
_SERVICE = "fgcpay"  # the key of the running service in `app.extensions`


def attach(app: QuartTrio, service: Service) -> None:
    """Make `service` the one `current_service()` answers for `app`'s requests."""
    app.extensions[_SERVICE] = service


def current_service() -> Service:
    service: Service = current_app.extensions[_SERVICE]
    return service


def current_object(proxy: Any) -> Any:
    """The object behind one of Quart's context proxies (`request`, `g`): every read
    through a proxy looks its context up again (about a microsecond each), and a request
    reads a few dozen attributes on its way through the hooks below and a route."""
    return proxy._get_current_object()


def principal() -> Principal:
    """The authenticated caller of this /api/v1 request."""
    found: Principal | None = getattr(g, "principal", None)
    if found is None:
        raise errors.Unauthenticated("Missing API key.")
    return found


async def key_refused_meanwhile() -> errors.ServiceError | None:
    """For an unexpected error of an /api/v1 request: the 401 its key gets now, if it
    was revoked (or its sandbox deleted) since the request was authenticated."""
    caller: Principal | None = getattr(g, "principal", None)
    if caller is None:
        return None
    return await refusal_now(current_service().db, caller)


def _client_address(scope: Mapping[str, Any] | None = None) -> str:
    # Behind trusted proxies, the client they forwarded (`fgcpay.web.proxies` resolved it).
    client = (request.scope if scope is None else scope).get("client")
    return str(client[0]) if client else "unknown"


def install(app: QuartTrio) -> None:
    # A body that stalls is answered 408 (then the connection closes, see fgcpay.server).
    app.config["BODY_TIMEOUT"] = BODY_TIMEOUT_SECONDS

    @app.before_request
    async def _begin() -> None:
        here = current_object(g)
        asked: Request = current_object(request)
        here.request_id = ids.request_id()
        here.started = time.perf_counter()
        here.principal = None
        here.rate = None
        here.client = _client_address(asked.scope)
        path = asked.path
        under_api = path.startswith(API_PREFIX)
        try:
            if asked.content_length is not None and asked.content_length > MAX_BODY_BYTES:
                raise errors.PayloadTooLarge("The request body is larger than 64 KiB.")
            _check_head(asked.method, asked.scope)
            if under_api:
                here.request_body = await _receive_body(asked)
            _check_published(asked.scope)
        except (errors.ServiceError, HTTPException):
            if under_api:
                # Answered before authentication: counted like a failed one, per address.
                await limit_by_address()
            raise
        if path in PUBLIC_API_PATHS:
            await limit_by_address()
        elif under_api:
            await _authenticate_and_limit(asked.headers.getlist("Authorization"))

    @app.before_websocket
    async def _begin_websocket() -> None:
        # A websocket under /api/v1 (the event stream) is authenticated and limited as
        # every request is, from its handshake's `Authorization` header (never from the
        # URL: a key there would end up in access logs). A refusal is the handshake's
        # HTTP answer, an ApiError with the same headers.
        g.request_id = ids.request_id()
        g.started = time.perf_counter()
        g.principal = None
        g.rate = None
        g.client = _client_address(websocket.scope)
        _check_published(websocket.scope)
        if websocket.path.startswith(API_PREFIX):
            try:
                _check_head("GET", websocket.scope)
            except errors.ServiceError:
                await limit_by_address(websocket.scope)
                raise
            await _authenticate_and_limit(
                websocket.headers.getlist("Authorization"), websocket.scope
            )

    @app.after_websocket
    async def _finish_websocket(response: ResponseTypes | None) -> ResponseTypes | None:
        if response is None or not websocket.path.startswith(API_PREFIX):
            return response  # accepted: the handler logs the stream as it ends
        response.headers.update(handshake_headers())
        response.headers["Cache-Control"] = "no-store"
        log_request(response.status_code, websocket.path, "GET")
        return response

    @app.after_request
    async def _finish(response: Response) -> Response:
        here = current_object(g)
        asked: Request = current_object(request)
        headers = response.headers
        headers["Request-Id"] = getattr(here, "request_id", "")
        verdict: Verdict | None = getattr(here, "rate", None)
        if verdict is not None:
            headers.update(rate_limit_headers(current_service().rate_limiter, verdict))
        path, method = asked.path, asked.method
        if path.startswith(API_PREFIX):
            headers.setdefault("Cache-Control", "no-store")
        status = response.status_code
        rule = asked.url_rule
        route = rule.rule if rule is not None else metrics.UNMATCHED_ROUTE
        started = getattr(here, "started", None)
        seconds = time.perf_counter() - started if started else None
        metrics.request_answered(method, route, status, seconds)
        quiet = route == METRICS_ROUTE and status == 200
        _log_request(here, status, path, method, seconds, quiet)
        return response


def log_request(status: int, path: str, method: str, quiet: bool = False, **more: Any) -> None:
    """The one log line of a request (of a websocket: as it ends, `more` saying how), at
    DEBUG when `quiet` (an answered scrape), else INFO."""
    here = current_object(g)
    started = getattr(here, "started", None)
    seconds = time.perf_counter() - started if started else None
    _log_request(here, status, path, method, seconds, quiet, **more)


def _log_request(
    here: Any, status: int, path: str, method: str, seconds: float | None, quiet: bool, **more: Any
) -> None:
    who: Principal | None = getattr(here, "principal", None)
    log_event(
        "request",
        logging.DEBUG if quiet else logging.INFO,
        request_id=getattr(here, "request_id", ""),
        method=method,
        path=path,
        status=status,
        duration_ms=round(seconds * 1000, 2) if seconds is not None else None,
        merchant_id=who.merchant.id if who else None,
        client=getattr(here, "client", None),
        **more,
    )


def handshake_headers() -> dict[str, str]:
    """`Request-Id` and, past the rate limiter, the RateLimit headers: for a websocket's
    handshake answer, whether it accepts or refuses."""
    headers = {"Request-Id": getattr(g, "request_id", "")}
    verdict: Verdict | None = getattr(g, "rate", None)
    if verdict is not None:
        headers.update(rate_limit_headers(current_service().rate_limiter, verdict))
    return headers


async def limit_by_address(scope: Mapping[str, Any] | None = None) -> None:
    """Calls without a valid key (public documents, failed authentication, a wrong
    metrics token) are limited per client address, with the same bucket sizes as a key."""
    g.rate = await current_service().rate_limiter.take("ip:" + _client_address(scope))
    if not g.rate.allowed:
        raise errors.RateLimited(g.rate.retry_after)


async def _authenticate_and_limit(
    authorizations: list[str], scope: Mapping[str, Any] | None = None
) -> None:
    service = current_service()
    try:
        found = await authenticate(service.db, authorizations)
    except errors.Unauthenticated:
        # Failed attempts are limited per client address, so keys cannot be guessed fast.
        await limit_by_address(scope)
        raise
    here = current_object(g)
    here.principal = found
    here.rate = verdict = await service.rate_limiter.take("key:" + found.api_key.id)
    if not verdict.allowed:
        raise errors.RateLimited(verdict.retry_after)
    service.note_key_used(found.api_key)


def rate_limit_headers(limiter: RateLimiter, verdict: Verdict) -> dict[str, str]:
    """`RateLimit-Policy` and `RateLimit` (draft-ietf-httpapi-ratelimit-headers)."""
    return {
        "RateLimit-Policy": f'"default";q={limiter.burst};w={limiter.window_seconds}',
        "RateLimit": f'"default";r={verdict.remaining};t={verdict.reset_seconds}',
    }


def _check_published(scope: Mapping[str, Any]) -> None:
    """404 for a path with a doubled slash: no path is published with one. (Routing
    refuses one inside a path, `merge_slashes` being off; but werkzeug strips a path's
    leading slashes, so `//api/v1/...` would be served as `/api/v1/...`: hence the path as
    it came, the scope's.)"""
    if "//" in scope["path"]:
        raise errors.NotFound("No such resource or path.")


def _check_head(method: str, scope: Mapping[str, Any]) -> None:
    """431 for a request head over the limit (a request's, or a websocket handshake's).

    h11 refuses a head only while it is incomplete and over the limit, so a large head
    that arrived in one read is measured here, to make the limit exact.
    """
    head = len(method) + len(scope["raw_path"]) + len(scope["query_string"]) + 14
    head += sum(len(name) + len(value) + 4 for name, value in scope["headers"])
    if head > MAX_HEADER_BYTES:
        raise HeadersTooLarge()


async def _receive_body(asked: Request) -> bytes:
    """Wait for the whole (bounded) body before any answer, so that an early answer
    (401, 429, a bad header) leaves the connection ready for the next request.

    Quart buffers it anyway; the routes read it as kept in `g` (`body.received`). Over
    64 KiB it is 413, and a body that stalls is 408 after `BODY_TIMEOUT_SECONDS`.
    """
    return await asked.get_data(cache=True, as_text=False, parse_form_data=False)


async def protocol_error_answer(
    service: Service, status: int, path: str | None, client: str
) -> tuple[int, list[tuple[str, str]], bytes]:
    """The ApiError answer to a request hypercorn's h11 could not parse (see
    `fgcpay.server`): 431 for a head over the limit, 400 for anything malformed.

    Under /api/v1 it is counted per client address, like a failed authentication.
    """
    request_id = ids.request_id()
    error: errors.ServiceError
    if status == 431:
        error = HeadersTooLarge()
    else:
        error = errors.BadRequest("The request is not valid HTTP/1.1.")
    headers = [("Content-Type", JSON_TYPE), ("Request-Id", request_id)]
    if path is not None and path.startswith(API_PREFIX):
        headers.append(("Cache-Control", "no-store"))
        limiter = service.rate_limiter
        headers.extend(rate_limit_headers(limiter, await limiter.take("ip:" + client)).items())
    metrics.request_answered("", metrics.UNPARSED_ROUTE, error.status, None)
    log_event(
        "request",
        logging.INFO,
        request_id=request_id,
        method=None,
        path=path,
        status=error.status,
        client=client,
        protocol_error=True,
    )
    body = error_body(error.code, error.message, error.details_json(), request_id)
    return error.status, headers, body
