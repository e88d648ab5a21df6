"""The parts of the OpenAPI document that belong to no one operation: `info`, security,
the shared headers, the Idempotency-Key parameter and the error answers per status."""

from __future__ import annotations

from typing import Any

from fgcpay.domain import idempotency, ids
from fgcpay.domain.json_depth import MAX_JSON_DEPTH
from fgcpay.domain.lists import QUERY_MESSAGE
from fgcpay.web.body import MAX_BODY_BYTES

INFO: dict[str, Any] = {
    "title": "fgcpay Merchant Payments API",
    "version": "0.1.0",
    "summary": (
        "Hosted one-time checkout sessions and subscriptions (with test clocks), refunds for "
        "review, the transaction ledger and the balance, and signed webhooks, with their "
        "events and delivery log. Test mode only."
    ),
    "description": (
        "All requests and responses are JSON. Authenticate with `Authorization: Bearer "
        f"{ids.API_KEY_PREFIX}...`. Every response carries `Request-Id`; every error is an "
        "ApiError. See docs/api.md for the human reference. Webhooks are POSTed with "
        '`Service-Timestamp`, `Service-Signature: v1=<hex HMAC-SHA256 of "<timestamp>.<body>">`, '
        "`Service-Event-Id` and the Standard Webhooks headers `webhook-id`, "
        "`webhook-timestamp`, `webhook-signature`; see docs/webhooks.md."
    ),
}
# The operation's extension naming a websocket's frames and close codes.
WEBSOCKET_EXTENSION = "x-websocket"
SECURITY_SCHEME = "bearerApiKey"
SECURITY_SCHEMES: dict[str, Any] = {
    SECURITY_SCHEME: {
        "type": "http",
        "scheme": "bearer",
        "description": (
            f"A test API key `{ids.API_KEY_PREFIX}` + 32 base62 characters, created in the "
            f"dashboard or with `fgcpay merchant create`. `{ids.LIVE_KEY_PREFIX}` keys are "
            "refused: live mode is not enabled."
        ),
    }
}

REQUEST_ID_PATTERN = "^req_[0-9A-Za-z]{16}$"


def _header(description: str, schema: dict[str, Any]) -> dict[str, Any]:
    return {"description": description, "schema": schema}


HEADERS: dict[str, Any] = {
    "Request-Id": _header(
        "`req_` + 16 base62; also in every error body.",
        {"type": "string", "pattern": REQUEST_ID_PATTERN},
    ),
    "RateLimit-Policy": _header(
        'IETF draft: `"default";q=<burst>;w=<seconds to refill the burst>`.', {"type": "string"}
    ),
    "RateLimit": _header(
        'IETF draft: `"default";r=<requests left>;t=<seconds until the bucket is full>`.',
        {"type": "string"},
    ),
    "Retry-After": _header("Seconds to wait before retrying.", {"type": "integer"}),
    "Idempotent-Replayed": _header(
        "`true` when this response is a replay of a stored one.",
        {"type": "string", "enum": ["true"]},
    ),
    "Deprecation": _header(
        "`true` when the request used the deprecated `amount_minor`.",
        {"type": "string", "enum": ["true"]},
    ),
}
# On every answer that went through the rate limiter (every success).
SUCCESS_HEADERS = ("Request-Id", "RateLimit-Policy", "RateLimit")

IDEMPOTENCY_KEY: dict[str, Any] = {
    "name": "Idempotency-Key",
    "in": "header",
    "required": False,
    "description": (
        f"1 to {idempotency.MAX_KEY_LENGTH} characters, not blank (else 400). Scope: merchant "
        "+ method + path + key, kept 24 hours. Same key and same body replays the stored "
        "response byte for byte with `Idempotent-Replayed: true`; a different body is 409 "
        "`idempotency_key_conflict`; while the first request is in flight, 409 "
        "`idempotency_key_in_use`."
    ),
    "schema": {
        "type": "string",
        "minLength": 1,
        "maxLength": idempotency.MAX_KEY_LENGTH,
        "pattern": "\\S",
    },
}

KIB = MAX_BODY_BYTES // 1024
# status -> (component name, description, headers beyond Request-Id)
ERRORS: dict[int, tuple[str, str, tuple[str, ...]]] = {
    400: (
        "ValidationError",
        "400 `validation_error` (details: list of FieldError, every problem at once; "
        f"for the query string the message is {QUERY_MESSAGE!r}) or `invalid_json` "
        "(malformed JSON, NaN or numbers out of range, duplicate keys, strings that are not "
        "valid Unicode such as a lone surrogate escape, objects and arrays nested deeper than "
        f"{MAX_JSON_DEPTH} levels, or a top level that is not an object); "
        "`test_clock_advance_too_far` (one advance would bill more than 1,000 periods of a "
        "subscription or 10,000 charges in all, or the clock more than 100,000 charges over "
        'its life; details: `{"max_frozen_time"}`, the furthest time an advance may reach '
        "now)",
        (),
    ),
    401: (
        "Unauthorized",
        "401 `invalid_api_key`: missing, malformed, unknown, revoked or live key. Header "
        "`WWW-Authenticate: Bearer`.",
        ("WWW-Authenticate",),
    ),
    402: (
        "PaymentDeclined",
        "402 `payment_declined`: a test helper paid or approved as a declining test "
        'customer (details: `{"reason": "insufficient_funds"}` for `TEST-0002`, '
        '`{"reason": "customer_blocked"}` for `TEST-0003`); nothing changed.',
        (),
    ),
    403: (
        "Forbidden",
        "403 `sandboxes_not_allowed`: a sandbox's key asking for sandboxes (a sandbox cannot "
        "make or manage sandboxes); nothing changed.",
        (),
    ),
    404: (
        "NotFound",
        "404 `not_found` (`subscription_not_found` for a subscription): unknown id, or one "
        "of another merchant (in the path, or the session or transaction a refund names).",
        (),
    ),
    408: ("RequestTimeout", "408 `request_timeout`: the request body did not arrive in time.", ()),
    409: (
        "Conflict",
        "409 `idempotency_key_conflict` (this Idempotency-Key was used with a different body) "
        "or `idempotency_key_in_use` (the first request with it is still in flight); "
        "`subscription_not_cancellable` (cancelling a `cancelled` or `ended` subscription); "
        "`test_clock_advancing` (advancing a clock whose last advance still runs, or a test "
        "helper's approval during which an advance of the subscription's clock began); "
        "`checkout_session_not_paid` (refunding a session that was not paid); "
        "`refund_already_reviewed` (approving or rejecting a refund already decided); "
        "`checkout_session_not_open` (a test helper paying or expiring a session that is not "
        "`created`, or paying one past `expires_at`); `subscription_not_approvable` (a test "
        "helper approving a subscription that is not `paused`); `sandbox_limit_reached` (the "
        'merchant has 1,000 live sandboxes, the most one may; details: `{"limit"}`).',
        (),
    ),
    413: (
        "PayloadTooLarge",
        f"413 `payload_too_large`: a body over {KIB} KiB (on any operation). Counted per "
        "client address; the connection is closed when the body was not read.",
        ("RateLimit-Policy", "RateLimit"),
    ),
    415: (
        "UnsupportedMediaType",
        "415 `unsupported_media_type`: a body that is not application/json.",
        (),
    ),
    426: (
        "UpgradeRequired",
        "426 `upgrade_required`: a websocket path asked without the websocket upgrade. "
        "Header `Upgrade: websocket`.",
        ("Upgrade",),
    ),
    429: (
        "RateLimited",
        "429 `rate_limited`, or on the event stream `too_many_streams` (the merchant holds "
        "the most streams at once)",
        ("Retry-After",),
    ),
    431: (
        "HeadersTooLarge",
        f"431 `request_header_fields_too_large`: the request line and headers exceed {KIB} KiB "
        "(on any operation). Counted per client address; the connection is closed when the "
        "head was not read whole.",
        ("RateLimit-Policy", "RateLimit"),
    ),
    500: (
        "InternalError",
        "500 `internal_error`: no internals are shown; quote the request id.",
        (),
    ),
    503: (
        "Unavailable",
        "503 `service_unavailable`: try again shortly (after `Retry-After` seconds).",
        ("Retry-After",),
    ),
}


def header_refs(names: tuple[str, ...]) -> dict[str, Any]:
    found: dict[str, Any] = {}
    for name in names:
        if name == "WWW-Authenticate":
            found[name] = {"schema": {"type": "string"}}
        elif name == "Upgrade":
            found[name] = {"schema": {"type": "string", "enum": ["websocket"]}}
        else:
            found[name] = {"$ref": f"#/components/headers/{name}"}
    return found


def error_responses() -> dict[str, Any]:
    """`components.responses`: one ApiError answer per error status."""
    return {
        name: {
            "description": description,
            "headers": header_refs(("Request-Id", *headers)),
            "content": {"application/json": {"schema": {"$ref": "#/components/schemas/ApiError"}}},
        }
        for name, description, headers in ERRORS.values()
    }
