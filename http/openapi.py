"""Serves the OpenAPI 3.1 document kept beside this module (openapi.json)."""

from __future__ import annotations

import json
from functools import cache
from pathlib import Path
from typing import Any

from quart import Blueprint, Response

blueprint = Blueprint("openapi", __name__)


@cache
def document() -> dict[str, Any]:
    # fgcpay.http is a namespace package (see pyproject.toml): read beside this file.
    text = (Path(__file__).parent / "openapi.json").read_text("utf-8")
    doc: dict[str, Any] = json.loads(text)
    return doc


@cache
def _document_bytes() -> bytes:
    return json.dumps(document(), indent=2).encode()


@blueprint.get("/api/v1/openapi.json")
async def openapi_json() -> Response:
    return Response(_document_bytes(), content_type="application/json")
