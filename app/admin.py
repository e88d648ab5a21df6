"""Operator actions shared by the command line and the tests: creating merchants, managing
their API keys, lifting wrong-PIN locks, reading the webhook delivery log, reviewing
refunds, verifying the balance's running totals against the ledger and managing a
merchant's sandboxes."""

from __future__ import annotations

import time
from collections.abc import AsyncIterator

import attrs
import trio
from fgcpay.accounts.sandboxes import Sandboxes
from fgcpay.actors.command_host import command_host
from fgcpay.actors.refunds import Refunds
from fgcpay.core.clock import SystemClock
from fgcpay.core.settings import Settings
from fgcpay.domain import balances, customers, ids, limits
from fgcpay.domain.balances import Totals
from fgcpay.domain.deliveries import Delivery, parse_delivery_query
from fgcpay.domain.errors import ServiceError, ValidationFailed
from fgcpay.domain.fields import EmailError, email_address, unreadable
from fgcpay.domain.lists import MAX_LIMIT
from fgcpay.domain.merchants import (
    ApiKey,
    Merchant,
    hash_password,
    new_api_key,
    normalize_email,
    password_problem,
)
from fgcpay.domain.refunds import Refund
from fgcpay.domain.sandboxes import Sandbox
from fgcpay.domain.secret_box import SecretBox
from fgcpay.storage import Database, merchants
from fgcpay.storage import balances as balance_rows
from fgcpay.storage import customers as customer_rows
from fgcpay.webhooks.delivery_log import DeliveryLog
from fgcpay.webhooks.endpoints import WebhookEndpoints


class MerchantInputError(Exception):
    """The operator's input cannot create a merchant; the message says why."""


class KeyInputError(Exception):
    """The operator's input names no merchant or key to act on; the message says why."""


class UnlockInputError(Exception):
    """The operator's input names no lock that could be lifted; the message says why."""


@attrs.frozen
class CreatedMerchant:
    merchant: Merchant
    api_key: str = attrs.field(repr=False)  # the raw key, shown once


async def create_merchant(
    db: Database, name: str, email: str, password: str | None = None, now_us: int | None = None
) -> CreatedMerchant:
    """Create a merchant with one new test API key; the raw key is returned, never stored."""
    name = name.strip()
    if not 1 <= len(name) <= 200:
        raise MerchantInputError("the name must be 1 to 200 characters")
    if problem := unreadable(name):  # the hosted page shows it to customers
        raise MerchantInputError(f"the name must not contain {problem}")
    try:
        # The same offline syntax rule as customer_email: owner@acme.test is fine.
        email = normalize_email(email_address(email.strip()))
    except EmailError as error:
        raise MerchantInputError(f"invalid email: {error}") from None
    if password is not None and (problem := password_problem(password)):
        raise MerchantInputError(_operator_words(problem))
    now = time.time_ns() // 1000 if now_us is None else now_us
    merchant = Merchant(
        id=ids.merchant_id(),
        name=name,
        email=email,
        created_at=now,
        password_hash=await trio.to_thread.run_sync(hash_password, password) if password else None,
    )
    key = new_api_key(merchant.id, now)
    if not await db.write(merchants.insert_merchant, merchant, key.record):
        raise MerchantInputError(f"a merchant with the email {email} already exists")
    return CreatedMerchant(merchant=merchant, api_key=key.raw)


def _operator_words(problem: str) -> str:
    # The dashboard's sentence ("The password must ...") as one line of the command.
    return problem[0].lower() + problem[1:].rstrip(".")


async def set_password(db: Database, merchant_id: str, password: str) -> Merchant:
    """Set (or reset) a merchant's dashboard password; its signed-in sessions end.

    Raises MerchantInputError for an unknown merchant or a password the dashboard refuses.
    """
    if problem := password_problem(password):
        raise MerchantInputError(_operator_words(problem))
    merchant = await db.read(merchants.merchant_by_id, merchant_id)
    if merchant is None:
        raise MerchantInputError(f"no merchant {merchant_id}")
    password_hash = await trio.to_thread.run_sync(hash_password, password)
    if not await db.write(merchants.set_password_hash, merchant_id, password_hash, True):
        raise MerchantInputError(f"no merchant {merchant_id}")
    return merchant


@attrs.frozen
class CreatedKey:
    key: ApiKey
    api_key: str = attrs.field(repr=False)  # the raw key, shown once


MAX_KEY_NAME_LENGTH = 100


async def create_api_key(
    db: Database, merchant_id: str, name: str | None = None, now_us: int | None = None
) -> CreatedKey:
    """A new test API key for the merchant; the raw key is returned, never stored.

    Raises KeyInputError for an unknown merchant, a name over 100 characters, or a
    merchant that has the most active keys already (`domain.limits`).
    """
    if name is not None:
        name = name.strip() or None
    if name is not None and len(name) > MAX_KEY_NAME_LENGTH:
        raise KeyInputError(f"a key name is at most {MAX_KEY_NAME_LENGTH} characters")
    if name is not None and (problem := unreadable(name)):
        raise KeyInputError(f"the key name must not contain {problem}")
    await _existing_merchant(db, merchant_id)
    now = time.time_ns() // 1000 if now_us is None else now_us
    key = new_api_key(merchant_id, now, name)
    most = limits.MAX_ACTIVE_API_KEYS_PER_MERCHANT
    if not await db.write(merchants.insert_api_key_within, key.record, most):
        raise KeyInputError(
            f"merchant {merchant_id} has {most} active keys, the most one may have:"
            " revoke one first (fgcpay key revoke)"
        )
    return CreatedKey(key=key.record, api_key=key.raw)


async def api_keys(db: Database, merchant_id: str) -> list[ApiKey]:
    """The merchant's keys, newest first (hashes and display parts only, never raw keys)."""
    await _existing_merchant(db, merchant_id)
    return await db.read(merchants.api_keys_of, merchant_id)


async def revoke_api_key(
    db: Database, merchant_id: str, key_id: str, now_us: int | None = None
) -> ApiKey:
    """Revoke one of the merchant's keys: the next request with it is 401.

    Revoking a revoked key changes nothing. Returns the key as now stored; raises
    KeyInputError when the merchant has no such key.
    """
    await _existing_merchant(db, merchant_id)
    now = time.time_ns() // 1000 if now_us is None else now_us
    await db.write(merchants.revoke_api_key, merchant_id, key_id, now)
    for key in await db.read(merchants.api_keys_of, merchant_id):
        if key.id == key_id:
            return key
    raise KeyInputError(f"merchant {merchant_id} has no key {key_id}")


async def _existing_merchant(db: Database, merchant_id: str) -> Merchant:
    merchant = await db.read(merchants.merchant_by_id, merchant_id)
    if merchant is None:
        raise KeyInputError(f"no merchant {merchant_id}")
    return merchant


def webhook_endpoints(db: Database, settings: Settings) -> WebhookEndpoints:
    """Endpoint operations for the command line (the running service polls the outbox)."""
    return WebhookEndpoints(
        db, SystemClock(), SecretBox(settings.secret_key), settings.webhook_allow_private
    )


class DeliveryLogInputError(Exception):
    """The operator's filters cannot select deliveries; the message names the option."""


# The command's options for the API's query parameters, so an error names what was typed.
_DELIVERY_OPTIONS = {"event_id": "--event", "endpoint_id": "--endpoint", "status": "--status"}


async def delivery_log(
    db: Database,
    merchant_id: str,
    event_id: str | None = None,
    endpoint_id: str | None = None,
    status: str | None = None,
) -> AsyncIterator[Delivery]:
    """Every delivery of the merchant matching the filters, newest first, read a page at a
    time through the same log (and the same checks) as `GET /webhook_deliveries`."""
    given = {"event_id": event_id, "endpoint_id": endpoint_id, "status": status}
    args = {name: [value] for name, value in given.items() if value is not None}
    try:
        query = parse_delivery_query({**args, "limit": [str(MAX_LIMIT)]})
    except ValidationFailed as failed:
        problem = failed.errors[0]
        option = _DELIVERY_OPTIONS[problem.field]
        raise DeliveryLogInputError(f"{option}: {problem.message}") from None
    if await db.read(merchants.merchant_by_id, merchant_id) is None:
        raise DeliveryLogInputError(f"no merchant {merchant_id}")
    log = DeliveryLog(db)
    while True:
        page, has_more = await log.page(merchant_id, query)
        for delivery in page:
            yield delivery
        if not has_more:
            return
        query = attrs.evolve(query, page=attrs.evolve(query.page, starting_after=page[-1].id))


async def unlock_customer(
    db: Database, code: str, merchant_id: str | None, now_us: int | None = None
) -> tuple[str, int]:
    """Lift a customer code's wrong-PIN lock and forget its wrong PINs.

    A test customer's lock is kept per merchant: with `merchant_id` only that merchant's
    is lifted, without it every merchant's. Any other code has one lock for all merchants.
    Returns the normalized code and how many running locks were lifted.
    """
    code = customers.normalize_code(code)
    if not code or len(code) > customers.MAX_CODE_LENGTH:
        raise UnlockInputError(f"a customer code is 1 to {customers.MAX_CODE_LENGTH} characters")
    scope = None
    if merchant_id is not None:
        if await db.read(merchants.merchant_by_id, merchant_id) is None:
            raise UnlockInputError(f"no merchant {merchant_id}")
        scope = customers.lock_scope(code, merchant_id)
    now = time.time_ns() // 1000 if now_us is None else now_us
    return code, await db.write(customer_rows.unlock, code, scope, now)


class RefundInputError(Exception):
    """The operator's input names no merchant to review a refund of; the message says why."""


async def review_refund(
    db: Database, settings: Settings, merchant_id: str, refund_id: str, decision: str
) -> Refund:
    """Approve or reject (`decision`) a merchant's refund, as the test helpers and the
    dashboard do: through the actor owning the refunded payment, run here by an actor host
    of this command's own for as long as it takes (the service's processes may hold one
    for the same payment: storage's conditional writes decide between them). The refund
    as written; `ServiceError` 404 or 409 `refund_already_reviewed` as the API answers."""
    if await db.read(merchants.merchant_by_id, merchant_id) is None:
        raise RefundInputError(f"no merchant {merchant_id}")
    clock = SystemClock()
    # The running service's dispatcher finds the events on its next poll.
    host = command_host(db, clock, settings)
    outcome: Refund | ServiceError
    async with trio.open_nursery() as nursery:
        await nursery.start(host.run)
        try:
            outcome = await Refunds(db, host).review(merchant_id, refund_id, decision)
        except ServiceError as refused:
            outcome = refused  # raised below, not inside the nursery (which would group it)
        finally:
            nursery.cancel_scope.cancel()
    if isinstance(outcome, ServiceError):
        raise outcome
    return outcome


class LedgerInputError(Exception):
    """The operator's input names no merchant to verify; the message says why."""


@attrs.frozen
class LedgerCheck:
    """One merchant's running totals beside the same recomputed from its ledger and its
    refunds, and the payments whose reserved amount disagrees with their refunds."""

    merchant_id: str
    running: Totals
    recomputed: Totals
    reservations: tuple[balance_rows.Reservation, ...]

    @property
    def differences(self) -> list[tuple[str, int, int]]:
        return balances.differences(self.running, self.recomputed)

    @property
    def agrees(self) -> bool:
        return not self.differences and not self.reservations


async def verify_ledger(db: Database, merchant_id: str | None = None) -> list[LedgerCheck]:
    """Every merchant's (or one's) totals recomputed from the ledger and the refunds and
    compared with the running totals `GET /balance` reads, by merchant id."""
    if merchant_id is not None and await db.read(merchants.merchant_by_id, merchant_id) is None:
        raise LedgerInputError(f"no merchant {merchant_id}")
    recounts = await db.read(balance_rows.recount, merchant_id)
    off = await db.read(balance_rows.reservations_off, merchant_id)
    return [
        LedgerCheck(
            merchant_id=recount.merchant_id,
            running=recount.running,
            recomputed=recount.recomputed,
            reservations=tuple(r for r in off if r.merchant_id == recount.merchant_id),
        )
        for recount in recounts
    ]


class SandboxInputError(Exception):
    """The operator's input names no merchant to act on; the message says why."""


def sandboxes(db: Database, settings: Settings) -> Sandboxes:
    """Sandbox operations for the command line: the same as the API's (`service.sandboxes`);
    a sandbox's expiry is a durable timer the running service picks up from the database."""
    return Sandboxes(db, SystemClock())


async def sandbox_parent(db: Database, merchant_id: str) -> Merchant:
    """The merchant whose sandboxes the operator names (`--merchant`)."""
    merchant = await db.read(merchants.merchant_by_id, merchant_id)
    if merchant is None:
        raise SandboxInputError(f"no merchant {merchant_id}")
    return merchant


async def all_sandboxes(
    db: Database, settings: Settings, merchant_id: str
) -> AsyncIterator[Sandbox]:
    """Every sandbox of the merchant, newest first, read a page at a time through the same
    pages as `GET /sandboxes`."""
    await sandbox_parent(db, merchant_id)
    found = sandboxes(db, settings)
    after: str | None = None
    while True:
        page, has_more = await found.page(merchant_id, after, MAX_LIMIT)
        for sandbox in page:
            yield sandbox
        if not has_more or not page:
            return
        after = page[-1].id
