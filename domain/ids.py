"""Identifiers and secrets, per the contract's table: a prefix plus random base62."""

from __future__ import annotations

import hashlib
import os
import string
import threading

BASE62 = string.digits + string.ascii_uppercase + string.ascii_lowercase

API_KEY_PREFIX = "fp_test_"
LIVE_KEY_PREFIX = "fp_live_"


_UNBIASED_LIMIT = 248  # 4 * 62: bytes below it map onto base62 uniformly
# Byte -> its base62 character (for bytes below the limit; the others are deleted first).
_TO_BASE62 = bytes(ord(BASE62[b % 62]) if b < _UNBIASED_LIMIT else 0 for b in range(256))
_BIASED = bytes(range(_UNBIASED_LIMIT, 256))
_PAGE_BYTES = 4096  # about 3,970 characters: some 160 identifiers of 24


class _Base62Pool:
    """Base62 characters from `os.urandom` (the source `secrets` reads), made a page at a
    time: one system call serves about 160 identifiers instead of one each. A system
    call on the trio thread lets the database threads take the GIL, and the trio thread
    then waits to get it back (a create made two). Each character is handed out once;
    a forked child starts with none of its parent's."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._chars = b""
        self._at = 0

    def take(self, length: int) -> str:
        with self._lock:
            end = self._at + length
            if end > len(self._chars):
                self._chars, self._at, end = _drawn(max(_PAGE_BYTES, 2 * length), length), 0, length
            taken = self._chars[self._at : end]
            self._at = end
        return taken.decode("ascii")

    def forget(self) -> None:
        """Drop the characters drawn so far (in a forked child: they are its parent's)."""
        self._lock = threading.Lock()
        self._chars, self._at = b"", 0


def _drawn(size: int, at_least: int) -> bytes:
    """At least `at_least` base62 characters from draws of `size` random bytes: bytes of
    248 and above are deleted so that `% 62` stays uniform (both steps one
    `bytes.translate`, in C)."""
    chars = b""
    while len(chars) < at_least:
        chars += os.urandom(size).translate(_TO_BASE62, _BIASED)
    return chars


_POOL = _Base62Pool()
os.register_at_fork(after_in_child=_POOL.forget)


def random_base62(length: int) -> str:
    """Return `length` characters drawn uniformly from base62 (~5.95 bits each) by
    `os.urandom`, as `secrets` draws them (`_Base62Pool`)."""
    return _POOL.take(length)


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


def sandbox_id() -> str:
    return "sbx_test_" + random_base62(24)


def event_id() -> str:
    return "evt_" + random_base62(24)


def merchant_id() -> str:
    return "mer_" + random_base62(16)


def api_key_id() -> str:
    return "key_" + random_base62(16)


def request_id() -> str:
    return "req_" + random_base62(16)


def api_key_secret() -> str:
    # Drawn for itself, not from the pool: a secret's characters should not sit in a
    # buffer shared with every identifier until the next page is drawn.
    return API_KEY_PREFIX + _drawn(40, 32)[:32].decode("ascii")


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
