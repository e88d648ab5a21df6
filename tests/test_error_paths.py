"""Every JSON error of the service carries `request_id` (and the same `Request-Id`
header), outside /api/v1 too: the hosted page's status poll, its websocket's handshake,
the event stream's handshake, health and metrics. A path nobody publishes (a doubled or a
trailing slash included) is a 404, never a redirect, and no answer builds a URL from the
request's `Host` header. Over real HTTP on loopback, raw where the client would tidy up
the request."""

from __future__ import annotations

import json
from typing import Any
from urllib.parse import urlsplit

import attrs
import httpx
import pytest
import trio
from fgcpay.actors.checkout_session import CheckoutSessions
from fgcpay.core.settings import Settings
from fgcpay.domain import errors
from helpers import Server, bearer, start_server, stream_url, subscription_to_approve
from hosted import new_session
from trio_websocket import ConnectionRejected, open_websocket_url

API_ERROR_FIELDS = {"code", "message", "details", "request_id"}
HOSTILE_HOST = "evil.example"


def assert_api_error(
    status: int, headers: Any, body: bytes | str, want_status: int, code: str
) -> dict[str, Any]:
    assert status == want_status, body
    assert headers["content-type"].startswith("application/json")
    parsed: dict[str, Any] = json.loads(body)
    assert set(parsed) == API_ERROR_FIELDS, parsed
    assert parsed["code"] == code
    assert parsed["request_id"].startswith("req_") and len(parsed["request_id"]) == 20
    assert headers["Request-Id"] == parsed["request_id"]
    return parsed


def assert_error(response: httpx.Response, status: int, code: str) -> dict[str, Any]:
    return assert_api_error(response.status_code, response.headers, response.text, status, code)


def _page(server: Server) -> httpx.AsyncClient:
    return httpx.AsyncClient(base_url=server.url, timeout=30)


async def test_the_status_poll_of_an_unknown_id_is_a_404_with_its_request_id(
    server: Server,
) -> None:
    async with _page(server) as page:
        for page_id in ("cs_test_" + "A" * 24, "sub_test_" + "A" * 24, "nope"):
            response = await page.get(f"/checkout/{page_id}/status")
            assert_error(response, 404, "not_found")
            assert response.headers["Cache-Control"] == "no-store"


async def test_the_status_poll_while_unavailable_is_a_503_with_its_request_id(
    server: Server, monkeypatch: pytest.MonkeyPatch
) -> None:
    _, session = await new_session(server)

    async def busy(self: CheckoutSessions, session_id: str) -> Any:
        raise errors.Unavailable("busy", retry_after_seconds=2)

    monkeypatch.setattr(CheckoutSessions, "find", busy)
    async with _page(server) as page:
        response = await page.get(f"/checkout/{session['id']}/status")
    assert_error(response, 503, "service_unavailable")
    assert response.headers["Retry-After"] == "2"


async def test_a_wrong_method_on_the_status_poll_is_a_405_with_its_request_id(
    server: Server,
) -> None:
    _, session = await new_session(server)
    async with _page(server) as page:
        response = await page.post(f"/checkout/{session['id']}/status")
    assert_error(response, 405, "method_not_allowed")


async def _handshake_refusal(url: str, headers: list[tuple[bytes, bytes]]) -> ConnectionRejected:
    with pytest.raises(ConnectionRejected) as rejected:
        async with open_websocket_url(url, extra_headers=headers):
            pass
    return rejected.value


async def test_the_page_socket_of_an_unknown_id_is_refused_with_its_request_id(
    server: Server,
) -> None:
    url = server.url.replace("http://", "ws://") + "/checkout/cs_test_" + "A" * 24 + "/ws"
    refused = await _handshake_refusal(url, [])
    headers = httpx.Headers([(k.decode(), v.decode()) for k, v in refused.headers or ()])
    assert refused.status_code is not None and refused.body is not None
    assert_api_error(refused.status_code, headers, refused.body, 404, "not_found")


async def test_the_event_streams_refused_handshake_carries_its_request_id(
    server: Server,
) -> None:
    for key, status, code in (
        (None, 401, "invalid_api_key"),
        ("fp_test_x", 401, "invalid_api_key"),
    ):
        refused = await _handshake_refusal(stream_url(server.url), bearer(key))
        headers = httpx.Headers([(k.decode(), v.decode()) for k, v in refused.headers or ()])
        assert refused.status_code is not None and refused.body is not None
        assert_api_error(refused.status_code, headers, refused.body, status, code)


async def test_readyz_503_carries_its_request_id(
    server: Server, monkeypatch: pytest.MonkeyPatch
) -> None:
    async def down(self: Any) -> None:
        raise OSError("connection refused")

    monkeypatch.setattr(type(server.db), "ping", down)
    async with _page(server) as page:
        response = await page.get("/readyz")
    assert_error(response, 503, "service_unavailable")


async def test_a_refused_metrics_scrape_carries_its_request_id(
    nursery: trio.Nursery, settings: Settings
) -> None:
    server = await start_server(nursery, attrs.evolve(settings, metrics_token="s3cret-token"))
    async with _page(server) as page:
        response = await page.get("/metrics", headers={"Authorization": "Bearer wrong"})
    assert_error(response, 401, "invalid_api_key")
    await server.shutdown()


# -- Unpublished paths: a 404, never a redirect built from the Host header. ------------


@attrs.frozen
class RawAnswer:
    status: int
    headers: httpx.Headers
    body: bytes


async def raw_get(server: Server, path: str, headers: dict[str, str] | None = None) -> RawAnswer:
    """One GET exactly as written (path and `Host` untouched), on its own connection."""
    address = urlsplit(server.url)
    stream = await trio.open_tcp_stream(address.hostname or "127.0.0.1", address.port or 80)
    lines = [f"GET {path} HTTP/1.1", f"Host: {HOSTILE_HOST}", "Connection: close"]
    lines += [f"{name}: {value}" for name, value in (headers or {}).items()]
    received = b""
    async with stream:
        await stream.send_all(("\r\n".join(lines) + "\r\n\r\n").encode())
        with trio.fail_after(10):
            while chunk := await stream.receive_some(65536):
                received += chunk
    head, _, body = received.partition(b"\r\n\r\n")
    status_line, *header_lines = head.decode("latin-1").split("\r\n")
    pairs = [line.split(":", 1) for line in header_lines]
    return RawAnswer(
        int(status_line.split()[1]),
        httpx.Headers([(name.strip(), value.strip()) for name, value in pairs]),
        body,
    )


def assert_not_host_built(answer: RawAnswer) -> None:
    assert answer.status not in (301, 302, 303, 307, 308) or "location" in answer.headers
    assert HOSTILE_HOST not in answer.headers.get("location", "")
    assert HOSTILE_HOST.encode() not in answer.body


@pytest.mark.parametrize(
    "path",
    [
        "/api/v1/checkout//sessions",
        "/api/v1//checkout/sessions",
        "/api/v1/subscriptions/",
        "/api/v1/checkout/sessions/",
        "/api/v1/test_clocks/",
        "/api/v1/openapi.json/",
        "//api/v1/subscriptions",
    ],
)
async def test_unpublished_api_paths_are_a_json_404_never_a_redirect(
    server: Server, path: str
) -> None:
    merchant = await server.merchant()
    answer = await raw_get(server, path, merchant.headers())
    assert_not_host_built(answer)
    assert_api_error(answer.status, answer.headers, answer.body, 404, "not_found")


@pytest.mark.parametrize(
    "path", ["//healthz", "/healthz/", "/readyz/", "/metrics/", "/nowhere", "/nowhere/"]
)
async def test_unpublished_paths_outside_the_api_are_a_json_404(server: Server, path: str) -> None:
    answer = await raw_get(server, path)
    assert_not_host_built(answer)
    assert_api_error(answer.status, answer.headers, answer.body, 404, "not_found")


@pytest.mark.parametrize("path", ["/dashboard//api-keys", "/dashboard/", "/dashboard/sign-in/"])
async def test_unpublished_dashboard_paths_are_its_404_page(server: Server, path: str) -> None:
    answer = await raw_get(server, path)
    assert_not_host_built(answer)
    assert answer.status == 404
    assert answer.headers["content-type"].startswith("text/html")
    assert answer.headers["Request-Id"].startswith("req_")


async def test_unpublished_hosted_page_paths_are_its_404_page(server: Server) -> None:
    _, session = await new_session(server)
    sid = str(session["id"])
    for path in (f"/checkout//{sid}", f"/checkout/{sid}/", f"//checkout/{sid}"):
        answer = await raw_get(server, path)
        assert_not_host_built(answer)
        assert answer.status == 404, path
        assert answer.headers["content-type"].startswith("text/html"), path
        assert b"<html" in answer.body.lower()


async def test_published_paths_still_answer_with_a_hostile_host(server: Server) -> None:
    merchant = await server.merchant()
    _, session = await new_session(server)
    _, sub = await subscription_to_approve(server)
    answers = {
        "/api/v1/subscriptions": await raw_get(server, "/api/v1/subscriptions", merchant.headers()),
        "/api/v1/checkout/sessions": await raw_get(
            server, "/api/v1/checkout/sessions", merchant.headers()
        ),
        "/healthz": await raw_get(server, "/healthz"),
        f"/checkout/{session['id']}": await raw_get(server, f"/checkout/{session['id']}"),
        f"/checkout/{sub.id}/status": await raw_get(server, f"/checkout/{sub.id}/status"),
        "/dashboard/sign-in": await raw_get(server, "/dashboard/sign-in"),
    }
    for path, answer in answers.items():
        assert answer.status == 200, (path, answer.status)
        assert_not_host_built(answer)
    # Not signed in: the dashboard sends the browser to its sign-in page, by path alone.
    dashboard = await raw_get(server, "/dashboard")
    assert dashboard.status == 303
    assert dashboard.headers["location"].startswith("/dashboard/sign-in")


async def test_no_route_can_redirect_by_its_slashes(server: Server) -> None:
    from fgcpay.web_app import create_app

    app = create_app(server.running.service)
    assert app.url_map.strict_slashes and not app.url_map.merge_slashes
    for rule in app.url_map.iter_rules():
        # A rule ending in a slash would answer its path without one with werkzeug's
        # redirect, whose Location is built from the request's Host header.
        assert not rule.rule.endswith("/"), rule.rule
        assert rule.redirect_to is None, rule.rule
