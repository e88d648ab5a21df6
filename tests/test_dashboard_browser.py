"""The dashboard in a real headless browser (Debian's chromium, driven by Playwright): the
issue's acceptance on a fresh `fgcpay serve` process (sign up, a key, an endpoint, a
session made with curl and paid, seen paid and delivered); a new merchant signs up,
creates a key, uses it with the API, revokes it and sees 401, sends a form with a
tampered CSRF token and locks sign-in with wrong passwords; a merchant adds a webhook
endpoint, sends it a test event, pays a session and sees the
delivery and its attempt, and redelivers it; another sees its chart, approves a refund
and reads the event it sent. Screenshots land in tests/artifacts/."""

from __future__ import annotations

import json
import subprocess
from pathlib import Path

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
    fill_and_pay,
    in_browser,
    new_email,
    poll_until,
    screenshot,
    shop_site,
    valid_body,
    wait_until,
)
from hosted import paid_session
from playwright.sync_api import Browser, Page
from processes import ServiceProcess
from receiver import start_receiver

# Skips (or, in CI, fails) every test here without chromium.
pytestmark = pytest.mark.usefixtures("need_browser")


async def test_acceptance_sign_up_key_endpoint_curl_pay_and_see_it_paid_and_delivered(
    tmp_path: Path, nursery: trio.Nursery
) -> None:
    """Issue 13's acceptance, literally: a fresh `fgcpay serve` (its own process, a new
    SQLite file), a new user in chromium, curl with the key the page showed."""
    receiver = await start_receiver(nursery)
    service = ServiceProcess(cwd=tmp_path, database_url=f"sqlite:///{tmp_path}/fresh.sqlite3")
    await service.start()
    trio_token = trio.lowlevel.current_trio_token()

    def curl_create_session(key: str, shop: str) -> dict[str, str]:
        body = valid_body(success_url=f"{shop}/thanks?order=7", cancel_url=f"{shop}/cart")
        done = subprocess.run(
            ["curl", "-s", "-w", "\n%{http_code}\n", f"{service.url}/api/v1/checkout/sessions",
             "-H", f"Authorization: Bearer {key}", "-H", "Content-Type: application/json",
             "-d", json.dumps(body)],
            capture_output=True, text=True, timeout=30, check=True,
        )  # fmt: skip
        *answer, status = done.stdout.strip().splitlines()
        assert status == "201", done.stdout
        created: dict[str, str] = json.loads("\n".join(answer))
        return created

    def scenario() -> None:
        with browser() as b, shop_site() as shop:
            page = b.new_page(viewport={"width": 390, "height": 844})
            page.goto(service.url + "/dashboard/sign-up")
            page.get_by_label("Business name").fill("Rosa's Bakery")
            page.get_by_label("Email").fill(new_email())
            page.get_by_label("Password").fill(PASSWORD)
            page.get_by_role("button", name="Create account").click()
            page.get_by_role("heading", name="Balance").wait_for(timeout=WAIT_MS)

            page.get_by_role("link", name="API keys").click()
            page.get_by_label("Key name").fill("shop server")
            page.get_by_role("button", name="Create key").click()
            key = page.get_by_label("API key").input_value()
            assert key.startswith("fp_test_")

            page.get_by_role("link", name="Webhooks").click()
            page.get_by_label("Endpoint URL").fill(receiver.url)
            page.get_by_role("button", name="Add endpoint").click()
            page.get_by_text("The endpoint is added").wait_for(timeout=WAIT_MS)
            endpoint_page = page.url

            session = curl_create_session(key, shop)
            checkout = b.new_page(viewport={"width": 390, "height": 844})
            checkout.goto(session["checkout_url"])
            fill_and_pay(checkout, "TEST-0001", "1234")
            checkout.wait_for_url(f"{shop}/thanks*", timeout=WAIT_MS)

            page.get_by_role("link", name="Payments").click()
            page.get_by_role("link", name="Two flat whites").click()
            assert session["id"] in page.get_by_role("heading", level=1).inner_text()
            assert page.locator('[data-field="status"]').inner_text() == "paid"
            screenshot(page, "dashboard-acceptance-paid")

            (delivered,) = trio.from_thread.run(receiver.wait_for, 1, trio_token=trio_token)
            assert json.loads(delivered.body)["data"]["object"]["id"] == session["id"]

            def succeeded() -> bool:
                # The attempt is written just after the receiver has answered.
                page.goto(endpoint_page.split("?")[0])
                return "Succeeded" in page.get_by_role("table").inner_text()

            poll_until(succeeded, within=20, what="the delivery's attempt on the endpoint's page")
            screenshot(page, "dashboard-acceptance-delivery")
            page.get_by_role("link", name="checkout.session.paid").click()
            status = page.get_by_test_id("attempt-status").inner_text()
            assert 200 <= int(status) < 300, status

    try:
        await in_browser(scenario)
        assert service.errors_logged() == []
    finally:
        service.kill()


async def test_sign_up_create_a_key_use_it_and_revoke_it(server: Server) -> None:
    def scenario() -> None:
        with browser() as b:
            context = b.new_context(viewport={"width": 390, "height": 844})
            context.grant_permissions(["clipboard-read", "clipboard-write"], origin=server.url)
            page = context.new_page()
            page.goto(server.url + "/dashboard/sign-up")
            page.get_by_label("Business name").fill("Rosa's Bakery")
            email = new_email()
            page.get_by_label("Email").fill(email)
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

            # A form whose CSRF token was tampered with is refused, and changes nothing.
            page.get_by_label("Key name").fill("tampered")
            form = page.locator("form", has=page.get_by_role("button", name="Create key"))
            form.locator('input[name="csrf_token"]').evaluate(
                "field => { field.value = field.value.slice(0, -1)"
                " + (field.value.endsWith('0') ? '1' : '0'); }"
            )
            page.get_by_role("button", name="Create key").click()
            page.get_by_role("heading", name="Please try again").wait_for(timeout=WAIT_MS)
            assert page.get_by_text("nothing was changed").is_visible()
            screenshot(page, "dashboard-csrf-refused")
            page.get_by_role("link", name="API keys").click()
            assert page.get_by_role("row", name="tampered").count() == 0

            # Five wrong passwords lock the email, whatever is typed next.
            page.get_by_role("button", name="Sign out").click()
            page.get_by_role("button", name="Sign in").wait_for(timeout=WAIT_MS)
            for attempt in range(5):
                page.get_by_label("Email").fill(email)
                page.get_by_label("Password").fill(f"not the password {attempt}")
                page.get_by_role("button", name="Sign in").click()
                page.wait_for_load_state()  # the refusal, before the next attempt
                page.get_by_test_id("message").wait_for(timeout=WAIT_MS)
            page.get_by_text("signing in is locked").wait_for(timeout=WAIT_MS)
            page.get_by_label("Password").fill(PASSWORD)
            page.get_by_role("button", name="Sign in").click()
            page.get_by_text("Try again in 15 minutes").wait_for(timeout=WAIT_MS)
            screenshot(page, "dashboard-sign-in-locked")
            assert page.get_by_role("heading", name="Balance").count() == 0

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
