"""The one place where errors become ApiError responses.

Every error under /api/v1 (and every error the service raises outside the pages) is
answered as JSON `{"code", "message", "details", "request_id"}` with the `Request-Id`
header, never a stack trace. A path under a prefix of `ErrorPages` (the dashboard's, the
hosted page's) is a page a person reads in a browser: its errors are answered as that
part's HTML page, with the same status. Unexpected exceptions are logged with their
request id and answered 500 `internal_error` with no internals; the database being
unavailable (`DatabaseUnavailable`) is answered 503 `service_unavailable` with
`Retry-After`, as is every other 503."""

from __future__ import annotations

import json
import logging
from collections.abc import Awaitable, Callable, Mapping
from typing import Annotated, Any

from fgcpay.core.logs import log_event
from fgcpay.domain import errors
from fgcpay.storage import DatabaseUnavailable
from pydantic import ConfigDict, Field, WithJsonSchema, with_config
from quart import Response, g, has_request_context, request
from quart_trio import QuartTrio
from typing_extensions import TypedDict
from werkzeug.exceptions import HTTPException

JSON_TYPE = "application/json"

# Werkzeug's HTTP errors, raised by routing and body reading, in the contract's words.
_HTTP_ERRORS: dict[int, tuple[str, str]] = {
    400: ("validation_error", "The request is malformed."),
    404: ("not_found", "No such resource or path."),
    405: ("method_not_allowed", "This method is not allowed on this path."),
    408: ("request_timeout", "The request body did not arrive in time."),
    413: ("payload_too_large", "The request body is larger than 64 KiB."),
    415: ("unsupported_media_type", "Send the request body as application/json."),
    431: ("request_header_fields_too_large", "The request line and headers exceed 64 KiB."),
}


# Every code an ApiError may carry.
ERROR_CODES = (
    "validation_error",
    "invalid_json",
    "invalid_api_key",
    "not_found",
    "subscription_not_found",
    "method_not_allowed",
    "idempotency_key_conflict",
    "idempotency_key_in_use",
    "subscription_not_cancellable",
    "test_clock_advancing",
    "test_clock_advance_too_far",
    "test_clock_limit_reached",
    "checkout_session_not_paid",
    "refund_already_reviewed",
    "payment_declined",
    "checkout_session_not_open",
    "subscription_not_approvable",
    "sandboxes_not_allowed",
    "sandbox_limit_reached",
    "request_timeout",
    "request_header_fields_too_large",
    "payload_too_large",
    "unsupported_media_type",
    "rate_limited",
    "too_many_streams",
    "upgrade_required",
    "internal_error",
    "service_unavailable",
)


@with_config(ConfigDict(extra="forbid"))
class ApiError(TypedDict):
    """The body of every error answer."""

    code: Annotated[str, WithJsonSchema({"type": "string", "enum": list(ERROR_CODES)})]
    message: Annotated[
        str, Field(description="For a person; may change. Never contains a key, secret or PIN.")
    ]
    details: Annotated[
        Any,
        WithJsonSchema(
            {
                "description": (
                    "For `validation_error`: a list of `{field, message}` (FieldError). For "
                    "`rate_limited`: `{retry_after_seconds}`; for `too_many_streams`: "
                    "`{retry_after_seconds, most_streams}`. Otherwise null or an object."
                )
            }
        ),
    ]
    request_id: Annotated[str, Field(pattern="^req_[0-9A-Za-z]{16}$")]


class HeadersTooLarge(errors.ServiceError):
    """The request head is over the server's limit (`fgcpay.web.limits.MAX_HEADER_BYTES`)."""

    status = 431
    code = "request_header_fields_too_large"

    def __init__(self) -> None:
        super().__init__(_HTTP_ERRORS[431][1])


def error_body(code: str, message: str, details: Any, request_id: str) -> bytes:
    body: ApiError = {
        "code": code,
        "message": message,
        "details": details,
        "request_id": request_id,
    }
    return json.dumps(body, separators=(",", ":")).encode()


def api_error_response(error: errors.ServiceError) -> Response:
    """The one JSON answer of an error, wherever it is answered (a route, an error handler,
    a websocket's refused handshake): the ApiError body with the request's id, which the
    `Request-Id` header repeats."""
    request_id = getattr(g, "request_id", "")
    response = Response(
        error_body(error.code, error.message, error.details_json(), request_id),
        status=error.status,
        content_type=JSON_TYPE,
    )
    response.headers["Request-Id"] = request_id
    if isinstance(error, errors.Unauthenticated):
        response.headers["WWW-Authenticate"] = 'Bearer realm="fgcpay"'
    if isinstance(error, errors.RateLimited):
        response.headers["Retry-After"] = str(error.retry_after_seconds)
    if isinstance(error, errors.Unavailable):
        response.headers["Retry-After"] = str(error.retry_after_seconds)
    if isinstance(error, errors.UpgradeRequired):
        response.headers["Upgrade"] = "websocket"
    return response


def database_unavailable(error: DatabaseUnavailable) -> errors.Unavailable:
    """The 503 for a database outage; logged as a warning with the driver's error type only."""
    cause = error.__cause__
    log_event(
        "database unavailable",
        logging.WARNING,
        request_id=getattr(g, "request_id", ""),
        error_type=type(cause).__name__ if cause else type(error).__name__,
    )
    return errors.Unavailable(
        "The service cannot reach its database right now; please retry.",
        retry_after_seconds=error.retry_after_seconds,
    )


def from_http_exception(error: HTTPException) -> errors.ServiceError:
    status = error.code or 500
    code, message = _HTTP_ERRORS.get(status, ("internal_error", "The request could not be served."))
    mapped = errors.ServiceError(message, None, code=code)
    mapped.status = status
    return mapped


# An HTML page for an error answered under a path prefix: (the error, as the API would
# answer it) -> the page, with that status and headers; or None where that part answers
# the error as JSON after all (the hosted page's status poll).
ErrorPage = Callable[[errors.ServiceError], Awaitable[Response | None]]
ErrorPages = Mapping[str, ErrorPage]
# The answer an unexpected error gets instead of a 500 when the request's own
# circumstances explain it (None: they do not).
Explanation = Callable[[], Awaitable[errors.ServiceError | None]]


async def _unexplained() -> errors.ServiceError | None:
    return None


def register_error_handlers(
    app: QuartTrio, pages: ErrorPages | None = None, explain: Explanation = _unexplained
) -> None:
    """Answer every error as an ApiError, or as the HTML page of `pages` whose prefix the
    request's path has. An unexpected error is first offered to `explain`: a write whose
    key was revoked (or whose sandbox was deleted) while it ran fails on rows that are
    gone, and its caller gets the 401 its key now gets, not a 500."""
    prefixes = dict(pages or {})

    async def answer(error: errors.ServiceError) -> Response:
        response = api_error_response(error)
        page = _page_for(prefixes, request.path) if has_request_context() else None
        if page is None:
            return response
        try:
            html = await page(error)
        except Exception as failure:  # the page itself failed: the JSON answer still holds
            log_event(
                "could not render an error page",
                logging.ERROR,
                request_id=getattr(g, "request_id", ""),
                error_type=type(failure).__name__,
            )
            return response
        if html is None:
            return response
        for name in ("Retry-After", "WWW-Authenticate", "Request-Id"):
            if name in response.headers:
                html.headers[name] = response.headers[name]
        return html

    @app.errorhandler(errors.ServiceError)
    async def _service_error(error: errors.ServiceError) -> Response:
        return await answer(error)

    @app.errorhandler(HTTPException)
    async def _http_error(error: HTTPException) -> Response:
        response = await answer(from_http_exception(error))
        if error.code == 405 and getattr(error, "valid_methods", None):
            response.headers["Allow"] = ", ".join(sorted(error.valid_methods))  # type: ignore[attr-defined]
        return response

    @app.errorhandler(DatabaseUnavailable)
    async def _database_unavailable(error: DatabaseUnavailable) -> Response:
        return await answer(database_unavailable(error))

    @app.errorhandler(Exception)
    async def _unexpected(error: Exception) -> Response:
        try:
            explained = await explain()
        except Exception:  # the explanation failed too: the error stands as it was
            explained = None
        if explained is not None:
            log_event(
                "a request failed after its key was refused",
                request_id=getattr(g, "request_id", ""),
                error_type=type(error).__name__,
            )
            return await answer(explained)
        log_event(
            "unhandled error",
            logging.ERROR,
            request_id=getattr(g, "request_id", ""),
            error_type=type(error).__name__,
            exc_info_text=_traceback_text(error),
        )
        return await answer(
            errors.InternalError("Something went wrong on our side. It has been logged.")
        )


def _page_for(pages: dict[str, ErrorPage], path: str) -> ErrorPage | None:
    for prefix, page in pages.items():
        if path == prefix or path.startswith(prefix + "/"):
            return page
    return None


def _traceback_text(error: BaseException) -> str:
    import traceback

    return "".join(traceback.format_exception(error))[-4000:]
