"""Webhook endpoints as stored, and their wire form."""

from __future__ import annotations

from typing import Any

import attrs

from .times import iso_ms
from .webhooks import ALL_EVENTS


@attrs.frozen
class WebhookEndpoint:
    id: str
    merchant_id: str
    url: str
    enabled_events: tuple[str, ...]
    secret_sealed: str = attrs.field(repr=False)
    previous_secret_sealed: str | None = attrs.field(repr=False)
    previous_secret_expires_at: int | None
    created_at: int
    deleted_at: int | None = None


def encode_events(events: tuple[str, ...]) -> str:
    return ",".join(events)


def decode_events(stored: str) -> tuple[str, ...]:
    return tuple(part for part in stored.split(",") if part) or (ALL_EVENTS,)


def to_json(endpoint: WebhookEndpoint, secret: str | None = None) -> dict[str, Any]:
    """The endpoint as the API shows it; the secret only when just created or rotated."""
    body: dict[str, Any] = {
        "id": endpoint.id,
        "object": "webhook_endpoint",
        "url": endpoint.url,
        "enabled_events": list(endpoint.enabled_events),
        "status": "deleted" if endpoint.deleted_at is not None else "enabled",
        "created_at": iso_ms(endpoint.created_at),
    }
    if secret is not None:
        body["secret"] = secret
    return body
