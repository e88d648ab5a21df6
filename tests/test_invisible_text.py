"""Text a person reads (names, descriptions, references, metadata) refuses control
characters and invisible format characters (U+200B, U+202E, U+2066, ...) on every
resource: a 400 `validation_error` naming the field, and nothing created; in the
dashboard, the form says so. Over HTTP on both backends."""

from __future__ import annotations

from typing import Any

import httpx
import pytest
from fgcpay.admin import KeyInputError, MerchantInputError, create_api_key, create_merchant
from fgcpay.storage import merchants
from helpers import (
    Server,
    create,
    new_email,
    open_dashboard,
    signed_up,
    subscription_body,
    valid_body,
)
from helpers._dashboard import PASSWORD
from hosted import paid_session

INVISIBLE = "Must not contain invisible format characters (zero-width or bidirectional controls)."
RIGHT_TO_LEFT = "Acme \u202egnp.exe"


def assert_refused(response: httpx.Response, field: str, message: str = INVISIBLE) -> None:
    assert response.status_code == 400, response.text
    body = response.json()
    assert body["code"] == "validation_error"
    assert {"field": field, "message": message} in body["details"], body["details"]
    assert body["request_id"] == response.headers["Request-Id"]


async def count(merchant: Any, path: str) -> int:
    listed = await merchant.get(path)
    assert listed.status_code == 200, listed.text
    return len(listed.json()["data"])


@pytest.mark.parametrize(
    ("field", "value"),
    [
        ("description", "\u200b"),
        ("description", RIGHT_TO_LEFT),
        ("description", "Coffee\u2066club"),
        ("customer_reference", "cust\ufeff42"),
        ("external_reference", "order\u200d42"),
        ("metadata", {"note": "zero\u200bwidth"}),
    ],
)
async def test_a_checkout_session_refuses_them(server: Server, field: str, value: Any) -> None:
    merchant = await server.merchant()
    response = await merchant.post("/checkout/sessions", json=valid_body(**{field: value}))
    assert_refused(response, "metadata.note" if field == "metadata" else field)
    assert await count(merchant, "/checkout/sessions") == 0


@pytest.mark.parametrize(
    "field", ["description", "merchant_customer_reference", "external_reference"]
)
async def test_a_subscription_refuses_them(server: Server, field: str) -> None:
    merchant = await server.merchant()
    response = await merchant.post(
        "/subscriptions", json=subscription_body(**{field: RIGHT_TO_LEFT})
    )
    assert_refused(response, field)
    response = await merchant.post(
        "/subscriptions", json=subscription_body(metadata={"plan": {"tier": "\u2067gold"}})
    )
    assert_refused(response, "metadata.plan")
    assert await count(merchant, "/subscriptions") == 0


async def test_a_test_clock_name_refuses_them(server: Server) -> None:
    merchant = await server.merchant()
    body = {"frozen_time": "2030-01-01T00:00:00Z", "name": "Clock\u200b"}
    assert_refused(await merchant.post("/test_clocks", json=body), "name")
    body["name"] = "bell\x07"
    assert_refused(
        await merchant.post("/test_clocks", json=body),
        "name",
        "Must not contain control characters.",
    )
    assert await count(merchant, "/test_clocks") == 0


async def test_a_refund_metadata_refuses_them(server: Server) -> None:
    merchant = await server.merchant()
    session = await paid_session(server, merchant)
    body = {"checkout_session_id": session["id"], "metadata": {"why": "\u202eregnuf"}}
    assert_refused(await merchant.post("/refunds", json=body), "metadata.why")
    assert await count(merchant, "/refunds") == 0


async def test_the_hosted_page_never_shows_them(server: Server) -> None:
    merchant = await server.merchant()
    session = await create(merchant, description="Coffee beans, 1 kg")
    async with httpx.AsyncClient(base_url=server.url, timeout=30) as page:
        shown = await page.get(f"/checkout/{session['id']}")
    assert shown.status_code == 200 and "Coffee beans, 1 kg" in shown.text
    refused = await merchant.post("/checkout/sessions", json=valid_body(description="\u200b"))
    assert_refused(refused, "description")


async def test_dashboard_sign_up_says_the_business_name_is_unreadable(server: Server) -> None:
    dashboard = open_dashboard(server)
    email = new_email()
    for name in ("\u200b", "Acme\u202eevil", "Acme\x1b[31m"):
        answer = await dashboard.submit(
            "/dashboard/sign-up", {"name": name, "email": email, "password": PASSWORD}
        )
        assert answer.status_code == 400, answer.text
        assert "invisible" in answer.text or "control characters" in answer.text
        assert 'aria-invalid="true"' in answer.text
    assert await server.db.read(merchants.merchant_by_email, email) is None
    await dashboard.aclose()


async def test_dashboard_api_key_name_says_it_is_unreadable(server: Server) -> None:
    dashboard, email = await signed_up(server)
    merchant = await server.db.read(merchants.merchant_by_email, email)
    assert merchant is not None
    before = await server.db.read(merchants.api_keys_of, merchant.id)
    for name in ("\u200b", "shop\u2066server"):
        answer = await dashboard.submit("/dashboard/api-keys", {"name": name})
        assert answer.status_code == 400, answer.text
        assert "invisible" in answer.text
    assert await server.db.read(merchants.api_keys_of, merchant.id) == before
    await dashboard.aclose()


async def test_the_operator_commands_refuse_them_in_merchant_and_key_names(server: Server) -> None:
    with pytest.raises(MerchantInputError, match="invisible"):
        await create_merchant(server.db, "Acme\u202eevil", new_email())
    merchant = await server.merchant()
    before = await server.db.read(merchants.api_keys_of, merchant.id)
    with pytest.raises(KeyInputError, match="control characters"):
        await create_api_key(server.db, merchant.id, "key\x1b[2J")
    assert await server.db.read(merchants.api_keys_of, merchant.id) == before
