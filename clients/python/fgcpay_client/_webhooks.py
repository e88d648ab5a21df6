"""`verify_webhook`: a delivery's signature checked in either header family the service
signs with, written here rather than imported (the client does not depend on the service).

- `Service-Signature: v1=<hex>` (comma-separated during a secret rotation): HMAC-SHA256
  keyed with the secret string as shown (UTF-8) over `"<Service-Timestamp>.<raw body>"`.
- Standard Webhooks, `webhook-signature: v1,<base64>` (space-separated during a rotation):
  HMAC-SHA256 keyed with the base64-decoded part after `whsec_`, over
  `"<webhook-id>.<webhook-timestamp>.<raw body>"`.
"""

from __future__ import annotations

import base64
import binascii
import hashlib
import hmac
import json
import time
from collections.abc import Mapping
from typing import Any

SECRET_PREFIX = "whsec_"


class WebhookVerificationError(Exception):
    """The delivery is not authentic or not fresh: answer 400 and do not act on it."""


def verify_webhook(
    body: bytes, headers: Mapping[str, str], secret: str, tolerance: int = 300
) -> dict[str, Any]:
    """The event a delivery carries, once its signature is verified; raises
    `WebhookVerificationError` otherwise.

    `body` is the raw request body, exactly as received (before any JSON parsing);
    `headers` the request's headers in any case; `secret` the endpoint's `whsec_...`.
    Either header family is accepted; during a secret rotation a delivery carries two
    signatures, and one matching is enough. The timestamp must be within `tolerance`
    seconds of this machine's clock, either way. Comparisons are constant time.
    """
    lowered = {name.lower(): value for name, value in headers.items()}
    if "service-signature" in lowered:
        timestamp = _fresh(lowered.get("service-timestamp", ""), tolerance)
        message = timestamp.encode() + b"." + body
        expected = hmac.new(secret.encode("utf-8"), message, hashlib.sha256).hexdigest()
        offered = [
            part.strip()[3:]
            for part in lowered["service-signature"].split(",")
            if part.strip().startswith("v1=")
        ]
    elif "webhook-signature" in lowered:
        timestamp = _fresh(lowered.get("webhook-timestamp", ""), tolerance)
        message = f"{lowered.get('webhook-id', '')}.{timestamp}.".encode() + body
        digest = hmac.new(_standard_key(secret), message, hashlib.sha256).digest()
        expected = base64.b64encode(digest).decode()
        offered = [
            part[3:] for part in lowered["webhook-signature"].split() if part.startswith("v1,")
        ]
    else:
        raise WebhookVerificationError(
            "no signature header (Service-Signature or webhook-signature)"
        )
    # Every candidate is compared, so the time taken does not say which one matched.
    matches = [hmac.compare_digest(expected.encode(), c.encode()) for c in offered]
    if not any(matches):
        raise WebhookVerificationError("no signature matches the secret")
    try:
        event = json.loads(body)
    except ValueError as error:
        raise WebhookVerificationError("the body is not JSON") from error
    if not isinstance(event, dict):
        raise WebhookVerificationError("the body is not a JSON object")
    return event


def _fresh(raw: str, tolerance: int) -> str:
    """The timestamp header's value, once it is unix seconds within `tolerance` of now."""
    if not raw.isascii() or not raw.isdigit():
        raise WebhookVerificationError("missing or malformed timestamp")
    if abs(time.time() - int(raw)) > tolerance:
        raise WebhookVerificationError("timestamp outside the tolerance window")
    return raw


def _standard_key(secret: str) -> bytes:
    encoded = secret[len(SECRET_PREFIX) :] if secret.startswith(SECRET_PREFIX) else secret
    try:
        return base64.b64decode(encoded, validate=True)
    except (binascii.Error, ValueError) as error:
        raise WebhookVerificationError("the secret is not whsec_ followed by base64") from error
