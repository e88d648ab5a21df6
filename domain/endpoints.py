"""Webhook endpoints as stored, and their wire form."""

from __future__ import annotations

from typing import Annotated, Literal, NotRequired

import attrs
from pydantic import Field, WithJsonSchema
from typing_extensions import TypedDict

from . import faults as fault_rules
from .events import ALL_EVENTS
from .faults import Faults, FaultsWire
from .times import iso_ms


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
    faults: Faults | None = None


def encode_events(events: tuple[str, ...]) -> str:
    return ",".join(events)


def decode_events(stored: str) -> tuple[str, ...]:
    return tuple(part for part in stored.split(",") if part) or (ALL_EVENTS,)


class WebhookEndpointWire(TypedDict):
    """An endpoint on the wire; `secret` only in the answers of create and rotate_secret
    (with `previous_secret_expires_at` in the latter), `deleted` only in the answer of
    DELETE."""

    id: Annotated[str, Field(pattern="^we_[0-9A-Za-z]{24}$")]
    object: Literal["webhook_endpoint"]
    url: str
    enabled_events: list[str]
    status: Literal["enabled", "deleted"]
    created_at: Annotated[str, WithJsonSchema({"type": "string", "format": "date-time"})]
    faults: Annotated[
        FaultsWire | None,
        Field(
            description=(
                "Faults injected into the first attempt of each delivery (test mode); "
                'null for none. See docs/webhooks.md, "Fault injection".'
            )
        ),
    ]
    secret: NotRequired[
        Annotated[
            str,
            Field(
                pattern="^whsec_",
                description=(
                    "The signing secret: `whsec_` + base64 of 32 random bytes. Only in the "
                    "answers of create and rotate_secret."
                ),
            ),
        ]
    ]
    previous_secret_expires_at: NotRequired[
        Annotated[
            str,
            WithJsonSchema(
                {
                    "type": "string",
                    "format": "date-time",
                    "description": (
                        "Only in the answer of rotate_secret: until then (24 hours) every "
                        "delivery is signed with the previous secret too (a second `v1=`)."
                    ),
                }
            ),
        ]
    ]
    deleted: NotRequired[Annotated[bool, Field(description="true in the answer of DELETE.")]]


def rotated_to_json(endpoint: WebhookEndpoint, secret: str) -> WebhookEndpointWire:
    """The answer of rotate_secret: the endpoint, its new secret, and when the previous
    one stops signing."""
    body = to_json(endpoint, secret)
    if endpoint.previous_secret_expires_at is not None:
        body["previous_secret_expires_at"] = iso_ms(endpoint.previous_secret_expires_at)
    return body


def to_json(endpoint: WebhookEndpoint, secret: str | None = None) -> WebhookEndpointWire:
    """The endpoint as the API shows it; the secret only when just created or rotated."""
    body: WebhookEndpointWire = {
        "id": endpoint.id,
        "object": "webhook_endpoint",
        "url": endpoint.url,
        "enabled_events": list(endpoint.enabled_events),
        "status": "deleted" if endpoint.deleted_at is not None else "enabled",
        "created_at": iso_ms(endpoint.created_at),
        "faults": fault_rules.to_json(endpoint.faults),
    }
    if secret is not None:
        body["secret"] = secret
    return body
