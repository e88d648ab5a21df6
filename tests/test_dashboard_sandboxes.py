"""The dashboard's sandboxes page over HTTP, on both backends: the list (name, created,
expires; newest first, paged), the create form showing the new sandbox's key once (a
form sent again makes no second sandbox and never shows the key again), the delete
after a confirmation, and the refusals (a bad field, the limit, a sandbox's own
merchant). The page goes through `service.sandboxes`, so what it makes the API lists,
and what it deletes the API refuses at once. The guards of every route (signed out,
CSRF, another merchant's ids) are test_dashboard_routes.py's."""

from __future__ import annotations

import re

import httpx
import pytest
import trio
from fgcpay.admin import create_merchant, set_password
from fgcpay.domain import dashboard as dashboard_rules
from fgcpay.domain import limits
from fgcpay.domain.dashboard import DashboardSession
from fgcpay.domain.sandboxes import SandboxRequest
from fgcpay.storage import dashboard_sessions
from helpers import (
    PASSWORD,
    Dashboard,
    MerchantClient,
    Server,
    form_fields,
    new_email,
    open_dashboard,
    raw_key,
    sign_in,
)
from helpers._dashboard import SESSION_COOKIE

PAGE = "/dashboard/sandboxes"
ROW = re.compile(r'<tr data-sandbox-id="(sbx_test_[0-9A-Za-z]{24})">')


async def _merchant(server: Server) -> tuple[MerchantClient, Dashboard]:
    """A merchant with an API key, signed in to the dashboard in a fresh browser."""
    email = new_email()
    created = await create_merchant(server.db, "Acme Coffee", email, password=PASSWORD)
    dashboard = open_dashboard(server)
    assert (await sign_in(dashboard, email)).status_code == 303
    return MerchantClient(created, server.client), dashboard


def _listed(html: str) -> list[str]:
    return ROW.findall(html)


def _with_key(server: Server, key: str) -> httpx.Request:
    return server.client.build_request(
        "GET", "/checkout/sessions", headers={"Authorization": f"Bearer {key}"}
    )


async def test_create_shows_the_key_once_the_list_shows_it_and_delete_needs_a_confirmation(
    server: Server,
) -> None:
    merchant, dashboard = await _merchant(server)
    empty = await dashboard.get(PAGE)
    assert empty.status_code == 200 and "No sandboxes" in empty.text
    # The layout's navigation links the page, current on it.
    assert f'<a href="{PAGE}" aria-current="page">Sandboxes</a>' in empty.text
    home = await dashboard.get("/dashboard")
    assert f'<a href="{PAGE}">Sandboxes</a>' in home.text

    # A field the API refuses: named, what was typed kept, nothing made.
    refused = await dashboard.submit(PAGE, {"name": "CI shard 1", "ttl_seconds": "59"})
    assert refused.status_code == 400, refused.text
    assert "Please correct the fields marked below." in refused.text
    assert 'id="ttl-problem"' in refused.text and 'aria-invalid="true"' in refused.text
    assert 'value="59"' in refused.text and 'value="CI shard 1"' in refused.text
    words = await dashboard.submit(PAGE, {"ttl_seconds": "an hour"})
    assert words.status_code == 400 and 'id="ttl-problem"' in words.text
    assert (await merchant.get("/sandboxes")).json()["data"] == []

    form = {**form_fields((await dashboard.get(PAGE)).text), "name": "CI shard 1"}
    form["ttl_seconds"] = "3600"
    created = await dashboard.client.post(PAGE, data=form)
    assert created.status_code == 201, created.text
    assert created.headers["cache-control"] == "no-store"
    key = raw_key(created.text)
    assert "shown only this once" in created.text
    # The API lists it for the parent, as the page made it; its key is a merchant's own.
    (listed,) = (await merchant.get("/sandboxes")).json()["data"]
    assert listed["name"] == "CI shard 1" and listed["id"] in created.text
    assert listed["expires_at"] is not None and "api_key" not in listed
    assert (await server.client.send(_with_key(server, key))).status_code == 200

    # The same form again (a refresh of the answer): no second sandbox, the key not shown.
    again = await dashboard.client.post(PAGE, data=form)
    assert again.status_code == 200, again.text
    assert key not in again.text and 'data-testid="raw-key"' not in again.text
    assert "already created" in again.text and listed["id"] in again.text
    assert len((await merchant.get("/sandboxes")).json()["data"]) == 1

    # A second one, without a name or a time to live: listed first (newest first).
    second = await dashboard.submit(PAGE, {"name": "", "ttl_seconds": ""})
    assert second.status_code == 201, second.text
    page = await dashboard.get(PAGE)
    first_id = listed["id"]
    (second_id, _) = _listed(page.text)
    assert _listed(page.text) == [second_id, first_id]
    assert "(no name)" in page.text and "CI shard 1" in page.text
    assert "Never" in page.text, "the one without a time to live never expires"
    assert page.text.count(" UTC</td>") == 3, "two created and one expires"
    assert key not in page.text

    # Delete: a confirmation first (which changes nothing), then the key is 401 at once.
    confirm = await dashboard.get(f"{PAGE}/{first_id}/delete")
    assert confirm.status_code == 200 and "Delete the sandbox CI shard 1?" in confirm.text
    assert 'type="submit" class="danger">Delete sandbox</button>' in confirm.text
    assert len((await merchant.get("/sandboxes")).json()["data"]) == 2
    deleted = await dashboard.submit(
        f"{PAGE}/{first_id}/delete", {}, page=f"{PAGE}/{first_id}/delete"
    )
    assert deleted.status_code == 303 and deleted.headers["location"] == f"{PAGE}?deleted=1"
    notice = await dashboard.get(deleted.headers["location"])
    assert "The sandbox is deleted" in notice.text and _listed(notice.text) == [second_id]
    assert (await server.client.send(_with_key(server, key))).status_code == 401
    assert (await merchant.get(f"/sandboxes/{first_id}")).status_code == 404
    # Gone: its confirmation and its delete are 404 now.
    assert (await dashboard.get(f"{PAGE}/{first_id}/delete")).status_code == 404
    token = form_fields(notice.text)["csrf_token"]
    gone = await dashboard.client.post(f"{PAGE}/{first_id}/delete", data={"csrf_token": token})
    assert gone.status_code == 404
    await dashboard.aclose()


async def test_a_double_click_makes_one_sandbox_and_an_old_form_none(server: Server) -> None:
    merchant, dashboard = await _merchant(server)
    form = {**form_fields((await dashboard.get(PAGE)).text), "name": "twice"}
    answers: list[httpx.Response] = []

    async def send() -> None:
        answers.append(await dashboard.client.post(PAGE, data=form))

    async with trio.open_nursery() as nursery:
        nursery.start_soon(send)
        nursery.start_soon(send)
    assert sorted(a.status_code for a in answers) == [200, 201]
    assert sum('data-testid="raw-key"' in a.text for a in answers) == 1
    assert len((await merchant.get("/sandboxes")).json()["data"]) == 1

    # Without its one-use token (a page from before it) or its CSRF token: nothing made.
    stale = {"csrf_token": form["csrf_token"], "name": "stale"}
    assert (await dashboard.client.post(PAGE, data=stale)).status_code == 400
    forged = {"form_token": form["form_token"] + "x", "name": "forged"}
    answer = await dashboard.client.post(PAGE, data=forged)
    assert answer.status_code == 400 and "nothing was changed" in answer.text
    assert len((await merchant.get("/sandboxes")).json()["data"]) == 1
    await dashboard.aclose()


async def test_the_list_is_paged_as_the_other_lists(server: Server) -> None:
    merchant, dashboard = await _merchant(server)
    sandboxes = server.running.service.sandboxes
    made = []
    for n in range(3):
        request = SandboxRequest(name=f"shard {n}", ttl_seconds=None)
        sandbox, _ = await sandboxes.create(merchant.created.merchant, request)
        made.append(sandbox.id)
    first = await dashboard.get(f"{PAGE}?limit=2")
    assert first.status_code == 200
    assert _listed(first.text) == [made[2], made[1]]
    found = re.search(r'href="([^"]+)" rel="next"', first.text)
    assert found, first.text
    following = await dashboard.get(found.group(1).replace("&amp;", "&"))
    assert _listed(following.text) == [made[0]]
    assert 'rel="next"' not in following.text and ">Newest</a>" in following.text
    # A cursor the page did not make: said so, nothing listed, a way back.
    bad = await dashboard.get(f"{PAGE}?starting_after=sbx_test_{'x' * 24}")
    assert bad.status_code == 400 and "This filter or page link is not valid" in bad.text
    assert _listed(bad.text) == [] and ">Newest</a>" in bad.text
    assert (await dashboard.get(f"{PAGE}?limit=0")).status_code == 400
    await dashboard.aclose()


async def test_past_the_limit_the_form_says_so_and_makes_nothing(
    server: Server, monkeypatch: pytest.MonkeyPatch
) -> None:
    # The limit (1,000; read at each create) is 2 here: the same check.
    monkeypatch.setattr(limits, "MAX_LIVE_SANDBOXES", 2)
    merchant, dashboard = await _merchant(server)
    for name in ("one", "two"):
        assert (await dashboard.submit(PAGE, {"name": name})).status_code == 201
    refused = await dashboard.submit(PAGE, {"name": "three", "ttl_seconds": "600"})
    assert refused.status_code == 409, refused.text
    assert 'role="alert"' in refused.text and "sandbox" in refused.text.lower()
    assert 'value="three"' in refused.text, "what was typed is kept"
    assert 'data-testid="raw-key"' not in refused.text
    assert len((await merchant.get("/sandboxes")).json()["data"]) == 2
    # The same form, sent again once a place is free, makes its sandbox (the refusal
    # gave its token back).
    (newest, _) = _listed((await dashboard.get(PAGE)).text)
    await dashboard.submit(f"{PAGE}/{newest}/delete", {}, page=f"{PAGE}/{newest}/delete")
    form = {**form_fields(refused.text), "name": "three"}
    assert (await dashboard.client.post(PAGE, data=form)).status_code == 201
    names = [s["name"] for s in (await merchant.get("/sandboxes")).json()["data"]]
    assert names == ["three", "one"]
    await dashboard.aclose()


async def test_a_sandboxs_own_merchant_cannot_sign_in_and_its_session_is_refused_the_page(
    server: Server,
) -> None:
    """A sandbox's merchant has no password, and given one by the operator it still
    cannot sign in (its row's email is made from its id, which sign-in's lowercased
    email never matches). A session of it made in storage is refused the page (403) and
    the form, as the API refuses its key."""
    merchant, _ = await _merchant(server)
    made = await merchant.post("/sandboxes", json={"name": "inner"})
    assert made.status_code == 201, made.text
    sandbox = await server.running.service.sandboxes.get(merchant.id, made.json()["id"])
    inner = await set_password(server.db, sandbox.merchant_id, PASSWORD)
    dashboard = open_dashboard(server)
    refused = await sign_in(dashboard, inner.email)
    assert refused.status_code == 400 and "not right" in refused.text

    session_id = dashboard_rules.new_session_id()
    now = server.running.service.clock.now_us()
    record = DashboardSession(dashboard_rules.session_hash(session_id), inner.id, now, now)
    await server.db.write(dashboard_sessions.insert, record, None)
    dashboard.client.cookies.set(SESSION_COOKIE, session_id, path="/dashboard")
    page = await dashboard.get(PAGE)
    assert page.status_code == 403, page.text
    assert "sandbox" in page.text and 'role="alert"' in page.text
    assert "Create sandbox" not in page.text
    # A form from another of its pages, posted here: refused, nothing made.
    form = {**form_fields((await dashboard.get("/dashboard/api-keys")).text), "name": "x"}
    answer = await dashboard.client.post(PAGE, data={**form, "form_token": "t" * 32})
    assert answer.status_code == 403 and 'data-testid="raw-key"' not in answer.text
    sandbox_key = {"Authorization": f"Bearer {made.json()['api_key']}"}
    assert (await server.client.get("/sandboxes", headers=sandbox_key)).status_code == 403
    (only,) = (await merchant.get("/sandboxes")).json()["data"]
    assert only["id"] == sandbox.id
    await dashboard.aclose()
