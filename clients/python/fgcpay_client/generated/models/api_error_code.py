from enum import StrEnum


class ApiErrorCode(StrEnum):
    CHECKOUT_SESSION_NOT_OPEN = "checkout_session_not_open"
    CHECKOUT_SESSION_NOT_PAID = "checkout_session_not_paid"
    IDEMPOTENCY_KEY_CONFLICT = "idempotency_key_conflict"
    IDEMPOTENCY_KEY_IN_USE = "idempotency_key_in_use"
    INTERNAL_ERROR = "internal_error"
    INVALID_API_KEY = "invalid_api_key"
    INVALID_JSON = "invalid_json"
    METHOD_NOT_ALLOWED = "method_not_allowed"
    NOT_FOUND = "not_found"
    PAYLOAD_TOO_LARGE = "payload_too_large"
    PAYMENT_DECLINED = "payment_declined"
    RATE_LIMITED = "rate_limited"
    REFUND_ALREADY_REVIEWED = "refund_already_reviewed"
    REQUEST_HEADER_FIELDS_TOO_LARGE = "request_header_fields_too_large"
    REQUEST_TIMEOUT = "request_timeout"
    SANDBOXES_NOT_ALLOWED = "sandboxes_not_allowed"
    SANDBOX_LIMIT_REACHED = "sandbox_limit_reached"
    SERVICE_UNAVAILABLE = "service_unavailable"
    SUBSCRIPTION_NOT_APPROVABLE = "subscription_not_approvable"
    SUBSCRIPTION_NOT_CANCELLABLE = "subscription_not_cancellable"
    SUBSCRIPTION_NOT_FOUND = "subscription_not_found"
    TEST_CLOCK_ADVANCE_TOO_FAR = "test_clock_advance_too_far"
    TEST_CLOCK_ADVANCING = "test_clock_advancing"
    TEST_CLOCK_LIMIT_REACHED = "test_clock_limit_reached"
    TOO_MANY_STREAMS = "too_many_streams"
    UNSUPPORTED_MEDIA_TYPE = "unsupported_media_type"
    UPGRADE_REQUIRED = "upgrade_required"
    VALIDATION_ERROR = "validation_error"

    def __str__(self) -> str:
        return str(self.value)
