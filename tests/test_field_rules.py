"""The request and query models report problems as the contract words them: every problem
at once, unknown fields first (sorted), then fields in declaration order, cross-field
checks with the rest, null as "absent" for optional fields and "required" for required ones."""

from __future__ import annotations

from typing import Any

import pytest
from fgcpay.domain import checkout, webhooks
from fgcpay.domain.errors import ValidationFailed
from fgcpay.domain.lists import QUERY_MESSAGE
from helpers import valid_body


def problems(parse: Any, body: Any) -> list[tuple[str, str]]:
    with pytest.raises(ValidationFailed) as failed:
        parse(body)
    return [(error.field, error.message) for error in failed.value.errors]


def test_every_problem_is_listed_unknown_fields_first_then_in_declaration_order() -> None:
    body = {"zeta": 1, "alpha": 2, "amount_fgc": "12.50", "amount_minor": "99", "currency": None}
    assert problems(checkout.parse_create, body) == [
        ("alpha", "Unknown field."),
        ("zeta", "Unknown field."),
        ("amount_minor", "Must agree with amount_fgc (12.50 FGC is 1250 minor units)."),
        ("currency", "This field is required."),
        ("description", "This field is required."),
        ("success_url", "This field is required."),
        ("cancel_url", "This field is required."),
    ]


def test_null_is_absent_for_optional_fields_and_missing_for_required_ones() -> None:
    optional = ("amount_minor", "customer_email", "customer_reference", "external_reference")
    parsed = checkout.parse_create(valid_body(**{name: None for name in optional}, metadata=None))
    assert parsed.metadata == {} and not parsed.used_amount_minor
    assert parsed.customer_email is None and parsed.external_reference is None
    assert problems(checkout.parse_create, valid_body(description=None)) == [
        ("description", "This field is required.")
    ]


def test_a_metadata_key_is_named_and_caller_text_is_never_formatted() -> None:
    assert problems(checkout.parse_create, valid_body(metadata={"k" * 41: 1})) == [
        ("metadata." + "k" * 40, "Keys must be 1 to 40 characters.")
    ]
    body = {"url": "https://hooks.example/", "enabled_events": ["{message}", "{field}"]}
    assert problems(webhooks.parse_endpoint, body) == [
        ("enabled_events", "Unknown event types: {field}, {message}.")
    ]


def test_query_problems_use_the_query_wording() -> None:
    with pytest.raises(ValidationFailed) as failed:
        webhooks.parse_delivery_query(
            {"limit": ["5", "6"], "x": ["1"], "status": ["nope"], "event_id": ["evt_1"]}
        )
    assert failed.value.message == QUERY_MESSAGE
    assert [(e.field, e.message) for e in failed.value.errors] == [
        ("x", "Unknown query parameter."),
        ("limit", "Give this parameter once."),
        ("status", "Must be one of: pending, succeeded, failed."),
        ("event_id", "Must be an event id (evt_...)."),
    ]
    query = webhooks.parse_delivery_query({"limit": ["007"]})
    assert query.page.limit == 7 and query.endpoint_id is None
