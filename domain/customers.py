"""Test customers and PINs: how a customer authorizes a payment on the hosted page."""

from __future__ import annotations

import hashlib
import hmac

import attrs

SUCCEEDS = "succeeds"
INSUFFICIENT_FUNDS = "insufficient_funds"
BLOCKED = "blocked"

# The contract's table: code, PIN, outcome. Shown on the page and in the README.
TEST_CUSTOMERS: tuple[tuple[str, str, str], ...] = (
    ("TEST-0001", "1234", SUCCEEDS),
    ("TEST-0002", "1234", INSUFFICIENT_FUNDS),
    ("TEST-0003", "1234", BLOCKED),
)

MAX_FAILURES = 5
FAILURE_WINDOW_US = 15 * 60 * 1_000_000
LOCK_US = 15 * 60 * 1_000_000
MAX_CODE_LENGTH = 32
MAX_PIN_LENGTH = 12


@attrs.frozen
class Customer:
    code: str
    display_name: str
    outcome: str
    pin_hmac: str | None = attrs.field(repr=False)


def pin_hmac(secret_key: str, customer_code: str, pin: str) -> str:
    """HMAC-SHA256 keyed with the server secret over the code and PIN.

    A 4-6 digit PIN gains nothing from a slow hash (10^6 guesses are instant); a key kept
    outside the database is what protects it. Binding the code makes equal PINs differ.
    """
    message = f"pin:{customer_code}:{pin}".encode()
    return hmac.new(secret_key.encode("utf-8"), message, hashlib.sha256).hexdigest()


def pin_matches(secret_key: str, customer: Customer, pin: str) -> bool:
    if customer.pin_hmac is None:
        return False
    return hmac.compare_digest(pin_hmac(secret_key, customer.code, pin), customer.pin_hmac)


def normalize_code(raw: str) -> str:
    return raw.strip().upper()
