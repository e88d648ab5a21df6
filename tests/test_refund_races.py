"""No refund ever passes what was paid, however refunds race: 50 at one payment at once,
beside new payments, on both backends and through two processes on one PostgreSQL; and
`fgcpay ledger verify` agrees with the running totals after such a load, then names the
difference once a total is corrupted on purpose."""

from __future__ import annotations

import json
import os
import subprocess
from pathlib import Path
from typing import Any

import attrs
import httpx
import trio
from fgcpay.admin import create_merchant
from fgcpay.core.settings import Settings
from fgcpay.domain import money
from fgcpay.storage import Tx, open_database
from helpers import TEST_SECRET, MerchantClient, Server, create, start_server
from hosted import TOKEN, Customer, paid_session
from processes import FGCPAY, ServiceProcess

RACERS = 50
# What the racers ask for: more than the 12.50 paid in all, some of them the whole rest.
AMOUNTS = ["1.00", None, "0.50", "2.25", "0.01"]
# Across processes, each success takes a large part (or all) of the rest: any two that
# both won a race for the same rest would pass what was paid.
LARGE_AMOUNTS = [None, "6.25", "12.50"]
NEW_PAYMENTS = 8
PAID_MINOR = 1250


async def fgcpay(database_url: str, cwd: Path, *args: str) -> subprocess.CompletedProcess[bytes]:
    """`fgcpay <args>` on the database, as an operator runs it; exit status and output."""
    env = {k: v for k, v in os.environ.items() if not k.startswith("FGCPAY_")}
    env.update(FGCPAY_DATABASE_URL=database_url, FGCPAY_SECRET_KEY=TEST_SECRET)
    return await trio.run_process(
        [*FGCPAY, *args], cwd=cwd, env=env, capture_stdout=True, capture_stderr=True, check=False
    )


def _lines(done: subprocess.CompletedProcess[bytes]) -> list[dict[str, Any]]:
    return [json.loads(line) for line in done.stdout.decode().splitlines()]


def _failure(done: subprocess.CompletedProcess[bytes]) -> str:
    """What a failed command said: one line after the one naming its database."""
    lines = done.stderr.decode().splitlines()
    assert len(lines) == 2 and lines[0].startswith("fgcpay: database "), lines
    return lines[1]


async def _race(
    clients: list[Any], session_id: str, amounts: list[str | None]
) -> list[httpx.Response]:
    """RACERS refunds of the session at once, spread over `clients`, asking for `amounts`
    in turn (None: the whole rest)."""
    answers: list[httpx.Response] = []

    async def one(n: int) -> None:
        body: dict[str, Any] = {"checkout_session_id": session_id}
        amount = amounts[n % len(amounts)]
        if amount is not None:
            body["amount_fgc"] = amount
        answers.append(await clients[n % len(clients)].post("/refunds", json=body))

    async with trio.open_nursery() as nursery:
        for n in range(RACERS):
            nursery.start_soon(one, n)
    return answers


def _refunded(answers: list[httpx.Response]) -> list[dict[str, Any]]:
    """The refunds made; every other answer is the 400 of a rest too small."""
    made = []
    for answer in answers:
        if answer.status_code == 201:
            made.append(answer.json())
        else:
            assert answer.status_code == 400, answer.text
            assert [d["field"] for d in answer.json()["details"]] == ["amount_fgc"]
    return made


def _minor(refunds: list[dict[str, Any]]) -> int:
    return sum(money.parse_fgc(refund["amount_fgc"]) for refund in refunds)


async def _pay_new_session(server: Server, merchant: MerchantClient) -> None:
    session = await create(merchant)
    customer = Customer(server)
    assert (await customer.pay(session["id"])).status_code == 303
    await customer.close()


def _corrupt(tx: Tx, merchant_id: str) -> None:
    tx.execute(
        "UPDATE balance_shards SET refunded_minor = refunded_minor + 1 WHERE merchant_id = ?"
        " AND shard = (SELECT MIN(shard) FROM balance_shards WHERE merchant_id = ?)",
        merchant_id,
        merchant_id,
    )


async def test_fifty_refunds_racing_beside_payments_never_pass_the_payment_and_verify(
    nursery: trio.Nursery, settings: Settings, tmp_path: Path
) -> None:
    server = await start_server(nursery, attrs.evolve(settings, rate_limit_burst=1000))
    merchant = await server.merchant()
    target = await paid_session(server, merchant)
    answers: list[httpx.Response] = []

    async with trio.open_nursery() as load:

        async def race() -> None:
            answers.extend(await _race([merchant], target["id"], AMOUNTS))

        load.start_soon(race)
        for _ in range(NEW_PAYMENTS):
            load.start_soon(_pay_new_session, server, merchant)

    made = _refunded(answers)
    assert 0 < _minor(made) <= PAID_MINOR
    pending = (await merchant.get("/balance")).json()
    assert pending["refunds_pending_fgc"] == money.format_fgc(_minor(made))

    # Reviews at once: every other one approved, the rest rejected.
    async with trio.open_nursery() as reviews:
        for n, refund in enumerate(made):
            decision = "approve" if n % 2 == 0 else "reject"
            path = f"/test_helpers/refunds/{refund['id']}/{decision}"
            reviews.start_soon(merchant.post, path)
    approved = made[::2]
    summary = (await merchant.get("/balance")).json()
    paid = PAID_MINOR * (1 + NEW_PAYMENTS)
    assert summary["paid_total_fgc"] == money.format_fgc(paid)
    assert summary["refunded_fgc"] == money.format_fgc(_minor(approved))
    assert summary["net_fgc"] == money.format_fgc(paid - _minor(approved))
    assert summary["refunds_pending_fgc"] == "0.00"
    assert summary["transaction_count"] == 1 + NEW_PAYMENTS + len(approved)

    url = settings.database_url
    verified = await fgcpay(url, tmp_path, "ledger", "verify")
    assert verified.returncode == 0, verified.stderr
    (line,) = _lines(verified)
    assert line == {
        "merchant_id": merchant.id,
        "agrees": True,
        "paid_total_fgc": summary["paid_total_fgc"],
        "refunded_fgc": summary["refunded_fgc"],
        "refunds_pending_fgc": "0.00",
        "transaction_count": summary["transaction_count"],
        "differences": [],
    }
    decided = await fgcpay(url, tmp_path, "refund", "reject", "--merchant", merchant.id,
                           "--refund", approved[0]["id"])  # fmt: skip
    assert decided.returncode == 2
    assert _failure(decided).startswith("fgcpay: refund_already_reviewed: ")

    await server.db.write(_corrupt, merchant.id)
    corrupted = await fgcpay(url, tmp_path, "ledger", "verify", "--merchant", merchant.id)
    assert corrupted.returncode == 1, corrupted.stderr
    assert _failure(corrupted) == "fgcpay: the ledger disagrees with the totals of 1 merchant(s)"
    (line,) = _lines(corrupted)
    assert line["agrees"] is False
    refunded = money.parse_fgc(summary["refunded_fgc"])
    assert line["differences"] == [
        {
            "total": "refunded_fgc",
            "running": money.format_fgc(refunded + 1),
            "ledger": summary["refunded_fgc"],
        }
    ]
    unknown = await fgcpay(url, tmp_path, "ledger", "verify", "--merchant", "mer_" + "0" * 16)
    assert unknown.returncode == 2
    assert _failure(unknown) == "fgcpay: no merchant mer_0000000000000000"


async def _pay_on(service: ServiceProcess, session_id: str) -> None:
    """TEST-0001 pays on `service`'s hosted page, as a browser without JavaScript."""
    async with httpx.AsyncClient(base_url=service.url, timeout=30) as browser:
        page = await browser.get(f"/checkout/{session_id}")
        token = TOKEN.search(page.text)
        assert token, page.text
        form = {"csrf_token": token.group(1), "customer_code": "TEST-0001", "pin": "1234"}
        assert (await browser.post(f"/checkout/{session_id}", data=form)).status_code == 303


async def test_two_processes_racing_refunds_at_one_payment_never_pass_it(
    tmp_path: Path, postgres_url: str
) -> None:
    processes = []
    for name in ("a", "b"):
        (tmp_path / name).mkdir()
        processes.append(
            ServiceProcess(
                cwd=tmp_path / name,
                database_url=postgres_url,
                settings={"SECRET_KEY": TEST_SECRET, "RATE_LIMIT_BURST": "1000"},
            )
        )
    a, b = processes
    try:
        async with open_database(postgres_url, 3) as db:
            merchant = await create_merchant(db, "Two hosts", "two-hosts@example.com")
        async with trio.open_nursery() as starting:
            starting.start_soon(a.start)
            starting.start_soon(b.start)
        headers = {"Authorization": f"Bearer {merchant.api_key}"}
        apis = [
            httpx.AsyncClient(base_url=p.url + "/api/v1", headers=headers, timeout=30)
            for p in processes
        ]
        created = await apis[0].post("/checkout/sessions", json={
            "amount_fgc": "12.50", "currency": "FGC", "description": "Beans",
            "success_url": "https://shop.example/ok", "cancel_url": "https://shop.example/no",
        })  # fmt: skip
        assert created.status_code == 201, created.text
        session_id = created.json()["id"]
        await _pay_on(b, session_id)

        made = _refunded(await _race(apis, session_id, LARGE_AMOUNTS))
        assert 0 < _minor(made) <= PAID_MINOR
        # Reviewed in both processes and by the operator's command.
        first, *others = made
        approved = await a.command(
            "refund", "approve", "--merchant", merchant.merchant.id, "--refund", first["id"]
        )
        assert (approved["id"], approved["status"]) == (first["id"], "approved")
        for n, refund in enumerate(others):
            answer = await apis[n % 2].post(f"/test_helpers/refunds/{refund['id']}/reject")
            assert answer.json()["status"] == "rejected", answer.text
        summary = (await apis[1].get("/balance")).json()
        assert (summary["refunded_fgc"], summary["refunds_pending_fgc"]) == (
            first["amount_fgc"],
            "0.00",
        )
        verified = await a.command("ledger", "verify")
        assert verified["agrees"] is True, verified
        for api in apis:
            await api.aclose()
        for process in processes:
            assert await process.stop() == 0
        assert a.errors_logged() == [] and b.errors_logged() == []
    finally:
        for process in processes:
            process.kill()
