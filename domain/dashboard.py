"""The dashboard's sign-in rules, pure: session ids and their hashes, the idle timeout,
and the limits on failed sign-ins."""

from __future__ import annotations

import hashlib
import hmac
import secrets

import attrs

MINUTE_US = 60 * 1_000_000
# A session ends after 12 hours without a request.
SESSION_IDLE_US = 12 * 60 * MINUTE_US
# `last_seen_at` is written at most this often: a write per page view buys nothing.
SESSION_TOUCH_US = MINUTE_US
# How long after signing in a session may see secrets (a webhook endpoint's).
SESSION_FRESH_US = 5 * MINUTE_US

# Failed sign-ins: per email (guessing one merchant's password) and per client address
# (trying many emails from one place), each in a 15-minute window, then locked 15 minutes.
FAILURE_WINDOW_US = 15 * MINUTE_US
LOCK_US = 15 * MINUTE_US
MAX_EMAIL_FAILURES = 5
MAX_ADDRESS_FAILURES = 20


# Session ids carry a prefix, as API keys and webhook secrets do, so a log line that
# happens to hold one (a client's debug log of a Set-Cookie header) is masked by its shape.
SESSION_ID_PREFIX = "fgcdash_"


def new_session_id() -> str:
    """A session id for the cookie: 256 random bits."""
    return SESSION_ID_PREFIX + secrets.token_urlsafe(32)


def session_hash(session_id: str) -> str:
    """What the database keeps of a session id (SHA-256, hex): the id has 256 random bits,
    so a plain hash cannot be reversed, and a lookup by it is exact."""
    return hashlib.sha256(session_id.encode("utf-8")).hexdigest()


@attrs.frozen
class DashboardSession:
    id_hash: str = attrs.field(repr=False)
    merchant_id: str
    created_at: int  # the sign-in
    last_seen_at: int

    def idle_at(self, now_us: int) -> bool:
        """Whether the session has ended for want of use by `now_us`."""
        return now_us - self.last_seen_at >= SESSION_IDLE_US

    def fresh_at(self, now_us: int) -> bool:
        """Whether the sign-in was recent enough, at `now_us`, to show a secret."""
        return now_us - self.created_at <= SESSION_FRESH_US

    def needs_touch(self, now_us: int) -> bool:
        return now_us - self.last_seen_at >= SESSION_TOUCH_US


@attrs.frozen
class Limit:
    """One counter a sign-in attempt is reserved from: its subject and how many failures
    in the window lock it."""

    subject: str = attrs.field(repr=False)
    max_failures: int
    # A success forgives the subject's earlier failures (an email's, not an address's:
    # one account of an attacker's own must not reset the count for the address).
    forgiven_by_success: bool


def sign_in_limits(secret_key: str, email: str, address: str) -> list[Limit]:
    """The counters a sign-in with `email` from `address` reserves from. Subjects are HMACs
    under the server's secret: neither a typed email nor an address is kept in clear."""

    def subject(kind: str, value: str) -> str:
        message = f"sign-in:{kind}:{value}".encode()
        return kind + ":" + hmac.new(secret_key.encode(), message, hashlib.sha256).hexdigest()

    return [
        Limit(subject("email", email), MAX_EMAIL_FAILURES, forgiven_by_success=True),
        Limit(subject("address", address), MAX_ADDRESS_FAILURES, forgiven_by_success=False),
    ]


def minutes_left(locked_until: int | None, now_us: int) -> int:
    """Whole minutes until a lock ends, at least 1 (for the message)."""
    if locked_until is None:
        return 1
    return max(1, -(-(locked_until - now_us) // MINUTE_US))
