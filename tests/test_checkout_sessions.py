"""POST/GET /checkout/sessions as a merchant sees them, on both backends."""

from __future__ import annotations

import json
from datetime import datetime, timedelta
from typing import Any

import pytest
import trio
from helpers import Server, create, valid_body

SPEC_FIELDS = {
    "id", "object", "mode", "status", "currency", "amount_minor", "amount_fgc", "eur_cents",
    "checkout_session_id", "checkout_url", "customer_email", "customer_reference",
    "description", "success_url", "cancel_url", "external_reference", "expires_at",
    "created_at", "updated_at",
}  # fmt: skip


def parse_time(value: str) -> datetime:
    assert value.endswith("Z") and len(value) == 24, value  # millisecond precision, UTC
    return datetime.fromisoformat(value.replace("Z", "+00:00"))


async def test_create_returns_every_field(server: Server) -> None:
    merchant = await server.merchant()
    session = await create(
        merchant,
        customer_email="ana@example.com",
        customer_reference="cust-7",
        external_reference="order-42",
        metadata={"order": 42, "gift": True},
    )
    assert SPEC_FIELDS | {"metadata", "paid_at"} == set(session)
    assert session["id"].startswith("cs_test_") and len(session["id"]) == 32
    assert session["checkout_session_id"] == session["id"]
    assert session["object"] == "checkout_session"
    assert (session["mode"], session["status"], session["currency"]) == ("test", "created", "FGC")
    assert (session["amount_fgc"], session["amount_minor"], session["eur_cents"]) == (
        "12.50",
        "1250",
        "1250",
    )
    assert (
        session["checkout_url"]
        == f"{server.running.service.settings.public_url}/checkout/{session['id']}"
    )
    assert session["metadata"] == {"order": 42, "gift": True}
    assert session["paid_at"] is None
    created = parse_time(session["created_at"])
    assert parse_time(session["expires_at"]) - created == timedelta(seconds=86400)
    assert parse_time(session["updated_at"]) == created


async def test_optional_fields_are_null_when_absent(server: Server) -> None:
    session = await create(await server.merchant())
    assert session["customer_email"] is None
    assert session["customer_reference"] is None
    assert session["external_reference"] is None
    assert session["metadata"] == {}


@pytest.mark.parametrize(
    ("given", "normalized", "minor"),
    [("10", "10.00", "1000"), ("10.5", "10.50", "1050"), ("10.50", "10.50", "1050"),
     ("0.01", "0.01", "1"), ("10.500", "10.50", "1050"), ("1000000.00", "1000000.00", "100000000")],
)  # fmt: skip
async def test_amounts_are_normalized(
    server: Server, given: str, normalized: str, minor: str
) -> None:
    session = await create(await server.merchant(), amount_fgc=given)
    assert (session["amount_fgc"], session["amount_minor"]) == (normalized, minor)


@pytest.mark.parametrize(
    "amount",
    [10, 10.5, "-1", "+1", "1e3", " 1", "1 ", "NaN", "Infinity", "10.505", "0", "0.00", "0.001",
     "1000000.01", "", ".5", "5.", "1,5", "١٢", None, [], {}],
)  # fmt: skip
async def test_bad_amounts_are_400(server: Server, amount: Any) -> None:
    merchant = await server.merchant()
    response = await merchant.post("/checkout/sessions", json=valid_body(amount_fgc=amount))
    assert response.status_code == 400
    body = response.json()
    assert body["code"] == "validation_error"
    assert [d["field"] for d in body["details"]] == ["amount_fgc"]
    assert (await merchant.get("/checkout/sessions")).json()["data"] == []


async def test_amount_minor_that_agrees_is_accepted_with_deprecation_header(server: Server) -> None:
    merchant = await server.merchant()
    response = await merchant.post("/checkout/sessions", json=valid_body(amount_minor="1250"))
    assert response.status_code == 201
    assert response.headers["Deprecation"] == "true"
    plain = await merchant.post("/checkout/sessions", json=valid_body())
    assert "Deprecation" not in plain.headers


@pytest.mark.parametrize("minor", ["1251", "12.50", 1250, "-1250", "0"])
async def test_amount_minor_that_disagrees_or_is_malformed_is_400(
    server: Server, minor: Any
) -> None:
    merchant = await server.merchant()
    response = await merchant.post("/checkout/sessions", json=valid_body(amount_minor=minor))
    assert response.status_code == 400
    assert [d["field"] for d in response.json()["details"]] == ["amount_minor"]


async def test_eur_cents_follow_the_configured_rate(nursery: trio.Nursery, settings: Any) -> None:
    from decimal import Decimal

    import attrs
    from helpers import start_server

    srv = await start_server(nursery, attrs.evolve(settings, eur_cents_per_fgc=Decimal("1.234")))
    try:
        session = await create(await srv.merchant(), amount_fgc="10.05")
        assert session["eur_cents"] == "12"  # 10.05 x 1.234 = 12.4017 -> 12
        session = await create(await srv.merchant(), amount_fgc="0.45")
        assert session["eur_cents"] == "1"  # 0.5553 -> 1 (half-up)
    finally:
        await srv.client.aclose()
        srv.stop.set()


INVALID_FIELDS = [
    ("currency", "EUR"), ("currency", "fgc"), ("currency", ...),
    ("description", ...), ("description", ""), ("description", "   "), ("description", "x" * 501),
    ("description", 5), ("description", "bad\x00byte"),
    ("success_url", ...), ("success_url", "shop.example/ok"), ("success_url", "ftp://shop.example"),
    ("success_url", "javascript:alert(1)"), ("success_url", "https://"), ("success_url", "https://shop.example/" + "a" * 2048),
    ("success_url", "https://shop example/"), ("cancel_url", "/relative"), ("cancel_url", ...),
    ("customer_email", "not-an-email"), ("customer_email", "a@" + "b" * 250 + ".com"), ("customer_email", 7),
    ("customer_reference", "x" * 256), ("customer_reference", ""), ("external_reference", "y" * 256),
    ("external_reference", ["a"]), ("metadata", []), ("metadata", "x"),
    ("metadata", {f"k{i}": i for i in range(51)}), ("metadata", {"k" * 41: 1}), ("metadata", {"": 1}),
    ("metadata", {"big": "x" * 8200}),
    ("surprise", 1),
]  # fmt: skip


@pytest.mark.parametrize(("field", "value"), INVALID_FIELDS)
async def test_each_invalid_field_is_named(server: Server, field: str, value: Any) -> None:
    merchant = await server.merchant()
    response = await merchant.post("/checkout/sessions", json=valid_body(**{field: value}))
    assert response.status_code == 400, response.text
    body = response.json()
    assert body["code"] == "validation_error"
    assert [d["field"].split(".")[0] for d in body["details"]] == [field]
    assert (await merchant.get("/checkout/sessions")).json()["data"] == []


async def test_all_errors_come_in_one_answer(server: Server) -> None:
    merchant = await server.merchant()
    response = await merchant.post(
        "/checkout/sessions",
        json={"amount_fgc": 1, "currency": "EUR", "success_url": "x", "extra": 1},
    )
    fields = {d["field"] for d in response.json()["details"]}
    assert fields == {"amount_fgc", "currency", "description", "success_url", "cancel_url", "extra"}


async def test_limits_are_inclusive(server: Server) -> None:
    merchant = await server.merchant()
    session = await create(
        merchant,
        description="d" * 500,
        customer_reference="r" * 255,
        external_reference="e" * 255,
        success_url="https://shop.example/" + "a" * (2048 - 21),
        metadata={f"k{i:02d}": i for i in range(50)},
    )
    assert len(session["description"]) == 500
    assert len(session["metadata"]) == 50


async def test_null_optional_fields_read_as_absent(server: Server) -> None:
    session = await create(await server.merchant(), customer_email=None, metadata=None)
    assert session["customer_email"] is None and session["metadata"] == {}


@pytest.mark.parametrize(
    ("content", "content_type", "status", "code"),
    [
        (b"{not json", "application/json", 400, "invalid_json"),
        (b"[1, 2]", "application/json", 400, "invalid_json"),
        (b'{"a": NaN}', "application/json", 400, "invalid_json"),
        (b'{"a": 1, "a": 2}', "application/json", 400, "invalid_json"),
        (b"\xff\xfe", "application/json", 400, "invalid_json"),
        (b"[" * 100_00 + b"]" * 100_00, "application/json", 400, "invalid_json"),
        (b"amount_fgc=1", "application/x-www-form-urlencoded", 415, "unsupported_media_type"),
        (b"{}", "text/plain", 415, "unsupported_media_type"),
        (b"", "application/json", 400, "invalid_json"),
    ],
)
async def test_malformed_bodies_are_4xx_and_change_nothing(
    server: Server, content: bytes, content_type: str, status: int, code: str
) -> None:
    merchant = await server.merchant()
    response = await merchant.post(
        "/checkout/sessions", content=content, headers={"Content-Type": content_type}
    )
    assert (response.status_code, response.json()["code"]) == (status, code)
    assert (await merchant.get("/checkout/sessions")).json()["data"] == []


async def test_retrieve_own_session(server: Server) -> None:
    merchant = await server.merchant()
    session = await create(merchant)
    response = await merchant.get(f"/checkout/sessions/{session['id']}")
    assert response.status_code == 200
    assert response.json() == session


@pytest.mark.parametrize("bad_id", ["cs_test_nope", "cs_test_" + "A" * 24, "%00", "x" * 300])
async def test_unknown_session_is_404(server: Server, bad_id: str) -> None:
    merchant = await server.merchant()
    response = await merchant.get(f"/checkout/sessions/{bad_id}")
    assert response.status_code == 404
    assert response.json()["code"] == "not_found"


async def test_another_merchants_session_is_404_and_not_listed(server: Server) -> None:
    alice, bob = await server.merchant("Alice"), await server.merchant("Bob")
    session = await create(alice)
    response = await bob.get(f"/checkout/sessions/{session['id']}")
    assert response.status_code == 404
    assert (await bob.get("/checkout/sessions")).json()["data"] == []
    listed = await bob.get("/checkout/sessions", params={"starting_after": session["id"]})
    assert listed.status_code == 400


async def test_list_envelope_order_and_limit(server: Server) -> None:
    merchant = await server.merchant()
    made = [await create(merchant, description=f"order {i}") for i in range(25)]
    page = (await merchant.get("/checkout/sessions")).json()
    assert set(page) == {"object", "data", "has_more", "next_cursor"}
    assert page["object"] == "list" and page["has_more"] is True
    assert len(page["data"]) == 20
    newest_first = sorted(made, key=lambda s: (s["created_at"], s["id"]), reverse=True)
    assert [s["id"] for s in page["data"]] == [s["id"] for s in newest_first[:20]]
    assert page["next_cursor"] == page["data"][-1]["id"]
    rest = (
        await merchant.get("/checkout/sessions", params={"starting_after": page["next_cursor"]})
    ).json()
    assert [s["id"] for s in rest["data"]] == [s["id"] for s in newest_first[20:]]
    assert rest["has_more"] is False and rest["next_cursor"] is None
    exact = (await merchant.get("/checkout/sessions", params={"limit": 100})).json()
    assert len(exact["data"]) == 25 and exact["has_more"] is False


@pytest.mark.parametrize(
    "query",
    ["limit=0", "limit=101", "limit=-1", "limit=ten", "limit=1.5", "limit=", "status=open",
     "status=", "starting_after=", "starting_after=cs_test_missing", "page=2", "limit=1&limit=2",
     "ending_before=x", "limit=%FF"],
)  # fmt: skip
async def test_bad_list_queries_are_400(server: Server, query: str) -> None:
    merchant = await server.merchant()
    response = await merchant.http.get(f"/checkout/sessions?{query}", headers=merchant.headers())
    assert response.status_code == 400, response.text
    assert response.json()["code"] == "validation_error"


async def test_status_filter(server: Server) -> None:
    merchant = await server.merchant()
    session = await create(merchant)
    assert [
        s["id"]
        for s in (await merchant.get("/checkout/sessions", params={"status": "created"})).json()[
            "data"
        ]
    ] == [session["id"]]
    assert (await merchant.get("/checkout/sessions", params={"status": "paid"})).json()[
        "data"
    ] == []


async def test_pages_never_repeat_or_skip_while_sessions_are_created(server: Server) -> None:
    merchant = await server.merchant()
    before = [(await create(merchant, description=f"old {i}"))["id"] for i in range(30)]
    seen: list[str] = []
    async with trio.open_nursery() as nursery:

        async def keep_creating() -> None:
            for i in range(30):
                await create(merchant, description=f"new {i}")

        nursery.start_soon(keep_creating)
        cursor = None
        while True:
            params: dict[str, Any] = {"limit": 7}
            if cursor:
                params["starting_after"] = cursor
            page = (await merchant.get("/checkout/sessions", params=params)).json()
            seen += [s["id"] for s in page["data"]]
            if not page["has_more"]:
                break
            cursor = page["next_cursor"]
    assert len(seen) == len(set(seen)), "a page repeated a session"
    old_seen = [s for s in seen if s in set(before)]
    assert old_seen == list(reversed(before)), "a page skipped or reordered an older session"


async def test_json_bodies_are_utf8_and_round_trip(server: Server) -> None:
    merchant = await server.merchant()
    session = await create(
        merchant, description="Café ☕ — 2 × espresso", metadata={"note": "ünïcödé"}
    )
    again = (await merchant.get(f"/checkout/sessions/{session['id']}")).json()
    assert again["description"] == "Café ☕ — 2 × espresso"
    assert json.dumps(again["metadata"], ensure_ascii=False) == '{"note": "ünïcödé"}'
