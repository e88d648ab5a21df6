"""The dashboard in a real headless browser (Debian's chromium, driven by Playwright): a
new merchant signs up, creates a key, uses it with the API, revokes it and sees 401;
another sees its chart, approves a refund and reads the event it sent.
Screenshots land in tests/artifacts/."""

from __future__ import annotations

import httpx
import pytest
from fgcpay.admin import create_merchant
from helpers import (
    CLIENT_TLS,
    MerchantClient,
    PASSWORD,
    WAIT_MS,
    Server,
    browser,
    in_browser,
    new_email,
    screenshot,
    valid_body,
)
from hosted import paid_session

# Skips (or, in CI, fails) every test here without chromium.
pytestmark = pytest.mark.usefixtures("need_browser")


async def test_sign_up_create_a_key_use_it_and_revoke_it(server: Server) -> None:
    def scenario() -> None:
        with browser() as b:
            context = b.new_context(viewport={"width": 390, "height": 844})
            context.grant_permissions(["clipboard-read", "clipboard-write"], origin=server.url)
            page = context.new_page()
            page.goto(server.url + "/dashboard/sign-up")
            page.get_by_label("Business name").fill("Rosa's Bakery")
            page.get_by_label("Email").fill(new_email())
            page.get_by_label("Password").fill(PASSWORD)
            screenshot(page, "dashboard-sign-up")
            page.get_by_role("button", name="Create account").click()
            page.get_by_role("heading", name="Balance").wait_for(timeout=WAIT_MS)
            screenshot(page, "dashboard-home")

            page.get_by_role("link", name="API keys").click()
            page.get_by_label("Key name").fill("shop server")
            page.get_by_role("button", name="Create key").click()
            field = page.get_by_label("API key")
            field.wait_for(timeout=WAIT_MS)
            assert page.get_by_text("shown only this once").is_visible()
            page.get_by_role("button", name="Copy").click()
            page.get_by_text("Copied.").wait_for(timeout=WAIT_MS)
            key = field.input_value()
            assert page.evaluate("navigator.clipboard.readText()") == key
            screenshot(page, "dashboard-key-created")
            page.get_by_role("link", name="back to API keys").click()
            assert key[-4:] in page.get_by_role("row", name="shop server").inner_text()
            assert key not in page.content(), "shown once only"

            # The merchant's server uses the key (from this thread: the service runs on trio's).
            auth = {"Authorization": f"Bearer {key}"}
            with httpx.Client(base_url=server.url + "/api/v1", verify=CLIENT_TLS) as api:
                created = api.post("/checkout/sessions", json=valid_body(), headers=auth)
                assert created.status_code == 201, created.text

                page.get_by_role("link", name="Revoke shop server").click()
                screenshot(page, "dashboard-revoke-confirm")
                page.get_by_role("button", name="Revoke key").click()
                page.get_by_text("is revoked").wait_for(timeout=WAIT_MS)
                screenshot(page, "dashboard-key-revoked")
                refused = api.get("/balance", headers=auth)
                assert refused.status_code == 401, refused.text
                assert "revoked" in refused.json()["message"]

    await in_browser(scenario)


async def test_see_the_chart_approve_a_refund_and_read_its_event(server: Server) -> None:
    email = new_email()
    created = await create_merchant(server.db, "Rosa's Bakery", email, password=PASSWORD)
    merchant = MerchantClient(created, server.client)
    session = await paid_session(server, merchant)
    body = {"checkout_session_id": session["id"], "amount_fgc": "4.00"}
    refund = (await merchant.post("/refunds", json=body)).json()

    def scenario() -> None:
        with browser() as b:
            page = b.new_page(viewport={"width": 390, "height": 844})
            page.goto(server.url + "/dashboard/sign-in")
            page.get_by_label("Email").fill(email)
            page.get_by_label("Password").fill(PASSWORD)
            page.get_by_role("button", name="Sign in").click()
            chart = page.get_by_role("img", name="Paid volume and refunds per day")
            chart.wait_for(timeout=WAIT_MS)
            assert chart.bounding_box()["width"] <= 390, "fits a phone"  # type: ignore[index]
            chart.scroll_into_view_if_needed()
            screenshot(page, "dashboard-chart")

            page.get_by_role("link", name="Payments").click()
            page.get_by_role("link", name="Refunds").click()
            page.get_by_label("Status").select_option("pending_review")
            page.get_by_role("button", name="Show").click()
            page.get_by_role("link", name="4.00 FGC").click()
            assert refund["id"] in page.get_by_role("heading", level=1).inner_text()
            page.get_by_role("button", name="Approve refund").click()
            page.get_by_text("Refund approved").wait_for(timeout=WAIT_MS)
            screenshot(page, "dashboard-refund-approved")

            page.get_by_role("link", name="Events").click()
            page.get_by_role("link", name="refund.approved").click()
            payload = page.get_by_test_id("payload").inner_text()
            assert '"type": "refund.approved"' in payload and refund["id"] in payload
            screenshot(page, "dashboard-event")

    await in_browser(scenario)
