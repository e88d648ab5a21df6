"""JSON responses, written one way everywhere."""

from __future__ import annotations

import json
from typing import Any

from quart import Response

JSON_TYPE = "application/json"


# One encoder for every answer (json.dumps with options builds a new one per call).
_ENCODER = json.JSONEncoder(separators=(",", ":"), ensure_ascii=False)


def dump(body: Any) -> str:
    return _ENCODER.encode(body)


def json_response(body: Any, status: int = 200, headers: dict[str, str] | None = None) -> Response:
    return Response(dump(body), status=status, content_type=JSON_TYPE, headers=headers)
