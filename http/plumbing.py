"""What every request goes through: request id, body limits, authentication and rate
limits under /api/v1, the RateLimit and Request-Id headers, and one log line."""

from __future__ import annotations

import logging
import time
from typing import TYPE_CHECKING

from fgcpay.domain import errors, ids
from fgcpay.logs import log_event
from quart import Response, g, request
from quart_trio import QuartTrio

from .auth import Principal, authenticate
from .body import MAX_BODY_BYTES
from .rate_limit import Verdict

if TYPE_CHECKING:
    from fgcpay.service import Service

API_PREFIX = "/api/v1"
# Public documents under the prefix that need no key.
PUBLIC_API_PATHS = frozenset({API_PREFIX + "/openapi.json"})


def current_service() -> Service:
    from quart import current_app

    service: Service = current_app.extensions["fgcpay"]
    return service


def principal() -> Principal:
    """The authenticated caller of this /api/v1 request."""
    found: Principal | None = getattr(g, "principal", None)
    if found is None:
        raise errors.Unauthenticated("Missing API key.")
    return found


def _client_address() -> str:
    client = request.scope.get("client")
    return str(client[0]) if client else "unknown"


def install(app: QuartTrio) -> None:
    @app.before_request
    async def _begin() -> None:
        g.request_id = ids.request_id()
        g.started = time.perf_counter()
        g.principal = None
        g.rate = None
        if request.content_length is not None and request.content_length > MAX_BODY_BYTES:
            raise errors.PayloadTooLarge("The request body is larger than 64 KiB.")
        path = request.path
        if path in PUBLIC_API_PATHS:
            _limit_by_address()
        elif path.startswith(API_PREFIX):
            await _authenticate_and_limit()

    @app.after_request
    async def _finish(response: Response) -> Response:
        request_id = getattr(g, "request_id", "")
        response.headers["Request-Id"] = request_id
        verdict: Verdict | None = getattr(g, "rate", None)
        if verdict is not None:
            limiter = current_service().rate_limiter
            response.headers["RateLimit-Policy"] = f'"default";q={limiter.burst};w={limiter.window_seconds}'
            response.headers["RateLimit"] = f'"default";r={verdict.remaining};t={verdict.reset_seconds}'
        if request.path.startswith(API_PREFIX):
            response.headers.setdefault("Cache-Control", "no-store")
        who: Principal | None = getattr(g, "principal", None)
        started = getattr(g, "started", None)
        log_event(
            "request",
            logging.INFO,
            request_id=request_id,
            method=request.method,
            path=request.path,
            status=response.status_code,
            duration_ms=round((time.perf_counter() - started) * 1000, 2) if started else None,
            merchant_id=who.merchant.id if who else None,
        )
        return response


def _limit_by_address() -> None:
    """Calls without a valid key (public documents, failed authentication) are limited
    per client address, with the same bucket sizes as a key."""
    g.rate = current_service().rate_limiter.take("ip:" + _client_address())
    if not g.rate.allowed:
        raise errors.RateLimited(g.rate.retry_after)


async def _authenticate_and_limit() -> None:
    service = current_service()
    try:
        found = await authenticate(service.storage, request.headers.get("Authorization"))
    except errors.Unauthenticated:
        # Failed attempts are limited per client address, so keys cannot be guessed fast.
        _limit_by_address()
        raise
    g.principal = found
    g.rate = service.rate_limiter.take("key:" + found.api_key.id)
    if not g.rate.allowed:
        raise errors.RateLimited(g.rate.retry_after)
    service.note_key_used(found.api_key)
