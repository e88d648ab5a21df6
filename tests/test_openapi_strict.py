"""The OpenAPI document is as strict as the server: what the server rejects with 400 the
document's schemas reject too, what both accept agrees, and every status an operation
answers is documented for it with a body that validates."""

from __future__ import annotations

import re
from typing import Any

import httpx
import pytest
from fgcpay.domain import money
from fgcpay.http.api import document
from helpers import (
    MerchantClient,
    Server,
    assert_documented,
    component,
    operation,
    parameter,
    schema_validator,
    valid_body,
)
from jsonschema import Draft202012Validator

FAKE_ID = "0" * 24


def request_body_validator(method: str, path: str) -> Draft202012Validator:
    body = operation(method, path)["requestBody"]
    return schema_validator(body["content"]["application/json"]["schema"])


def test_amount_patterns_are_the_parsers_own() -> None:
    schemas = document()["components"]["schemas"]
    assert schemas["Amount"]["pattern"] == money.AMOUNT_FGC_PATTERN
    create = schemas["CheckoutSessionCreate"]["properties"]
    assert create["amount_minor"]["pattern"] == money.AMOUNT_MINOR_PATTERN


BAD_CREATES: list[dict[str, Any]] = [
    {"amount_fgc": "0"}, {"amount_fgc": "0.00"}, {"amount_fgc": "12.345"},
    {"amount_fgc": "1000000.01"}, {"amount_fgc": "12.34999999999999999999999999999"},
    {"amount_fgc": 12.5}, {"amount_fgc": "1e3"}, {"amount_fgc": " 1"}, {"amount_fgc": "-1"},
    {"amount_fgc": ""}, {"amount_fgc": None}, {"amount_fgc": ...},
    {"amount_minor": "0"}, {"amount_minor": "000"}, {"amount_minor": 1250},
    {"amount_minor": "100000001"}, {"amount_minor": "-1250"}, {"amount_minor": "12.50"},
    {"amount_minor": ""},
    {"currency": "EUR"}, {"currency": "fgc"}, {"currency": None}, {"currency": ...},
    {"description": ""}, {"description": "   "}, {"description": "\n\t"},
    {"description": "a" * 501}, {"description": "bell\x07"}, {"description": "nul\x00"},
    {"description": None}, {"description": ...}, {"description": 5},
    {"customer_reference": ""}, {"customer_reference": " "}, {"customer_reference": "x" * 256},
    {"external_reference": "\x1f"}, {"external_reference": []},
    {"success_url": "ftp://shop.example/"}, {"success_url": "https://shop.example/a b"},
    {"success_url": "https://" + "a" * 2048 + ".example/"}, {"success_url": "shop.example"},
    {"cancel_url": ""}, {"cancel_url": None}, {"success_url": "javascript:alert(1)"},
    {"customer_email": "a" * 250 + "@b.example"}, {"customer_email": ""}, {"customer_email": 7},
    {"metadata": [1]}, {"metadata": "x"}, {"metadata": {str(i): i for i in range(51)}},
    {"metadata": {"k" * 41: 1}}, {"metadata": {"": 1}},
    {"extra": 1}, {"amount": "12.50"},
]  # fmt: skip

GOOD_CREATES: list[dict[str, Any]] = [
    {}, {"amount_fgc": "0.01"}, {"amount_fgc": "1000000.000"}, {"amount_fgc": "010.500"},
    {"amount_fgc": "10.5", "amount_minor": "1050"}, {"amount_minor": None}, {"metadata": None},
    {"customer_email": None}, {"customer_reference": None}, {"external_reference": None},
    {"description": "x" * 500}, {"description": " Tab\tand\nnewline "},
    {"metadata": {"k" * 40: {"nested": [1, "2", None]}}},
    {"customer_email": "owner@acme.test", "customer_reference": "c" * 255},
]  # fmt: skip


async def test_the_server_and_the_document_reject_the_same_creation_bodies(server: Server) -> None:
    merchant = await server.merchant()
    schema = request_body_validator("post", "/checkout/sessions")
    for overrides in BAD_CREATES:
        body = valid_body(**overrides)
        response = await merchant.post("/checkout/sessions", json=body)
        assert response.status_code == 400, (overrides, response.text)
        assert_documented("post", "/checkout/sessions", response)
        assert not schema.is_valid(body), (
            f"the document accepts {overrides} which the server rejects"
        )
    for overrides in GOOD_CREATES:
        body = valid_body(**overrides)
        assert schema.is_valid(body), (overrides, [e.message for e in schema.iter_errors(body)])
        response = await merchant.post("/checkout/sessions", json=body)
        assert response.status_code == 201, (overrides, response.text)
        assert_documented("post", "/checkout/sessions", response)
        assert not list(component("CheckoutSession").iter_errors(response.json()))


BAD_ENDPOINTS: list[dict[str, Any]] = [
    {}, {"url": None}, {"url": ""}, {"url": "ftp://hooks.example/"}, {"url": "hooks.example"},
    {"url": "https://hooks.example/a b"}, {"url": "https://hooks.example/", "extra": 1},
    {"url": "https://hooks.example/", "enabled_events": []},
    {"url": "https://hooks.example/", "enabled_events": ["nope"]},
    {"url": "https://hooks.example/", "enabled_events": "*"},
    {"url": "https://hooks.example/", "enabled_events": [1]},
    {"url": "https://" + "a" * 2048 + ".example/"},
]  # fmt: skip


async def test_the_server_and_the_document_reject_the_same_endpoint_bodies(server: Server) -> None:
    merchant = await server.merchant()
    schema = request_body_validator("post", "/webhook_endpoints")
    for body in BAD_ENDPOINTS:
        response = await merchant.post("/webhook_endpoints", json=body)
        assert response.status_code == 400, (body, response.text)
        assert_documented("post", "/webhook_endpoints", response)
        assert not schema.is_valid(body), f"the document accepts {body} which the server rejects"
    good = {"url": "https://hooks.example/in", "enabled_events": ["*"]}
    assert schema.is_valid(good) and schema.is_valid({**good, "enabled_events": None})


SESSION_ID = "cs_test_" + FAKE_ID
BAD_REFUNDS: list[dict[str, Any]] = [
    {}, {"checkout_session_id": None}, {"amount_fgc": "1"},
    {"checkout_session_id": SESSION_ID, "transaction_id": "txn_test_" + FAKE_ID},
    {"checkout_session_id": "cs_test_short"}, {"transaction_id": SESSION_ID},
    {"checkout_session_id": SESSION_ID, "amount_fgc": "0"},
    {"checkout_session_id": SESSION_ID, "amount_fgc": 4},
    {"checkout_session_id": SESSION_ID, "reason": "changed_mind"},
    {"checkout_session_id": SESSION_ID, "metadata": "x"},
    {"checkout_session_id": SESSION_ID, "extra": 1},
]  # fmt: skip
GOOD_REFUNDS: list[dict[str, Any]] = [
    {"checkout_session_id": SESSION_ID},
    {"checkout_session_id": SESSION_ID, "transaction_id": None, "reason": None},
    {"transaction_id": "txn_test_" + FAKE_ID, "checkout_session_id": None, "amount_fgc": "4.5"},
    {"checkout_session_id": SESSION_ID, "reason": "fraudulent", "metadata": {"k": [1]}},
]  # fmt: skip


async def test_the_server_and_the_document_reject_the_same_refund_bodies(server: Server) -> None:
    """What the document refuses is a 400; what it accepts gets past the rules (to the
    404 of a session or transaction the merchant does not have)."""
    merchant = await server.merchant()
    schema = request_body_validator("post", "/refunds")
    for body in BAD_REFUNDS:
        response = await merchant.post("/refunds", json=body)
        assert response.status_code == 400, (body, response.text)
        assert not schema.is_valid(body), f"the document accepts {body} which the server rejects"
    for body in GOOD_REFUNDS:
        assert schema.is_valid(body), (body, [e.message for e in schema.iter_errors(body)])
        response = await merchant.post("/refunds", json=body)
        assert response.status_code == 404, (body, response.text)
        assert_documented("post", "/refunds", response)


BAD_QUERIES = {
    "/checkout/sessions": [
        ("starting_after", ""), ("limit", "0"), ("limit", "101"), ("limit", "abc"),
        ("limit", "-1"), ("status", "nope"), ("status", ""), ("starting_after", "cs_test_short"),
        ("starting_after", "evt_" + FAKE_ID),
    ],
    "/events": [
        ("starting_after", ""), ("limit", "0"), ("limit", "1.5"), ("type", "nope"), ("type", ""),
        ("starting_after", "cs_test_" + FAKE_ID),
    ],
}  # fmt: skip


def _query_value(schema: dict[str, Any], raw: str) -> Any:
    """The value as a client following the document would have typed it."""
    if schema.get("type") == "integer" and re.fullmatch(r"-?[0-9]+", raw):
        return int(raw)
    return raw


@pytest.mark.parametrize("path", sorted(BAD_QUERIES))
async def test_the_server_and_the_document_reject_the_same_query_values(
    server: Server, path: str
) -> None:
    merchant = await server.merchant()
    for name, raw in BAD_QUERIES[path]:
        response = await merchant.get(path, params={name: raw})
        assert response.status_code == 400, (path, name, raw, response.text)
        assert_documented("get", path, response)
        schema = parameter("get", path, name)["schema"]
        assert not schema_validator(schema).is_valid(_query_value(schema, raw)), (path, name, raw)


async def test_operations_without_a_body_document_their_400(server: Server) -> None:
    merchant = await server.merchant()
    created = await merchant.post("/webhook_endpoints", json={"url": "https://hooks.example/in"})
    assert created.status_code == 201, created.text
    endpoint_id = created.json()["id"]
    cases = [
        (
            "/webhook_endpoints/{endpoint_id}/rotate_secret",
            f"/webhook_endpoints/{endpoint_id}/rotate_secret",
        ),
        ("/events/{event_id}/redeliver", f"/events/evt_{FAKE_ID}/redeliver"),
    ]
    for template, path in cases:
        schema = request_body_validator("post", template)
        assert schema.is_valid({}) and not schema.is_valid({"x": 1})
        for content in (b'{"x": 1}', b"{", b"[]"):
            response = await merchant.http.post(
                path,
                content=content,
                headers=merchant.headers({"Content-Type": "application/json"}),
            )
            assert response.status_code == 400, (path, content, response.text)
            assert_documented("post", template, response)


def _concrete(path: str) -> str:
    return re.sub(
        r"\{[a-z_]+\}",
        lambda m: {"{session_id}": "cs_test_", "{event_id}": "evt_"}.get(m[0], "we_") + FAKE_ID,
        path,
    )


async def test_every_status_an_operation_answers_is_documented(server: Server) -> None:
    """Provoke each operation with what any client can get wrong; whatever it answers is
    documented for it, with a body that is a valid ApiError."""
    merchant = await server.merchant()
    big = b"{" + b" " * (64 * 1024) + b"}"
    for path, item in document()["paths"].items():
        for method in ("get", "post", "delete"):
            if method not in item:
                continue
            url = _concrete(path)
            attempts: list[tuple[dict[str, str], bytes | None, dict[str, str]]] = [
                ({}, None, {}),  # as documented (ids that do not exist)
                ({"Authorization": "Bearer fp_test_nope"}, None, {}),
                ({"Content-Type": "application/json"}, big, {}),
                ({}, None, {"unknown_parameter": "1"}),
            ]
            if method == "post":
                attempts += [
                    ({"Content-Type": "text/plain"}, b"hello", {}),
                    ({"Content-Type": "application/json"}, b"{", {}),
                    ({"Content-Type": "application/json", "Idempotency-Key": ""}, b"{}", {}),
                    ({"Content-Type": "application/json", "Idempotency-Key": "k" * 181}, b"{}", {}),
                ]
            for headers, content, params in attempts:
                response = await _send(merchant, method, url, headers, content, params)
                assert_documented(method, path, response)


async def _send(
    merchant: MerchantClient,
    method: str,
    url: str,
    headers: dict[str, str],
    content: bytes | None,
    params: dict[str, str],
) -> httpx.Response:
    all_headers = {**merchant.headers(), **headers}
    return await merchant.http.request(
        method.upper(), url, headers=all_headers, content=content, params=params
    )


def _patterns(node: Any) -> list[str]:
    if isinstance(node, dict):
        found = [node["pattern"]] if isinstance(node.get("pattern"), str) else []
        return found + [p for value in node.values() for p in _patterns(value)]
    if isinstance(node, list):
        return [p for value in node for p in _patterns(value)]
    return []


def test_every_schema_is_valid_json_schema_and_every_pattern_compiles() -> None:
    doc = document()
    for schema in doc["components"]["schemas"].values():
        Draft202012Validator.check_schema(schema)
    for param in doc["components"]["parameters"].values():
        Draft202012Validator.check_schema(param["schema"])
    patterns = _patterns(doc)
    assert len(patterns) >= 10
    for pattern in patterns:
        re.compile(pattern)


def test_no_query_parameter_is_documented_as_null() -> None:
    """A query parameter is absent or a string: null is no value a client can send, so no
    parameter's type or enum names it (an optional enum of a body may)."""
    for path, operations in document()["paths"].items():
        for method, described in operations.items():
            for param in described.get("parameters", []):
                schema = param.get("schema", {})
                assert "null" not in str(schema.get("type")), (method, path, param["name"])
                assert None not in schema.get("enum", []), (method, path, param["name"])
