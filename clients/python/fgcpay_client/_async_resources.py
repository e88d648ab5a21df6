"""`AsyncFgcpay`, the client for async code (trio or asyncio), and its resources: the same
methods as `_resources`, awaited; `list` is iterated with `async for`."""

from __future__ import annotations

import builtins
import datetime
from collections.abc import AsyncIterator
from types import TracebackType
from typing import Any, Self

import httpx

from . import _api
from ._core import DEFAULT_BASE_URL, AsyncTransport
from .generated.models import (
    Balance,
    CheckoutSession,
    CreatedSandbox,
    DeletedSandbox,
    DeletedTestClock,
    Event,
    Refund,
    Sandbox,
    Subscription,
    TestClock,
    Transaction,
    Trigger,
    WebhookEndpoint,
)


class _Resource:
    def __init__(self, transport: AsyncTransport) -> None:
        self._t = transport


class CheckoutSessions(_Resource):
    async def create(self, *, idempotency_key: str | None = None, **fields: Any) -> CheckoutSession:
        return await self._t.call(_api.CheckoutSessions.create(fields, idempotency_key))

    async def retrieve(self, id: str) -> CheckoutSession:
        return await self._t.call(_api.CheckoutSessions.retrieve(id))

    def list(self, **filters: Any) -> AsyncIterator[CheckoutSession]:
        return self._t.every(_api.CheckoutSessions.list(filters))


class Subscriptions(_Resource):
    async def create(self, *, idempotency_key: str | None = None, **fields: Any) -> Subscription:
        return await self._t.call(_api.Subscriptions.create(fields, idempotency_key))

    async def retrieve(self, id: str) -> Subscription:
        return await self._t.call(_api.Subscriptions.retrieve(id))

    def list(self, **filters: Any) -> AsyncIterator[Subscription]:
        return self._t.every(_api.Subscriptions.list(filters))

    async def cancel(self, id: str, *, idempotency_key: str | None = None) -> Subscription:
        return await self._t.call(_api.Subscriptions.cancel(id, idempotency_key))


class Refunds(_Resource):
    async def create(self, *, idempotency_key: str | None = None, **fields: Any) -> Refund:
        return await self._t.call(_api.Refunds.create(fields, idempotency_key))

    async def retrieve(self, id: str) -> Refund:
        return await self._t.call(_api.Refunds.retrieve(id))

    def list(self, **filters: Any) -> AsyncIterator[Refund]:
        return self._t.every(_api.Refunds.list(filters))


class Transactions(_Resource):
    async def retrieve(self, id: str) -> Transaction:
        return await self._t.call(_api.Transactions.retrieve(id))

    def list(self, **filters: Any) -> AsyncIterator[Transaction]:
        return self._t.every(_api.Transactions.list(filters))


class Balances(_Resource):
    async def retrieve(self) -> Balance:
        return await self._t.call(_api.Balances.retrieve())


class Events(_Resource):
    async def retrieve(self, id: str) -> Event:
        return await self._t.call(_api.Events.retrieve(id))

    def list(self, **filters: Any) -> AsyncIterator[Event]:
        return self._t.every(_api.Events.list(filters))


class TestClocks(_Resource):
    async def create(self, *, idempotency_key: str | None = None, **fields: Any) -> TestClock:
        return await self._t.call(_api.TestClocks.create(fields, idempotency_key))

    async def retrieve(self, id: str) -> TestClock:
        return await self._t.call(_api.TestClocks.retrieve(id))

    def list(self, **filters: Any) -> AsyncIterator[TestClock]:
        return self._t.every(_api.TestClocks.list(filters))

    async def advance(
        self,
        id: str,
        frozen_time: datetime.datetime | str,
        *,
        idempotency_key: str | None = None,
    ) -> TestClock:
        return await self._t.call(_api.TestClocks.advance(id, frozen_time, idempotency_key))

    async def delete(self, id: str) -> DeletedTestClock:
        return await self._t.call(_api.TestClocks.delete(id))


class WebhookEndpoints(_Resource):
    async def create(self, *, idempotency_key: str | None = None, **fields: Any) -> WebhookEndpoint:
        return await self._t.call(_api.WebhookEndpoints.create(fields, idempotency_key))

    async def retrieve(self, id: str) -> WebhookEndpoint:
        return await self._t.call(_api.WebhookEndpoints.retrieve(id))

    def list(self, **filters: Any) -> AsyncIterator[WebhookEndpoint]:
        return self._t.every(_api.WebhookEndpoints.list(filters))

    async def update(self, id: str, **fields: Any) -> WebhookEndpoint:
        return await self._t.call(_api.WebhookEndpoints.update(id, fields))

    async def delete(self, id: str) -> WebhookEndpoint:
        return await self._t.call(_api.WebhookEndpoints.delete(id))


class Sandboxes(_Resource):
    async def create(self, *, idempotency_key: str | None = None, **fields: Any) -> CreatedSandbox:
        return await self._t.call(_api.Sandboxes.create(fields, idempotency_key))

    async def retrieve(self, id: str) -> Sandbox:
        return await self._t.call(_api.Sandboxes.retrieve(id))

    def list(self, **filters: Any) -> AsyncIterator[Sandbox]:
        return self._t.every(_api.Sandboxes.list(filters))

    async def delete(self, id: str) -> DeletedSandbox:
        return await self._t.call(_api.Sandboxes.delete(id))


class TestHelpers(_Resource):
    async def pay(
        self,
        session_id: str,
        customer_code: str | None = None,
        *,
        idempotency_key: str | None = None,
    ) -> CheckoutSession:
        return await self._t.call(_api.TestHelpers.pay(session_id, customer_code, idempotency_key))

    async def expire(self, id: str, *, idempotency_key: str | None = None) -> CheckoutSession:
        return await self._t.call(_api.TestHelpers.expire(id, idempotency_key))

    async def approve(
        self,
        subscription_id: str,
        customer_code: str | None = None,
        *,
        idempotency_key: str | None = None,
    ) -> Subscription:
        call = _api.TestHelpers.approve(subscription_id, customer_code, idempotency_key)
        return await self._t.call(call)

    async def trigger(
        self, event_type: str, object: str | None = None, *, idempotency_key: str | None = None
    ) -> Trigger:
        return await self._t.call(_api.TestHelpers.trigger(event_type, object, idempotency_key))


class AsyncFgcpay:
    """fgcpay's merchant API for async code: every method is awaited, every `list`
    iterated with `async for`; it runs under trio and asyncio alike. `base_url` is the
    service's root (the client adds `/api/v1`); a 429, a 503 or a connection error is
    retried up to `max_retries` times; `timeout` (seconds) bounds each attempt.
    `http_client` replaces the `httpx.AsyncClient` the client would make (a proxy, TLS
    settings, event hooks); it is then the caller's to close.
    """

    def __init__(
        self,
        api_key: str,
        base_url: str = DEFAULT_BASE_URL,
        max_retries: int = 2,
        timeout: float = 30,
        *,
        http_client: httpx.AsyncClient | None = None,
    ) -> None:
        transport = AsyncTransport(
            api_key,
            base_url,
            max_retries,
            owned=http_client is None,
            http=http_client or httpx.AsyncClient(timeout=timeout),
        )
        self._transport = transport
        self.checkout_sessions = CheckoutSessions(transport)
        self.subscriptions = Subscriptions(transport)
        self.refunds = Refunds(transport)
        self.transactions = Transactions(transport)
        self.balance = Balances(transport)
        self.events = Events(transport)
        self.test_clocks = TestClocks(transport)
        self.webhook_endpoints = WebhookEndpoints(transport)
        self.sandboxes = Sandboxes(transport)
        self.test_helpers = TestHelpers(transport)

    async def aclose(self) -> None:
        """Close the connections (the `async with` block does it on leaving)."""
        await self._transport.aclose()

    async def __aenter__(self) -> Self:
        return self

    async def __aexit__(
        self,
        kind: builtins.type[BaseException] | None,
        error: BaseException | None,
        traceback: TracebackType | None,
    ) -> None:
        await self.aclose()
