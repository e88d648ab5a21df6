"""The create-key form makes one key however often it is sent (a refresh of the "key
created" page, a double click): on both backends, and through two processes on one
PostgreSQL; the second answer never shows the raw key again."""

from __future__ import annotations

from pathlib import Path

import httpx
import trio
from fgcpay.admin import create_merchant
from fgcpay.storage import Database, merchants, open_database
from helpers import (
    PASSWORD,
    TEST_SECRET,
    Server,
    form_fields,
    new_email,
    raw_key,
    signed_up,
)
from processes import ServiceProcess

KEYS = "/dashboard/api-keys"


async def _names(db: Database, merchant_id: str) -> list[str | None]:
    keys = await db.read(merchants.api_keys_of, merchant_id)
    return [key.name for key in keys]


async def test_sending_the_create_form_again_makes_no_second_key_nor_shows_the_key(
    server: Server,
) -> None:
    dashboard, email = await signed_up(server)
    merchant = await server.db.read(merchants.merchant_by_email, email)
    assert merchant is not None
    form = {**form_fields((await dashboard.get(KEYS)).text), "name": "shop server"}
    created = await dashboard.client.post(KEYS, data=form)
    assert created.status_code == 201, created.text
    key = raw_key(created.text)
    # A refresh of the "key created" page sends the same form again.
    again = await dashboard.client.post(KEYS, data=form)
    assert again.status_code == 200, again.text
    assert key not in again.text and 'data-testid="raw-key"' not in again.text
    assert "already created" in again.text
    assert "shop server" in again.text and f"{key[:12]}...{key[-4:]}" in again.text
    assert await _names(server.db, merchant.id) == ["shop server"]

    # A double click: the same form twice at once, one key and one raw key shown.
    form = {**form_fields((await dashboard.get(KEYS)).text), "name": "second"}
    answers: list[httpx.Response] = []

    async def send() -> None:
        answers.append(await dashboard.client.post(KEYS, data=form))

    async with trio.open_nursery() as nursery:
        nursery.start_soon(send)
        nursery.start_soon(send)
    assert sorted(a.status_code for a in answers) == [200, 201]
    assert sum('data-testid="raw-key"' in a.text for a in answers) == 1
    assert sorted(await _names(server.db, merchant.id), key=str) == ["second", "shop server"]

    # A form without its one-use token (an old page): refused, nothing made.
    stale = {"csrf_token": form["csrf_token"], "name": "stale"}
    refused = await dashboard.client.post(KEYS, data=stale)
    assert refused.status_code == 400 and "nothing was changed" in refused.text
    assert len(await _names(server.db, merchant.id)) == 2
    await dashboard.aclose()


async def test_one_form_sent_to_two_processes_at_once_makes_one_key(
    tmp_path: Path, postgres_url: str
) -> None:
    processes = []
    for name in ("a", "b"):
        (tmp_path / name).mkdir()
        settings = {"SECRET_KEY": TEST_SECRET, "PUBLIC_URL": "http://127.0.0.1"}
        processes.append(ServiceProcess(tmp_path / name, postgres_url, settings=settings))
    a, b = processes
    email = new_email()
    try:
        async with open_database(postgres_url, 3) as db:
            created = await create_merchant(db, "Two hosts", email, password=PASSWORD)
            async with trio.open_nursery() as starting:
                starting.start_soon(a.start)
                starting.start_soon(b.start)
            async with httpx.AsyncClient(timeout=30) as browser:
                page = await browser.get(a.url + "/dashboard/sign-in")
                signed = await browser.post(
                    a.url + "/dashboard/sign-in",
                    data={**form_fields(page.text), "email": email, "password": PASSWORD},
                )
                assert signed.status_code == 303, signed.text
                form = {**form_fields((await browser.get(a.url + KEYS)).text), "name": "both"}
                answers: list[httpx.Response] = []

                async def send(url: str) -> None:
                    answers.append(await browser.post(url + KEYS, data=form))

                async with trio.open_nursery() as nursery:
                    nursery.start_soon(send, a.url)
                    nursery.start_soon(send, b.url)
            assert sorted(answer.status_code for answer in answers) == [200, 201]
            keys = await db.read(merchants.api_keys_of, created.merchant.id)
            # The operator's first key, and one from the form.
            assert sorted(str(key.name) for key in keys) == ["None", "both"]
    finally:
        a.kill()
        b.kill()
