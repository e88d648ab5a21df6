"""Helpers for driving the hosted page over HTTP, as a browser without JavaScript would."""

from __future__ import annotations

import re
from html import unescape
from typing import Any

import httpx
from helpers import CLIENT_TLS, MerchantClient, Server, create

TOKEN = re.compile(r'name="csrf_token" value="([^"]+)"')
MESSAGE = re.compile(r'data-testid="message">([^<]+)<')


class Customer:
    """One browser: its own cookie jar, following no redirects.

    A connection per request, so tests that jump the MockClock past the server's
    keep-alive never reuse a connection the server has dropped.
    """

    def __init__(self, server: Server) -> None:
        self.client = httpx.AsyncClient(
            base_url=server.url,
            follow_redirects=False,
            timeout=30,
            limits=httpx.Limits(max_keepalive_connections=0),
            verify=CLIENT_TLS,
        )

    async def open(self, session_id: str) -> httpx.Response:
        return await self.client.get(f"/checkout/{session_id}")

    async def pay(
        self, session_id: str, code: str = "TEST-0001", pin: str = "1234"
    ) -> httpx.Response:
        page = await self.open(session_id)
        token = TOKEN.search(page.text)
        assert token, page.text
        return await self.client.post(
            f"/checkout/{session_id}",
            data={"csrf_token": token.group(1), "customer_code": code, "pin": pin},
        )

    async def close(self) -> None:
        await self.client.aclose()


def message(response: httpx.Response) -> str | None:
    found = MESSAGE.search(response.text)
    return unescape(found.group(1)) if found else None


def page_status(response: httpx.Response) -> str:
    found = re.search(r'data-status="([a-z]+)"', response.text)
    assert found, response.text
    return found.group(1)


async def new_session(
    server: Server, **overrides: object
) -> tuple[MerchantClient, dict[str, object]]:
    merchant = await server.merchant("Acme Coffee")
    return merchant, await create(merchant, **overrides)


async def paid_session(server: Server, merchant: MerchantClient) -> dict[str, Any]:
    """A checkout session of `merchant`'s, paid on the hosted page as TEST-0001."""
    session = await create(merchant)
    customer = Customer(server)
    assert (await customer.pay(session["id"])).status_code == 303
    await customer.close()
    return session
