"""Idempotency-Key rules: scope, retention, request fingerprints and stored answers."""

from __future__ import annotations

import hashlib
import json

import attrs

from .fields import canonical_json
from .json_depth import too_deep

MAX_KEY_LENGTH = 180
RETENTION_US = 24 * 3600 * 1_000_000
# A claim whose holder died lapses after this; far longer than any request may run.
LOCK_US = 60 * 1_000_000


@attrs.frozen
class Scope:
    merchant_id: str
    method: str
    path: str
    key: str


@attrs.frozen
class StoredResponse:
    status: int
    headers: dict[str, str]
    body: str


@attrs.frozen
class Claim:
    """What storage says when a request tries to take a key."""

    owned: bool
    # when not owned: the record found
    state: str | None = None
    request_hash: str | None = None
    response: StoredResponse | None = None


@attrs.frozen
class Completion:
    """A final answer to store with the request's own write, in one transaction."""

    scope: Scope
    owner: str
    response: StoredResponse


def key_problem(key: str) -> str | None:
    """Why `key` cannot be used, or None."""
    if not key.strip():
        return "The Idempotency-Key header must not be empty."
    if len(key) > MAX_KEY_LENGTH:
        return f"The Idempotency-Key header must be at most {MAX_KEY_LENGTH} characters."
    return None


def request_hash(canonical_body: bytes) -> str:
    return hashlib.sha256(canonical_body).hexdigest()


def fingerprint(raw: bytes) -> str:
    """The hash a request body is compared by: of its canonical JSON, so that key order and
    spacing do not matter; of the raw bytes when it is not JSON, or nests too deep to be
    parsed without recursing past the limit (the route then answers 400 `invalid_json`)."""
    if too_deep(raw):
        return request_hash(b"raw:" + raw)
    try:
        parsed = json.loads(raw) if raw.strip() else {}
    except ValueError:
        return request_hash(b"raw:" + raw)
    return request_hash(canonical_json(parsed).encode("utf-8"))


class IdempotencyLost(Exception):
    """Another request took over this key (the claim lapsed); the write was rolled back."""
