"""Sandboxes: disposable merchants of a merchant's own, for parallel test runs; the record,
the request rules and the wire forms.

A sandbox is a merchant row of its own (its own API key, made with it and shown once),
marked as a sandbox of its parent, plus a `sandboxes` row naming it (its parent, name and
expiry). Every resource is keyed by merchant, so a sandbox sees only its own objects.
"""

from __future__ import annotations

from typing import Annotated, Any, Literal

import attrs
from pydantic import BaseModel, ConfigDict, Field, WithJsonSchema
from typing_extensions import TypedDict

from .fields import Custom, Text, validate
from .lists import DEFAULT_LIMIT, Cursor, Limit
from .times import iso_ms

SANDBOX_PREFIX = "sbx_test_"
MAX_NAME = 100
MIN_TTL_SECONDS = 60
MAX_TTL_SECONDS = 604_800  # 7 days
# The email of a sandbox's merchant row (the column is required and unique; nobody signs
# in with it: the row has no password). `.invalid` is reserved (RFC 2606).
SANDBOX_EMAIL_DOMAIN = "sandboxes.fgcpay.invalid"


@attrs.frozen
class Sandbox:
    """One sandbox as stored; times in microseconds (UTC)."""

    id: str
    parent_id: str  # the merchant who made it
    merchant_id: str  # the sandbox's own merchant row
    name: str | None
    created_at: int
    expires_at: int | None


@attrs.frozen
class SandboxRequest:
    """A validated `POST /sandboxes` body."""

    name: str | None
    ttl_seconds: int | None


def _ttl(value: Any) -> int:
    # bool is an int to Python; JSON's true is not a number of seconds.
    if isinstance(value, bool) or not isinstance(value, int):
        raise ValueError("must be a whole number of seconds")
    if not MIN_TTL_SECONDS <= value <= MAX_TTL_SECONDS:
        raise ValueError(f"must be from {MIN_TTL_SECONDS} to {MAX_TTL_SECONDS:,} seconds")
    return value


_TTL_SCHEMA = {
    "type": "integer",
    "minimum": MIN_TTL_SECONDS,
    "maximum": MAX_TTL_SECONDS,
    "description": (
        "Seconds until the sandbox is deleted with all its data (within a minute of "
        "`expires_at`); without it the sandbox lives until deleted."
    ),
}


class SandboxCreate(BaseModel):
    """The `POST /sandboxes` body; field order is the order problems are listed in."""

    model_config = ConfigDict(extra="forbid")

    name: Annotated[str | None, Text(MAX_NAME, required=False)] = None
    ttl_seconds: Annotated[
        int | None,
        Custom(_ttl, _TTL_SCHEMA, required=False, prefix="Must be valid: ", suffix="."),
    ] = None


def parse_create(body: dict[str, Any]) -> SandboxRequest:
    """Validate a creation body; raises `ValidationFailed` naming every problem."""
    parsed = validate(SandboxCreate, body)
    return SandboxRequest(name=parsed.name, ttl_seconds=parsed.ttl_seconds)


def new_sandbox(
    request: SandboxRequest, *, sandbox_id: str, parent_id: str, merchant_id: str, now_us: int
) -> Sandbox:
    expires_at = None
    if request.ttl_seconds is not None:
        expires_at = now_us + request.ttl_seconds * 1_000_000
    return Sandbox(
        id=sandbox_id,
        parent_id=parent_id,
        merchant_id=merchant_id,
        name=request.name,
        created_at=now_us,
        expires_at=expires_at,
    )


def expired(sandbox: Sandbox, now_us: int) -> bool:
    """Whether the sandbox is past its `expires_at`: no longer shown, counted or deleted
    by its parent (the timer deletes it within a minute)."""
    return sandbox.expires_at is not None and sandbox.expires_at <= now_us


def sandbox_email(merchant_id: str) -> str:
    """The (unused, unique) email of a sandbox's merchant row."""
    return f"{merchant_id}@{SANDBOX_EMAIL_DOMAIN}"


class SandboxQuery(BaseModel):
    """`GET /sandboxes`: the page (no filter)."""

    model_config = ConfigDict(extra="forbid")

    limit: Annotated[int, Limit()] = DEFAULT_LIMIT
    starting_after: Annotated[str | None, Cursor(SANDBOX_PREFIX, "a sandbox")] = None


_TIME = "UTC, millisecond precision, e.g. 2026-11-22T14:07:24.621Z"
Time = Annotated[
    str, WithJsonSchema({"type": "string", "format": "date-time", "description": _TIME})
]
SandboxId = Annotated[str, Field(pattern=f"^{SANDBOX_PREFIX}[0-9A-Za-z]{{24}}$")]


class SandboxWire(TypedDict):
    """A sandbox on the wire (without its key)."""

    id: SandboxId
    object: Literal["sandbox"]
    name: str | None
    created_at: Time
    expires_at: Annotated[
        str | None,
        WithJsonSchema(
            {
                "type": ["string", "null"],
                "format": "date-time",
                "description": (
                    f"When it is deleted (within a minute after); null without ttl_seconds. {_TIME}"
                ),
            }
        ),
    ]


class CreatedSandboxWire(SandboxWire):
    """The create's answer: the sandbox and its API key, shown this once."""

    api_key: Annotated[
        str,
        Field(
            pattern="^fp_test_[0-9A-Za-z]{32}$",
            description=(
                "The sandbox's API key (a merchant of its own), shown this once; it is 401 "
                "from the moment the sandbox is deleted."
            ),
        ),
    ]


class DeletedSandboxWire(TypedDict):
    """The answer of DELETE."""

    id: SandboxId
    object: Literal["sandbox"]
    deleted: Annotated[
        bool, Field(description="Always true: the sandbox, its key and all its data are gone.")
    ]


def to_json(sandbox: Sandbox, api_key: str | None = None) -> dict[str, Any]:
    """The sandbox as the API shows it; `api_key` only in the create's answer (in the
    contract's order: after `name`)."""
    body: dict[str, Any] = {"id": sandbox.id, "object": "sandbox", "name": sandbox.name}
    if api_key is not None:
        body["api_key"] = api_key
    body["created_at"] = iso_ms(sandbox.created_at)
    body["expires_at"] = None if sandbox.expires_at is None else iso_ms(sandbox.expires_at)
    return body


def deleted_to_json(sandbox_id: str) -> dict[str, Any]:
    return {"id": sandbox_id, "object": "sandbox", "deleted": True}
