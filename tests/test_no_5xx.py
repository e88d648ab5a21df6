"""No bad request body, header or query string produces a 5xx or an HTML page."""

from __future__ import annotations

import itertools
import json

from helpers import Server, subscription_body, valid_body

NASTY_VALUES: list[object] = [
    None, True, 0, -1, 1e308, 10**40, "", " ", "\x00", "\ud7ff", "a" * 7_000, [], {}, [[[]]],
    {"$ne": 1}, "' OR 1=1 --", "<script>alert(1)</script>", "../../etc/passwd", "%s%n", "\u202e",
    "1" * 5000, "12.34999999999999999999999999999", "https://a.example;sandbox/", {"x": 10**4000},
]  # fmt: skip

ROUTES = [
    ("GET", "/checkout/sessions"),
    ("POST", "/checkout/sessions"),
    ("GET", "/checkout/sessions/cs_test_000000000000000000000000"),
    ("PUT", "/checkout/sessions"),
    ("DELETE", "/checkout/sessions/x"),
    ("GET", "/subscriptions"),
    ("POST", "/subscriptions"),
    ("GET", "/subscriptions/sub_test_000000000000000000000000"),
    ("POST", "/subscriptions/sub_test_000000000000000000000000/cancel"),
    ("GET", "/test_clocks"),
    ("POST", "/test_clocks"),
    ("POST", "/test_clocks/clock_test_000000000000000000000000/advance"),
    ("DELETE", "/test_clocks/clock_test_000000000000000000000000"),
    ("GET", "/openapi.json"),
    ("POST", "/nope"),
]


async def test_nasty_field_values(server: Server) -> None:
    merchant = await server.merchant()
    for field, value in itertools.product(
        sorted(valid_body()) + ["metadata", "extra"], NASTY_VALUES
    ):
        response = await merchant.post("/checkout/sessions", json=valid_body(**{field: value}))
        assert response.status_code < 500, (field, value, response.text)
        assert response.headers["content-type"].startswith("application/json")


async def test_nasty_subscription_field_values(server: Server) -> None:
    merchant = await server.merchant()
    fields = sorted(subscription_body()) + ["max_total_amount_fgc", "end_date", "test_clock"]
    for field, value in itertools.product(fields, NASTY_VALUES):
        response = await merchant.post("/subscriptions", json=subscription_body(**{field: value}))
        assert response.status_code < 500, (field, value, response.text)
        response = await merchant.post("/test_clocks", json={"frozen_time": value, "name": value})
        assert response.status_code < 500, (value, response.text)


async def test_nasty_bodies_and_headers_on_every_route(server: Server) -> None:
    merchant = await server.merchant()
    bodies = [b"", b"null", b"{", b"\xff" * 10, json.dumps(NASTY_VALUES).encode(), b"{}" * 1000]
    header_sets = [
        {},
        {"Content-Type": "application/json; charset=latin-1"},
        {"Content-Type": "multipart/form-data; boundary=x"},
        {"Idempotency-Key": "k" * 180},
        {"Idempotency-Key": "k\tk"},
        {"Accept": "text/html"},
        {"Content-Length": "5"},
    ]
    for (method, path), body, headers in itertools.product(ROUTES, bodies, header_sets):
        if "Content-Length" in headers and len(body) != 5:
            continue
        response = await merchant.http.request(
            method, path, content=body, headers=merchant.headers(dict(headers))
        )
        assert response.status_code < 500, (method, path, body[:20], headers, response.text)
        assert "<html" not in response.text.lower()


async def test_nasty_query_strings(server: Server) -> None:
    merchant = await server.merchant()
    for query in [
        "limit=%00", "status=%FF%FE", "starting_after=" + "a" * 5000, "limit=99999999999999999999",
        "limit=1e2", "limit=+5", "limit= 5", "status[]=paid", "=", "%", "limit=%",
        "starting_after=cs_test_%27%3B", "limit=５",
    ]:  # fmt: skip
        response = await merchant.http.get(
            f"/checkout/sessions?{query}", headers=merchant.headers()
        )
        assert response.status_code == 400, (query, response.text)


async def test_nasty_authorization_headers(server: Server) -> None:
    for value in [
        b"Bearer \xff\xfe",
        b"Bearer " + b"a" * 8000,
        b"bearer  fp_test_x",
        b"\x01",
        b"Bearer fp_test_" + b"\xc3\xa9" * 16,
    ]:
        response = await server.client.get("/checkout/sessions", headers={b"Authorization": value})
        assert response.status_code in (400, 401, 431), (value[:30], response.status_code)
