"""Merchants, their API keys and dashboard passwords."""

from __future__ import annotations

import base64
import hashlib
import hmac
import secrets

import attrs

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


# scrypt parameters: ~16 MiB and ~50 ms per check; passwords are low-entropy, unlike keys.
_SCRYPT_N, _SCRYPT_R, _SCRYPT_P = 2**14, 8, 1


def hash_password(password: str) -> str:
    salt = secrets.token_bytes(16)
    digest = hashlib.scrypt(
        password.encode("utf-8"), salt=salt, n=_SCRYPT_N, r=_SCRYPT_R, p=_SCRYPT_P, dklen=32
    )
    encode = base64.b64encode
    return f"scrypt${_SCRYPT_N}${_SCRYPT_R}${_SCRYPT_P}${encode(salt).decode()}${encode(digest).decode()}"


def verify_password(password: str, stored: str | None) -> bool:
    if not stored:
        return False
    try:
        scheme, n, r, p, salt_b64, digest_b64 = stored.split("$")
        if scheme != "scrypt":
            return False
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
