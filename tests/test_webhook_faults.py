"""Crashes and restarts lose no webhook: the service runs as a real process here."""

from __future__ import annotations

import json
import signal
from pathlib import Path

import attrs
import httpx
import trio
from fgcpay.core.settings import Settings
from helpers import start_server
from processes import LEASE_SECONDS, ServiceProcess
from receiver import reserve_port, start_receiver, url_of


async def _pay(service: ServiceProcess, key: str) -> str:
    from hosted import TOKEN

    async with httpx.AsyncClient(
        base_url=service.url, headers={"Authorization": f"Bearer {key}"}
    ) as api:
        session = (
            await api.post(
                "/api/v1/checkout/sessions",
                json={"amount_fgc": "5.00", "currency": "FGC", "description": "crash test",
                      "success_url": "https://shop.example/ok", "cancel_url": "https://shop.example/no"},
            )
        ).json()  # fmt: skip
    async with httpx.AsyncClient(base_url=service.url) as browser:
        page = await browser.get(f"/checkout/{session['id']}")
        token = TOKEN.search(page.text)
        assert token
        paid = await browser.post(
            f"/checkout/{session['id']}",
            data={"csrf_token": token.group(1), "customer_code": "TEST-0001", "pin": "1234"},
        )
        assert paid.status_code == 303
    return str(session["id"])


async def _setup(
    tmp_path: Path, database_url: str, receiver_url: str
) -> tuple[ServiceProcess, str]:
    service = ServiceProcess(cwd=tmp_path, database_url=database_url)
    created = await service.command(
        "merchant", "create", "--name", "Crash", "--email", "crash@example.com"
    )
    endpoint = await service.command(
        "webhook-endpoint", "create", "--merchant", created["merchant_id"], "--url", receiver_url
    )
    assert set(endpoint) == {"id", "url", "secret"} and endpoint["secret"].startswith("whsec_")
    return service, created["api_key"]


async def test_sigkill_after_the_commit_loses_no_webhook(
    tmp_path: Path, database_url: str, nursery: trio.Nursery
) -> None:
    port = reserve_port()  # the receiver is down while the service dies
    service, key = await _setup(tmp_path, database_url, url_of(port))
    await service.start()
    session_id = await _pay(service, key)
    assert await service.stop(signal.SIGKILL) == -signal.SIGKILL
    receiver = await start_receiver(nursery, port)
    await service.start()
    with trio.fail_after(LEASE_SECONDS + 20):
        (delivery,) = await receiver.wait_for(1)
    event = json.loads(delivery.body)
    assert event["type"] == "checkout.session.paid"
    assert event["data"]["object"]["id"] == session_id
    await service.stop(signal.SIGTERM)


async def test_sigterm_during_a_delivery_resumes_it_after_restart(
    tmp_path: Path, database_url: str, nursery: trio.Nursery
) -> None:
    receiver = await start_receiver(nursery)
    receiver.script = lambda n: "hang" if n == 0 else (200, {})
    service, key = await _setup(tmp_path, database_url, receiver.url)
    await service.start()
    await _pay(service, key)
    with trio.fail_after(20):
        (first,) = await receiver.wait_for(1)  # an attempt is in flight now
    assert await service.stop(signal.SIGTERM) == 0
    restarted = trio.current_time()
    await service.start()
    with trio.fail_after(20):
        second = (await receiver.wait_for(2))[1]
    assert second.body == first.body
    # Released on shutdown, not left to lapse: sent again before the lease could expire.
    assert second.at - restarted < LEASE_SECONDS
    await service.stop(signal.SIGTERM)


async def test_two_processes_share_one_outbox_and_send_each_delivery_once(
    nursery: trio.Nursery, postgres_settings: Settings
) -> None:
    from helpers import create
    from hosted import Customer

    receiver = await start_receiver(nursery)
    settings = attrs.evolve(postgres_settings, webhook_poll_seconds=0.05)
    first = await start_server(nursery, settings)
    second = await start_server(nursery, settings)
    merchant = await first.merchant()
    await merchant.post("/webhook_endpoints", json={"url": receiver.url})
    count = 40
    customer = Customer(first)
    for _ in range(count):
        session = await create(merchant)
        assert (await customer.pay(session["id"])).status_code == 303
    await customer.close()
    with trio.fail_after(60):
        await receiver.wait_for(count)
    ids = [json.loads(r.body)["id"] for r in receiver.received]
    assert len(ids) == len(set(ids)) == count
    dispatchers = (first.running.service.dispatcher, second.running.service.dispatcher)
    with trio.fail_after(30):
        while sum(d.attempts for d in dispatchers) < count:
            # The receiver answers before the sender records: wait for either to record.
            async with trio.open_nursery() as either:
                for d in dispatchers:

                    async def one_more(d: object = d) -> None:
                        await d.wait_for_attempts(d.attempts + 1)  # type: ignore[attr-defined]
                        either.cancel_scope.cancel()

                    either.start_soon(one_more)
    assert sum(d.attempts for d in dispatchers) == count  # one attempt per delivery
    await first.shutdown()
    await second.shutdown()
