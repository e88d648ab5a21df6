"""Webhook signing: the endpoint's secrets, both header families a delivery is signed
with (Service-Signature and Standard Webhooks), and their verification."""

from __future__ import annotations

import base64
import hashlib
import hmac
import secrets
from collections.abc import Mapping

TOLERANCE_SECONDS = 300
SECRET_PREFIX = "whsec_"
ROTATION_OVERLAP_US = 24 * 3600 * 1_000_000


class WebhookVerificationError(Exception):
    """The delivery is not authentic or not fresh; do not act on it."""


def new_secret() -> str:
    """`whsec_` + base64 of 32 random bytes (the Standard Webhooks form)."""
    return SECRET_PREFIX + base64.b64encode(secrets.token_bytes(32)).decode()


def _standard_key(secret: str) -> bytes:
    return base64.b64decode(
        secret[len(SECRET_PREFIX) :] if secret.startswith(SECRET_PREFIX) else secret
    )


def service_signature(secret: str, timestamp: int, body: bytes) -> str:
    """Lowercase hex HMAC-SHA256, key = the secret string as shown (UTF-8),
    message = `"<timestamp>.<raw body>"`."""
    message = str(timestamp).encode() + b"." + body
    return hmac.new(secret.encode("utf-8"), message, hashlib.sha256).hexdigest()


def standard_signature(secret: str, msg_id: str, timestamp: int, body: bytes) -> str:
    """Standard Webhooks: base64 HMAC-SHA256 keyed with the base64-decoded secret over
    `"<msg_id>.<timestamp>.<body>"`."""
    message = f"{msg_id}.{timestamp}.".encode() + body
    return base64.b64encode(
        hmac.new(_standard_key(secret), message, hashlib.sha256).digest()
    ).decode()


def signed_headers(
    event_id: str, body: bytes, timestamp: int, signing_secrets: list[str]
) -> dict[str, str]:
    """Every header of one delivery attempt; `signing_secrets` is [old, new] during a rotation."""
    return {
        "Content-Type": "application/json",
        "User-Agent": "fgcpay-webhooks/1",
        "Service-Timestamp": str(timestamp),
        "Service-Signature": ",".join(
            f"v1={service_signature(secret, timestamp, body)}" for secret in signing_secrets
        ),
        "Service-Event-Id": event_id,
        "webhook-id": event_id,
        "webhook-timestamp": str(timestamp),
        "webhook-signature": " ".join(
            f"v1,{standard_signature(secret, event_id, timestamp, body)}"
            for secret in signing_secrets
        ),
    }


def verify(
    body: bytes,
    headers: Mapping[str, str],
    secret: str,
    *,
    now: int,
    tolerance: int = TOLERANCE_SECONDS,
) -> None:
    """Verify a delivery with either header family; raise `WebhookVerificationError`.

    `headers` is matched case-insensitively. The timestamp must be within `tolerance`
    seconds of `now` (unix seconds) in either direction. Comparisons are constant time.
    """
    lowered = {k.lower(): v for k, v in headers.items()}
    if "service-signature" in lowered:
        raw_ts = lowered.get("service-timestamp", "")
        timestamp = _fresh(raw_ts, now, tolerance)
        expected = service_signature(secret, timestamp, body)
        offered = [
            part.strip()[3:]
            for part in lowered["service-signature"].split(",")
            if part.strip().startswith("v1=")
        ]
    elif "webhook-signature" in lowered:
        timestamp = _fresh(lowered.get("webhook-timestamp", ""), now, tolerance)
        expected = standard_signature(secret, lowered.get("webhook-id", ""), timestamp, body)
        offered = [
            part[3:] for part in lowered["webhook-signature"].split() if part.startswith("v1,")
        ]
    else:
        raise WebhookVerificationError("no signature header")
    if not any(hmac.compare_digest(expected, candidate) for candidate in offered):
        raise WebhookVerificationError("no signature matches")


def _fresh(raw: str, now: int, tolerance: int) -> int:
    if not raw.isdigit():
        raise WebhookVerificationError("missing or malformed timestamp")
    timestamp = int(raw)
    if abs(now - timestamp) > tolerance:
        raise WebhookVerificationError("timestamp outside the tolerance window")
    return timestamp


SIGNATURE_HEADERS = ("Service-Signature", "webhook-signature")
"""The headers that carry signatures, one per family (as `signed_headers` names them)."""


def without_signatures(headers: Mapping[str, str]) -> dict[str, str]:
    """`headers` with no signature header of either family (the timestamps and ids kept):
    a delivery a receiver must refuse, as the receiver check sends it."""
    return {name: value for name, value in headers.items() if name not in SIGNATURE_HEADERS}


def secret_problem(secret: str) -> str | None:
    """Why `secret` cannot sign in both header families (the Standard Webhooks one needs
    base64 after `whsec_`), or None."""
    encoded = secret[len(SECRET_PREFIX) :] if secret.startswith(SECRET_PREFIX) else secret
    try:
        key = base64.b64decode(encoded, validate=True)
    except ValueError:
        key = b""
    if not key:
        return "a signing secret is whsec_ followed by base64 (as the endpoint's is)"
    return None
