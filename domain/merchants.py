"""Merchants, their API keys and dashboard passwords (pure: hashing is CPU, not I/O)."""

from __future__ import annotations

import base64
import functools
import hashlib
import hmac

import attrs
from argon2 import PasswordHasher, Type
from argon2.exceptions import InvalidHashError, VerificationError

from . import ids


@attrs.frozen
class Merchant:
    id: str
    name: str
    email: str
    created_at: int
    password_hash: str | None = attrs.field(default=None, repr=False)


@attrs.frozen
class ApiKey:
    """A stored key: never the raw secret, only its hash and what the dashboard shows."""

    id: str
    merchant_id: str
    key_hash: str = attrs.field(repr=False)
    prefix: str
    last4: str
    created_at: int
    last_used_at: int | None = None
    revoked_at: int | None = None
    name: str | None = None  # the operator's label, if given

    @property
    def display(self) -> str:
        return f"{self.prefix}...{self.last4}"


@attrs.frozen
class NewApiKey:
    """A key just created: the stored record and the raw key, to be shown once."""

    record: ApiKey
    raw: str = attrs.field(repr=False)


def new_api_key(merchant_id: str, now_us: int, name: str | None = None) -> NewApiKey:
    raw = ids.api_key_secret()
    record = ApiKey(
        id=ids.api_key_id(),
        merchant_id=merchant_id,
        key_hash=ids.api_key_hash(raw),
        prefix=raw[: len(ids.API_KEY_PREFIX) + 4],
        last4=raw[-4:],
        created_at=now_us,
        name=name,
    )
    return NewApiKey(record=record, raw=raw)


# argon2id with OWASP's first recommended setting (19 MiB, 2 passes, 1 lane): a few tens
# of milliseconds of one core per check. Callers run it off the event loop, few at a time.
_ARGON2 = PasswordHasher(time_cost=2, memory_cost=19 * 1024, parallelism=1, type=Type.ID)

MIN_PASSWORD_LENGTH = 10
# A bound on the work one request can ask of the hasher (argon2 reads the whole input).
MAX_PASSWORD_LENGTH = 1024


def password_problem(password: str) -> str | None:
    """Why `password` cannot be a dashboard password, or None."""
    if len(password) < MIN_PASSWORD_LENGTH:
        return f"The password must be at least {MIN_PASSWORD_LENGTH} characters."
    if len(password) > MAX_PASSWORD_LENGTH:
        return f"The password must be at most {MAX_PASSWORD_LENGTH} characters."
    return None


def hash_password(password: str) -> str:
    """An argon2id hash (PHC string: parameters and salt included). CPU-bound: call it off
    the event loop."""
    return _ARGON2.hash(password)


def verify_password(password: str, stored: str | None) -> bool:
    """Whether `password` matches `stored` (argon2id, or scrypt as stored before the
    dashboard existed). With nothing stored, one hash is still computed, so a missing
    account answers in the same time as a wrong password."""
    if not stored:
        _burn(password)
        return False
    if stored.startswith("scrypt$"):
        return _verify_scrypt(password, stored)
    try:
        return _ARGON2.verify(stored, password)
    except (VerificationError, InvalidHashError):
        return False


def needs_rehash(stored: str) -> bool:
    """Whether a hash that just verified should be replaced (older scheme or parameters)."""
    return stored.startswith("scrypt$") or _ARGON2.check_needs_rehash(stored)


def _burn(password: str) -> None:
    try:
        _ARGON2.verify(_dummy_hash(), password)
    except (VerificationError, InvalidHashError):
        pass


@functools.cache
def _dummy_hash() -> str:
    return _ARGON2.hash("not the password of anyone")


def _verify_scrypt(password: str, stored: str) -> bool:
    try:
        scheme, n, r, p, salt_b64, digest_b64 = stored.split("$")
        salt = base64.b64decode(salt_b64)
        expected = base64.b64decode(digest_b64)
        actual = hashlib.scrypt(
            password.encode("utf-8"), salt=salt, n=int(n), r=int(r), p=int(p), dklen=len(expected)
        )
    except ValueError:
        return False
    return hmac.compare_digest(actual, expected)


def normalize_email(email: str) -> str:
    return email.strip().lower()
