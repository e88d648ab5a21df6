"""The one error hierarchy. Every failure a caller may see is a `ServiceError`; the HTTP
layer maps it to the ApiError body in one place (`fgcpay.web.errors`)."""

from __future__ import annotations

from typing import Any

import attrs
from typing_extensions import TypedDict


class FieldErrorWire(TypedDict):
    """One entry of a 400's `details`."""

    field: str
    message: str


@attrs.frozen
class FieldError:
    """One problem with one request field, as listed in a 400's `details`."""

    field: str
    message: str

    def as_json(self) -> FieldErrorWire:
        return {"field": self.field, "message": self.message}


class ServiceError(Exception):
    """An error with an HTTP status, an ApiError code and details fit to show a caller.

    The message and details must never contain secrets, PINs or internals.
    """

    status: int = 500
    code: str = "internal_error"

    def __init__(self, message: str, details: Any = None, *, code: str | None = None) -> None:
        super().__init__(message)
        self.message = message
        self.details = details
        if code is not None:
            self.code = code

    def details_json(self) -> Any:
        return self.details


class ValidationFailed(ServiceError):
    status = 400
    code = "validation_error"

    def __init__(self, errors: list[FieldError], message: str | None = None) -> None:
        super().__init__(message or "The request has invalid fields.", errors)
        self.errors = errors

    def details_json(self) -> Any:
        return [error.as_json() for error in self.errors]


class InvalidJson(ServiceError):
    status = 400
    code = "invalid_json"


class BadRequest(ServiceError):
    """A 400 about the request as a whole (a header, the query string)."""

    status = 400
    code = "validation_error"


class Unauthenticated(ServiceError):
    status = 401
    code = "invalid_api_key"


class Forbidden(ServiceError):
    status = 403
    code = "forbidden"


class SandboxesNotAllowed(Forbidden):
    """A sandbox's key asking for sandboxes: a sandbox cannot make (or list) sandboxes."""

    code = "sandboxes_not_allowed"


class NotFound(ServiceError):
    status = 404
    code = "not_found"


class SubscriptionNotFound(NotFound):
    """An unknown subscription id, or another merchant's (never a 403)."""

    code = "subscription_not_found"


class MethodNotAllowed(ServiceError):
    status = 405
    code = "method_not_allowed"


class Conflict(ServiceError):
    status = 409
    code = "conflict"


class SubscriptionNotCancellable(Conflict):
    """Cancelling a subscription already `cancelled` or `ended`."""

    code = "subscription_not_cancellable"


class CheckoutSessionNotPaid(Conflict):
    """Refunding a checkout session that was never paid (`created` or `expired`)."""

    code = "checkout_session_not_paid"


class RefundAlreadyReviewed(Conflict):
    """Approving or rejecting a refund already `approved` or `rejected`: final once decided."""

    code = "refund_already_reviewed"


class TestClockAdvancing(Conflict):
    """A test clock is still running an advance: one at a time."""

    __test__ = False  # an error, not a test class for pytest to collect
    code = "test_clock_advancing"


class TestClockAdvanceTooFar(ServiceError):
    """One advance would bill more than its bounds (details: `{"max_frozen_time"}`)."""

    __test__ = False  # an error, not a test class for pytest to collect
    status = 400
    code = "test_clock_advance_too_far"


class TestClockLimitReached(Conflict):
    """The merchant has as many test clocks as one may (details: `{"limit"}`)."""

    __test__ = False
    code = "test_clock_limit_reached"


class SandboxLimitReached(Conflict):
    """The merchant has as many live sandboxes as one may (details: `{"limit"}`)."""

    code = "sandbox_limit_reached"


class PayloadTooLarge(ServiceError):
    status = 413
    code = "payload_too_large"


class UnsupportedMediaType(ServiceError):
    status = 415
    code = "unsupported_media_type"


class RateLimited(ServiceError):
    status = 429
    code = "rate_limited"

    def __init__(self, retry_after_seconds: int, message: str | None = None) -> None:
        """`message`: what to do instead, where there is more to say than to wait."""
        super().__init__(
            message
            or f"Too many requests. Retry after {retry_after_seconds} "
            + ("second." if retry_after_seconds == 1 else "seconds."),
            {"retry_after_seconds": retry_after_seconds},
        )
        self.retry_after_seconds = retry_after_seconds


class TooManyStreams(RateLimited):
    """A merchant already holds the most event streams at once (`GET /events/stream`)."""

    code = "too_many_streams"

    def __init__(self, most: int, retry_after_seconds: int) -> None:
        super().__init__(
            retry_after_seconds,
            f"{most} event streams are open for this merchant already, the most at once:"
            " close one first.",
        )
        self.details = {"retry_after_seconds": retry_after_seconds, "most_streams": most}


class UpgradeRequired(ServiceError):
    """A plain HTTP request to a websocket-only path."""

    status = 426
    code = "upgrade_required"


class Unavailable(ServiceError):
    """The service could not answer in time (an actor or the database is busy).

    `retry_after_seconds` becomes the answer's `Retry-After` header: the delay when one is
    known, else a short one (an ask that lapsed is worth retrying soon).
    """

    status = 503
    code = "service_unavailable"
    DEFAULT_RETRY_AFTER_SECONDS = 2

    def __init__(
        self, message: str, details: Any = None, *, retry_after_seconds: int | None = None
    ) -> None:
        super().__init__(message, details)
        self.retry_after_seconds = retry_after_seconds or self.DEFAULT_RETRY_AFTER_SECONDS


class InternalError(ServiceError):
    status = 500
    code = "internal_error"
