"""The merchant dashboard over HTTP, as a browser without JavaScript uses it, on both
backends: accounts and sessions, the API keys page, the home page's balance, and the
sign-in and CSRF details the walk of every route (test_dashboard_routes.py) does not see."""

from __future__ import annotations

import json
import os
import sys
from pathlib import Path
from typing import Any
from urllib.parse import urlencode

import attrs
import httpx
import trio
import trio.testing
from fgcpay.accounts import Accounts
from fgcpay.admin import create_merchant
from fgcpay.core.clock import TrioClock
from fgcpay.core.settings import Settings
from helpers import (
    CLIENT_TLS,
    PASSWORD,
    MerchantClient,
    Server,
    new_email,
    open_dashboard,
    raw_key,
    sign_in,
    signed_up,
    start_server,
    wait_until,
)
from hosted import paid_session

SIGN_IN = "/dashboard/sign-in"


def _api(server: Server, key: str) -> httpx.AsyncClient:
    return httpx.AsyncClient(
        base_url=server.url + "/api/v1",
        headers={"Authorization": f"Bearer {key}"},
        verify=CLIENT_TLS,
    )


async def _key_ids(server: Server, merchant_id: str) -> dict[str, str | None]:
    from fgcpay.storage import merchants

    keys = await server.db.read(merchants.api_keys_of, merchant_id)
    return {key.id: (None if key.revoked_at is None else "revoked") for key in keys}


async def _merchant_id(server: Server, email: str) -> str:
    from fgcpay.storage import merchants

    found = await server.db.read(merchants.merchant_by_email, email)
    assert found is not None
    return found.id


async def test_signing_up_signs_in_with_a_strict_cookie_and_home_shows_the_name(
    server: Server,
) -> None:
    dashboard, _ = await signed_up(server, name="Rosa's Bakery")
    home = await dashboard.get("/dashboard")
    assert home.status_code == 200
    assert "Rosa&#39;s Bakery" in home.text and "0.00 FGC" in home.text
    assert "default-src 'none'" in home.headers["content-security-policy"]
    assert home.headers["cache-control"] == "no-store"
    await dashboard.aclose()


async def test_the_session_cookie_is_http_only_lax_and_secure_behind_https(
    nursery: trio.Nursery, settings: Settings
) -> None:
    for public_url, secure in (("http://127.0.0.1:0", False), ("https://pay.example", True)):
        server = await start_server(nursery, attrs.evolve(settings, public_url=public_url))
        dashboard = open_dashboard(server)
        page = await dashboard.get("/dashboard/sign-up")
        (nonce,) = page.headers.get_list("set-cookie")
        assert ("; secure" in nonce.lower()) is secure, nonce
        # The test's client speaks plain HTTP: it sends a Secure cookie only when told to.
        value = nonce.split(";")[0].split("=", 1)[1]
        dashboard.client.cookies.set("fgc_dashboard_csrf", value, path="/dashboard")
        answer = await dashboard.submit(
            "/dashboard/sign-up", {"name": "Shop", "email": new_email(), "password": PASSWORD}
        )
        assert answer.status_code == 303, answer.text
        (cookie,) = [c for c in answer.headers.get_list("set-cookie") if "session" in c]
        parts = [part.strip().lower() for part in cookie.split(";")]
        assert "httponly" in parts and "samesite=lax" in parts and "path=/dashboard" in parts
        assert ("secure" in parts) is secure, cookie
        await dashboard.aclose()
        await server.shutdown()


async def test_home_shows_the_balance_of_get_balance(server: Server) -> None:
    email = new_email()
    created = await create_merchant(server.db, "Acme Coffee", email, password=PASSWORD)
    merchant = MerchantClient(created, server.client)
    await paid_session(server, merchant)
    balance = (await merchant.get("/balance")).json()
    dashboard = open_dashboard(server)
    signed = await sign_in(dashboard, email)
    assert signed.status_code == 303 and signed.headers["location"] == "/dashboard"
    home = await dashboard.get("/dashboard")
    assert f"{balance['paid_total_fgc']} FGC" in home.text and balance["paid_total_fgc"] != "0.00"
    assert f'data-testid="transaction_count">{balance["transaction_count"]}<' in home.text
    await dashboard.aclose()


async def test_a_key_is_shown_once_works_and_once_revoked_is_401(server: Server) -> None:
    dashboard, email = await signed_up(server)
    merchant_id = await _merchant_id(server, email)
    refused = await dashboard.submit("/dashboard/api-keys", {"name": " "})
    assert refused.status_code == 400 and "Give the key a name" in refused.text
    assert await _key_ids(server, merchant_id) == {}
    shown = await dashboard.submit("/dashboard/api-keys", {"name": "shop server"})
    assert shown.status_code == 201 and shown.headers["cache-control"] == "no-store"
    key = raw_key(shown.text)
    listed = await dashboard.get("/dashboard/api-keys")
    assert key not in listed.text, "the raw key is shown once only"
    assert "shop server" in listed.text and f"{key[:12]}...{key[-4:]}" in listed.text
    assert "Never" in listed.text
    async with _api(server, key) as api:
        assert (await api.get("/balance")).status_code == 200

        async def used() -> bool:
            return "Never" not in (await dashboard.get("/dashboard/api-keys")).text

        await wait_until(used, within=10, what="the key's last use on the page")
        (key_id,) = await _key_ids(server, merchant_id)
        # A link cannot make the page say a key is revoked that is not.
        spoofed = await dashboard.get(f"/dashboard/api-keys?revoked={key_id}")
        assert spoofed.status_code == 200 and "is revoked" not in spoofed.text
        confirm = await dashboard.get(f"/dashboard/api-keys/{key_id}/revoke")
        assert confirm.status_code == 200 and "Revoke the key shop server?" in confirm.text
        assert (await api.get("/balance")).status_code == 200, "asking changes nothing"
        revoked = await dashboard.submit(f"/dashboard/api-keys/{key_id}/revoke", {})
        assert revoked.status_code == 303
        notice = await dashboard.get(revoked.headers["location"])
        assert "The key shop server is revoked" in notice.text
        answer = await api.get("/balance")
        assert answer.status_code == 401 and "revoked" in answer.json()["message"]
    await dashboard.aclose()


# Every route's guards (signed out, CSRF, another merchant's ids): test_dashboard_routes.py.


async def test_a_planted_session_is_none_and_sign_in_goes_back_inside_the_dashboard_only(
    server: Server,
) -> None:
    owner, email = await signed_up(server)
    stranger = open_dashboard(server)
    stranger.client.cookies.set("fgc_dashboard_session", "planted", path="/dashboard")
    assert (await stranger.get("/dashboard")).status_code == 303
    # The sign-in page sends the browser back where it was going, inside the dashboard only.
    back = await stranger.get("/dashboard/api-keys")
    assert back.headers["location"] == f"{SIGN_IN}?next=%2Fdashboard%2Fapi-keys"
    signed = await stranger.submit(
        f"{SIGN_IN}", {"email": email, "password": PASSWORD, "next": "//evil.example/"}
    )
    assert signed.headers["location"] == "/dashboard"
    await owner.aclose()
    await stranger.aclose()


async def test_sign_in_goes_back_to_the_page_with_its_query(server: Server) -> None:
    owner, email = await signed_up(server)
    browser = open_dashboard(server)
    asked = await browser.get("/dashboard/refunds?status=pending_review")
    assert asked.headers["location"] == (
        f"{SIGN_IN}?next=%2Fdashboard%2Frefunds%3Fstatus%3Dpending_review"
    )
    page = await browser.get(asked.headers["location"])
    assert 'name="next" value="/dashboard/refunds?status=pending_review"' in page.text
    back = "/dashboard/refunds?status=pending_review"
    signed = await browser.submit(
        SIGN_IN, {"email": email, "password": PASSWORD, "next": back}, page=SIGN_IN
    )
    assert signed.status_code == 303 and signed.headers["location"] == back
    for each in (owner, browser):
        await each.aclose()


# `next` values that must not be followed: other sites, other paths of this one, and
# characters no header may carry (each was a 500: the redirect's Location refused them).
NOT_NEXT = [
    "//evil.example/",
    "https://evil.example/dashboard",
    "/dashboardevil",
    "/dashboard/../api/v1/balance",
    "/dashboard/%2e%2e/api/v1/balance",
    "/dashboard\\evil",
    "/dashboard\r\nSet-Cookie: planted=1",
    "/dashboard\x00",
    "/dashboard/\t/evil.example",
    "/dashboard/" + "x" * 3000,
]


async def test_a_next_outside_the_dashboard_or_not_a_plain_path_goes_home(
    server: Server,
) -> None:
    owner, email = await signed_up(server)
    for value in NOT_NEXT:
        page = await owner.get(f"{SIGN_IN}?{urlencode({'next': value})}")
        assert page.status_code == 200 and 'name="next" value="/dashboard"' in page.text, value
        signed = await owner.submit(
            SIGN_IN, {"email": email, "password": PASSWORD, "next": value}, page=SIGN_IN
        )
        assert signed.status_code == 303, (value, signed.status_code)
        assert signed.headers["location"] == "/dashboard", value
    await owner.aclose()


async def test_sign_in_and_sign_up_need_their_token_and_a_token_needs_its_browser(
    server: Server,
) -> None:
    dashboard, email = await signed_up(server)
    merchant_id = await _merchant_id(server, email)
    # Signed out, the sign-in and sign-up forms need theirs too.
    other = open_dashboard(server)
    for path in (SIGN_IN, "/dashboard/sign-up"):
        data = {"name": "Shop", "email": new_email(), "password": PASSWORD}
        assert (await other.client.post(path, data=data)).status_code == 400
    assert other.session_id is None
    # A token from one browser does not work in another, even with its session id.
    page = await dashboard.get("/dashboard/api-keys")
    token = page.text.split('name="csrf_token" value="')[1].split('"')[0]
    thief = open_dashboard(server)
    thief.client.cookies.set("fgc_dashboard_session", dashboard.session_id or "", path="/dashboard")
    stolen = await thief.client.post("/dashboard/api-keys", data={"name": "x", "csrf_token": token})
    assert stolen.status_code == 400
    assert await _key_ids(server, merchant_id) == {}
    for browser in (dashboard, other, thief):
        await browser.aclose()


async def test_sign_up_refuses_a_short_password_and_a_taken_email(server: Server) -> None:
    first, email = await signed_up(server)
    browser = open_dashboard(server)
    short = await browser.submit(
        "/dashboard/sign-up", {"name": "Shop", "email": new_email(), "password": "123456789"}
    )
    assert short.status_code == 400 and "at least 10 characters" in short.text
    taken = await browser.submit(
        "/dashboard/sign-up", {"name": "Shop", "email": email.upper(), "password": PASSWORD}
    )
    assert taken.status_code == 400 and "An account with this email exists" in taken.text
    assert browser.session_id is None
    await first.aclose()
    await browser.aclose()


async def test_sign_up_is_closed_when_the_operator_says_so(
    nursery: trio.Nursery, settings: Settings
) -> None:
    server = await start_server(nursery, attrs.evolve(settings, dashboard_signup=False))
    browser = open_dashboard(server)
    assert (await browser.get("/dashboard/sign-up")).status_code == 404
    assert (await browser.client.post("/dashboard/sign-up", data={})).status_code == 404
    assert "Create an account" not in (await browser.get(SIGN_IN)).text
    await browser.aclose()
    await server.shutdown()


async def test_signing_in_again_rotates_the_session_and_signing_out_ends_it(
    server: Server,
) -> None:
    dashboard, email = await signed_up(server)
    first = dashboard.session_id
    assert (await sign_in(dashboard, email)).status_code == 303
    second = dashboard.session_id
    assert first and second and first != second
    old = open_dashboard(server)
    old.client.cookies.set("fgc_dashboard_session", first, path="/dashboard")
    assert (await old.get("/dashboard")).status_code == 303, "the session before is over"
    out = await dashboard.submit("/dashboard/sign-out", {}, page="/dashboard")
    assert out.status_code == 303 and out.headers["location"] == SIGN_IN
    again = open_dashboard(server)
    again.client.cookies.set("fgc_dashboard_session", second, path="/dashboard")
    assert (await again.get("/dashboard")).status_code == 303, "signed out on the server"
    for browser in (dashboard, old, again):
        await browser.aclose()


async def test_five_wrong_passwords_lock_the_email_and_twenty_the_address(
    nursery: trio.Nursery, settings: Settings, clock: trio.testing.MockClock
) -> None:
    server = await start_server(nursery, settings, clock=TrioClock())
    owner, email = await signed_up(server, keep_alive=False)
    browser = open_dashboard(server, keep_alive=False)
    for attempt in range(1, 6):
        answer = await sign_in(browser, email, "wrong password " + str(attempt))
        if attempt < 5:
            assert answer.status_code == 400 and "not right" in answer.text
    assert answer.status_code == 429 and "locked" in answer.text and "15 minutes" in answer.text
    right = await sign_in(browser, email)
    assert right.status_code == 429 and "locked" in right.text, "no password is compared"
    clock.jump(15 * 60)
    assert (await sign_in(browser, email)).status_code == 303, "the lock ends"
    # From one address, twenty failures in a window, whatever the emails, lock every
    # sign-in from it (the window of the five above has ended with the lock).
    for _ in range(19):
        assert (await sign_in(browser, new_email(), "nope nope nope")).status_code == 400
    answer = await sign_in(browser, new_email(), "nope nope nope")
    assert answer.status_code == 429 and "locked" in answer.text
    answer = await sign_in(browser, email)
    assert answer.status_code == 429 and "locked" in answer.text
    await owner.aclose()
    await browser.aclose()
    await server.shutdown()


async def test_a_session_ends_after_12_idle_hours(
    nursery: trio.Nursery, settings: Settings, clock: trio.testing.MockClock
) -> None:
    server = await start_server(nursery, settings, clock=TrioClock())
    dashboard, _ = await signed_up(server, keep_alive=False)
    clock.jump(11 * 3600)
    assert (await dashboard.get("/dashboard")).status_code == 200, "used: idle again from now"
    clock.jump(11 * 3600)
    assert (await dashboard.get("/dashboard")).status_code == 200
    clock.jump(12 * 3600)
    answer = await dashboard.get("/dashboard")
    assert answer.status_code == 303 and answer.headers["location"] == SIGN_IN
    await dashboard.aclose()
    await server.shutdown()


async def _fgcpay(settings: Settings, cwd: Path, *args: str, stdin: bytes = b"") -> dict[str, Any]:
    env = {
        **os.environ,
        "FGCPAY_DATABASE_URL": settings.database_url,
        "FGCPAY_SECRET_KEY": settings.secret_key,
    }
    done = await trio.run_process(
        [sys.executable, "-m", "fgcpay.cli", *args],
        cwd=cwd,
        env=env,
        stdin=stdin,
        capture_stdout=True,
        capture_stderr=True,
        check=False,
    )
    assert done.returncode == 0, done.stderr.decode()
    found: dict[str, Any] = json.loads(done.stdout)
    return found


async def test_the_operator_gives_a_password_and_resets_it(
    server: Server, settings: Settings, tmp_path: Path
) -> None:
    email = new_email()
    created = await _fgcpay(
        settings, tmp_path, "merchant", "create", "--name", "Ops Shop", "--email", email,
        "--password", PASSWORD,
    )  # fmt: skip
    dashboard = open_dashboard(server)
    assert (await sign_in(dashboard, email)).status_code == 303
    new_password = "another long password 8"
    reset = await _fgcpay(
        settings, tmp_path, "merchant", "set-password", "--merchant", created["merchant_id"],
        stdin=new_password.encode() + b"\n",
    )  # fmt: skip
    assert reset == {"merchant_id": created["merchant_id"], "email": email, "password_set": True}
    answer = await dashboard.get("/dashboard")
    assert answer.status_code == 303, "a reset ends the merchant's sessions"
    assert (await sign_in(dashboard, email)).status_code == 400
    assert (await sign_in(dashboard, email, new_password)).status_code == 303
    await dashboard.aclose()


async def test_errors_under_the_dashboard_are_its_html_pages_not_the_apis_json(
    server: Server,
) -> None:
    dashboard, _ = await signed_up(server)
    unknown = await dashboard.get("/dashboard/no-such-page")
    wrong_method = await dashboard.client.delete("/dashboard/api-keys")
    too_large = await dashboard.client.post(
        "/dashboard/api-keys", data={"name": "x" * (70 * 1024), "csrf_token": "t"}
    )
    for answer, status, words in (
        (unknown, 404, "Not found"),
        (wrong_method, 405, "This method is not allowed"),
        (too_large, 413, "larger than 64 KiB"),
    ):
        assert answer.status_code == status
        assert answer.headers["content-type"].startswith("text/html")
        assert words in answer.text and '<main id="main"' in answer.text
        assert answer.headers["cache-control"] == "no-store"
    assert "GET" in wrong_method.headers["allow"]
    # The API keeps its JSON answers.
    api = await dashboard.get("/api/v1/no-such-path")
    assert api.headers["content-type"] == "application/json" and api.json()["code"]
    await dashboard.aclose()


async def test_a_sign_in_that_crashes_counts_no_wrong_password(
    nursery: trio.Nursery, settings: Settings, monkeypatch: Any
) -> None:
    """A sign-in whose comparison crashes (the hashing thread, the database) is answered
    500, and its reserved attempt is given back uncounted: five such crashes do not lock
    the merchant out of its own dashboard."""
    server = await start_server(nursery, settings)
    owner, email = await signed_up(server, keep_alive=False)
    crashes = 0

    async def crashing_verify(self: Accounts, password: str, stored: str | None) -> bool:
        nonlocal crashes
        crashes += 1
        raise RuntimeError("the hashing thread crashed")

    monkeypatch.setattr(Accounts, "_verify", crashing_verify)
    browser = open_dashboard(server, keep_alive=False)
    for _ in range(5):
        assert (await sign_in(browser, email)).status_code == 500
    assert crashes == 5
    monkeypatch.undo()
    right = await sign_in(browser, email)
    assert right.status_code == 303, right.text
    await owner.aclose()
    await browser.aclose()
    await server.shutdown()
