"""Authentication, errors, headers and health checks, over real HTTP on loopback."""

from __future__ import annotations

import sys

import httpx
import pytest
import trio
from fgcpay.core.settings import Settings
from fgcpay.domain import ids
from fgcpay.service import GIL_SWITCH_SECONDS, gil_switch_interval
from fgcpay.storage import merchants
from helpers import Server, start_server

API_ERROR_FIELDS = {"code", "message", "details", "request_id"}


def assert_api_error(response: httpx.Response, status: int, code: str) -> dict[str, object]:
    assert response.status_code == status, response.text
    assert response.headers["content-type"].startswith("application/json")
    body = response.json()
    assert set(body) == API_ERROR_FIELDS
    assert body["code"] == code
    assert body["request_id"] == response.headers["Request-Id"]
    assert body["request_id"].startswith("req_") and len(body["request_id"]) == 20
    assert "Traceback" not in response.text and "<html" not in response.text.lower()
    return body  # type: ignore[no-any-return]


async def test_a_valid_key_authenticates(server: Server) -> None:
    merchant = await server.merchant()
    response = await merchant.get("/no-such-route")
    # Authenticated, so the answer is about the path, not the key.
    assert_api_error(response, 404, "not_found")


@pytest.mark.parametrize(
    "authorization",
    [
        None,
        "",
        "Bearer",
        "Basic Zm9vOmJhcg==",
        "Bearer fp_test_" + "a" * 32,
        "Bearer fp_test_short",
        "Bearer fp_live_" + "a" * 32,
        "Bearer not-a-key",
        ("Bearer " + "é" * 10).encode("latin-1"),
    ],
)
async def test_bad_keys_get_401(server: Server, authorization: str | bytes | None) -> None:
    # Bytes on the wire, as httpx would encode a str value (ASCII), so one header type fits both.
    raw = authorization.encode("ascii") if isinstance(authorization, str) else authorization
    headers = {} if raw is None else {b"Authorization": raw}
    response = await server.client.get("/checkout/sessions", headers=headers)
    assert_api_error(response, 401, "invalid_api_key")
    assert response.headers["WWW-Authenticate"].startswith("Bearer")


async def test_live_key_is_told_live_mode_is_off(server: Server) -> None:
    response = await server.client.get(
        "/checkout/sessions", headers={"Authorization": "Bearer fp_live_" + "a" * 32}
    )
    body = assert_api_error(response, 401, "invalid_api_key")
    assert "live mode is not enabled" in str(body["message"]).lower()


async def test_revoked_key_fails_at_once(server: Server) -> None:
    merchant = await server.merchant()
    assert (await merchant.get("/nowhere")).status_code == 404
    (key,) = await server.db.read(merchants.api_keys_of, merchant.id)
    await server.db.write(merchants.revoke_api_key, merchant.id, key.id, 1)
    response = await merchant.get("/nowhere")
    body = assert_api_error(response, 401, "invalid_api_key")
    assert "revoked" in str(body["message"])


async def test_error_never_echoes_the_key(server: Server) -> None:
    wrong = "fp_test_" + "Z" * 32
    response = await server.client.get("/x", headers={"Authorization": f"Bearer {wrong}"})
    assert wrong not in response.text


async def test_wrong_method_is_405_json(server: Server) -> None:
    merchant = await server.merchant()
    response = await merchant.http.delete("/openapi.json", headers=merchant.headers())
    assert_api_error(response, 405, "method_not_allowed")


async def test_unknown_path_outside_api_is_404_json(server: Server) -> None:
    async with httpx.AsyncClient(base_url=server.url) as client:
        response = await client.get("/definitely/not/here")
    assert_api_error(response, 404, "not_found")


async def test_body_over_64_kib_is_413(server: Server) -> None:
    merchant = await server.merchant()
    response = await merchant.post(
        "/checkout/sessions",
        content=b'{"a":"' + b"x" * (64 * 1024) + b'"}',
        headers={"Content-Type": "application/json"},
    )
    assert_api_error(response, 413, "payload_too_large")


async def test_every_api_response_has_request_id_and_rate_limit_headers(server: Server) -> None:
    merchant = await server.merchant()
    for response in (
        await merchant.get("/nowhere"),
        await server.client.get("/nowhere"),
        await server.client.get("/openapi.json"),
    ):
        assert response.headers["Request-Id"].startswith("req_")
        assert response.headers["RateLimit-Policy"] == '"default";q=100;w=2'
        assert response.headers["RateLimit"].startswith('"default";r=')


async def test_request_ids_are_unique(server: Server) -> None:
    seen = {(await server.client.get("/x")).headers["Request-Id"] for _ in range(20)}
    assert len(seen) == 20


async def test_healthz_and_readyz(server: Server) -> None:
    async with httpx.AsyncClient(base_url=server.url) as client:
        health = await client.get("/healthz")
        ready = await client.get("/readyz")
    assert health.status_code == 200 and health.json() == {"status": "ok"}
    assert ready.status_code == 200 and ready.json() == {"status": "ready"}
    assert health.headers["Request-Id"].startswith("req_")


async def test_openapi_document_is_public_json(server: Server) -> None:
    response = await server.client.get("/openapi.json")
    assert response.status_code == 200
    doc = response.json()
    assert doc["openapi"].startswith("3.1")
    assert doc["info"]["version"] == "0.1.0"


def test_key_shape_check() -> None:
    key = ids.api_key_secret()
    assert ids.looks_like_id(key, "fp_test_", 32)
    assert not ids.looks_like_id(key + "x", "fp_test_", 32)
    assert not ids.looks_like_id("fp_test_" + "-" * 32, "fp_test_", 32)


async def test_a_serving_worker_lets_its_trio_thread_keep_the_gil_longer(
    nursery: trio.Nursery, settings: Settings
) -> None:
    # Forced GIL switches to the database threads in the middle of a request's work cost
    # the create path about a tenth of its CPU (fgcpay.service.gil_switch_interval).
    before = sys.getswitchinterval()
    assert before < GIL_SWITCH_SECONDS
    server = await start_server(nursery, settings)
    assert sys.getswitchinterval() == GIL_SWITCH_SECONDS
    server.stop.set()
    await server.stopped.wait()
    assert sys.getswitchinterval() == before


def test_services_in_one_process_hand_the_gil_interval_back_whatever_order_they_stop_in() -> None:
    before = sys.getswitchinterval()
    first, second = gil_switch_interval(), gil_switch_interval()
    first.__enter__()
    second.__enter__()
    first.__exit__(None, None, None)  # the first to start stops first: the second serves on
    assert sys.getswitchinterval() == GIL_SWITCH_SECONDS
    second.__exit__(None, None, None)
    assert sys.getswitchinterval() == before
