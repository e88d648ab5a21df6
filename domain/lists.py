"""List queries and the list envelope, per the contract's "Lists" section.

Each list declares its query as a model of rules (`limit`, `starting_after`, its filters);
the OpenAPI document's parameters are generated from the same models.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Annotated, Any, Generic, Literal, TypeVar

import attrs
from pydantic import BaseModel, Field
from typing_extensions import TypedDict

from . import ids
from .errors import FieldError, ValidationFailed
from .fields import Rule, fail, once, validate

DEFAULT_LIMIT = 20
MAX_LIMIT = 100

# The one wording of query-string problems: every list (and every route that takes no
# query) reports them through `query_error`, so a caller sees one sentence everywhere.
QUERY_MESSAGE = "The query string has invalid parameters."
UNKNOWN_PARAMETER = "Unknown query parameter."
BAD_CURSOR = "Must be a next_cursor from a previous page."


def query_error(problems: list[FieldError]) -> ValidationFailed:
    """The 400 for problems with query parameters (each a `FieldError` naming one)."""
    return ValidationFailed(problems, QUERY_MESSAGE)


def reject_query(args: Mapping[str, object]) -> None:
    """For a route that takes no query parameters: a 400 naming each one given."""
    if args:
        raise query_error([FieldError(name, UNKNOWN_PARAMETER) for name in sorted(args)])


@attrs.frozen
class Limit(Rule):
    """`limit`: 1 to 100; the model field's default (20) applies when it is absent."""

    def check(self, values: Any) -> int:
        raw = once(values)
        # Bound the length before int(): past 4300 digits it raises (a 500, not a 400).
        digits = raw.lstrip("0") if raw.isascii() and raw.isdigit() else ""
        if not digits or len(digits) > 3 or not 1 <= int(digits) <= MAX_LIMIT:
            raise fail(f"Must be an integer from 1 to {MAX_LIMIT}.")
        return int(digits)

    def schema(self) -> dict[str, Any]:
        return {
            "type": "integer",
            "minimum": 1,
            "maximum": MAX_LIMIT,
            "description": f"1 to {MAX_LIMIT}, default {DEFAULT_LIMIT}.",
        }


@attrs.frozen
class Cursor(Rule):
    """`starting_after`: the `next_cursor` of a previous page, an id of the listed kind.

    Only emptiness is refused here; an id that is not one of the merchant's is refused by
    the list itself, with the same message."""

    prefix: str
    kind: str  # "a checkout session", ...
    required: bool = False

    def check(self, values: Any) -> str:
        raw = once(values)
        if not raw:
            raise fail(BAD_CURSOR)
        return raw

    def schema(self) -> dict[str, Any]:
        return {
            "type": "string",
            "minLength": 1,
            "pattern": f"^{self.prefix}[0-9A-Za-z]{{24}}$",
            "description": (
                f"The `next_cursor` of the previous page: the id of {self.kind} of yours "
                "(any other value is 400)."
            ),
        }


@attrs.frozen
class IdFilter(Rule):
    """A filter by an id of the given kind (`endpoint_id`, `checkout_session_id`...): one
    that is not shaped as such an id is 400; one of no item of the caller's, an empty
    list (as Stripe's list filters answer)."""

    prefix: str
    what: str
    description: str
    required: bool = False

    def check(self, values: Any) -> str:
        raw = once(values)
        if not ids.looks_like_id(raw, self.prefix, 24):
            raise fail(f"Must be {self.what}.")
        return raw

    def schema(self) -> dict[str, Any]:
        return {
            "type": "string",
            "pattern": f"^{self.prefix}[0-9A-Za-z]{{24}}$",
            "description": self.description,
        }


@attrs.frozen
class OneOf(Rule):
    """A filter whose value is one of `choices` (a status, an event type)."""

    choices: Sequence[str]
    required: bool = False

    def check(self, values: Any) -> str:
        raw = once(values)
        if raw not in self.choices:
            raise fail("Must be one of: " + ", ".join(self.choices) + ".")
        return raw

    def schema(self) -> dict[str, Any]:
        return {"type": "string", "enum": list(self.choices)}


@attrs.frozen
class ListQuery:
    limit: int
    status: str | None  # the list's filter: `status`, or `type` for events
    starting_after: str | None


QueryModel = TypeVar("QueryModel", bound=BaseModel)


def parse_query(model: type[QueryModel], args: Mapping[str, Sequence[str]]) -> QueryModel:
    """The query string (name -> every value given) through `model`: any unknown or
    repeated parameter or bad value is a 400 naming it, all of them at once."""
    flat = {name: values[0] if len(values) == 1 else list(values) for name, values in args.items()}
    return validate(model, flat, unknown=UNKNOWN_PARAMETER, message=QUERY_MESSAGE)


def parse_list_query(
    model: type[BaseModel], args: Mapping[str, Sequence[str]], filter_name: str = "status"
) -> ListQuery:
    """A list's page query; the filter `filter_name`'s value is `ListQuery.status`."""
    query = parse_query(model, args)
    return ListQuery(
        limit=getattr(query, "limit"),  # noqa: B009 - every list model declares it
        status=getattr(query, filter_name),
        starting_after=getattr(query, "starting_after"),  # noqa: B009
    )


Item = TypeVar("Item")


class Page(TypedDict, Generic[Item]):
    """The wire form of every list: `{"object": "list", "data", "has_more", "next_cursor"}`."""

    object: Literal["list"]
    data: list[Item]
    has_more: bool
    next_cursor: Annotated[
        str | None,
        Field(description="Pass as starting_after for the next page; null on the last page."),
    ]


def envelope(data: list[Item], has_more: bool, last_id: str | None) -> Page[Item]:
    """A page; the cursor is the last id, only when there is more."""
    return {
        "object": "list",
        "data": data,
        "has_more": has_more,
        "next_cursor": last_id if has_more else None,
    }
