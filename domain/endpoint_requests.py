"""What a webhook endpoint's create and update may ask (`POST` and `PATCH
/webhook_endpoints`, the dashboard's forms, `fgcpay webhook-endpoint create`): the
bodies and their rules. The endpoint as stored and shown is `endpoints`."""

from __future__ import annotations

from typing import Annotated, Any

import attrs
from pydantic import BaseModel, ConfigDict

from .events import ALL_EVENTS, EVENT_TYPES
from .faults import FAULTS_SCHEMA, Faults, FaultsError, parse_faults
from .fields import Custom, Rule, Url, fail, ref, validate


@attrs.frozen
class EndpointRequest:
    url: str
    enabled_events: tuple[str, ...]  # ("*",) for every type
    faults: Faults | None = None


class FaultsRule(Rule):
    """The optional `faults` object (`faults.parse_faults`), its problems named by the
    field within it (`faults.duplicate`); null is no faults."""

    required = False

    def check(self, value: Any) -> Faults | None:
        try:
            return parse_faults(value)
        except FaultsError as error:
            raise fail(str(error), field=error.field) from None

    def schema(self) -> dict[str, Any]:
        return FAULTS_SCHEMA


def _event_types(value: Any) -> tuple[str, ...]:
    if not isinstance(value, list) or not value or not all(isinstance(v, str) for v in value):
        raise fail("Must be a non-empty list of event types, or omitted for all.")
    if ALL_EVENTS in value:
        return (ALL_EVENTS,)
    unknown = sorted(set(value) - set(EVENT_TYPES))
    if unknown:
        raise fail("Unknown event types: " + ", ".join(unknown[:5]) + ".")
    return tuple(sorted(set(value)))


def _enabled_events(description: str) -> Custom:
    """The optional `enabled_events` field of an endpoint's create and update."""
    return Custom(
        _event_types,
        {
            "type": "array",
            "minItems": 1,
            "items": {"oneOf": [ref("EventType"), {"const": ALL_EVENTS}]},
            "description": description,
        },
        required=False,
    )


class WebhookEndpointEvents(BaseModel):
    """The event selection alone, checked as the create's (the dashboard's edit)."""

    model_config = ConfigDict(extra="forbid")

    enabled_events: Annotated[
        tuple[str, ...], Custom(_event_types, {"type": "array"}, required=True)
    ]


def parse_enabled_events(chosen: list[str]) -> tuple[str, ...]:
    """The event types of an endpoint as the create checks them (`["*"]`: all); a
    `ValidationFailed` on `enabled_events` otherwise (none chosen, an unknown type)."""
    return validate(WebhookEndpointEvents, {"enabled_events": chosen}).enabled_events


class WebhookEndpointCreate(BaseModel):
    """The `POST /webhook_endpoints` body."""

    model_config = ConfigDict(extra="forbid")

    url: Annotated[
        str,
        Url(
            "Absolute http(s) URL. Private, loopback and link-local targets are refused unless "
            "the operator sets FGCPAY_WEBHOOK_ALLOW_PRIVATE=1; checked on save and again before "
            "every delivery, after DNS resolution."
        ),
    ]
    enabled_events: Annotated[
        tuple[str, ...] | None,
        _enabled_events('Event types to receive; omitted or ["*"] for all.'),
    ] = None
    faults: Annotated[Faults | None, FaultsRule()] = None


def parse_endpoint(body: dict[str, Any]) -> EndpointRequest:
    parsed = validate(WebhookEndpointCreate, body)
    return EndpointRequest(
        url=parsed.url,
        enabled_events=parsed.enabled_events or (ALL_EVENTS,),
        faults=parsed.faults,
    )


class WebhookEndpointUpdate(BaseModel):
    """The `PATCH /webhook_endpoints/{id}` body: only the fields given change, each
    checked as the create checks it (an absent or null field is left as it is, but
    `"faults": null` clears the faults)."""

    model_config = ConfigDict(extra="forbid")

    url: Annotated[
        str | None,
        Url(
            "The new absolute http(s) URL, under the create's rules (private targets included).",
            required=False,
        ),
    ] = None
    enabled_events: Annotated[
        tuple[str, ...] | None,
        _enabled_events('The event types to receive from now on; ["*"] for all.'),
    ] = None
    faults: Annotated[Faults | None, FaultsRule()] = None


@attrs.frozen
class EndpointChange:
    """What a PATCH changes: None for a field left as it is; `faults` only when
    `faults_given` (None then clears them)."""

    url: str | None = None
    enabled_events: tuple[str, ...] | None = None
    faults: Faults | None = None
    faults_given: bool = False


def parse_endpoint_update(body: dict[str, Any]) -> EndpointChange:
    parsed = validate(WebhookEndpointUpdate, body)
    return EndpointChange(
        url=parsed.url,
        enabled_events=parsed.enabled_events,
        faults=parsed.faults,
        faults_given="faults" in parsed.model_fields_set,
    )
