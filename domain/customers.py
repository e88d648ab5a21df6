"""Test customers and PINs: how a customer authorizes a payment on the hosted page."""

from __future__ import annotations

import hashlib
import hmac
from typing import Generic, TypeVar

import attrs

T = TypeVar("T")

SUCCEEDS = "succeeds"
INSUFFICIENT_FUNDS = "insufficient_funds"
BLOCKED = "blocked"
# Approves (and pays one-time sessions) like SUCCEEDS, but every renewal is declined: a
# merchant's way to see past_due, the retries and the end with `payment_failed`.
RENEWALS_DECLINED = "renewals_declined"

# The contract's table: code, PIN, outcome. Shown on the page and in the README.
TEST_CUSTOMERS: tuple[tuple[str, str, str], ...] = (
    ("TEST-0001", "1234", SUCCEEDS),
    ("TEST-0002", "1234", INSUFFICIENT_FUNDS),
    ("TEST-0003", "1234", BLOCKED),
    ("TEST-0004", "1234", RENEWALS_DECLINED),
)

# The documented test customers are shared by every merchant, so their wrong-PIN count
# and lock are kept per merchant; every other code counts and locks across all merchants.
PER_MERCHANT_CODES = frozenset(code for code, _, _ in TEST_CUSTOMERS)
GLOBAL_SCOPE = ""

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


@attrs.frozen
class PinAttempt:
    """A reserved (or refused) chance to compare one PIN for a customer code.

    `locked`: refused before any PIN is compared: the code is locked, or (`busy`) its
    counter cannot be taken: its merchant is gone (a sandbox deleted meanwhile), or five
    attempts are counted or in flight and the ones in flight (reserved by an earlier
    version, which settled them in a later transaction) have not settled. Otherwise
    `customer` is the code's customer, None when unknown.
    """

    locked: bool
    customer: Customer | None = None
    busy: bool = False


@attrs.frozen
class PinTry(Generic[T]):
    """One PIN attempt decided in the transaction of the charge it authorizes.

    `refused`: no PIN was compared (a `PinAttempt` refused, `busy` as its). Otherwise
    `customer` is the code's customer (None when unknown), `matched` whether the PIN was
    right, and `locked` whether the code is locked now (a wrong PIN, the fifth). The charge
    was written, with `charged` its result, exactly when the PIN matched and the customer
    `pays`."""

    refused: bool = False
    busy: bool = False
    customer: Customer | None = None
    matched: bool = False
    locked: bool = False
    charged: T | None = None


def pays(outcome: str) -> bool:
    """Whether a customer with `outcome` pays a one-time session or approves a subscription
    (its first charge) when the PIN is right."""
    return outcome in (SUCCEEDS, RENEWALS_DECLINED)


def renewal_pays(outcome: str) -> bool:
    """Whether a renewal (or its retry) charged to a customer with `outcome` succeeds."""
    return outcome == SUCCEEDS


def lock_scope(customer_code: str, merchant_id: str) -> str:
    """Where a code's wrong PINs are counted: per merchant for test customers, else globally."""
    return merchant_id if customer_code in PER_MERCHANT_CODES else GLOBAL_SCOPE


def pin_hmac(secret_key: str, customer_code: str, pin: str) -> str:
    """HMAC-SHA256 keyed with the server secret over the code and PIN.

    A 4-6 digit PIN gains nothing from a slow hash (10^6 guesses are instant); a key kept
    outside the database is what protects it. Binding the code makes equal PINs differ.
    """
    message = f"pin:{customer_code}:{pin}".encode()
    return hmac.new(secret_key.encode("utf-8"), message, hashlib.sha256).hexdigest()


def pin_matches(secret_key: str, customer: Customer | None, customer_code: str, pin: str) -> bool:
    """Compare the PIN; an unknown code costs the same HMAC, so timing does not tell it."""
    digest = pin_hmac(secret_key, customer_code, pin)
    if customer is None or customer.pin_hmac is None:
        return False
    return hmac.compare_digest(digest, customer.pin_hmac)


def normalize_code(raw: str) -> str:
    return raw.strip().upper()
