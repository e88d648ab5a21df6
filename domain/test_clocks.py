"""Test clocks (test mode): a merchant's own frozen time that subscriptions on it live by;
the record, the request rules (and the date-time rule they share) and the wire form."""

from __future__ import annotations

import re
from datetime import UTC, datetime, timedelta, timezone
from typing import Annotated, Any, Literal

import attrs
from pydantic import BaseModel, ConfigDict, Field, WithJsonSchema
from typing_extensions import TypedDict

from .errors import FieldError, ValidationFailed
from .fields import MAX_REFERENCE, Rule, Text, fail, one_of, validate
from .lists import DEFAULT_LIMIT, Cursor, Limit, OneOf
from .times import MAX_TIME, MAX_TIME_US, MIN_TIME_US, iso_ms

READY = "ready"
ADVANCING = "advancing"  # running everything due up to the new frozen_time
STATUSES = (READY, ADVANCING)


@attrs.frozen
class TestClock:
    """One test clock as stored; times in microseconds (UTC)."""

    __test__ = False  # a record, not a test class for pytest to collect

    id: str
    merchant_id: str
    name: str | None
    frozen_time: int
    status: str
    version: int
    created_at: int
    updated_at: int


TEST_CLOCK_PREFIX = "clock_test_"
MAX_NAME = MAX_REFERENCE

# RFC 3339's date-time (ISO 8601's extended form with a time zone), the only form accepted:
# no date alone, no local time, no week dates. [0-9], not \d, which matches any script's
# digits; fullmatch, since `$` also matches before a trailing newline.
_DATE_TIME = re.compile(
    r"([0-9]{4})-([0-9]{2})-([0-9]{2})[Tt]([0-9]{2}):([0-9]{2}):([0-9]{2})"
    r"(?:\.([0-9]+))?(?:[Zz]|([+-])([0-9]{2}):([0-9]{2}))"
)
DATE_TIME_PATTERN = (
    "^[0-9]{4}-[0-9]{2}-[0-9]{2}[Tt][0-9]{2}:[0-9]{2}:[0-9]{2}(\\.[0-9]{1,6})?"
    "([Zz]|[+-][0-9]{2}:[0-9]{2})$"
)
_EPOCH = datetime(1970, 1, 1, tzinfo=UTC)
_MICROSECOND = timedelta(microseconds=1)
EXAMPLE = "2026-11-24T14:00:00Z"


def parse_date_time(value: object) -> int:
    """`"2026-11-24T15:00:00.5+01:00"` -> microseconds since the epoch (UTC).

    Strict RFC 3339: a date, `T`, a time with seconds and at most six decimals, and a
    time zone (`Z` or `+hh:mm`/`-hh:mm`); from 1970-01-01T00:00:00Z to 9999-12-31T23:59:59Z
    (the time range of `times`; a fraction of a second past its last second is after it).
    Raises `ValueError` with a merchant's wording for anything else.
    """
    if not isinstance(value, str):
        raise ValueError(f'must be a string such as "{EXAMPLE}"')
    match = _DATE_TIME.fullmatch(value)
    if not match:
        raise ValueError(
            f"must be an ISO 8601 date and time with a time zone, such as {EXAMPLE} or "
            "2026-11-24T15:00:00+01:00"
        )
    year, month, day, hour, minute, second = (int(match.group(i)) for i in range(1, 7))
    fraction = match.group(7) or ""
    if len(fraction) > 6:
        raise ValueError("must have at most six decimal places of seconds")
    sign, offset_hours, offset_minutes = match.group(8), match.group(9), match.group(10)
    offset = timedelta(0)
    if sign is not None:
        if int(offset_hours) > 23 or int(offset_minutes) > 59:
            raise ValueError("must have a time zone offset from -23:59 to +23:59")
        offset = timedelta(hours=int(offset_hours), minutes=int(offset_minutes))
        offset = -offset if sign == "-" else offset
    try:
        moment = datetime(
            year,
            month,
            day,
            hour,
            minute,
            second,
            int(fraction.ljust(6, "0")),
            tzinfo=timezone(offset),
        )
    except ValueError:  # month 13, February 30, hour 24, second 60, year 0
        raise ValueError(f"{value[:40]!r} is not a date and time that exists") from None
    # Aware subtraction never converts to UTC, so 9999-12-31T23:00:00-05:00 cannot overflow.
    us = (moment - _EPOCH) // _MICROSECOND
    if not MIN_TIME_US <= us <= MAX_TIME_US:
        raise ValueError(f"must be from 1970-01-01T00:00:00Z to {MAX_TIME}")
    return us


def date_time_schema(description: str) -> dict[str, Any]:
    """The JSON schema of a date-time request field (the rule of `parse_date_time`)."""
    return {
        "type": "string",
        "format": "date-time",
        "pattern": DATE_TIME_PATTERN,
        "description": (
            f"{description} An RFC 3339 date-time with seconds and a time zone (`Z` or "
            f"an offset), at most microsecond precision, e.g. {EXAMPLE}."
        ),
    }


@attrs.frozen
class DateTime(Rule):
    """A date-time in a request body (`frozen_time`, `end_date`), as `parse_date_time`
    reads it; the value is microseconds since the epoch."""

    description: str
    required: bool = True

    def check(self, value: Any) -> int:
        try:
            return parse_date_time(value)
        except ValueError as error:
            raise fail(f"Must be a valid date-time: {error}.") from None

    def schema(self) -> dict[str, Any]:
        return date_time_schema(self.description)


@attrs.frozen
class TestClockRequest:
    """A validated `POST /test_clocks` body."""

    __test__ = False

    frozen_time: int
    name: str | None


class TestClockCreate(BaseModel):
    """The `POST /test_clocks` body; field order is the order problems are listed in."""

    __test__ = False
    model_config = ConfigDict(extra="forbid")

    frozen_time: Annotated[
        int, DateTime("The clock's time: subscriptions on it live by this time until advanced.")
    ]
    name: Annotated[str | None, Text(MAX_NAME, required=False)] = None


class TestClockAdvance(BaseModel):
    """The `POST /test_clocks/{id}/advance` body."""

    __test__ = False
    model_config = ConfigDict(extra="forbid")

    frozen_time: Annotated[
        int,
        DateTime(
            "The clock's new time, later than its current one: every renewal, retry and "
            "ending due up to it runs, in order."
        ),
    ]


def parse_create(body: dict[str, Any]) -> TestClockRequest:
    """Validate a creation body; raises `ValidationFailed` listing every problem."""
    parsed = validate(TestClockCreate, body)
    return TestClockRequest(frozen_time=parsed.frozen_time, name=parsed.name)


def check_advance(clock: TestClock, frozen_time_us: int) -> None:
    """A clock only moves forward: raises `ValidationFailed` on `frozen_time` unless
    `frozen_time_us` is later than the clock's time."""
    if frozen_time_us <= clock.frozen_time:
        raise ValidationFailed(
            [
                FieldError(
                    "frozen_time",
                    f"Must be later than the clock's frozen_time ({iso_ms(clock.frozen_time)}).",
                )
            ]
        )


def parse_advance(body: dict[str, Any], clock: TestClock) -> int:
    """Validate an advance body against `clock`: the new frozen time, in microseconds.
    Raises `ValidationFailed` listing every problem."""
    frozen_time = validate(TestClockAdvance, body).frozen_time
    check_advance(clock, frozen_time)
    return frozen_time


class TestClockQuery(BaseModel):
    """`GET /test_clocks`: the page and the status filter."""

    __test__ = False
    model_config = ConfigDict(extra="forbid")

    limit: Annotated[int, Limit()] = DEFAULT_LIMIT
    status: Annotated[str | None, OneOf(STATUSES)] = None
    starting_after: Annotated[str | None, Cursor(TEST_CLOCK_PREFIX, "a test clock")] = None


def new_test_clock(
    request: TestClockRequest, *, clock_id: str, merchant_id: str, now_us: int
) -> TestClock:
    """A new clock, `ready` at the requested time (`now_us` is the service's, for the row)."""
    return TestClock(
        id=clock_id,
        merchant_id=merchant_id,
        name=request.name,
        frozen_time=request.frozen_time,
        status=READY,
        version=1,
        created_at=now_us,
        updated_at=now_us,
    )


_TIME = "UTC, millisecond precision, e.g. 2026-11-22T14:07:24.621Z"
Time = Annotated[
    str, WithJsonSchema({"type": "string", "format": "date-time", "description": _TIME})
]


class TestClockWire(TypedDict):
    """A test clock on the wire."""

    id: Annotated[str, Field(pattern=f"^{TEST_CLOCK_PREFIX}[0-9A-Za-z]{{24}}$")]
    object: Literal["test_clock"]
    frozen_time: Annotated[
        str,
        WithJsonSchema(
            {
                "type": "string",
                "format": "date-time",
                "description": f"The clock's time. {_TIME}",
            }
        ),
    ]
    status: Annotated[
        str,
        one_of(
            STATUSES,
            "`advancing` while what is due up to the new frozen_time runs, then `ready`.",
        ),
    ]
    name: str | None
    created_at: Time
    updated_at: Time


def to_json(clock: TestClock) -> TestClockWire:
    """The clock as the API shows it (one serializer)."""
    return {
        "id": clock.id,
        "object": "test_clock",
        "frozen_time": iso_ms(clock.frozen_time),
        "status": clock.status,
        "name": clock.name,
        "created_at": iso_ms(clock.created_at),
        "updated_at": iso_ms(clock.updated_at),
    }
