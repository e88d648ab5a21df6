"""Every real answer of every operation agrees with the generated OpenAPI document.

Each operation is driven for real on both backends (creates, idempotent replays and
conflicts, lists with and without cursors and filters, gets, 404s, 400s, 401s, 413s, 415s,
rotate, delete, redeliver, and the delivery log after a payment), and each answer is
checked against the document served by the running service: the status is documented for
that operation, the body is valid (JSON Schema 2020-12, `#/components` resolved) against
that status's schema, and the documented headers are present and valid. At the end every
operation must have been seen answering its success status.
"""

from __future__ import annotations

import json
import re
from collections.abc import Mapping
from typing import Any

import httpx
import trio
from helpers import (
    MerchantClient,
    Server,
    advances_held,
    bearer,
    stream_refusal,
    stream_url,
    subscription_body,
    valid_body,
)
from hosted import paid_session
from jsonschema import Draft202012Validator
from receiver import start_receiver
from trio_websocket import open_websocket_url

FAKE = "0" * 24
DELIVERY_DEADLINE = 30.0


class Checker:
    """Validates answers against the document; remembers which (operation, status) it saw."""

    def __init__(self, document: dict[str, Any]) -> None:
        self.document = document
        self.seen: set[tuple[str, str, int]] = set()
        self._validators: dict[str, Draft202012Validator] = {}

    def _resolve(self, node: dict[str, Any]) -> dict[str, Any]:
        while "$ref" in node:
            target: Any = self.document
            for part in node["$ref"].removeprefix("#/").split("/"):
                target = target[part]
            node = target
        return node

    def _validator(self, schema: dict[str, Any]) -> Draft202012Validator:
        key = repr(schema)
        if key not in self._validators:
            root = {**schema, "components": self.document["components"]}
            Draft202012Validator.check_schema(root)
            self._validators[key] = Draft202012Validator(root)
        return self._validators[key]

    def check(self, method: str, template: str, response: httpx.Response) -> httpx.Response:
        self.check_answer(method, template, response.status_code, response.headers, response.json())
        return response

    def check_answer(
        self,
        method: str,
        template: str,
        status_code: int,
        headers: Mapping[str, str],
        body: Any,
    ) -> None:
        """An answer's status, headers and JSON body (None for a websocket's 101, which
        has none); `headers` looked up case-insensitively."""
        headers = {name.lower(): value for name, value in headers.items()}
        operation = self.document["paths"][template][method]
        status = str(status_code)
        assert status in operation["responses"], (method, template, status, body)
        documented = self._resolve(operation["responses"][status])
        if status_code == 101:
            assert body is None and "content" not in documented
        else:
            media = documented["content"]["application/json"]
            assert headers["content-type"].startswith("application/json"), headers
            self.check_schema(media["schema"], body, (method, template, status))
        assert "Request-Id" in documented.get("headers", {}), (method, template, status)
        for name, header in documented.get("headers", {}).items():
            header = self._resolve(header)
            value = headers.get(name.lower())
            always = name in ("Request-Id", "WWW-Authenticate", "Retry-After", "Upgrade") or (
                status_code < 300 and name in ("RateLimit-Policy", "RateLimit")
            )
            if always:
                assert value is not None, (method, template, status, name, headers)
            if value is not None:
                typed: Any = int(value) if header["schema"].get("type") == "integer" else value
                assert self._validator(header["schema"]).is_valid(typed), (name, value)
        for name in ("Deprecation", "Idempotent-Replayed"):
            if name.lower() in headers:  # sent only where documented
                assert name in documented.get("headers", {}), (method, template, status, name)
        self.seen.add((method, template, status_code))

    def check_schema(self, schema: dict[str, Any], body: Any, where: object) -> None:
        errors = [
            f"{'/'.join(map(str, e.absolute_path))}: {e.message}"
            for e in self._validator(schema).iter_errors(body)
        ]
        assert not errors, (where, errors, str(body)[:500])

    def unseen_successes(self) -> list[str]:
        missing = []
        for template, item in self.document["paths"].items():
            for method, operation in item.items():
                success = min(int(status) for status in operation["responses"])
                if (method, template, success) not in self.seen:
                    missing.append(f"{method.upper()} {template} {success}")
        return missing


async def _call(
    client: MerchantClient,
    method: str,
    url: str,
    *,
    json: Any = None,
    content: bytes | None = None,
    params: dict[str, str] | None = None,
    headers: dict[str, str] | None = None,
    key: str | None = None,
) -> httpx.Response:
    all_headers = client.headers(headers)
    if key is not None:
        all_headers["Authorization"] = f"Bearer {key}"
    return await client.http.request(
        method.upper(), url, json=json, content=content, params=params, headers=all_headers
    )


def _template(path: str) -> str:
    """The document's path for a concrete one."""
    path = path.split("?", 1)[0]
    for pattern, template in (
        (r"/checkout/sessions/[^/]+", "/checkout/sessions/{session_id}"),
        (r"/subscriptions/[^/]+/cancel", "/subscriptions/{subscription_id}/cancel"),
        (r"/subscriptions/[^/]+", "/subscriptions/{subscription_id}"),
        (r"/test_clocks/[^/]+/advance", "/test_clocks/{clock_id}/advance"),
        (r"/test_clocks/[^/]+", "/test_clocks/{clock_id}"),
        (
            r"/webhook_endpoints/[^/]+/rotate_secret",
            "/webhook_endpoints/{endpoint_id}/rotate_secret",
        ),
        (r"/webhook_endpoints/[^/]+/check", "/webhook_endpoints/{endpoint_id}/check"),
        (r"/webhook_endpoints/[^/]+", "/webhook_endpoints/{endpoint_id}"),
        (r"/events/[^/]+/redeliver", "/events/{event_id}/redeliver"),
        (r"/events/stream", "/events/stream"),
        (r"/events/[^/]+", "/events/{event_id}"),
        (r"/webhook_deliveries/[^/]+", "/webhook_deliveries/{delivery_id}"),
        (
            r"/test_helpers/checkout/sessions/[^/]+/(pay|expire)",
            "/test_helpers/checkout/sessions/{session_id}/<action>",
        ),
        (
            r"/test_helpers/subscriptions/[^/]+/approve",
            "/test_helpers/subscriptions/{subscription_id}/approve",
        ),
        (r"/test_helpers/refunds/[^/]+/approve", "/test_helpers/refunds/{refund_id}/approve"),
        (r"/test_helpers/refunds/[^/]+/reject", "/test_helpers/refunds/{refund_id}/reject"),
        (r"/refunds/[^/]+", "/refunds/{refund_id}"),
        (r"/transactions/[^/]+", "/transactions/{transaction_id}"),
        (r"/sandboxes/[^/]+", "/sandboxes/{sandbox_id}"),
    ):
        if found := re.fullmatch(pattern, path):
            action = found.group(1) if found.re.groups else ""
            return template.replace("<action>", action)
    return path


async def test_every_answer_of_every_operation_matches_the_generated_document(
    server: Server, nursery: trio.Nursery
) -> None:
    served = await server.client.get("/openapi.json")
    assert served.status_code == 200
    checker = Checker(served.json())
    checker.check("get", "/openapi.json", served)
    merchant = await server.merchant()

    async def call(method: str, url: str, **kwargs: Any) -> httpx.Response:
        response = await _call(merchant, method, url, **kwargs)
        return checker.check(method, _template(url), response)

    # Checkout sessions: creates (plain, deprecated amount, idempotent), errors, reads.
    created = (await call("post", "/checkout/sessions", json=valid_body())).json()
    legacy = await call(
        "post", "/checkout/sessions", json=valid_body(amount_fgc="12.50", amount_minor="1250")
    )
    assert legacy.status_code == 201 and legacy.headers["Deprecation"] == "true"
    keyed = {"Idempotency-Key": "order-1"}
    first = await call("post", "/checkout/sessions", json=valid_body(), headers=keyed)
    replay = await call("post", "/checkout/sessions", json=valid_body(), headers=keyed)
    assert replay.headers.get("Idempotent-Replayed") == "true" and replay.json() == first.json()
    conflict = await call(
        "post", "/checkout/sessions", json=valid_body(description="other"), headers=keyed
    )
    assert conflict.status_code == 409
    bad = await call("post", "/checkout/sessions", json={"amount_fgc": 1, "x": 2})
    assert bad.status_code == 400 and bad.json()["details"][0] == {
        "field": "x",
        "message": "Unknown field.",
    }
    for content, headers, status in (
        (b"{", {"Content-Type": "application/json"}, 400),
        (b'{"a": 1, "a": 2}', {"Content-Type": "application/json"}, 400),
        (b"hello", {"Content-Type": "text/plain"}, 415),
        (b"{" + b" " * (64 * 1024) + b"}", {"Content-Type": "application/json"}, 413),
    ):
        answer = await call("post", "/checkout/sessions", content=content, headers=headers)
        assert answer.status_code == status, answer.text
    assert (
        await call("post", "/checkout/sessions", json=valid_body(), key="fp_test_x")
    ).status_code == 401
    assert (await call("get", "/checkout/sessions")).json()["has_more"] is False
    page = (await call("get", "/checkout/sessions", params={"limit": "1"})).json()
    assert page["has_more"] is True and page["next_cursor"]
    after = {"limit": "1", "starting_after": page["next_cursor"]}
    assert (await call("get", "/checkout/sessions", params=after)).json()["data"]
    assert (await call("get", "/checkout/sessions", params={"status": "paid"})).json()["data"] == []
    for params in ({"limit": "0"}, {"status": "nope"}, {"starting_after": ""}, {"x": "1"}):
        assert (await call("get", "/checkout/sessions", params=params)).status_code == 400
    assert (await call("get", "/checkout/sessions", key="fp_test_x")).status_code == 401
    assert (await call("get", f"/checkout/sessions/{created['id']}")).status_code == 200
    assert (await call("get", f"/checkout/sessions/cs_test_{FAKE}")).status_code == 404

    # Webhook endpoints: create (secret shown once), replay, list, rotate, delete.
    receiver = await start_receiver(nursery)
    endpoint = (await call("post", "/webhook_endpoints", json={"url": receiver.url})).json()
    assert endpoint["secret"].startswith("whsec_")
    keyed = {"Idempotency-Key": "hook-1"}
    spare = {"url": receiver.url + "/spare", "enabled_events": ["checkout.session.expired"]}
    one = await call("post", "/webhook_endpoints", json=spare, headers=keyed)
    again = await call("post", "/webhook_endpoints", json=spare, headers=keyed)
    assert again.headers.get("Idempotent-Replayed") == "true" and again.json() == one.json()
    for body in ({}, {"url": "ftp://x.example/"}, {"url": receiver.url, "enabled_events": []}):
        assert (await call("post", "/webhook_endpoints", json=body)).status_code == 400
    listed = (await call("get", "/webhook_endpoints")).json()
    assert len(listed["data"]) == 2 and all("secret" not in e for e in listed["data"])
    assert (await call("get", "/webhook_endpoints", params={"limit": "5"})).status_code == 400
    spare_id = one.json()["id"]
    rotated = await call("post", f"/webhook_endpoints/{spare_id}/rotate_secret")
    assert rotated.json()["secret"] != one.json()["secret"]
    assert (
        await call("post", f"/webhook_endpoints/{spare_id}/rotate_secret", json={"x": 1})
    ).status_code == 400
    assert (await call("post", f"/webhook_endpoints/we_{FAKE}/rotate_secret")).status_code == 404
    checked = await call("post", f"/webhook_endpoints/{spare_id}/check")
    assert checked.json()["object"] == "webhook_check"
    assert (
        await call("post", f"/webhook_endpoints/{spare_id}/check", json={"x": 1})
    ).status_code == 400
    assert (await call("post", f"/webhook_endpoints/we_{FAKE}/check")).status_code == 404
    read = await call("get", f"/webhook_endpoints/{spare_id}")
    assert "secret" not in read.json() and read.json()["url"] == spare["url"]
    assert (await call("get", f"/webhook_endpoints/we_{FAKE}")).status_code == 404
    moved = await call(
        "patch", f"/webhook_endpoints/{spare_id}", json={"enabled_events": ["refund.created"]}
    )
    assert moved.json()["enabled_events"] == ["refund.created"]
    bad_patches: list[dict[str, Any]] = [{"url": "ftp://x.example/"}, {"x": 1}]
    for bad_patch in bad_patches:
        patched = await call("patch", f"/webhook_endpoints/{spare_id}", json=bad_patch)
        assert patched.status_code == 400
    unknown_endpoint = f"/webhook_endpoints/we_{FAKE}"
    assert (await call("patch", unknown_endpoint, json={"url": receiver.url})).status_code == 404
    deleted = await call("delete", f"/webhook_endpoints/{spare_id}")
    assert deleted.json()["deleted"] is True and deleted.json()["status"] == "deleted"
    assert (await call("delete", f"/webhook_endpoints/we_{FAKE}")).status_code == 404

    # Events: two payments, then pages, filters, a get and redeliveries.
    await paid_session(server, merchant)
    await paid_session(server, merchant)
    events = (await call("get", "/events")).json()["data"]
    assert len(events) == 2
    page = (await call("get", "/events", params={"limit": "1"})).json()
    next_page = {"starting_after": page["next_cursor"]}
    assert [e["id"] for e in (await call("get", "/events", params=next_page)).json()["data"]] == [
        events[1]["id"]
    ]
    assert (await call("get", "/events", params={"type": "checkout.session.paid"})).json()["data"]
    for params in ({"type": "nope"}, {"limit": "1.5"}, {"starting_after": f"cs_test_{FAKE}"}):
        assert (await call("get", "/events", params=params)).status_code == 400
    event_id = events[0]["id"]
    assert (await call("get", f"/events/{event_id}")).json() == events[0]
    assert (await call("get", f"/events/evt_{FAKE}")).status_code == 404
    queued = await call("post", f"/events/{event_id}/redeliver", headers={"Idempotency-Key": "r"})
    assert queued.status_code == 202 and queued.json()["deliveries_queued"] == 1
    replayed = await call("post", f"/events/{event_id}/redeliver", headers={"Idempotency-Key": "r"})
    assert replayed.headers.get("Idempotent-Replayed") == "true"
    assert (await call("post", f"/events/evt_{FAKE}/redeliver")).status_code == 404
    assert (
        await call(
            "post",
            f"/events/{event_id}/redeliver",
            content=b"[]",
            headers={"Content-Type": "application/json"},
        )
    ).status_code == 400

    # The delivery log, once every delivery has had its attempt.
    with trio.fail_after(DELIVERY_DEADLINE):
        await server.running.service.dispatcher.wait_for_attempts(3)
    log = (await call("get", "/webhook_deliveries")).json()["data"]
    assert len(log) == 3 and all(d["attempts"] for d in log)
    page = (await call("get", "/webhook_deliveries", params={"limit": "2"})).json()
    rest = {"starting_after": page["next_cursor"]}
    assert len((await call("get", "/webhook_deliveries", params=rest)).json()["data"]) == 1
    filters = {"endpoint_id": endpoint["id"], "event_id": event_id, "status": "succeeded"}
    assert len((await call("get", "/webhook_deliveries", params=filters)).json()["data"]) == 2
    for params in ({"endpoint_id": "x"}, {"event_id": "evt_x"}, {"status": "nope"}):
        assert (await call("get", "/webhook_deliveries", params=params)).status_code == 400
    delivery = (await call("get", f"/webhook_deliveries/{log[0]['id']}")).json()
    assert delivery == log[0]
    assert (await call("get", f"/webhook_deliveries/whd_{FAKE}")).status_code == 404
    assert (await call("get", "/webhook_deliveries", key="fp_test_x")).status_code == 401

    # Subscriptions: creates (plain, deprecated amount, idempotent, on a clock), errors,
    # reads, cancels (and their 409).
    sub = (await call("post", "/subscriptions", json=subscription_body())).json()
    legacy = await call("post", "/subscriptions", json=subscription_body(amount_minor="1250"))
    assert legacy.status_code == 201 and legacy.headers["Deprecation"] == "true"
    keyed = {"Idempotency-Key": "sub-1"}
    first = await call("post", "/subscriptions", json=subscription_body(), headers=keyed)
    replay = await call("post", "/subscriptions", json=subscription_body(), headers=keyed)
    assert replay.headers.get("Idempotent-Replayed") == "true" and replay.json() == first.json()
    conflict = await call(
        "post", "/subscriptions", json=subscription_body(description="other"), headers=keyed
    )
    assert conflict.status_code == 409
    for body in (
        subscription_body(x=1, interval="hourly"),
        subscription_body(max_total_amount_fgc="1.00", end_date="2020-01-01T00:00:00Z"),
        subscription_body(test_clock=f"clock_test_{FAKE}"),
    ):
        assert (await call("post", "/subscriptions", json=body)).status_code == 400
    assert (
        await call("post", "/subscriptions", json=subscription_body(), key="fp_test_x")
    ).status_code == 401
    page = (await call("get", "/subscriptions", params={"limit": "1"})).json()
    assert page["has_more"] is True
    after = {"starting_after": page["next_cursor"], "status": "paused"}
    assert (await call("get", "/subscriptions", params=after)).json()["data"]
    for params in ({"limit": "0"}, {"status": "nope"}, {"x": "1"}):
        assert (await call("get", "/subscriptions", params=params)).status_code == 400
    assert (await call("get", f"/subscriptions/{sub['id']}")).json() == sub
    assert (await call("get", f"/subscriptions/sub_test_{FAKE}")).status_code == 404
    approved = await server.running.service.subscriptions.approve(
        first.json()["id"], "TEST-0001", "1234"
    )
    assert approved.subscription.status == "active"
    for sub_id in (sub["id"], first.json()["id"]):
        cancelled = await call("post", f"/subscriptions/{sub_id}/cancel")
        assert cancelled.json()["status"] == "cancelled"
    assert (await call("post", f"/subscriptions/{sub['id']}/cancel")).status_code == 409
    assert (await call("post", f"/subscriptions/sub_test_{FAKE}/cancel")).status_code == 404
    assert (
        await call("post", f"/subscriptions/{sub['id']}/cancel", json={"x": 1})
    ).status_code == 400

    # Test clocks: create, read, list, advance (forward only, one at a time), delete.
    keyed = {"Idempotency-Key": "clock-1"}
    at = {"frozen_time": "2027-01-31T09:00:00Z"}
    clock = (await call("post", "/test_clocks", json=at, headers=keyed)).json()
    again = await call("post", "/test_clocks", json=at, headers=keyed)
    assert again.headers.get("Idempotent-Replayed") == "true" and again.json() == clock
    for refused in ({}, {"frozen_time": "2027-01-31"}, {**at, "x": 1}):
        assert (await call("post", "/test_clocks", json=refused)).status_code == 400
    on_clock = await call("post", "/subscriptions", json=subscription_body(test_clock=clock["id"]))
    assert on_clock.json()["created_at"] == "2027-01-31T09:00:00.000Z"
    assert (await call("get", f"/test_clocks/{clock['id']}")).json() == clock
    assert (await call("get", f"/test_clocks/clock_test_{FAKE}")).status_code == 404
    assert (await call("get", "/test_clocks", params={"status": "ready"})).json()["data"]
    for params in ({"limit": "101"}, {"status": "nope"}, {"starting_after": "x"}):
        assert (await call("get", "/test_clocks", params=params)).status_code == 400
    advance = f"/test_clocks/{clock['id']}/advance"
    daily = await call(
        "post", "/subscriptions", json=subscription_body(test_clock=clock["id"], interval="daily")
    )
    await server.running.service.subscriptions.approve(daily.json()["id"], "TEST-0001", "1234")
    backwards = await call("post", advance, json={"frozen_time": "2020-01-01T00:00:00Z"})
    assert backwards.status_code == 400
    # The advance is held before its first batch, so the clock reads advancing for the 409.
    with advances_held(server.running.service):
        moved = await call("post", advance, json={"frozen_time": "2027-02-03T09:00:00Z"})
        assert moved.json()["status"] == "advancing"
        busy = await call("post", advance, json={"frozen_time": "2027-02-04T09:00:00Z"})
        assert busy.status_code == 409 and busy.json()["code"] == "test_clock_advancing"
        assert (
            await call("post", f"/test_clocks/clock_test_{FAKE}/advance", json=at)
        ).status_code == 404
        # An advancing clock deletes too (what still ran on it goes with it).
        assert (await call("delete", f"/test_clocks/{clock['id']}")).json()["deleted"] is True
    assert (await call("delete", f"/test_clocks/{clock['id']}")).status_code == 404
    assert (await call("get", "/test_clocks")).json()["data"] == []

    # Refunds (create, replay, conflicts, refusals), their review, the ledger, the balance;
    # as another merchant, whose key's bucket the calls above have not drained.
    merchant = await server.merchant("Refunder")
    unpaid = (await call("post", "/checkout/sessions", json=valid_body())).json()
    paid = await paid_session(server, merchant)
    keyed = {"Idempotency-Key": "refund-1"}
    refund_part = {"checkout_session_id": paid["id"], "amount_fgc": "1"}
    refund_made = await call("post", "/refunds", json=refund_part, headers=keyed)
    replay = await call("post", "/refunds", json=refund_part, headers=keyed)
    assert (
        replay.headers.get("Idempotent-Replayed") == "true" and replay.json() == refund_made.json()
    )
    assert (
        await call("post", "/refunds", json={**refund_part, "amount_fgc": "2"}, headers=keyed)
    ).status_code == 409
    refund_rest = await call("post", "/refunds", json={"checkout_session_id": paid["id"]})
    assert refund_rest.json()["amount_fgc"] == "11.50"
    refusals: list[tuple[dict[str, Any], int]] = [
        ({"checkout_session_id": paid["id"]}, 400),
        ({"checkout_session_id": unpaid["id"]}, 409),
        ({"checkout_session_id": f"cs_test_{FAKE}"}, 404),
        ({"transaction_id": f"txn_test_{FAKE}"}, 404),
        ({"reason": "nope", "x": 1}, 400),
    ]
    for refused_body, status in refusals:
        answer = await call("post", "/refunds", json=refused_body)
        assert answer.status_code == status, refused_body
    assert (await call("post", "/refunds", json=refund_part, key="fp_test_x")).status_code == 401
    refund_id = refund_made.json()["id"]
    refund_approved = await call("post", f"/test_helpers/refunds/{refund_id}/approve")
    assert refund_approved.json()["status"] == "approved"
    assert (await call("post", f"/test_helpers/refunds/{refund_id}/reject")).status_code == 409
    refund_rejected = await call("post", f"/test_helpers/refunds/{refund_rest.json()['id']}/reject")
    assert refund_rejected.json()["status"] == "rejected"
    for decision in ("approve", "reject"):
        refund_unknown = f"/test_helpers/refunds/re_test_{FAKE}/{decision}"
        assert (await call("post", refund_unknown)).status_code == 404
        with_body = f"/test_helpers/refunds/{refund_id}/{decision}"
        assert (await call("post", with_body, json={"x": 1})).status_code == 400
    page = (await call("get", "/refunds", params={"limit": "1"})).json()
    refund_after = {"starting_after": page["next_cursor"], "status": "approved"}
    assert (await call("get", "/refunds", params=refund_after)).json()["data"]
    for params in ({"status": "paid"}, {"starting_after": "x"}, {"x": "1"}):
        assert (await call("get", "/refunds", params=params)).status_code == 400
    assert (await call("get", f"/refunds/{refund_id}")).json() == refund_approved.json()
    assert (await call("get", f"/refunds/re_test_{FAKE}")).status_code == 404
    ledger_page = (await call("get", "/transactions", params={"limit": "1"})).json()
    refund_after = {"starting_after": ledger_page["next_cursor"], "type": "payment"}
    assert (await call("get", "/transactions", params=refund_after)).json()["data"]
    for params in (
        {"type": "paid"},
        {"limit": "0"},
        {"status": "x"},
        {"checkout_session_id": "x"},
        {"subscription_id": f"cs_test_{FAKE}"},
    ):
        assert (await call("get", "/transactions", params=params)).status_code == 400
    of_refund = {"checkout_session_id": ledger_page["data"][0]["checkout_session_id"]}
    assert (await call("get", "/transactions", params=of_refund)).json()["data"]
    unknown_sub = {"subscription_id": f"sub_test_{FAKE}", "type": "refund"}
    assert (await call("get", "/transactions", params=unknown_sub)).json()["data"] == []
    ledger_entry = ledger_page["data"][0]
    assert (await call("get", f"/transactions/{ledger_entry['id']}")).json() == ledger_entry
    assert (await call("get", f"/transactions/txn_test_{FAKE}")).status_code == 404
    balance_summary = (await call("get", "/balance")).json()
    assert (balance_summary["refunded_fgc"], balance_summary["refunds_pending_fgc"]) == (
        "1.00",
        "0.00",
    )
    assert (await call("get", "/balance", params={"x": "1"})).status_code == 400
    assert (await call("get", "/balance", key="fp_test_x")).status_code == 401

    # The test helpers (pay, expire, approve: 200, 402, 409, 404, 400) and triggers.
    helped = (await call("post", "/checkout/sessions", json=valid_body())).json()
    pay_path = f"/test_helpers/checkout/sessions/{helped['id']}/pay"
    declined = await call("post", pay_path, json={"customer_code": "TEST-0002"})
    assert declined.status_code == 402
    assert (await call("post", pay_path, json={"customer_code": "x"})).status_code == 400
    assert (await call("post", pay_path)).json()["status"] == "paid"
    assert (await call("post", pay_path)).status_code == 409
    for action in ("pay", "expire"):
        unknown_session = f"/test_helpers/checkout/sessions/cs_test_{FAKE}/{action}"
        assert (await call("post", unknown_session)).status_code == 404
    to_expire = (await call("post", "/checkout/sessions", json=valid_body())).json()
    expire_path = f"/test_helpers/checkout/sessions/{to_expire['id']}/expire"
    assert (await call("post", expire_path, json={"x": 1})).status_code == 400
    assert (await call("post", expire_path)).json()["status"] == "expired"
    assert (await call("post", expire_path)).status_code == 409
    to_approve = (await call("post", "/subscriptions", json=subscription_body())).json()
    approve_path = f"/test_helpers/subscriptions/{to_approve['id']}/approve"
    declined = await call("post", approve_path, json={"customer_code": "TEST-0003"})
    assert declined.status_code == 402
    assert (await call("post", approve_path, json={"customer_code": 4})).status_code == 400
    assert (await call("post", approve_path)).json()["status"] == "active"
    assert (await call("post", approve_path)).status_code == 409
    unknown_sub_path = f"/test_helpers/subscriptions/sub_test_{FAKE}/approve"
    assert (await call("post", unknown_sub_path)).status_code == 404
    for trigger_body, status in (
        ({"event_type": "subscription.charged"}, 201),
        ({"event_type": "checkout.session.paid", "object": helped["id"]}, 409),
        ({"event_type": "checkout.session.paid", "object": f"cs_test_{FAKE}"}, 404),
        ({"event_type": "nope"}, 400),
    ):
        answer = await call("post", "/test_helpers/triggers", json=trigger_body)
        assert answer.status_code == status, (trigger_body, answer.text)

    # The event stream: a websocket (101, then frames named by the x-websocket extension),
    # its refusals in the handshake, and a plain GET's 426.
    stream_op = checker.document["paths"]["/events/stream"]["get"]
    frames = stream_op["x-websocket"]["frames"]
    async with open_websocket_url(stream_url(server.url), extra_headers=bearer(merchant.key)) as ws:
        handshake = ws.handshake_headers
        checker.check_answer(
            "get",
            "/events/stream",
            101,
            {name.decode(): value.decode() for name, value in handshake},
            None,
        )
        checker.check_schema(frames, json.loads(await ws.get_message()), "hello")
        assert (await call("post", "/subscriptions", json=subscription_body())).status_code == 201
        with trio.fail_after(DELIVERY_DEADLINE):
            checker.check_schema(frames, json.loads(await ws.get_message()), "event")
    for key, query, status in (
        ("fp_test_x", {}, 401),
        (merchant.key, {"after": "x"}, 400),
        (merchant.key, {"types": "x"}, 400),
    ):
        handshake_refused = await stream_refusal(server.url, key, **query)
        assert handshake_refused.status == status, handshake_refused
        checker.check_answer(
            "get", "/events/stream", status, handshake_refused.headers, handshake_refused.body
        )
    assert (await call("get", "/events/stream")).status_code == 426
    assert (await call("get", "/events/stream", params={"after": "x"})).status_code == 400
    assert (await call("get", "/events/stream", key="fp_test_x")).status_code == 401
    checker.check_schema(frames, {"object": "ping", "at": "2026-11-24T10:00:00.000Z"}, "ping")

    # Sandboxes: create (replayed, refused), list, retrieve, delete; a sandbox's key 403.
    keyed = {"Idempotency-Key": "sandbox-1"}
    made = await call("post", "/sandboxes", json={"name": "shard"}, headers=keyed)
    assert made.status_code == 201, made.text
    assert (await call("post", "/sandboxes", json={"name": "shard"}, headers=keyed)).content == (
        made.content
    )
    assert (await call("post", "/sandboxes", json={"ttl_seconds": 1})).status_code == 400
    made_id, made_key = made.json()["id"], made.json()["api_key"]
    assert (await call("post", "/sandboxes", json={}, key=made_key)).status_code == 403
    assert (await call("get", "/sandboxes", key=made_key)).status_code == 403
    assert (await call("get", "/sandboxes")).json()["data"]
    assert (await call("get", "/sandboxes", params={"starting_after": "x"})).status_code == 400
    assert (await call("get", f"/sandboxes/{made_id}")).json()["id"] == made_id
    assert (await call("get", f"/sandboxes/sbx_test_{FAKE}")).status_code == 404
    assert (await call("delete", f"/sandboxes/{made_id}")).json()["deleted"] is True
    assert (await call("delete", f"/sandboxes/{made_id}")).status_code == 404

    assert checker.unseen_successes() == []
