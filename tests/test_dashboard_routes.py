"""Every route of the dashboard, read from the app's url_map (so a page added later is
walked without editing this test), on both backends: signed out, a page read goes to the
sign-in page and a form post changes nothing; signed in, a post without its CSRF token
or with another browser's is refused; another merchant's ids are 404 on every route that
takes one. A route whose id names a kind of resource this test does not make fails here,
by name, until the test makes one."""

from __future__ import annotations

import re
from typing import Any

import attrs
import httpx
import trio
from fgcpay.admin import create_merchant
from fgcpay.storage import merchants
from fgcpay.storage import webhooks as webhook_rows
from fgcpay.web_app import create_app
from helpers import (
    PASSWORD,
    Dashboard,
    MerchantClient,
    Server,
    create_subscription,
    new_email,
    open_dashboard,
    sign_in,
)
from hosted import paid_session
from receiver import Receiver, start_receiver

SIGN_IN = "/dashboard/sign-in"
# The only pages a signed-out browser may use; a new one is added here on purpose.
PUBLIC = {
    "dashboard.sign_up_page",
    "dashboard.sign_up",
    "dashboard.sign_in_page",
    "dashboard.sign_in",
}
TOKEN = re.compile(r'name="csrf_token" value="([^"]+)"')
VARIABLE = re.compile(r"<(?:\w+:)?(\w+)>")


@attrs.frozen
class Route:
    method: str
    rule: str  # as the url_map has it: /dashboard/webhooks/<endpoint_id>

    def path(self, ids: dict[str, str]) -> str:
        """The rule with each `<variable>` replaced by the id of the kind the segment
        before it names (`/refunds/<item_id>`: a refund's id)."""
        segments = self.rule.split("/")
        for at, segment in enumerate(segments):
            if VARIABLE.fullmatch(segment):
                kind = segments[at - 1]
                assert kind in ids, f"{self.rule}: no {kind} made for it (add one to _owned)"
                segments[at] = ids[kind]
        return "/".join(segments)

    @property
    def takes_an_id(self) -> bool:
        return VARIABLE.search(self.rule) is not None


def dashboard_routes(server: Server) -> list[Route]:
    """Every (method, rule) of the dashboard's blueprint that needs a session."""
    app = create_app(server.running.service)
    found: list[Route] = []
    public: set[str] = set()
    for rule in app.url_map.iter_rules():
        if not rule.endpoint.startswith("dashboard.") or rule.endpoint == "dashboard.static":
            continue
        if rule.endpoint in PUBLIC:
            public.add(rule.endpoint)
            continue
        for method in sorted((rule.methods or set()) - {"HEAD", "OPTIONS"}):
            found.append(Route(method, rule.rule))
    assert public == PUBLIC, "the public pages changed"
    # The walk reaches every section (a sanity check of the filter above).
    seen = {route.rule for route in found}
    for expected in ("/dashboard", "/dashboard/sign-out", "/dashboard/refunds/<item_id>/review",
                     "/dashboard/webhooks/<endpoint_id>/deliveries/<delivery_id>/redeliver"):  # fmt: skip
        assert expected in seen, expected
    return found


# One form for every post: each field a route reads, so a post that got past a guard
# would change something (a key named, an endpoint added, a refund approved...).
FORM = {"name": "x", "events": "*", "decision": "approve"}


async def _signed_in(server: Server, name: str) -> tuple[MerchantClient, Dashboard]:
    email = new_email()
    created = await create_merchant(server.db, name, email, password=PASSWORD)
    dashboard = open_dashboard(server)
    assert (await sign_in(dashboard, email)).status_code == 303
    return MerchantClient(created, server.client), dashboard


async def _owned(server: Server, merchant: MerchantClient, receiver: Receiver) -> dict[str, str]:
    """One resource of each kind the routes take, by the path segment naming it."""
    (key,) = await server.db.read(merchants.api_keys_of, merchant.id)
    added = await merchant.post(
        "/webhook_endpoints",
        json={"url": receiver.url, "enabled_events": ["checkout.session.paid"]},
    )
    assert added.status_code == 201, added.text
    session = await paid_session(server, merchant)
    await receiver.wait_for(1)
    (delivery,) = (await merchant.get("/webhook_deliveries")).json()["data"]
    refund = await merchant.post(
        "/refunds", json={"checkout_session_id": session["id"], "amount_fgc": "1.00"}
    )
    assert refund.status_code == 201, refund.text
    sub = await create_subscription(merchant)
    (txn,) = (await merchant.get("/transactions")).json()["data"]
    event = (await merchant.get("/events")).json()["data"][0]
    sandbox = await merchant.post("/sandboxes", json={"name": "shard"})
    assert sandbox.status_code == 201, sandbox.text
    return {
        "api-keys": key.id,
        "webhooks": added.json()["id"],
        "deliveries": delivery["id"],
        "checkout-sessions": session["id"],
        "subscriptions": sub["id"],
        "refunds": refund.json()["id"],
        "transactions": txn["id"],
        "events": event["id"],
        "sandboxes": sandbox.json()["id"],
    }


async def _state(server: Server, merchant: MerchantClient, own: dict[str, str]) -> Any:
    """What any of the forms could change, the owner's."""
    keys = await server.db.read(merchants.api_keys_of, merchant.id)
    endpoints = await server.db.read(webhook_rows.endpoints_of, merchant.id)
    refund = (await merchant.get(f"/refunds/{own['refunds']}")).json()["status"]
    sub = (await merchant.get(f"/subscriptions/{own['subscriptions']}")).json()["status"]
    events = (await merchant.get("/events")).json()["data"]
    deliveries = (await merchant.get("/webhook_deliveries")).json()["data"]
    sandboxes = (await merchant.get("/sandboxes")).json()["data"]
    return keys, endpoints, refund, sub, len(events), len(deliveries), sandboxes


def _token(page: httpx.Response) -> str:
    found = TOKEN.search(page.text)
    assert found, page.status_code
    return found.group(1)


async def test_every_dashboard_route_needs_a_session_its_csrf_token_and_its_merchants_ids(
    server: Server, nursery: trio.Nursery
) -> None:
    receiver = await start_receiver(nursery)
    merchant, owner = await _signed_in(server, "Acme Coffee")
    own = await _owned(server, merchant, receiver)
    routes = dashboard_routes(server)
    before = await _state(server, merchant, own)
    assert before[2:4] == ("pending_review", "paused")
    stranger = open_dashboard(server)
    stranger_token = _token(await stranger.get(SIGN_IN))
    _, other = await _signed_in(server, "Other Shop")
    other_token = _token(await other.get("/dashboard"))
    unknown = {kind: f"{own[kind].rsplit('_', 1)[0]}_{'x' * 24}" for kind in own}

    for route in routes:
        path = route.path(own)
        what = (route.method, route.rule)
        # Signed out, with a signed-out page's token: to sign in, nothing changed.
        sent = {**FORM, "csrf_token": stranger_token} if route.method == "POST" else None
        answer = await stranger.client.request(route.method, path, data=sent)
        assert answer.status_code == 303, what
        assert answer.headers["location"].startswith(SIGN_IN), what
        if route.method == "GET":
            # The owner sees it: the 404s below are the guard's, not a wrong path's.
            assert (await owner.get(path)).status_code == 200, what
        else:
            # Signed in, without a token or with another browser's: refused.
            for token in (None, other_token, stranger_token):
                sent = FORM if token is None else {**FORM, "csrf_token": token}
                answer = await owner.client.post(path, data=sent)
                assert answer.status_code == 400, (*what, token)
                assert "nothing was changed" in answer.text, what
        # Another merchant: the owner's ids, and unknown ones, are 404; lists show none.
        if route.takes_an_id:
            for ids in (own, unknown):
                sent = {**FORM, "csrf_token": other_token} if route.method == "POST" else None
                answer = await other.client.request(route.method, route.path(ids), data=sent)
                assert answer.status_code == 404, (*what, ids is own)
        elif route.method == "GET":
            answer = await other.get(path)
            assert answer.status_code == 200, what
            assert not [i for i in own.values() if i in answer.text], what

    assert await _state(server, merchant, own) == before
    assert len(receiver.received) == 1, "no test event, no redelivery"
    assert (await owner.get("/dashboard")).status_code == 200, "the owner is still signed in"
    for browser in (owner, stranger, other):
        await browser.aclose()
