"""For merchants: verify that a webhook delivery came from fgcpay.

    import json

    from fgcpay.webhooks import WebhookVerificationError, verify_delivery

    try:
        verify_delivery(raw_body, request.headers, "whsec_...")  # None, or it raises
    except WebhookVerificationError:
        return 400
    event = json.loads(raw_body)

Both header families are accepted: `Service-Timestamp` + `Service-Signature`
(`v1=<hex HMAC-SHA256 of "<timestamp>.<body>">`, keyed with the secret string as shown)
and the Standard Webhooks `webhook-id`, `webhook-timestamp`, `webhook-signature`.
"""

from __future__ import annotations

import time
from collections.abc import Mapping

from fgcpay.domain.signing import TOLERANCE_SECONDS, WebhookVerificationError, verify

__all__ = ["WebhookVerificationError", "verify_delivery"]


def verify_delivery(
    body: bytes,
    headers: Mapping[str, str],
    secret: str,
    *,
    tolerance_seconds: int = TOLERANCE_SECONDS,
    now: int | None = None,
) -> None:
    """Return None if `body` was signed with `secret` within `tolerance_seconds` (default
    300) of now, in either direction; else raise `WebhookVerificationError` saying why.

    Args:
        body: the raw request body, exactly as received (before any JSON parsing).
        headers: the request headers (any case).
        secret: the endpoint's signing secret, `whsec_...`. During a rotation, a delivery
            carries two signatures and verifies with either secret.
        now: unix seconds to check the timestamp against (default: this machine's clock).

    Comparisons are constant time.
    """
    verify(
        body,
        headers,
        secret,
        now=int(time.time()) if now is None else now,
        tolerance=tolerance_seconds,
    )
