"""Identifiers and secrets, per the contract's table: a prefix plus random base62."""

from __future__ import annotations

import hashlib
import secrets
import string

BASE62 = string.digits + string.ascii_uppercase + string.ascii_lowercase

API_KEY_PREFIX = "fp_test_"
LIVE_KEY_PREFIX = "fp_live_"


_UNBIASED_LIMIT = 248  # 4 * 62: bytes below it map onto base62 uniformly
# Byte -> its base62 character (for bytes below the limit; the others are deleted first).
_TO_BASE62 = bytes(ord(BASE62[b % 62]) if b < _UNBIASED_LIMIT else 0 for b in range(256))
_BIASED = bytes(range(_UNBIASED_LIMIT, 256))


def random_base62(length: int) -> str:
    """Return `length` characters drawn uniformly from base62 by `secrets` (~5.95 bits each).

    One `token_bytes` call per identifier (not one per character: each is a system call
    on the request path); bytes of 248 and above are rejected so `% 62` stays uniform.
    Both steps are one `bytes.translate`, in C: identifiers are made on every request.
    """
    out = b""
    while len(out) < length:
        out += secrets.token_bytes(length + 8).translate(_TO_BASE62, _BIASED)
    return out[:length].decode("ascii")


def checkout_session_id() -> str:
    return "cs_test_" + random_base62(24)


def subscription_id() -> str:
    return "sub_test_" + random_base62(24)


def test_clock_id() -> str:
    return "clock_test_" + random_base62(24)


def refund_id() -> str:
    return "re_test_" + random_base62(24)


def transaction_id() -> str:
    return "txn_test_" + random_base62(24)


def event_id() -> str:
    return "evt_" + random_base62(24)


def merchant_id() -> str:
    return "mer_" + random_base62(16)


def api_key_id() -> str:
    return "key_" + random_base62(16)


def request_id() -> str:
    return "req_" + random_base62(16)


def api_key_secret() -> str:
    return API_KEY_PREFIX + random_base62(32)


def api_key_hash(raw_key: str) -> str:
    """SHA-256 of the raw key, hex: what storage keeps instead of the key.

    A fast hash is right here: the key has 190 bits of entropy, so nothing is gained by
    a slow one, and the lookup runs on every request.
    """
    return hashlib.sha256(raw_key.encode("utf-8")).hexdigest()


def looks_like_id(value: str, prefix: str, length: int) -> bool:
    """True when `value` has the shape of an identifier, so junk never reaches a query."""
    body = value[len(prefix) :]
    # An ASCII string is alphanumeric exactly when every character is in BASE62.
    return value.startswith(prefix) and len(body) == length and body.isascii() and body.isalnum()
