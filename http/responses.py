"""JSON responses, written one way everywhere."""

from __future__ import annotations

import json
from typing import Any

from quart import Response

JSON_TYPE = "application/json"


def dump(body: Any) -> str:
    return json.dumps(body, separators=(",", ":"), ensure_ascii=False)


def json_response(body: Any, status: int = 200, headers: dict[str, str] | None = None) -> Response:
    return Response(dump(body), status=status, content_type=JSON_TYPE, headers=headers)
