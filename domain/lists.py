"""List queries and the list envelope, per the contract's "Lists" section."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

import attrs

from .errors import FieldError, ValidationFailed

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
class ListQuery:
    limit: int
    status: str | None
    starting_after: str | None


def parse_list_query(
    args: Mapping[str, Sequence[str]], statuses: Sequence[str], filter_name: str = "status"
) -> ListQuery:
    """`limit` 1..100 (default 20), `starting_after` a cursor, and the filter
    `filter_name` (`status`, or `type` for events) one of `statuses`; the filter's value
    is returned as `ListQuery.status`.

    Any other parameter, a repeated one, or a bad value is a 400 naming it.
    """
    problems: list[FieldError] = []
    known = {"limit", filter_name, "starting_after"}
    for name in sorted(set(args) - known):
        problems.append(FieldError(name, UNKNOWN_PARAMETER))
    values: dict[str, str] = {}
    for name in known & set(args):
        given = args[name]
        if len(given) != 1:
            problems.append(FieldError(name, "Give this parameter once."))
        else:
            values[name] = given[0]
    limit = DEFAULT_LIMIT
    if "limit" in values:
        raw = values["limit"]
        # Bound the length before int(): past 4300 digits it raises (a 500, not a 400).
        digits = raw.lstrip("0") if raw.isascii() and raw.isdigit() else ""
        if not digits or len(digits) > 3 or not 1 <= int(digits) <= MAX_LIMIT:
            problems.append(FieldError("limit", f"Must be an integer from 1 to {MAX_LIMIT}."))
        else:
            limit = int(digits)
    status = values.get(filter_name)
    if status is not None and status not in statuses:
        problems.append(FieldError(filter_name, "Must be one of: " + ", ".join(statuses) + "."))
    starting_after = values.get("starting_after")
    if starting_after is not None and not starting_after:
        problems.append(FieldError("starting_after", BAD_CURSOR))
    if problems:
        raise query_error(problems)
    return ListQuery(limit=limit, status=status, starting_after=starting_after)


def envelope(data: list[dict[str, Any]], has_more: bool, last_id: str | None) -> dict[str, Any]:
    """`{"object": "list", "data", "has_more", "next_cursor"}`; the cursor is the last id."""
    return {
        "object": "list",
        "data": data,
        "has_more": has_more,
        "next_cursor": last_id if has_more else None,
    }
