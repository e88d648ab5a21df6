"""Reading request bodies and query strings strictly, with ApiErrors for what is wrong."""

from __future__ import annotations

import json
import math
import sys
from typing import Any

from fgcpay.domain import errors
from fgcpay.domain.json_depth import MAX_JSON_DEPTH, too_deep
from quart import g, request

MAX_BODY_BYTES = 64 * 1024


def _reject_constant(name: str) -> Any:
    raise ValueError(f"{name} is not valid JSON")


def _finite_float(text: str) -> float:
    # Python reads 1e999999 as inf, which no JSON parser could read back from us.
    value = float(text)
    if not math.isfinite(value):
        raise ValueError(f"number {text[:20]} is out of range")
    return value


# int() refuses past its digit limit too (0 would mean no limit): say so before converting.
_MAX_INT_DIGITS = sys.get_int_max_str_digits() or 4300


def _bounded_int(text: str) -> int:
    if len(text.lstrip("-")) > _MAX_INT_DIGITS:
        raise ValueError("an integer with too many digits")
    return int(text)


class _NotUnicode(ValueError):
    """A string in the body holds a lone surrogate (`"\\ud800"`): valid JSON syntax,
    but not Unicode text that can be stored, logged or sent on."""


def _check_unicode(parsed: Any) -> None:
    """Walk the whole document once (iteratively: depth is bounded only by the body size)."""
    pending = [parsed]
    while pending:
        node = pending.pop()
        if isinstance(node, str):
            strings = [node]
        elif isinstance(node, dict):
            strings = list(node)
            pending.extend(node.values())
        elif isinstance(node, list):
            strings = []
            pending.extend(node)
        else:
            continue
        for text in strings:
            if not text.isascii():
                try:
                    text.encode("utf-8")
                except UnicodeEncodeError:
                    raise _NotUnicode("a string holds a lone surrogate escape") from None


def _no_duplicates(pairs: list[tuple[str, Any]]) -> dict[str, Any]:
    result: dict[str, Any] = {}
    for key, value in pairs:
        if key in result:
            raise ValueError(f"duplicate key {key!r}")
        result[key] = value
    return result


def is_json_content_type(value: str | None) -> bool:
    if not value:
        return False
    media = value.split(";", 1)[0].strip().lower()
    return media == "application/json" or (
        media.startswith("application/") and media.endswith("+json")
    )


async def received() -> bytes:
    """The request's whole body, read once: every read of Quart's cached body opens a
    cancel scope for its timeout, so the plumbing keeps what it received
    (`fgcpay.web.plumbing`, before any route runs) and the routes use that."""
    data: bytes | None = getattr(g, "request_body", None)
    if data is None:
        data = await request.get_data(cache=True, as_text=False, parse_form_data=False)
    return data


async def json_object(*, allow_empty: bool = False) -> dict[str, Any]:
    """The request body as a JSON object.

    Raises 415 for a body that is not application/json, 400 `invalid_json` for malformed
    JSON (including NaN, Infinity, numbers that overflow to infinity, integers beyond
    Python's digit limit, duplicate keys, and strings with lone surrogate escapes such as
    `"\\ud800"`, anywhere in the document), nesting deeper than `MAX_JSON_DEPTH` (checked
    on the text, before the parser recurses) or a top level that is not an object. This is
    the one place bodies are parsed, so no route ever sees such a value. With
    `allow_empty`, an absent body reads as `{}`.
    """
    data = await received()
    if not data and allow_empty:
        return {}
    if not is_json_content_type(request.headers.get("Content-Type")):
        raise errors.UnsupportedMediaType(
            "Send the request body as JSON with Content-Type: application/json."
        )
    if too_deep(data):
        raise errors.InvalidJson(
            f"The request body is nested too deep: at most {MAX_JSON_DEPTH} levels of"
            " objects and arrays.",
            {"max_depth": MAX_JSON_DEPTH},
        )
    try:
        text = data.decode("utf-8")
        parsed = json.loads(
            text,
            parse_constant=_reject_constant,
            parse_float=_finite_float,
            parse_int=_bounded_int,
            object_pairs_hook=_no_duplicates,
        )
        _check_unicode(parsed)
    except _NotUnicode as error:
        raise errors.InvalidJson(
            "The request body is not valid JSON: its strings must be valid Unicode.",
            {"reason": str(error)},
        ) from None
    except (UnicodeDecodeError, ValueError, RecursionError) as error:
        raise errors.InvalidJson(
            "The request body is not valid JSON.", {"reason": str(error)[:200]}
        ) from None
    if not isinstance(parsed, dict):
        raise errors.InvalidJson("The request body must be a JSON object.", None)
    return parsed


async def no_body() -> None:
    """For operations that take no body: accept an empty one or `{}`."""
    data = await received()
    if data.strip() in (b"", b"{}"):
        return
    body = await json_object()
    if body:
        raise errors.ValidationFailed(
            [errors.FieldError(name, "This operation takes no body fields.") for name in body]
        )
