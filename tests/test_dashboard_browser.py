"""The dashboard in a real headless browser (Debian's chromium, driven by Playwright): a
new merchant signs up, creates a key, uses it with the API, revokes it and sees 401; a
merchant adds a webhook endpoint, sends it a test event, pays a session and sees the
delivery and its attempt, and redelivers it; another sees its chart, approves a refund
and reads the event it sent. Screenshots land in tests/artifacts/."""

from __future__ import annotations

import json

import httpx
import pytest
import trio
from fgcpay.admin import create_merchant
from helpers import (
    CLIENT_TLS,
    PASSWORD,
    WAIT_MS,
    MerchantClient,
    Server,
    browser,
    in_browser,
    new_email,
    screenshot,
    valid_body,
    wait_until,
)
from hosted import paid_session
from playwright.sync_api import Browser, Page
from receiver import start_receiver

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


def _signed_in_page(b: Browser, server: Server, email: str) -> Page:
    page = b.new_page(viewport={"width": 390, "height": 844})
    page.goto(server.url + "/dashboard/sign-in")
    page.get_by_label("Email").fill(email)
    page.get_by_label("Password").fill(PASSWORD)
    page.get_by_role("button", name="Sign in").click()
    page.get_by_role("heading", name="Balance").wait_for(timeout=WAIT_MS)
    return page


async def test_add_an_endpoint_test_it_see_a_delivery_and_redeliver_it(
    server: Server, nursery: trio.Nursery
) -> None:
    receiver = await start_receiver(nursery)
    email = new_email()
    created = await create_merchant(server.db, "Rosa's Bakery", email, password=PASSWORD)

    def add_and_test() -> None:
        with browser() as b:
            page = _signed_in_page(b, server, email)
            page.get_by_role("link", name="Webhooks").click()
            page.get_by_label("Endpoint URL").fill(receiver.url)
            page.get_by_label("All events").uncheck()
            page.get_by_label("checkout.session.paid").check()
            screenshot(page, "dashboard-webhook-add")
            page.get_by_role("button", name="Add endpoint").click()
            page.get_by_text("The endpoint is added").wait_for(timeout=WAIT_MS)
            page.get_by_role("button", name="Send a test event").click()
            page.get_by_text("your endpoint answered 200").wait_for(timeout=WAIT_MS)
            screenshot(page, "dashboard-webhook-tested")
            page.get_by_role("button", name="Reveal secret").click()
            assert page.get_by_label("Signing secret").input_value().startswith("whsec_")

    await in_browser(add_and_test)
    (tested,) = await receiver.wait_for(1)
    assert json.loads(tested.body)["type"] == "webhook_endpoint.test"
    await paid_session(server, MerchantClient(created, server.client))
    paid = (await receiver.wait_for(2))[1]
    event_id = json.loads(paid.body)["id"]
    merchant = MerchantClient(created, server.client)

    async def recorded() -> bool:
        log = await merchant.get("/webhook_deliveries", params={"event_id": event_id})
        return [d["status"] for d in log.json()["data"]] == ["succeeded"]

    # The attempt is recorded just after the receiver has answered.
    await wait_until(recorded, within=20, what="the delivery's attempt recorded")

    def see_and_redeliver() -> None:
        with browser() as b:
            page = _signed_in_page(b, server, email)
            page.get_by_role("link", name="Webhooks").click()
            page.get_by_role("link", name=receiver.url).click()
            assert "Succeeded" in page.get_by_role("table").inner_text()
            page.get_by_role("link", name="checkout.session.paid").click()
            page.get_by_role("heading", name="Attempt 1").wait_for(timeout=WAIT_MS)
            assert page.get_by_test_id("attempt-status").inner_text() == "200"
            assert event_id in page.content()
            page.get_by_role("button", name="Redeliver").click()
            page.get_by_text("Redelivery queued: 1 new delivery").wait_for(timeout=WAIT_MS)
            screenshot(page, "dashboard-webhook-delivery")

    await in_browser(see_and_redeliver)
    again = (await receiver.wait_for(3))[2]
    assert json.loads(again.body)["id"] == event_id


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
