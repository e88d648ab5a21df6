"""The dashboard's accessibility in a real browser (issue 13, item 6), with the audit of
helpers/_a11y.py: signed in as a merchant with a key, an endpoint with deliveries, a paid
session, a subscription, a pending refund and their events, every page (and the two
signed-out ones) is read at a computer's width and at a phone's (375 px, where nothing
may scroll sideways), and walked with Tab. Without JavaScript, every form posts and
its answer (a redirect, or the page with its message) passes the same audit.

On SQLite only (see `database_url` below). With FGCPAY_UPDATE_SCREENSHOTS=1 the walk of
the pages also writes the screenshots docs/dashboard.md shows (docs/img/); otherwise they
go to tests/artifacts/ with the others."""

from __future__ import annotations

import os
from pathlib import Path
from typing import TYPE_CHECKING

import pytest
import trio
from fgcpay.admin import create_merchant
from fgcpay.storage import merchants
from helpers import (
    ARTIFACTS,
    PASSWORD,
    WAIT_MS,
    MerchantClient,
    Server,
    add_endpoint,
    audit,
    browser,
    copy_sqlite_database,
    create_subscription,
    horizontal_scroll,
    in_browser,
    new_email,
    tab_walk,
    wait_until,
)
from hosted import paid_session
from receiver import Receiver, start_receiver

if TYPE_CHECKING:
    from playwright.sync_api import FloatRect, Page, ViewportSize

# Skips (or, in CI, fails) every test here without chromium.
pytestmark = pytest.mark.usefixtures("need_browser")


@pytest.fixture
def database_url(sqlite_template: Path, tmp_path: Path) -> str:
    """SQLite only, here: what is audited is the pages' markup and rendered styles, the
    same on both backends (the HTTP tests of every route, test_dashboard*.py, run on
    both), and one run keeps the module within its budget of about 20 seconds."""
    return copy_sqlite_database(sqlite_template, tmp_path / "fgcpay.sqlite3")


COMPUTER: ViewportSize = {"width": 1000, "height": 760}
PHONE: ViewportSize = {"width": 375, "height": 740}
DOCS_IMAGES = Path(__file__).parent.parent / "docs" / "img"
# The docs' screenshots are kept small: the top of the page, at most this high.
DOCS_MAX_HEIGHT = 900


def docs_screenshot(page: Page, name: str) -> None:
    """The page as docs/dashboard.md shows it (1000 px wide, its top 900 px at most):
    written to docs/img/ when FGCPAY_UPDATE_SCREENSHOTS=1, else to tests/artifacts/
    (as docs-<name>.png)."""
    if os.environ.get("FGCPAY_UPDATE_SCREENSHOTS") == "1":
        path = DOCS_IMAGES / f"{name}.png"
    else:  # named apart from the browser walks' own screenshots there
        path = ARTIFACTS / f"docs-{name}.png"
    path.parent.mkdir(parents=True, exist_ok=True)
    height = min(page.evaluate("document.documentElement.scrollHeight"), DOCS_MAX_HEIGHT)
    clip: FloatRect = {"x": 0, "y": 0, "width": COMPUTER["width"], "height": height}
    page.screenshot(path=str(path), clip=clip, full_page=True)


async def _merchant_with_everything(
    server: Server, receiver: Receiver
) -> tuple[str, dict[str, str]]:
    """A merchant with a password (its email returned) and one of everything the pages
    show, by the page's name: a key, an endpoint with an attempted delivery, a paid
    session, its transaction, a pending refund, a subscription, their events."""
    email = new_email()
    created = await create_merchant(server.db, "Rosa's Bakery", email, password=PASSWORD)
    merchant = MerchantClient(created, server.client)
    endpoint = await add_endpoint(merchant, receiver.url, ["checkout.session.paid"])
    session = await paid_session(server, merchant)
    await receiver.wait_for(1)

    async def attempted() -> bool:
        log = (await merchant.get("/webhook_deliveries")).json()["data"]
        return bool(log and log[0]["attempts"])

    await wait_until(attempted, within=20, what="the delivery's attempt recorded")
    (delivery,) = (await merchant.get("/webhook_deliveries")).json()["data"]
    body = {
        "checkout_session_id": session["id"],
        "amount_fgc": "4.00",
        "reason": "requested_by_customer",
    }
    refund = await merchant.post("/refunds", json=body)
    assert refund.status_code == 201, refund.text
    subscription = await create_subscription(merchant)
    (txn,) = (await merchant.get("/transactions")).json()["data"]
    event = (await merchant.get("/events", params={"type": "checkout.session.paid"})).json()
    (key,) = await server.db.read(merchants.api_keys_of, created.merchant.id)
    sandbox = await merchant.post("/sandboxes", json={"name": "CI shard 1", "ttl_seconds": 3600})
    assert sandbox.status_code == 201, sandbox.text
    return email, {
        "merchant": created.merchant.id,
        "key": key.id,
        "endpoint": endpoint["id"],
        "delivery": delivery["id"],
        "session": session["id"],
        "subscription": subscription["id"],
        "refund": refund.json()["id"],
        "transaction": txn["id"],
        "event": event["data"][0]["id"],
        "sandbox": sandbox.json()["id"],
    }


# Every page a signed-in merchant reads, by a name for the failures (and screenshots).
PAGES = {
    "home": "/dashboard",
    "api-keys": "/dashboard/api-keys",
    "api-key-revoke": "/dashboard/api-keys/{key}/revoke",
    "webhooks": "/dashboard/webhooks",
    "webhook": "/dashboard/webhooks/{endpoint}",
    "webhook-delivery": "/dashboard/webhooks/{endpoint}/deliveries/{delivery}",
    "webhook-delete": "/dashboard/webhooks/{endpoint}/delete",
    "checkout-sessions": "/dashboard/checkout-sessions",
    "checkout-session": "/dashboard/checkout-sessions/{session}",
    "subscriptions": "/dashboard/subscriptions",
    "subscription": "/dashboard/subscriptions/{subscription}",
    "subscription-cancel": "/dashboard/subscriptions/{subscription}/cancel",
    "refunds": "/dashboard/refunds",
    "refund": "/dashboard/refunds/{refund}",
    "transactions": "/dashboard/transactions",
    "transaction": "/dashboard/transactions/{transaction}",
    "events": "/dashboard/events",
    "event": "/dashboard/events/{event}",
    "sandboxes": "/dashboard/sandboxes",
    "sandbox-delete": "/dashboard/sandboxes/{sandbox}/delete",
    "not-found": "/dashboard/refunds/re_test_nothing",
}


# The pages walked with Tab at a phone's width too: one of each layout that changes there
# (the header wraps on all; the copy row stacks; fields, actions and checkboxes reflow).
PHONE_WALKS = {"sign-in", "home", "api-key-created", "webhook", "refund"}


def _checked(page: Page, name: str) -> list[str]:
    """The audit's problems with the page, walked with Tab, at a computer's width and at a
    phone's (where the layout changes: the navigation wraps, tables scroll in place)."""
    problems = [f"{name}: {p}" for p in audit(page) + horizontal_scroll(page) + tab_walk(page)]
    page.set_viewport_size(PHONE)
    found = audit(page) + horizontal_scroll(page)
    if name in PHONE_WALKS:
        found += tab_walk(page)
    page.set_viewport_size(COMPUTER)
    return problems + [f"{name} (375 px): {problem}" for problem in found]


async def test_every_page_passes_the_audit_signed_in_with_data_and_signed_out(
    server: Server, nursery: trio.Nursery
) -> None:
    receiver = await start_receiver(nursery)
    email, ids = await _merchant_with_everything(server, receiver)

    def scenario() -> None:
        problems: list[str] = []
        with browser() as b:
            page = b.new_page(viewport=COMPUTER)
            for name, path in (
                ("sign-in", "/dashboard/sign-in"),
                ("sign-up", "/dashboard/sign-up"),
            ):
                page.goto(server.url + path)
                problems += _checked(page, name)
            page.goto(server.url + "/dashboard/sign-in")
            page.get_by_label("Email").fill(email)
            page.get_by_label("Password").fill(PASSWORD)
            page.get_by_role("button", name="Sign in").click()
            page.get_by_role("heading", name="Balance").wait_for(timeout=WAIT_MS)
            for name, path in PAGES.items():
                answer = page.goto(server.url + path.format(**ids))
                # The page itself, not a redirect to sign-in or a 404 standing in for it.
                assert answer and answer.status == (404 if name == "not-found" else 200), name
                assert page.url == server.url + path.format(**ids), page.url
                if name in ("home", "webhook-delivery", "refund"):
                    docs_screenshot(page, f"dashboard-{name}")
                problems += _checked(page, name)
            # The answers to two forms: the key shown once, the signing secret.
            page.goto(server.url + "/dashboard/api-keys")
            page.get_by_label("Key name").fill("shop server")
            page.get_by_role("button", name="Create key").click()
            page.get_by_role("button", name="Copy").wait_for(timeout=WAIT_MS)
            docs_screenshot(page, "dashboard-api-key-created")
            problems += _checked(page, "api-key-created")
            # A refresh sends the form again: no second key, and the key is not shown again.
            page.reload()
            heading = "This key was already created: shop server"
            page.get_by_role("heading", name=heading).wait_for(timeout=WAIT_MS)
            assert page.get_by_label("API key").count() == 0
            problems += _checked(page, "api-key-already-created")
            # A sandbox's key, shown once as a key is.
            page.goto(server.url + "/dashboard/sandboxes")
            page.get_by_label("Name (optional)").fill("CI shard 2")
            page.get_by_role("button", name="Create sandbox").click()
            page.get_by_role("button", name="Copy").wait_for(timeout=WAIT_MS)
            problems += _checked(page, "sandbox-created")
            page.goto(server.url + PAGES["webhook"].format(**ids))
            page.get_by_role("button", name="Reveal secret").click()
            page.get_by_label("Signing secret").wait_for(timeout=WAIT_MS)
            problems += _checked(page, "webhook-secret")
        assert not problems, "\n".join(problems)

    await in_browser(scenario)
    keys = await server.db.read(merchants.api_keys_of, ids["merchant"])
    assert sorted(str(key.name) for key in keys) == ["None", "shop server"], "one key per form"


async def test_every_form_works_without_javascript_and_its_answer_passes_the_audit(
    server: Server, nursery: trio.Nursery
) -> None:
    receiver = await start_receiver(nursery)
    email, ids = await _merchant_with_everything(server, receiver)

    def scenario() -> None:
        problems: list[str] = []
        with browser() as b:
            context = b.new_context(viewport=PHONE, java_script_enabled=False)
            page = context.new_page()

            def answered(name: str, text: str) -> None:
                """The answer says `text`; it passes the audit at a phone's width."""
                page.get_by_text(text).filter(visible=True).first.wait_for(timeout=WAIT_MS)
                found = audit(page) + horizontal_scroll(page)
                problems.extend(f"{name}: {problem}" for problem in found)

            def click(name: str) -> None:
                page.get_by_role("button", name=name, exact=True).click()

            # Signed out, a page sends to sign-in; a wrong password is announced (an alert,
            # the field described by it); the right one goes back to the page.
            page.goto(server.url + "/dashboard/refunds?status=pending_review")
            page.get_by_label("Email").fill(email)
            page.get_by_label("Password").fill("not the password")
            click("Sign in")
            answered("sign-in refused", "The email or password is not right.")
            assert page.get_by_role("alert").count() == 1
            page.get_by_label("Password").fill(PASSWORD)
            click("Sign in")
            answered("refunds pending review", "4.00 FGC")
            assert page.url.endswith("/dashboard/refunds?status=pending_review"), page.url

            # The refund's review and a subscription's cancel: post, redirect, notice.
            page.get_by_role("link", name="4.00 FGC").click()
            click("Approve refund")
            answered("refund approved", "Refund approved")
            page.get_by_role("link", name="Events").click()
            page.get_by_label("Type").select_option("refund.approved")
            click("Show")
            answered("events filtered", "refund.approved")
            page.goto(server.url + PAGES["subscription"].format(**ids))
            page.get_by_role("link", name="Cancel subscription").click()
            click("Cancel subscription")
            answered("subscription cancelled", "Subscription cancelled")

            # A key: a name is needed; the key is shown without its copy button; revoked.
            page.get_by_role("link", name="API keys").click()
            click("Create key")
            answered("key refused", "Give the key a name")
            page.get_by_label("Key name").fill("shop server")
            click("Create key")
            answered("key created", "shown only this once")
            assert page.get_by_label("API key").input_value().startswith("fp_test_")
            assert page.get_by_role("button", name="Copy").count() == 0, "only with the script"
            page.get_by_role("link", name="back to API keys").click()
            page.get_by_role("link", name="Revoke shop server").click()
            click("Revoke key")
            answered("key revoked", "The key shop server is revoked")

            # An endpoint: a bad URL is refused; added; its events, test, rotation, secret.
            page.get_by_role("link", name="Webhooks").click()
            page.get_by_label("Endpoint URL").fill("ftp://shop.example/hooks")
            click("Add endpoint")
            answered("endpoint refused", "Please correct the fields marked below.")
            # Nothing listens on port 9: the test event fails, and says so in an alert.
            page.get_by_label("Endpoint URL").fill("http://127.0.0.1:9/hooks")
            page.get_by_label("All events").uncheck()
            page.get_by_label("refund.approved").check()
            click("Add endpoint")
            answered("endpoint added", "The endpoint is added")
            page.get_by_label("refund.rejected").check()
            click("Save events")
            answered("events saved", "The event selection is saved")
            click("Send a test event")
            answered("test failed", "it did not succeed")
            assert "did not succeed" in page.get_by_role("alert").inner_text()
            click("Check receiver")
            answered("receiver check failed", "8 of 8 checks failed")
            assert page.get_by_role("row", name="bad_signature Failed 4xx").count() == 1
            click("Rotate secret")
            answered("secret rotated", "The secret is rotated")
            click("Reveal secret")
            answered("secret shown", "Previous secret")
            assert page.get_by_label("Signing secret").input_value().startswith("whsec_")
            page.get_by_role("link", name="Back to the endpoint").click()
            page.get_by_role("link", name="Delete this endpoint").click()
            click("Delete endpoint")
            answered("endpoint deleted", "The endpoint is deleted")

            # The delivery of the first endpoint, found with the status filter, redelivered.
            page.goto(server.url + PAGES["webhook"].format(**ids))
            page.get_by_label("Status").select_option("succeeded")
            click("Show")
            page.get_by_role("link", name="checkout.session.paid").click()
            click("Redeliver")
            answered("redelivered", "Redelivery queued: 1 new delivery")

            # A sandbox: a bad time to live is refused; made, its key shown once; deleted.
            page.get_by_role("link", name="Sandboxes").click()
            page.get_by_label("Name (optional)").fill("CI shard 2")
            page.get_by_label("Time to live in seconds (optional)").fill("59")
            click("Create sandbox")
            answered("sandbox refused", "Please correct the fields marked below.")
            page.get_by_label("Time to live in seconds (optional)").fill("600")
            click("Create sandbox")
            answered("sandbox created", "shown only this once")
            assert page.get_by_label("Sandbox API key").input_value().startswith("fp_test_")
            page.get_by_role("link", name="back to sandboxes").click()
            page.get_by_role("link", name="Delete CI shard 2").click()
            click("Delete sandbox")
            answered("sandbox deleted", "The sandbox is deleted")
            assert page.get_by_role("row", name="CI shard 2").count() == 0

            # A form left open while the browser signed in again (another tab): refused.
            page.get_by_role("link", name="API keys").click()
            page.get_by_label("Key name").fill("left open")
            other = context.new_page()  # another tab
            other.goto(server.url + "/dashboard/sign-in")
            other.get_by_label("Email").fill(email)
            other.get_by_label("Password").fill(PASSWORD)
            other.get_by_role("button", name="Sign in").click()
            other.get_by_role("heading", name="Balance").wait_for(timeout=WAIT_MS)
            other.close()  # a tab left in front slows the one behind it
            click("Create key")
            answered("form expired", "nothing was changed")
            page.get_by_role("link", name="API keys").click()
            assert page.get_by_role("row", name="left open").count() == 0

            # Signing out, and up: the fields' problems announced, then a new account.
            click("Sign out")
            page.get_by_role("link", name="Create an account").click()
            page.get_by_label("Business name").fill("Second Shop")
            page.get_by_label("Email").fill(new_email())
            page.get_by_label("Password").fill("too short")
            click("Create account")
            answered("sign-up refused", "at least 10 characters")
            page.get_by_label("Password").fill(PASSWORD)
            click("Create account")
            answered("signed up", "Balance")
            assert "Second Shop" in page.get_by_role("banner").inner_text()
        assert not problems, "\n".join(problems)

    await in_browser(scenario)


# A page with one of each fault the audit looks for, and the words it must say about it.
FAULTY = """<!doctype html><html><head><title>Faulty</title></head><body>
<p>Outside every landmark</p>
<header><nav><a href="#top">Top</a></nav></header>
<main>
<h1>One</h1><h1>Two</h1><h3>Skipped a level</h3>
<input id="bare" type="text">
<p class="message">Something went wrong</p>
<p style="color: #aaa">Faint text</p>
<div style="display: flex; flex-direction: row-reverse"><a href="#1">first</a><a href="#2">second</a></div>
<button style="outline: none">No ring</button>
<div style="width: 2000px">Too wide</div>
</main></body></html>"""
FAULTS = [
    "no lang on <html>",
    "2 h1 elements",
    'h3 "Skipped a level" skips a heading level after h1',
    "text outside the landmarks: p",
    'nav "Top" has no name',
    "input#bare has no label or name",
    "a message without role=alert",
    "contrast 2.32:1, below 4.5:1",
    'Tab goes back on screen: a "first" -> a "second"',
    'button "No ring": no focus outline',
    "scrolls sideways",
]


async def test_the_audit_finds_each_fault_it_looks_for() -> None:
    def scenario() -> None:
        with browser() as b:
            page = b.new_page(viewport=COMPUTER)
            page.set_content(FAULTY)
            found = "\n".join(audit(page) + horizontal_scroll(page) + tab_walk(page))
            missed = [fault for fault in FAULTS if fault not in found]
            assert not missed, f"{missed} not in:\n{found}"

    await in_browser(scenario)
