"""fgcpay's typed Python client: `Fgcpay` (blocking) and `AsyncFgcpay` (trio or asyncio),
resources as attributes (`checkout_sessions.create(...)`), `list()` over every page,
idempotent retries, `ApiError` for error answers, and `verify_webhook` for deliveries.

The models returned are generated from the service's OpenAPI document
(`fgcpay_client.generated.models`); see README.md."""

from ._async_resources import AsyncFgcpay
from ._core import VERSION as __version__
from ._errors import ApiError
from ._resources import Fgcpay
from ._webhooks import WebhookVerificationError, verify_webhook

__all__ = [
    "ApiError",
    "AsyncFgcpay",
    "Fgcpay",
    "WebhookVerificationError",
    "__version__",
    "verify_webhook",
]
