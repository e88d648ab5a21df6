"""The request and query models report problems as the contract words them: every problem
at once, unknown fields first (sorted), then fields in declaration order, cross-field
checks with the rest, null as "absent" for optional fields and "required" for required ones."""

from __future__ import annotations

import re
import unicodedata
from typing import Any

import pytest
from fgcpay.domain import checkout, fields, refunds, subscriptions, test_clocks
from fgcpay.domain.deliveries import parse_delivery_query
from fgcpay.domain.endpoint_requests import parse_endpoint
from fgcpay.domain.errors import ValidationFailed
from fgcpay.domain.lists import QUERY_MESSAGE
from helpers import NOW_US, subscription_body, valid_body


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
    assert problems(parse_endpoint, body) == [
        ("enabled_events", "Unknown event types: {field}, {message}.")
    ]


def test_query_problems_use_the_query_wording() -> None:
    with pytest.raises(ValidationFailed) as failed:
        parse_delivery_query(
            {"limit": ["5", "6"], "x": ["1"], "status": ["nope"], "event_id": ["evt_1"]}
        )
    assert failed.value.message == QUERY_MESSAGE
    assert [(e.field, e.message) for e in failed.value.errors] == [
        ("x", "Unknown query parameter."),
        ("limit", "Give this parameter once."),
        ("status", "Must be one of: pending, succeeded, failed."),
        ("event_id", "Must be an event id (evt_...)."),
    ]
    query = parse_delivery_query({"limit": ["007"]})
    assert query.page.limit == 7 and query.endpoint_id is None


# Invisible format characters (Unicode category Cf): zero-width, bidirectional controls,
# the byte order mark, a soft hyphen, a tag character; and control characters (C0 but tab,
# newline and carriage return; DEL; C1).
INVISIBLE = ["\u200b", "\u200c", "\u200d", "\u200e", "\u202e", "\u2066", "\u2069",
             "\ufeff", "\u00ad", "\U000e0041"]  # fmt: skip
CONTROL = ["\x00", "\x07", "\x1b", "\x7f", "\x85", "\x9b"]
INVISIBLE_MESSAGE = (
    "Must not contain invisible format characters (zero-width or bidirectional controls)."
)
CONTROL_MESSAGE = "Must not contain control characters."


@pytest.mark.parametrize("character", INVISIBLE)
def test_invisible_format_characters_are_refused_in_text_a_person_reads(character: str) -> None:
    assert fields.unreadable("Coffee" + character + "club") == fields.INVISIBLE_CHARACTERS
    for text in ("Coffee club" + character, character, character + " "):
        assert problems(checkout.parse_create, valid_body(description=text)) == [
            ("description", INVISIBLE_MESSAGE)
        ]


@pytest.mark.parametrize("character", CONTROL)
def test_control_characters_are_refused_in_text_a_person_reads(character: str) -> None:
    assert fields.unreadable("Coffee" + character + "club") == fields.CONTROL_CHARACTERS
    assert problems(checkout.parse_create, valid_body(description="a" + character)) == [
        ("description", CONTROL_MESSAGE)
    ]


@pytest.mark.parametrize("text", [" ", "\t\n", "\u3000", "\u2028 \u00a0", "\x1c"])
def test_text_that_is_whitespace_only_is_blank(text: str) -> None:
    assert problems(checkout.parse_create, valid_body(description=text)) == [
        ("description", "Must not be blank.")
    ]


@pytest.mark.parametrize(
    "text", ["Café au lait ☕", "Ünïcödé — «quotes»", "عربي", "日本語", "tab\there", "two\nlines"]
)
def test_readable_text_is_accepted(text: str) -> None:
    assert fields.unreadable(text) is None
    assert checkout.parse_create(valid_body(description=text)).description == text


def test_every_text_field_of_every_resource_refuses_them_naming_the_field() -> None:
    bad = "Acme\u202eevil"
    session_fields = ("description", "customer_reference", "external_reference")
    body = valid_body(**dict.fromkeys(session_fields, bad))
    assert problems(checkout.parse_create, body) == [
        (name, INVISIBLE_MESSAGE) for name in session_fields
    ]
    sub_fields = ("description", "merchant_customer_reference", "external_reference")
    body = subscription_body(**dict.fromkeys(sub_fields, bad))
    assert problems(lambda b: subscriptions.parse_create(b, NOW_US), body) == [
        (name, INVISIBLE_MESSAGE) for name in sub_fields
    ]
    clock = {"frozen_time": "2030-01-01T00:00:00Z", "name": bad}
    assert problems(test_clocks.parse_create, clock) == [("name", INVISIBLE_MESSAGE)]


def test_metadata_values_and_keys_refuse_them_naming_the_key() -> None:
    nested = {"shown": "ok", "note": {"deep": ["fine", "zero\u200bwidth"]}}
    assert problems(checkout.parse_create, valid_body(metadata=nested)) == [
        ("metadata.note", INVISIBLE_MESSAGE)
    ]
    assert problems(checkout.parse_create, valid_body(metadata={"bell\x07": "x"})) == [
        ("metadata.bell\x07", CONTROL_MESSAGE)
    ]
    body = {"checkout_session_id": "cs_test_" + "a" * 24, "metadata": {"why": "\u2066x"}}
    assert problems(refunds.parse_create, body) == [("metadata.why", INVISIBLE_MESSAGE)]
    fine = {"order": 42, "tags": ["a", "b"], "note": "two\nlines", "none": None}
    assert checkout.parse_create(valid_body(metadata=fine)).metadata == fine


def test_the_published_pattern_refuses_what_the_rule_refuses_in_the_basic_plane() -> None:
    pattern = re.compile(fields.NOT_BLANK_PATTERN)
    for code in range(0x10000):
        character = chr(code)
        if unicodedata.category(character) == "Cs":
            continue  # lone surrogates never reach a field (invalid_json)
        text = "a" + character + "b"
        assert (pattern.match(text) is None) == (fields.unreadable(text) is not None), hex(code)
