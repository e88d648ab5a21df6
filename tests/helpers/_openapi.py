"""The OpenAPI document as a test checks answers against it: schemas, parameters, statuses."""

from __future__ import annotations

from typing import Any

import httpx
from fgcpay.http.api import document
from jsonschema import Draft202012Validator


def schema_validator(schema: dict[str, Any]) -> Draft202012Validator:
    """A validator for `schema`, resolving `#/components/...` against the document."""
    doc = document()
    return Draft202012Validator({**schema, "components": doc["components"]})


def component(name: str) -> Draft202012Validator:
    return schema_validator({"$ref": f"#/components/schemas/{name}"})


def operation(method: str, path: str) -> dict[str, Any]:
    op: dict[str, Any] = document()["paths"][path][method]
    return op


def parameter(method: str, path: str, name: str) -> dict[str, Any]:
    doc = document()
    for param in operation(method, path).get("parameters", []):
        if "$ref" in param:
            param = doc["components"]["parameters"][param["$ref"].rsplit("/", 1)[1]]
        if param["name"] == name:
            found: dict[str, Any] = param
            return found
    raise AssertionError(f"{method} {path} documents no parameter {name}")


def assert_documented(method: str, path: str, response: httpx.Response) -> None:
    """The status is listed for the operation, and an error body is a valid ApiError."""
    responses = operation(method, path)["responses"]
    status = str(response.status_code)
    assert status in responses, (method, path, status, response.text)
    if response.status_code >= 400:
        errors = list(component("ApiError").iter_errors(response.json()))
        assert not errors, (method, path, response.text, [e.message for e in errors])
        assert response.headers["content-type"].startswith("application/json")
