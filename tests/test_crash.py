"""kill -9 in the middle of concurrent creates and payments, restart, reconcile.

`fgcpay serve` runs as a real process with a webhook endpoint registered to a local
receiver. Merchants create sessions concurrently (each with its own Idempotency-Key)
while customers pay other sessions on the hosted page; the service is SIGKILLed with
requests in flight and restarted on the same database. Then what the merchant, the
customers and the receiver see must add up:

- every create that got a 201 is there (GET), and retrying any create with its key
  never makes a second session: a 201 replays the same session, and a create that was
  in flight when the process died either committed (its retry replays it) or left
  nothing behind (its key is still held, 409 `idempotency_key_in_use`, until the dead
  holder's claim lapses);
- nothing is paid twice: one transaction per paid session, none for the others;
- a payment in flight at the kill is either complete (status, transaction, event) or did
  not happen (the customer can pay again, once);
- every paid session's `checkout.session.paid` event reaches the receiver.
"""

from __future__ import annotations

import json
import signal
from pathlib import Path
from typing import Any

import attrs
import httpx
import trio
from fgcpay.storage import open_database, transactions
from helpers import every_page, valid_body
from hosted import TOKEN
from processes import LEASE_SECONDS, ServiceProcess
from receiver import Receiver, start_receiver

CREATE_WORKERS = 4
PAYERS = 3
SESSIONS_PER_PAYER = 6
# The kill comes once this much has been answered, with more of each still in flight.
KILL_AFTER_CREATES = 12
KILL_AFTER_PAYMENTS = 3


@attrs.define
class Load:
    """What the clients saw before the kill."""

    created: dict[str, str] = attrs.field(factory=dict)  # key -> id, for each 201
    unanswered: set[str] = attrs.field(factory=set)  # keys whose create got no answer
    paid: set[str] = attrs.field(factory=set)  # sessions whose payment got the 303
    unknown: set[str] = attrs.field(factory=set)  # payments in flight at the kill
    enough: trio.Event = attrs.field(factory=trio.Event)

    def note(self) -> None:
        if len(self.created) >= KILL_AFTER_CREATES and len(self.paid) >= KILL_AFTER_PAYMENTS:
            self.enough.set()


def _create_body(key: str) -> dict[str, Any]:
    return valid_body(external_reference=key, description=f"crash test {key}")


async def _create_until_killed(api: httpx.AsyncClient, worker: int, load: Load) -> None:
    for number in range(10_000):
        key = f"crash-{worker}-{number}"
        try:
            response = await api.post(
                "/checkout/sessions", json=_create_body(key), headers={"Idempotency-Key": key}
            )
        except httpx.TransportError:
            load.unanswered.add(key)
            return
        assert response.status_code == 201, response.text
        load.created[key] = response.json()["id"]
        load.note()


async def _pay(browser: httpx.AsyncClient, session_id: str) -> httpx.Response:
    page = await browser.get(f"/checkout/{session_id}")
    token = TOKEN.search(page.text)
    assert token, page.text
    return await browser.post(
        f"/checkout/{session_id}",
        data={"csrf_token": token.group(1), "customer_code": "TEST-0001", "pin": "1234"},
    )


async def _pay_until_killed(url: str, sessions: list[str], load: Load) -> None:
    async with httpx.AsyncClient(base_url=url, timeout=30) as browser:
        for session_id in sessions:
            try:
                paid = await _pay(browser, session_id)
            except httpx.TransportError:
                load.unknown.add(session_id)
                return
            # One customer code pays for everyone here: a payment may be refused while
            # another is being decided for the same code. Only a 303 is known paid.
            if paid.status_code == 303:
                load.paid.add(session_id)
                load.note()
            else:
                assert paid.status_code < 500, paid.text


async def _wait_for_paid_events(receiver: Receiver, paid: set[str]) -> None:
    def delivered() -> set[str]:
        ids = set()
        for item in receiver.received:
            event = json.loads(item.body)
            if event["type"] == "checkout.session.paid":
                ids.add(event["data"]["object"]["id"])
        return ids

    # A delivery leased by the dead process is sent again once its lease lapses.
    with trio.fail_after(LEASE_SECONDS + 15):
        while not paid <= delivered():
            await receiver.wait_for(len(receiver.received) + 1)


async def test_sigkill_under_load_loses_nothing_and_doubles_nothing(
    tmp_path: Path, database_url: str, nursery: trio.Nursery
) -> None:
    receiver = await start_receiver(nursery)
    service = ServiceProcess(
        cwd=tmp_path,
        database_url=database_url,
        settings={
            "WEBHOOK_POLL_SECONDS": "0.2",
            "RATE_LIMIT_PER_SECOND": "100000",
            "RATE_LIMIT_BURST": "1000000",
        },
    )
    created = await service.command(
        "merchant", "create", "--name", "Crash", "--email", "crash@example.com"
    )
    await service.command(
        "webhook-endpoint", "create", "--merchant", created["merchant_id"], "--url", receiver.url
    )
    auth = {"Authorization": f"Bearer {created['api_key']}"}
    await service.start()
    api = httpx.AsyncClient(base_url=service.url + "/api/v1", headers=auth, timeout=30)

    to_pay: list[str] = []
    for number in range(PAYERS * SESSIONS_PER_PAYER):
        key = f"to-pay-{number}"
        response = await api.post(
            "/checkout/sessions", json=_create_body(key), headers={"Idempotency-Key": key}
        )
        assert response.status_code == 201, response.text
        to_pay.append(response.json()["id"])

    load = Load()
    with trio.fail_after(60):
        async with trio.open_nursery() as clients:
            for worker in range(CREATE_WORKERS):
                clients.start_soon(_create_until_killed, api, worker, load)
            for payer in range(PAYERS):
                share = to_pay[payer::PAYERS]
                clients.start_soon(_pay_until_killed, service.url, share, load)
            await load.enough.wait()
            assert await service.stop(signal.SIGKILL) == -signal.SIGKILL
    await api.aclose()
    assert load.unanswered, "the kill came with no create in flight"

    await service.start()
    api = httpx.AsyncClient(base_url=service.url + "/api/v1", headers=auth, timeout=30)

    # Every 201 is there.
    for key, session_id in load.created.items():
        got = await api.get(f"/checkout/sessions/{session_id}")
        assert got.status_code == 200, got.text
        assert got.json()["external_reference"] == key

    # A retry never makes a second session.
    retried: dict[str, str] = {}
    for key in sorted({*load.created, *load.unanswered}):
        again = await api.post(
            "/checkout/sessions", json=_create_body(key), headers={"Idempotency-Key": key}
        )
        if key in load.created:
            assert again.status_code == 201, again.text
            assert again.headers.get("Idempotent-Replayed") == "true"
            assert again.json()["id"] == load.created[key]
        elif again.status_code == 201:  # replayed if it committed, else created now
            retried[key] = again.json()["id"]
        else:  # claimed, never committed: the dead holder's claim lapses in its own time
            assert again.status_code == 409, again.text
            assert again.json()["code"] == "idempotency_key_in_use"
    sessions = await every_page(api, "/checkout/sessions")
    by_reference: dict[str, list[str]] = {}
    for session in sessions:
        by_reference.setdefault(session["external_reference"], []).append(session["id"])
    assert all(len(ids) == 1 for ids in by_reference.values()), by_reference
    for key in load.unanswered:
        expected = [retried[key]] if key in retried else None
        assert by_reference.get(key) == expected, (key, by_reference.get(key))

    # A payment in flight either happened whole or not at all; the customer can then pay.
    statuses = {session["id"]: session["status"] for session in sessions}
    assert all(statuses[session_id] == "paid" for session_id in load.paid)
    async with httpx.AsyncClient(base_url=service.url, timeout=30) as browser:
        for session_id in to_pay:
            if statuses[session_id] != "paid":
                assert statuses[session_id] == "created", statuses[session_id]
                assert (await _pay(browser, session_id)).status_code == 303
    paid = {
        session["id"]
        for session in await every_page(api, "/checkout/sessions")
        if session["status"] == "paid"
    }
    assert paid == set(to_pay)

    await _wait_for_paid_events(receiver, paid)
    await api.aclose()
    assert await service.stop(signal.SIGTERM) == 0
    async with open_database(database_url, 3) as db:
        for session in sessions:
            written = await db.read(transactions.for_checkout_session, session["id"])
            assert len(written) == (1 if session["id"] in paid else 0), session["id"]
    assert "Traceback" not in service.log.read_text(), service.log.read_text()[-5_000:]
