"""The dashboard's webhooks pages over HTTP, on both backends: endpoints (add, edit the
events, rotate, send a test event, reveal the secret on a fresh sign-in, delete) and each
endpoint's deliveries with their attempts and redelivery. The guards of every route
(signed out, CSRF, another merchant's ids) are test_dashboard_routes.py's."""

from __future__ import annotations

import json
import re

import trio
import trio.testing
from fgcpay.admin import create_merchant
from fgcpay.core.clock import TrioClock
from fgcpay.core.settings import Settings
from fgcpay.domain.signing import verify
from fgcpay.storage import webhooks as webhook_rows
from helpers import (
    PASSWORD,
    Dashboard,
    MerchantClient,
    Server,
    new_email,
    open_dashboard,
    sign_in,
    signed_up,
    start_server,
    wait_until,
)
from hosted import paid_session
from receiver import start_receiver

SIGN_IN = "/dashboard/sign-in"
ENDPOINT_LINK = re.compile(r'href="/dashboard/webhooks/(we_[0-9A-Za-z]{24})"')
DELIVERY_LINK = re.compile(r'href="/dashboard/webhooks/we_\w+/deliveries/(whd_[0-9A-Za-z]{24})"')


async def _merchant(server: Server) -> tuple[MerchantClient, Dashboard]:
    """A merchant with an API key, signed in to the dashboard in a fresh browser."""
    email = new_email()
    created = await create_merchant(server.db, "Acme Coffee", email, password=PASSWORD)
    dashboard = open_dashboard(server)
    assert (await sign_in(dashboard, email)).status_code == 303
    return MerchantClient(created, server.client), dashboard


async def _add(dashboard: Dashboard, url: str, events: list[str]) -> str:
    answer = await dashboard.submit("/dashboard/webhooks", {"url": url, "events": events})
    assert answer.status_code == 303, answer.text
    found = re.fullmatch(r"/dashboard/webhooks/(we_\w+)\?done=created", answer.headers["location"])
    assert found, answer.headers["location"]
    return found.group(1)


def _secrets(html: str) -> list[str]:
    return re.findall(r'value="(whsec_[^"]+)"', html)


async def test_add_an_endpoint_pay_see_the_delivery_and_its_attempt_and_redeliver(
    server: Server, nursery: trio.Nursery
) -> None:
    receiver = await start_receiver(nursery)
    merchant, dashboard = await _merchant(server)
    refused = await dashboard.submit("/dashboard/webhooks", {"url": "ftp://shop.example/x"})
    assert refused.status_code == 400 and "Please correct the fields" in refused.text
    assert 'aria-invalid="true"' in refused.text
    assert "ftp://shop.example/x" in refused.text, "what was typed is kept"
    assert await server.db.read(webhook_rows.endpoints_of, merchant.id) == []

    endpoint_id = await _add(dashboard, receiver.url, ["checkout.session.paid"])
    page = await dashboard.get(f"/dashboard/webhooks/{endpoint_id}?done=created")
    assert page.status_code == 200 and receiver.url in page.text
    assert "The endpoint is added" in page.text and "whsec_" not in page.text
    # The same endpoint the API lists.
    (listed,) = (await merchant.get("/webhook_endpoints")).json()["data"]
    assert listed["id"] == endpoint_id and listed["enabled_events"] == ["checkout.session.paid"]
    shown = await dashboard.submit(f"/dashboard/webhooks/{endpoint_id}/secret", {},
                                   page=f"/dashboard/webhooks/{endpoint_id}")  # fmt: skip
    assert shown.status_code == 200 and shown.headers["cache-control"] == "no-store"
    (secret,) = _secrets(shown.text)

    session = await paid_session(server, merchant)
    (arrived,) = await receiver.wait_for(1)
    verify(arrived.body, arrived.headers, secret, now=int(arrived.headers["service-timestamp"]))
    event_id = json.loads(arrived.body)["id"]

    async def attempted() -> bool:
        text = (await dashboard.get(f"/dashboard/webhooks/{endpoint_id}")).text
        # The delivery's own status (the filter's options name every status).
        return 'class="status-succeeded"' in text

    await wait_until(attempted, within=20, what="the delivery's attempt on the page")
    page = await dashboard.get(f"/dashboard/webhooks/{endpoint_id}")
    (delivery_id,) = DELIVERY_LINK.findall(page.text)
    detail = await dashboard.get(f"/dashboard/webhooks/{endpoint_id}/deliveries/{delivery_id}")
    assert detail.status_code == 200 and event_id in detail.text
    assert 'data-testid="attempt-status">200<' in detail.text and "ok" in detail.text
    assert "checkout.session.paid" in detail.text

    again = await dashboard.submit(
        f"/dashboard/webhooks/{endpoint_id}/deliveries/{delivery_id}/redeliver", {},
        page=f"/dashboard/webhooks/{endpoint_id}/deliveries/{delivery_id}",
    )  # fmt: skip
    assert again.status_code == 303
    notice = await dashboard.get(again.headers["location"])
    assert "Redelivery queued: 1 new delivery" in notice.text
    # A count the page did not make shows no notice (each was a 500: int() refused it).
    detail_page = f"/dashboard/webhooks/{endpoint_id}/deliveries/{delivery_id}"
    for junk in ("\u00b2", "9" * 5000, "-1", "x"):
        shown = await dashboard.client.get(detail_page, params={"queued": junk})
        assert shown.status_code == 200 and "Redelivery queued" not in shown.text, junk
    _, second = await receiver.wait_for(2)
    assert json.loads(second.body)["id"] == event_id, "the same event, again"
    assert json.loads(second.body)["data"]["object"]["id"] == session["id"]
    log = (await merchant.get("/webhook_deliveries", params={"event_id": event_id})).json()
    assert len(log["data"]) == 2, "the API's delivery log has the redelivery too"
    await dashboard.aclose()


async def test_edit_events_rotate_send_a_test_event_and_delete(
    server: Server, nursery: trio.Nursery
) -> None:
    receiver = await start_receiver(nursery)
    merchant, dashboard = await _merchant(server)
    endpoint_id = await _add(dashboard, receiver.url, ["*"])
    page = f"/dashboard/webhooks/{endpoint_id}"

    none = await dashboard.submit(f"{page}/events", {}, page=page)
    assert none.status_code == 400 and "non-empty list of event types" in none.text
    unknown = await dashboard.submit(f"{page}/events", {"events": "nope.nope"}, page=page)
    assert unknown.status_code == 400 and "Unknown event types: nope.nope" in unknown.text
    saved = await dashboard.submit(
        f"{page}/events",
        {"events": ["refund.created", "refund.approved"]},
        page=page,
    )
    assert saved.status_code == 303
    assert "The event selection is saved" in (await dashboard.get(saved.headers["location"])).text
    (listed,) = (await merchant.get("/webhook_endpoints")).json()["data"]
    assert listed["enabled_events"] == ["refund.approved", "refund.created"]
    await paid_session(server, merchant)  # not subscribed now: nothing is queued for it
    assert (await merchant.get("/webhook_deliveries")).json()["data"] == []

    first = _secrets((await dashboard.submit(f"{page}/secret", {}, page=page)).text)
    rotated = await dashboard.submit(f"{page}/rotate", {}, page=page)
    assert rotated.status_code == 303
    after = await dashboard.get(rotated.headers["location"])
    assert "The secret is rotated" in after.text and "Old and new secret until" in after.text
    both = _secrets((await dashboard.submit(f"{page}/secret", {}, page=page)).text)
    assert len(both) == 2 and both[0] == first[0] and both[1] != first[0]

    tested = await dashboard.submit(f"{page}/test", {}, page=page)
    assert (
        tested.status_code == 200 and "Test event sent: your endpoint answered 200" in tested.text
    )
    (arrived,) = await receiver.wait_for(1)
    body = json.loads(arrived.body)
    assert body["type"] == "webhook_endpoint.test" and body["data"]["object"]["id"] == endpoint_id
    assert "secret" not in body["data"]["object"]
    for secret in both:  # signed with the old and the new secret, as deliveries are
        verify(arrived.body, arrived.headers, secret, now=int(arrived.headers["service-timestamp"]))
    kept = (await merchant.get("/events")).json()["data"]
    assert all(e["type"] != "webhook_endpoint.test" for e in kept), "a test event is kept nowhere"
    assert (await merchant.get("/webhook_deliveries")).json()["data"] == []

    confirm = await dashboard.get(f"{page}/delete")
    assert confirm.status_code == 200 and "Delete the endpoint" in confirm.text
    assert len((await merchant.get("/webhook_endpoints")).json()["data"]) == 1, (
        "asking is not doing"
    )
    deleted = await dashboard.submit(f"{page}/delete", {}, page=page)
    assert (
        deleted.status_code == 303
        and deleted.headers["location"] == "/dashboard/webhooks?deleted=1"
    )
    listing = await dashboard.get(deleted.headers["location"])
    assert "The endpoint is deleted" in listing.text and endpoint_id not in listing.text
    assert (await merchant.get("/webhook_endpoints")).json()["data"] == []
    assert (await dashboard.get(page)).status_code == 404
    await dashboard.aclose()


async def test_deliveries_page_by_keyset_and_filter_by_status(
    server: Server, nursery: trio.Nursery
) -> None:
    receiver = await start_receiver(nursery)
    merchant, dashboard = await _merchant(server)
    endpoint_id = await _add(dashboard, receiver.url, ["*"])
    await paid_session(server, merchant)
    await receiver.wait_for(1)
    event_id = json.loads(receiver.received[0].body)["id"]
    for _ in range(20):  # the API's redelivery: 21 deliveries of the event in all
        assert (await merchant.post(f"/events/{event_id}/redeliver")).status_code == 202
    await receiver.wait_for(21)
    page = f"/dashboard/webhooks/{endpoint_id}"

    async def all_succeeded() -> bool:
        text = (await dashboard.get(f"{page}?status=pending")).text
        return "No deliveries with this status yet" in text

    await wait_until(all_succeeded, within=20, what="every attempt recorded")
    first = await dashboard.get(f"{page}?status=succeeded")
    ids_first = DELIVERY_LINK.findall(first.text)
    assert len(ids_first) == 20
    older = re.search(r'href="([^"]+starting_after=[^"]+)" rel="next"', first.text)
    assert older and "status=succeeded" in older.group(1)
    second = await dashboard.get(older.group(1).replace("&amp;", "&"))
    ids_second = DELIVERY_LINK.findall(second.text)
    assert len(ids_second) == 1 and ids_second[0] not in ids_first
    assert 'rel="next"' not in second.text
    api = (await merchant.get("/webhook_deliveries", params={"limit": 21})).json()["data"]
    assert [d["id"] for d in api] == ids_first + ids_second, "newest first, as the API's"
    assert "No deliveries with this status" in (await dashboard.get(f"{page}?status=failed")).text
    assert (await dashboard.get(f"{page}?status=nope")).status_code == 404
    assert (await dashboard.get(f"{page}?starting_after=whd_nope")).status_code == 404
    await dashboard.aclose()


async def test_the_secret_is_shown_only_within_5_minutes_of_signing_in(
    nursery: trio.Nursery, settings: Settings, clock: trio.testing.MockClock
) -> None:
    server = await start_server(nursery, settings, clock=TrioClock())
    dashboard, email = await signed_up(server, keep_alive=False)
    endpoint_id = await _add(dashboard, "https://shop.example/hooks", ["*"])
    page = f"/dashboard/webhooks/{endpoint_id}"
    clock.jump(4 * 60)
    assert len(_secrets((await dashboard.submit(f"{page}/secret", {}, page=page)).text)) == 1
    clock.jump(2 * 60)
    stale = await dashboard.submit(f"{page}/secret", {}, page=page)
    assert stale.status_code == 403 and "Sign in again" in stale.text
    assert _secrets(stale.text) == []
    back = re.search(r'href="(/dashboard/sign-in\?next=[^"]+)"', stale.text)
    assert back and endpoint_id in back.group(1)
    signed = await dashboard.submit(
        SIGN_IN, {"email": email, "password": PASSWORD, "next": page}, page=SIGN_IN
    )
    assert signed.status_code == 303 and signed.headers["location"] == page
    assert len(_secrets((await dashboard.submit(f"{page}/secret", {}, page=page)).text)) == 1
    await dashboard.aclose()
    await server.shutdown()


# Every route's guards (signed out, CSRF, another merchant's ids): test_dashboard_routes.py.


async def test_a_delivery_under_another_of_the_merchants_endpoints_is_404(
    server: Server, nursery: trio.Nursery
) -> None:
    receiver = await start_receiver(nursery)
    merchant, owner = await _merchant(server)
    await _add(owner, receiver.url, ["checkout.session.paid"])
    await paid_session(server, merchant)
    await receiver.wait_for(1)
    (delivery,) = (await merchant.get("/webhook_deliveries")).json()["data"]
    second_id = await _add(owner, receiver.url + "?b", ["*"])
    misplaced = f"/dashboard/webhooks/{second_id}/deliveries/{delivery['id']}"
    assert (await owner.get(misplaced)).status_code == 404
    redeliver = await owner.submit(
        f"{misplaced}/redeliver", {}, page=f"/dashboard/webhooks/{second_id}"
    )
    assert redeliver.status_code == 404
    assert len((await merchant.get("/webhook_deliveries")).json()["data"]) == 1
    await owner.aclose()


async def test_the_list_shows_every_endpoint_and_links_to_it(server: Server) -> None:
    dashboard, _ = await signed_up(server)
    empty = await dashboard.get("/dashboard/webhooks")
    assert empty.status_code == 200 and "No endpoints yet" in empty.text
    assert 'aria-current="page"' in empty.text and ">Webhooks</a>" in empty.text
    first = await _add(dashboard, "https://a.example/hooks", ["*"])
    second = await _add(dashboard, "https://b.example/hooks", ["refund.created"])
    listing = await dashboard.get("/dashboard/webhooks")
    assert ENDPOINT_LINK.findall(listing.text) == [second, first], "newest first"
    assert "All events" in listing.text and "1 type<" in listing.text
    await dashboard.aclose()
