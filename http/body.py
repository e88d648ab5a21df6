"""Reading request bodies and query strings strictly, with ApiErrors for what is wrong."""

from __future__ import annotations

import json
from typing import Any

from fgcpay.domain import errors
from quart import request

MAX_BODY_BYTES = 64 * 1024


def _reject_constant(name: str) -> Any:
    raise ValueError(f"{name} is not valid JSON")


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
    return media == "application/json" or (media.startswith("application/") and media.endswith("+json"))


async def json_object(*, allow_empty: bool = False) -> dict[str, Any]:
    """The request body as a JSON object.

    Raises 415 for a body that is not application/json, 400 `invalid_json` for malformed
    JSON (including NaN, Infinity and duplicate keys) or a top level that is not an
    object. With `allow_empty`, an absent body reads as `{}`.
    """
    data = await request.get_data(cache=True, as_text=False, parse_form_data=False)
    if not data and allow_empty:
        return {}
    if not is_json_content_type(request.headers.get("Content-Type")):
        raise errors.UnsupportedMediaType(
            "Send the request body as JSON with Content-Type: application/json."
        )
    try:
        text = data.decode("utf-8")
        parsed = json.loads(text, parse_constant=_reject_constant, object_pairs_hook=_no_duplicates)
    except (UnicodeDecodeError, ValueError, RecursionError) as error:
        raise errors.InvalidJson(
            "The request body is not valid JSON.", {"reason": str(error)[:200]}
        ) from None
    if not isinstance(parsed, dict):
        raise errors.InvalidJson("The request body must be a JSON object.", None)
    return parsed


async def no_body() -> None:
    """For operations that take no body: accept an empty one or `{}`."""
    data = await request.get_data(cache=True, as_text=False, parse_form_data=False)
    if data.strip() in (b"", b"{}"):
        return
    body = await json_object()
    if body:
        raise errors.ValidationFailed(
            [errors.FieldError(name, "This operation takes no body fields.") for name in body]
        )
