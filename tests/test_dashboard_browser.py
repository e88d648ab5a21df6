"""The dashboard in a real headless browser (Debian's chromium, driven by Playwright): a
new merchant signs up, creates a key, uses it with the API, revokes it and sees 401.
Screenshots land in tests/artifacts/."""

from __future__ import annotations

import httpx
import pytest
from helpers import (
    CLIENT_TLS,
    PASSWORD,
    WAIT_MS,
    Server,
    browser,
    in_browser,
    new_email,
    screenshot,
    valid_body,
)

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
