"""The subscription and test-clock request rules as the contract words them (every problem at
once, unknown fields first, cross-field checks with the rest, `end_date` after the creation
time), the strict date-time rule, and the wire forms of a new subscription and clock."""

from __future__ import annotations

import re
from decimal import Decimal
from typing import Any

import pytest
from fgcpay.domain import lists, periods, subscriptions, test_clocks, times
from fgcpay.domain.errors import ValidationFailed
from fgcpay.domain.test_clocks import parse_date_time
from helpers import subscription_body
from pydantic import TypeAdapter

NOW = parse_date_time("2026-11-24T14:00:00Z")
CLOCK_ID = "clock_test_" + "C" * 24
SUB_ID = "sub_test_" + "S" * 24
PUBLIC_URL = "https://pay.example"

FGC = re.compile(r"[0-9]+\.[0-9]{2}")
TIME = re.compile(r"[0-9]{4}-[0-9]{2}-[0-9]{2}T[0-9]{2}:[0-9]{2}:[0-9]{2}\.[0-9]{3}Z")


body = subscription_body  # a valid `POST /subscriptions` body; `...` drops a field


def problems(parse: Any, *args: Any) -> list[tuple[str, str]]:
    with pytest.raises(ValidationFailed) as failed:
        parse(*args)
    return [(error.field, error.message) for error in failed.value.errors]


def create_problems(sent: dict[str, Any], now_us: int = NOW) -> list[tuple[str, str]]:
    return problems(subscriptions.parse_create, sent, now_us)


# --- POST /subscriptions ------------------------------------------------------------------


def test_a_full_body_parses_into_the_request() -> None:
    request = subscriptions.parse_create(
        body(
            amount_fgc="0012.500",
            amount_minor="1250",
            interval="yearly",
            customer_email="Ana@Example.TEST",
            external_reference="order-7",
            max_total_amount_fgc="150",
            end_date="2027-11-24T15:00:00.25+01:00",
            test_clock=CLOCK_ID,
            metadata={"plan": "gold"},
        ),
        NOW,
    )
    assert request == subscriptions.SubscriptionRequest(
        amount_minor=1250,
        interval="yearly",
        description="Coffee club",
        merchant_customer_reference="cust-42",
        customer_email="Ana@example.test",
        success_url="https://shop.example/thanks",
        cancel_url="https://shop.example/cart",
        external_reference="order-7",
        max_total_minor=15000,
        end_date=parse_date_time("2027-11-24T14:00:00.250Z"),
        test_clock_id=CLOCK_ID,
        metadata={"plan": "gold"},
        used_amount_minor=True,
    )


def test_every_problem_is_listed_unknown_fields_first_then_in_declaration_order() -> None:
    sent = {
        "zeta": 1,
        "alpha": 2,
        "amount_fgc": "12.50",
        "amount_minor": "99",
        "currency": "EUR",
        "interval": "hourly",
        "description": " ",
        "customer_email": "nobody",
        "success_url": "ftp://shop.example/",
        "external_reference": "r" * 256,
        "max_total_amount_fgc": "12.49",
        "end_date": "2026-11-24T13:59:59Z",
        "test_clock": "clock_test_short",
        "metadata": [],
    }
    assert create_problems(sent) == [
        ("alpha", "Unknown field."),
        ("zeta", "Unknown field."),
        ("amount_minor", "Must agree with amount_fgc (12.50 FGC is 1250 minor units)."),
        ("currency", "Must be one of: FGC."),
        ("interval", "Must be one of: daily, weekly, monthly, yearly."),
        ("description", "Must not be blank."),
        ("merchant_customer_reference", "This field is required."),
        (
            "customer_email",
            "Must be a valid email address: it must be local-part@domain, such as ana@example.com",
        ),
        ("success_url", "Must be an absolute http or https URL."),
        ("cancel_url", "This field is required."),
        ("external_reference", "Must be 1 to 255 characters."),
        (
            "max_total_amount_fgc",
            "Must be at least amount_fgc (12.50 FGC): the first interval is charged at approval.",
        ),
        ("end_date", "Must be in the future (after 2026-11-24T14:00:00.000Z)."),
        ("test_clock", "Must be a test clock id (clock_test_...)."),
        ("metadata", "Must be a JSON object."),
    ]


FIELD_RULES = [
    ("amount_fgc", "0", "Must be a valid amount: must be greater than zero."),
    ("amount_fgc", 12.5, 'Must be a valid amount: must be a decimal string such as "10.50", '),
    ("amount_fgc", "1.001", "Must be a valid amount: must have at most two decimal places."),
    ("amount_minor", 1250, 'Must be a valid amount: must be an integer string such as "1050", '),
    ("currency", "fgc", "Must be one of: FGC."),
    ("interval", "Monthly", "Must be one of: daily, weekly, monthly, yearly."),
    ("interval", None, "This field is required."),
    ("description", "d" * 501, "Must be 1 to 500 characters."),
    ("description", "a\x00b", "Must not contain control characters."),
    ("merchant_customer_reference", "m" * 256, "Must be 1 to 255 characters."),
    ("merchant_customer_reference", "", "Must not be blank."),
    ("merchant_customer_reference", None, "This field is required."),
    ("merchant_customer_reference", 42, "Must be a string."),
    ("customer_email", "a@localhost", "Must be a valid email address: the part after the @ "),
    ("cancel_url", "/cart", "Must be an absolute http or https URL."),
    ("external_reference", "", "Must not be blank; omit the field instead."),
    ("max_total_amount_fgc", "0", "Must be a valid amount: must be greater than zero."),
    ("max_total_amount_fgc", "1000000.01", "Must be a valid amount: must be at most 1000000.00."),
    ("max_total_amount_fgc", 100, 'Must be a valid amount: must be a decimal string such as "'),
    ("max_total_amount_fgc", "12.49", "Must be at least amount_fgc (12.50 FGC): the first "),
    ("end_date", "2027-01-01", "Must be a valid date-time: must be an ISO 8601 date and time "),
    ("end_date", "2027-01-01T00:00:00", "Must be a valid date-time: must be an ISO 8601 "),
    ("end_date", 1893456000, 'Must be a valid date-time: must be a string such as "2026-'),
    ("end_date", "2027-02-30T00:00:00Z", "Must be a valid date-time: '2027-02-30T00:00:00Z' is "),
    ("end_date", "2026-11-24T14:00:00Z", "Must be in the future (after 2026-11-24T14:00:00.000Z)."),
    ("end_date", "2026-11-24T15:00:00+01:00", "Must be in the future (after 2026-11-24T14:"),
    ("test_clock", "sub_test_" + "a" * 24, "Must be a test clock id (clock_test_...)."),
    ("test_clock", CLOCK_ID + "x", "Must be a test clock id (clock_test_...)."),
    ("test_clock", 7, "Must be a test clock id (clock_test_...)."),
    ("metadata", {"k" * 41: 1}, "Keys must be 1 to 40 characters."),
]


@pytest.mark.parametrize(("field", "value", "message"), FIELD_RULES)
def test_each_field_rule(field: str, value: Any, message: str) -> None:
    [(named, said)] = create_problems(body(**{field: value}))
    assert named.split(".")[0] == field
    assert said.startswith(message)


def test_null_is_absent_for_optional_fields_and_missing_for_required_ones() -> None:
    optional = (
        "amount_minor",
        "customer_email",
        "external_reference",
        "max_total_amount_fgc",
        "end_date",
        "test_clock",
        "metadata",
    )
    request = subscriptions.parse_create(body(**dict.fromkeys(optional)), NOW)
    assert request.metadata == {} and not request.used_amount_minor
    assert (request.max_total_minor, request.end_date, request.test_clock_id) == (None, None, None)
    required = [name for name in body() if name not in optional]
    assert create_problems({name: None for name in required}) == [
        (name, "This field is required.") for name in required
    ]


def test_cross_field_checks_wait_for_a_valid_amount() -> None:
    # amount_fgc is wrong: the fields compared with it are not reported as well.
    sent = body(amount_fgc="-1", amount_minor="5", max_total_amount_fgc="0.01")
    assert [field for field, _ in create_problems(sent)] == ["amount_fgc"]


@pytest.mark.parametrize(
    ("max_total", "expected"),
    [("12.50", 1250), ("12.5000", 1250), ("12.51", 1251), ("1000000", 100_000_000)],
)
def test_the_maximum_total_may_be_one_interval_or_more(max_total: str, expected: int) -> None:
    request = subscriptions.parse_create(body(max_total_amount_fgc=max_total), NOW)
    assert request.max_total_minor == expected


def test_end_date_is_after_the_creation_time_to_the_microsecond() -> None:
    assert create_problems(body(end_date="2026-11-24T14:00:00.000000Z")) == [
        ("end_date", "Must be in the future (after 2026-11-24T14:00:00.000Z).")
    ]
    request = subscriptions.parse_create(body(end_date="2026-11-24T14:00:00.000001Z"), NOW)
    assert request.end_date == NOW + 1
    # The creation time is the caller's: a test clock's time, years away, decides.
    clock_time = parse_date_time("2031-01-01T00:00:00Z")
    assert create_problems(body(end_date="2030-01-01T00:00:00Z"), clock_time) == [
        ("end_date", "Must be in the future (after 2031-01-01T00:00:00.000Z).")
    ]


def test_the_end_date_rule_needs_the_creation_time() -> None:
    model = subscriptions.SubscriptionCreate
    with pytest.raises(TypeError):
        model.model_validate(body(end_date="2030-01-01T00:00:00Z"))


@pytest.mark.parametrize(
    ("sent", "expected"),
    [
        ({"test_clock": CLOCK_ID}, CLOCK_ID),
        ({"test_clock": CLOCK_ID[:-1]}, None),
        ({"test_clock": 1}, None),
        ({}, None),
    ],
)
def test_the_requested_test_clock_is_read_before_validation(
    sent: dict[str, Any], expected: str | None
) -> None:
    assert subscriptions.requested_test_clock(sent) == expected


def test_the_list_query() -> None:
    query = lists.parse_list_query(
        subscriptions.SubscriptionQuery,
        {"limit": ["5"], "status": ["past_due"], "starting_after": [SUB_ID]},
    )
    assert (query.limit, query.status, query.starting_after) == (5, "past_due", SUB_ID)
    default = lists.parse_list_query(subscriptions.SubscriptionQuery, {})
    assert (default.limit, default.status, default.starting_after) == (20, None, None)
    assert problems(
        lists.parse_list_query,
        subscriptions.SubscriptionQuery,
        {"status": ["paid"], "starting_after": [""], "interval": ["daily"]},
    ) == [
        ("interval", "Unknown query parameter."),
        ("status", "Must be one of: paused, active, past_due, cancelled, ended."),
        ("starting_after", "Must be a next_cursor from a previous page."),
    ]


# --- the record and the wire form ---------------------------------------------------------


def new(**overrides: Any) -> subscriptions.Subscription:
    request = subscriptions.parse_create(body(**overrides), NOW)
    return subscriptions.new_subscription(
        request,
        subscription_id=SUB_ID,
        merchant_id="mer_" + "M" * 16,
        now_us=NOW,
        eur_cents_per_fgc=Decimal("108.5"),
    )


def test_a_new_subscription_is_paused_with_nothing_due() -> None:
    sub = new(metadata={"b": 1, "a": "é"})
    assert (sub.status, sub.version, sub.currency) == ("paused", 1, "FGC")
    assert sub.eur_cents == 1356  # 12.50 x 108.5 = 1356.25
    assert sub.metadata_json == '{"a":"é","b":1}'
    assert (sub.created_at, sub.updated_at) == (NOW, NOW)
    assert (sub.approved_at, sub.next_action_at, sub.charge_count) == (None, None, 0)


WIRE_KEYS = [
    "id",
    "object",
    "mode",
    "subscription_id",
    "status",
    "interval",
    "currency",
    "amount_fgc",
    "amount_minor",
    "eur_cents",
    "checkout_url",
    "description",
    "merchant_customer_reference",
    "customer_email",
    "success_url",
    "cancel_url",
    "external_reference",
    "max_total_amount_fgc",
    "end_date",
    "current_period_start",
    "current_period_end",
    "charged_total_fgc",
    "charge_count",
    "approved_at",
    "cancelled_at",
    "ended_at",
    "ended_reason",
    "test_clock",
    "metadata",
    "created_at",
    "updated_at",
]


def assert_formats(wire: dict[str, Any]) -> None:
    """Amounts with two decimals, times as `iso_ms` writes them (or null)."""
    for name, value in wire.items():
        if name.endswith("_fgc") and value is not None:
            assert FGC.fullmatch(value), name
        if name.endswith(("_at", "_date", "_start", "_end")) and value is not None:
            assert TIME.fullmatch(value), name


def test_the_wire_form_of_a_new_subscription() -> None:
    sub = new(
        amount_fgc="7",
        max_total_amount_fgc="70.5",
        end_date="2027-11-24T14:00:00.123456Z",
        test_clock=CLOCK_ID,
        metadata={"plan": "gold"},
    )
    wire = subscriptions.to_json(sub, PUBLIC_URL)
    # The contract's fields, each once, and the TypedDict declares exactly those.
    assert list(wire) == WIRE_KEYS
    assert set(subscriptions.SubscriptionWire.__required_keys__) == set(WIRE_KEYS)
    TypeAdapter(subscriptions.SubscriptionWire).validate_python(wire, strict=True)
    assert_formats(dict(wire))
    assert wire == {
        "id": SUB_ID,
        "object": "subscription",
        "mode": "test",
        "subscription_id": SUB_ID,
        "status": "paused",
        "interval": "monthly",
        "currency": "FGC",
        "amount_fgc": "7.00",
        "amount_minor": "700",
        "eur_cents": "760",  # 7 x 108.5 = 759.5, half-up
        "checkout_url": f"{PUBLIC_URL}/checkout/{SUB_ID}",
        "description": "Coffee club",
        "merchant_customer_reference": "cust-42",
        "customer_email": None,
        "success_url": "https://shop.example/thanks",
        "cancel_url": "https://shop.example/cart",
        "external_reference": None,
        "max_total_amount_fgc": "70.50",
        "end_date": "2027-11-24T14:00:00.123Z",
        "current_period_start": None,
        "current_period_end": None,
        "charged_total_fgc": "0.00",
        "charge_count": 0,
        "approved_at": None,
        "cancelled_at": None,
        "ended_at": None,
        "ended_reason": None,
        "test_clock": CLOCK_ID,
        "metadata": {"plan": "gold"},
        "created_at": "2026-11-24T14:00:00.000Z",
        "updated_at": "2026-11-24T14:00:00.000Z",
    }


def test_the_wire_form_follows_the_record_through_its_life() -> None:
    sub = new()
    approved_at = parse_date_time("2027-01-31T09:30:00.5Z")
    sub = periods.approve(sub, customer_code="TEST-0001", now_us=approved_at).subscription
    sub = periods.declined(sub, periods.Renew(1, sub.next_action_at or 0), now_us=0).subscription
    sub = periods.cancel(sub, now_us=parse_date_time("2027-03-01T00:00:00Z")).subscription
    wire = subscriptions.to_json(sub, PUBLIC_URL)
    TypeAdapter(subscriptions.SubscriptionWire).validate_python(wire, strict=True)
    assert (wire["status"], wire["charge_count"], wire["charged_total_fgc"]) == (
        "cancelled",
        1,
        "12.50",
    )
    assert wire["approved_at"] == wire["current_period_start"] == "2027-01-31T09:30:00.500Z"
    assert wire["current_period_end"] == "2027-02-28T09:30:00.500Z"
    assert wire["cancelled_at"] == "2027-03-01T00:00:00.000Z"
    assert_formats(dict(wire))


# --- the date-time rule -------------------------------------------------------------------

DATE_TIMES_ACCEPTED = [
    ("1970-01-01T00:00:00Z", 0),
    ("1970-01-01t00:00:00z", 0),
    ("2026-11-24T14:00:00Z", NOW),
    ("2026-11-24T15:30:00+01:30", NOW),
    ("2026-11-24T04:00:00-10:00", NOW),
    ("2026-11-24T14:00:00.000001Z", NOW + 1),
    ("2026-11-24T14:00:00.5Z", NOW + 500_000),
    ("2028-02-29T00:00:00Z", parse_date_time("2028-02-28T00:00:00Z") + periods.DAY_US),
    ("9999-12-31T23:59:59.999999Z", times.MAX_TIME_US),
    ("9999-12-31T20:00:00-03:59", times.MAX_TIME_US - 59_999_999),
]


@pytest.mark.parametrize(("text", "expected"), DATE_TIMES_ACCEPTED)
def test_date_times_accepted(text: str, expected: int) -> None:
    assert parse_date_time(text) == expected


DATE_TIMES_REFUSED = [
    ("2026-11-24", "must be an ISO 8601 date and time with a time zone"),
    ("2026-11-24T14:00:00", "must be an ISO 8601 date and time with a time zone"),
    ("2026-11-24T14:00Z", "must be an ISO 8601 date and time with a time zone"),
    ("2026-11-24 14:00:00Z", "must be an ISO 8601 date and time with a time zone"),
    ("20261124T140000Z", "must be an ISO 8601 date and time with a time zone"),
    ("2026-11-24T14:00:00+0100", "must be an ISO 8601 date and time with a time zone"),
    ("2026-11-24T14:00:00Z\n", "must be an ISO 8601 date and time with a time zone"),
    ("２０２６-11-24T14:00:00Z", "must be an ISO 8601 date and time with a time zone"),
    ("2026-11-24T14:00:00.1234567Z", "must have at most six decimal places of seconds"),
    ("2026-11-24T14:00:00+24:00", "must have a time zone offset from -23:59 to +23:59"),
    ("2026-11-24T14:00:00+01:60", "must have a time zone offset from -23:59 to +23:59"),
    ("2026-13-01T00:00:00Z", "is not a date and time that exists"),
    ("2027-02-29T00:00:00Z", "is not a date and time that exists"),
    ("2026-11-24T24:00:00Z", "is not a date and time that exists"),
    ("2026-12-31T23:59:60Z", "is not a date and time that exists"),
    ("0000-01-01T00:00:00Z", "is not a date and time that exists"),
    ("1969-12-31T23:59:59.999999Z", "must be from 1970-01-01T00:00:00Z to 9999-12-31T23:59:59Z"),
    ("1970-01-01T00:30:00+01:00", "must be from 1970-01-01T00:00:00Z to 9999-12-31T23:59:59Z"),
    ("9999-12-31T23:59:59-00:01", "must be from 1970-01-01T00:00:00Z to 9999-12-31T23:59:59Z"),
    (1_795_528_800, "must be a string such as"),
    (None, "must be a string such as"),
]


@pytest.mark.parametrize(("value", "message"), DATE_TIMES_REFUSED)
def test_date_times_refused(value: Any, message: str) -> None:
    with pytest.raises(ValueError, match=re.escape(message)):
        parse_date_time(value)


# --- test clocks --------------------------------------------------------------------------


def clock(frozen_time: str = "2026-01-31T09:30:00Z") -> test_clocks.TestClock:
    request = test_clocks.parse_create({"frozen_time": frozen_time, "name": "January"})
    return test_clocks.new_test_clock(
        request, clock_id=CLOCK_ID, merchant_id="mer_" + "M" * 16, now_us=NOW
    )


def test_a_new_test_clock_and_its_wire_form() -> None:
    made = clock()
    assert (made.status, made.version, made.name) == ("ready", 1, "January")
    wire = test_clocks.to_json(made)
    TypeAdapter(test_clocks.TestClockWire).validate_python(wire, strict=True)
    assert set(test_clocks.TestClockWire.__required_keys__) == set(wire)
    assert wire == {
        "id": CLOCK_ID,
        "object": "test_clock",
        "frozen_time": "2026-01-31T09:30:00.000Z",
        "status": "ready",
        "name": "January",
        "created_at": "2026-11-24T14:00:00.000Z",
        "updated_at": "2026-11-24T14:00:00.000Z",
    }
    unnamed = test_clocks.parse_create({"frozen_time": "2026-01-31T09:30:00Z", "name": None})
    assert unnamed.name is None


def test_test_clock_creation_problems_all_at_once() -> None:
    assert problems(test_clocks.parse_create, {"name": "n" * 256, "at": 1}) == [
        ("at", "Unknown field."),
        ("frozen_time", "This field is required."),
        ("name", "Must be 1 to 255 characters."),
    ]
    assert problems(test_clocks.parse_create, {"frozen_time": "soon", "name": " "}) == [
        (
            "frozen_time",
            "Must be a valid date-time: must be an ISO 8601 date and time with a time zone, "
            "such as 2026-11-24T14:00:00Z or 2026-11-24T15:00:00+01:00.",
        ),
        ("name", "Must not be blank; omit the field instead."),
    ]


@pytest.mark.parametrize(
    ("frozen_time", "accepted"),
    [
        ("2026-01-31T09:29:59Z", False),
        ("2026-01-31T09:30:00Z", False),  # the same time is not forward
        ("2026-01-31T10:30:00+01:00", False),
        ("2026-01-31T09:30:00.000001Z", True),
        ("2036-01-31T09:30:00Z", True),  # no cap on how far one advance goes
    ],
)
def test_a_clock_only_moves_forward(frozen_time: str, accepted: bool) -> None:
    made = clock()
    sent = {"frozen_time": frozen_time}
    if accepted:
        assert test_clocks.parse_advance(sent, made) == parse_date_time(frozen_time)
    else:
        assert problems(test_clocks.parse_advance, sent, made) == [
            (
                "frozen_time",
                "Must be later than the clock's frozen_time (2026-01-31T09:30:00.000Z).",
            )
        ]


def test_an_advance_takes_only_frozen_time() -> None:
    assert problems(test_clocks.parse_advance, {"name": "x"}, clock()) == [
        ("name", "Unknown field."),
        ("frozen_time", "This field is required."),
    ]


def test_the_test_clock_list_query() -> None:
    query = lists.parse_list_query(
        test_clocks.TestClockQuery, {"status": ["advancing"], "starting_after": [CLOCK_ID]}
    )
    assert (query.limit, query.status, query.starting_after) == (20, "advancing", CLOCK_ID)
    assert problems(lists.parse_list_query, test_clocks.TestClockQuery, {"status": ["paused"]}) == [
        ("status", "Must be one of: ready, advancing.")
    ]
