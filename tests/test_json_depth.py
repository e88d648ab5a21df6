"""JSON nested deeper than 64 levels is 400 `invalid_json` on every body, with or without an
`Idempotency-Key`, before anything that recurses reads it (contract, "Errors"); 64 levels
are accepted where the field allows them. Both backends."""

from __future__ import annotations

import json

import httpx
import pytest
from fgcpay.domain import json_depth
from helpers import MerchantClient, Server, valid_body

JSON = {"Content-Type": "application/json"}


def nested(levels: int) -> str:
    """A JSON value `levels` deep: arrays inside arrays around a 1."""
    return "[" * levels + "1" + "]" * levels


def checkout_body(metadata_value_levels: int) -> str:
    """A valid checkout session body whose metadata value is nested so that the whole
    body is `metadata_value_levels + 2` levels deep (the body, then metadata)."""
    base = json.dumps(valid_body())[:-1]
    return base + ', "metadata": {"deep": ' + nested(metadata_value_levels) + "}}"


async def post_raw(
    merchant: MerchantClient, path: str, text: str, key: str | None = None
) -> httpx.Response:
    extra = dict(JSON)
    if key is not None:
        extra["Idempotency-Key"] = key
    return await merchant.http.post(
        path, content=text.encode("utf-8"), headers=merchant.headers(extra)
    )


@pytest.mark.parametrize("key", [None, "deep-1"], ids=["plain", "idempotency_key"])
@pytest.mark.parametrize("levels", [1000, 65])
async def test_bodies_nested_too_deep_are_invalid_json(
    server: Server, key: str | None, levels: int
) -> None:
    merchant = await server.merchant()
    text = checkout_body(levels - 2)
    assert json_depth.depth(text.encode()) == levels
    for _ in range(2):  # the same again: the same answer, never a 500
        response = await post_raw(merchant, "/checkout/sessions", text, key)
        assert response.status_code == 400, response.text
        body = response.json()
        assert body["code"] == "invalid_json"
        assert "64" in body["message"]
        assert body["request_id"]
    listed = await merchant.get("/checkout/sessions")
    assert listed.json()["data"] == []


@pytest.mark.parametrize("key", [None, "deep-64"], ids=["plain", "idempotency_key"])
async def test_a_body_64_levels_deep_is_accepted(server: Server, key: str | None) -> None:
    merchant = await server.merchant()
    text = checkout_body(62)
    assert json_depth.depth(text.encode()) == 64
    response = await post_raw(merchant, "/checkout/sessions", text, key)
    assert response.status_code == 201, response.text
    assert response.json()["metadata"] == {"deep": json.loads(nested(62))}
    if key is not None:
        replayed = await post_raw(merchant, "/checkout/sessions", text, key)
        assert replayed.status_code == 201
        assert replayed.headers["Idempotent-Replayed"] == "true"
        assert replayed.content == response.content


@pytest.mark.parametrize(
    "path",
    ["/subscriptions", "/refunds", "/webhook_endpoints", "/test_clocks"],
)
async def test_every_create_refuses_deep_bodies(server: Server, path: str) -> None:
    merchant = await server.merchant()
    text = '{"metadata": {"deep": ' + nested(998) + "}}"
    for key in (None, "deep-everywhere"):
        response = await post_raw(merchant, path, text, key)
        assert response.status_code == 400, response.text
        assert response.json()["code"] == "invalid_json"


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        (b"{}", 1),
        (b'{"a": "[[[[{{{{"}', 1),  # brackets inside strings nest nothing
        (b'{"a": "\\"[[", "b": [[]]}', 3),  # an escaped quote does not end the string
        (b"1", 0),
        (nested(70).encode(), 70),
    ],
)
def test_depth_counts_brackets_outside_strings(text: bytes, expected: int) -> None:
    assert json_depth.depth(text) == expected
    assert json_depth.too_deep(text) == (expected > json_depth.MAX_JSON_DEPTH)
