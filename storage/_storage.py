"""The one storage interface the rest of the service uses, over either backend."""

from __future__ import annotations

from collections.abc import AsyncIterator, Callable
from contextlib import asynccontextmanager

import trio
from fgcpay.domain.checkout import CheckoutSession
from fgcpay.domain.customers import Customer, PinAttempt
from fgcpay.domain.endpoints import WebhookEndpoint
from fgcpay.domain.idempotency import Claim, Completion, Scope
from fgcpay.domain.merchants import ApiKey, Merchant
from fgcpay.domain.transactions import Transaction
from fgcpay.domain.webhooks import Delivery, Event, SenderLimits

from . import (
    checkout_sessions,
    customers,
    idempotency,
    merchants,
    rate_limits,
    transactions,
    webhooks,
)
from ._database import Database
from ._migrations import load_migrations
from ._postgres import PostgresDatabase
from ._sqlite import SqliteDatabase, sqlite_path
from .checkout_sessions import STATUS_CHANNEL
from .rate_limits import Reservation
from .webhooks import AttemptRecord, DeliveryJob, DeliveryView


class Storage:
    """Domain-level reads and writes. Every write is one transaction."""

    def __init__(self, db: Database) -> None:
        self.db = db

    @property
    def dialect(self) -> str:
        return self.db.dialect

    async def ping(self) -> None:
        await self.db.ping()

    async def follow_status_changes(
        self,
        on_change: Callable[[str, str], None],
        on_reconnect: Callable[[], None],
        *,
        task_status: trio.TaskStatus[None] = trio.TASK_STATUS_IGNORED,
    ) -> None:
        """Call `on_change(resource_id, status)` for status changes committed by any
        process (PostgreSQL LISTEN/NOTIFY), and `on_reconnect()` each time the listener is
        back after losing its connection: changes made meanwhile were not heard, so the
        caller reads again what it follows. SQLite serves one process: nothing to follow."""
        if not isinstance(self.db, PostgresDatabase):
            task_status.started()
            return

        def on_payload(payload: str) -> None:
            resource_id, _, status = payload.partition(":")
            if resource_id and status:
                on_change(resource_id, status)

        await self.db.listen(STATUS_CHANNEL, on_payload, on_reconnect, task_status=task_status)

    # -- merchants and keys -----------------------------------------------------------

    async def create_merchant(self, merchant: Merchant, key: ApiKey | None) -> bool:
        return await self.db.write(merchants.insert_merchant, merchant, key)

    async def add_api_key(self, key: ApiKey) -> None:
        await self.db.write(merchants.insert_api_key, key)

    async def merchant(self, merchant_id: str) -> Merchant | None:
        return await self.db.read(merchants.merchant_by_id, merchant_id)

    async def merchants(self) -> list[Merchant]:
        return await self.db.read(merchants.all_merchants)

    async def merchant_by_email(self, email: str) -> Merchant | None:
        return await self.db.read(merchants.merchant_by_email, email)

    async def api_key_by_hash(self, key_hash: str) -> tuple[ApiKey, Merchant] | None:
        return await self.db.read(merchants.api_key_by_hash, key_hash)

    async def api_keys(self, merchant_id: str) -> list[ApiKey]:
        return await self.db.read(merchants.api_keys_of, merchant_id)

    async def touch_api_key(self, key_id: str, now_us: int) -> None:
        await self.db.write(merchants.touch_api_key, key_id, now_us)

    async def revoke_api_key(self, merchant_id: str, key_id: str, now_us: int) -> bool:
        return await self.db.write(merchants.revoke_api_key, merchant_id, key_id, now_us)

    # -- checkout sessions --------------------------------------------------------------

    async def insert_checkout_session(
        self, session: CheckoutSession, completion: Completion | None = None
    ) -> None:
        await self.db.write(checkout_sessions.insert, session, completion)

    async def checkout_session(self, session_id: str) -> CheckoutSession | None:
        return await self.db.read(checkout_sessions.by_id, session_id)

    async def merchant_checkout_session(
        self, merchant_id: str, session_id: str
    ) -> CheckoutSession | None:
        return await self.db.read(checkout_sessions.of_merchant, merchant_id, session_id)

    async def checkout_sessions_page(
        self, merchant_id: str, status: str | None, after: tuple[int, str] | None, limit: int
    ) -> list[CheckoutSession]:
        return await self.db.read(checkout_sessions.page, merchant_id, status, after, limit)

    async def checkout_sessions_due(self, now_us: int, limit: int) -> list[str]:
        return await self.db.read(checkout_sessions.due_for_expiry, now_us, limit)

    async def next_checkout_expiry(self) -> int | None:
        return await self.db.read(checkout_sessions.next_expiry)

    async def expire_checkout_session(
        self, session: CheckoutSession, now_us: int, event: Event
    ) -> bool:
        return await self.db.write(checkout_sessions.mark_expired, session, now_us, event)

    async def settle_pin_and_pay(
        self,
        scope: str,
        code: str,
        session: CheckoutSession,
        payment: Transaction,
        now_us: int,
        event: Event,
    ) -> bool:
        return await self.db.write(
            checkout_sessions.settle_and_pay, scope, code, session, payment, now_us, event
        )

    async def checkout_session_transactions(self, session_id: str) -> list[Transaction]:
        return await self.db.read(transactions.for_checkout_session, session_id)

    # -- test customers --------------------------------------------------------------------

    async def set_test_customer_pins(self, hmacs: list[tuple[str, str]]) -> None:
        await self.db.write(customers.set_pin_hmacs, hmacs)

    async def test_customer(self, code: str) -> Customer | None:
        return await self.db.read(customers.by_code, code)

    async def reserve_pin_attempt(self, scope: str, code: str, now_us: int) -> PinAttempt:
        return await self.db.write(customers.reserve_attempt, scope, code, now_us)

    async def settle_pin_attempt(
        self, scope: str, code: str, now_us: int, *, matched: bool
    ) -> bool:
        return await self.db.write(customers.settle_attempt, scope, code, now_us, matched)

    async def unlock_customer(self, code: str, scope: str | None, now_us: int) -> int:
        return await self.db.write(customers.unlock, code, scope, now_us)

    # -- webhooks ----------------------------------------------------------------------------

    async def insert_webhook_endpoint(self, endpoint: WebhookEndpoint) -> None:
        await self.db.write(webhooks.insert_endpoint, endpoint)

    async def webhook_endpoints(self, merchant_id: str) -> list[WebhookEndpoint]:
        return await self.db.read(webhooks.endpoints_of, merchant_id)

    async def webhook_endpoint(self, merchant_id: str, endpoint_id: str) -> WebhookEndpoint | None:
        return await self.db.read(webhooks.endpoint_of, merchant_id, endpoint_id)

    async def delete_webhook_endpoint(self, merchant_id: str, endpoint_id: str, now_us: int) -> bool:
        return await self.db.write(webhooks.delete_endpoint, merchant_id, endpoint_id, now_us)

    async def rotate_webhook_secret(
        self, merchant_id: str, endpoint_id: str, new_sealed: str, now_us: int, overlap_us: int
    ) -> WebhookEndpoint | None:
        return await self.db.write(
            webhooks.rotate_secret, merchant_id, endpoint_id, new_sealed, now_us, overlap_us
        )

    async def event(self, merchant_id: str, event_id: str) -> Event | None:
        return await self.db.read(webhooks.event_of, merchant_id, event_id)

    async def events_page(
        self,
        merchant_id: str,
        event_type: str | None,
        after: tuple[int, str] | None,
        since_us: int,
        limit: int,
    ) -> list[Event]:
        return await self.db.read(webhooks.events_page, merchant_id, event_type, after, since_us, limit)

    async def redeliver_event(self, merchant_id: str, event_id: str, now_us: int) -> int | None:
        return await self.db.write(webhooks.redeliver, merchant_id, event_id, now_us)

    async def claim_deliveries(
        self, owner: str, now_us: int, lease_us: int, limit: int, limits: SenderLimits
    ) -> tuple[list[DeliveryJob], bool]:
        return await self.db.write(webhooks.claim_due, owner, now_us, lease_us, limit, limits)

    async def record_delivery_attempt(self, owner: str, attempt: AttemptRecord) -> bool:
        return await self.db.write(webhooks.record_attempt, owner, attempt)

    async def release_delivery_leases(self, owner: str) -> int:
        return await self.db.write(webhooks.release_leases, owner)

    async def next_delivery_due(self, limits: SenderLimits) -> int | None:
        return await self.db.read(webhooks.next_due, limits)

    async def event_deliveries(self, event_id: str) -> list[DeliveryView]:
        return await self.db.read(webhooks.deliveries_of_event, event_id)

    async def webhook_delivery(self, merchant_id: str, delivery_id: str) -> Delivery | None:
        return await self.db.read(webhooks.delivery_of, merchant_id, delivery_id)

    async def webhook_deliveries_page(
        self,
        merchant_id: str,
        endpoint_id: str | None,
        event_id: str | None,
        status: str | None,
        after: tuple[int, str] | None,
        limit: int,
    ) -> list[Delivery]:
        return await self.db.read(
            webhooks.deliveries_page, merchant_id, endpoint_id, event_id, status, after, limit
        )

    # -- idempotency ---------------------------------------------------------------------

    async def claim_idempotency_key(
        self, scope: Scope, request_hash: str, owner: str, now_us: int
    ) -> Claim:
        return await self.db.write(idempotency.claim, scope, request_hash, owner, now_us)

    async def complete_idempotency_key(self, completion: Completion) -> None:
        await self.db.write(idempotency.complete, completion)

    async def release_idempotency_key(self, scope: Scope, owner: str) -> None:
        await self.db.write(idempotency.release, scope, owner)

    async def purge_idempotency_keys(self, now_us: int, limit: int = 1000) -> int:
        return await self.db.write(idempotency.purge_expired, now_us, limit)

    # -- rate limits -----------------------------------------------------------------------

    async def reserve_rate_tokens(
        self, bucket_key: str, want: int, rate: float, burst: int, now_us: int
    ) -> Reservation:
        return await self.db.write(rate_limits.reserve, bucket_key, want, rate, burst, now_us)

    async def purge_rate_limit_buckets(self, older_than_us: int, limit: int = 1000) -> int:
        return await self.db.write(rate_limits.purge_full, older_than_us, limit)


@asynccontextmanager
async def open_storage(
    database_url: str, pool_size: int = 10, timeout_seconds: float = 5.0
) -> AsyncIterator[Storage]:
    """Open the database named by `database_url`, apply migrations, and yield `Storage`.

    `timeout_seconds` bounds each wait on the database (connect, pool, statement, lock).

    Closing commits the queued writes, then closes every connection.
    """
    migrations = load_migrations()
    db: PostgresDatabase | SqliteDatabase
    if database_url.startswith(("postgresql://", "postgres://")):
        db = PostgresDatabase(database_url, pool_size, timeout_seconds)
    else:
        db = SqliteDatabase(sqlite_path(database_url), timeout_seconds)
    await trio.to_thread.run_sync(db.start, migrations)
    try:
        yield Storage(db)
    finally:
        # Shielded: the writes the service makes while it stops (leases handed back)
        # commit before the connections close.
        with trio.CancelScope(shield=True):
            await db.stop()
