"""A subscription's hosted page: a subscription to approve (made through the client API,
as `POST /subscriptions` will) and the browser's approve step."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from fgcpay.domain import subscriptions
from fgcpay.domain.subscriptions import Subscription

from ._service import MerchantClient, Server
from ._subscriptions import subscription_body

if TYPE_CHECKING:
    from playwright.sync_api import Page


async def subscription_to_approve(
    server: Server, **overrides: Any
) -> tuple[MerchantClient, Subscription]:
    """Acme Coffee's new `paused` subscription (`subscription_body` with `overrides`),
    created at the service's time through `build`/`create`."""
    merchant = await server.merchant("Acme Coffee")
    api = server.running.service.subscriptions
    now = server.running.service.clock.now_us()
    request = subscriptions.parse_create(subscription_body(**overrides), now)
    subscription = api.build(request, merchant.id, now)
    await api.create(subscription, None)
    return merchant, subscription


def page_url(server: Server, subscription: Subscription) -> str:
    """The subscription's `checkout_url` on the running server."""
    return subscriptions.checkout_url(server.url, subscription.id)


def fill_and_approve(page: Page, code: str, pin: str) -> None:
    page.get_by_label("Customer code").fill(code)
    page.get_by_label("PIN").fill(pin)
    page.get_by_role("button", name="Approve").click()
