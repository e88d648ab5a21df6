"""Operator actions shared by the command line and the tests: creating merchants, lifting
wrong-PIN locks."""

from __future__ import annotations

import time

import attrs
from fgcpay.actors.webhook_endpoints import WebhookEndpoints
from fgcpay.clock import SystemClock
from fgcpay.domain import customers, ids
from fgcpay.domain.fields import EmailError, email_address
from fgcpay.domain.merchants import Merchant, hash_password, new_api_key, normalize_email
from fgcpay.domain.secret_box import SecretBox
from fgcpay.settings import Settings
from fgcpay.storage import Storage


class MerchantInputError(Exception):
    """The operator's input cannot create a merchant; the message says why."""


class UnlockInputError(Exception):
    """The operator's input names no lock that could be lifted; the message says why."""


@attrs.frozen
class CreatedMerchant:
    merchant: Merchant
    api_key: str = attrs.field(repr=False)  # the raw key, shown once


async def create_merchant(
    storage: Storage, name: str, email: str, password: str | None = None, now_us: int | None = None
) -> CreatedMerchant:
    """Create a merchant with one new test API key; the raw key is returned, never stored."""
    name = name.strip()
    if not 1 <= len(name) <= 200:
        raise MerchantInputError("the name must be 1 to 200 characters")
    try:
        # The same offline syntax rule as customer_email: owner@acme.test is fine.
        email = normalize_email(email_address(email.strip()))
    except EmailError as error:
        raise MerchantInputError(f"invalid email: {error}") from None
    if password is not None and len(password) < 10:
        raise MerchantInputError("the password must be at least 10 characters")
    now = time.time_ns() // 1000 if now_us is None else now_us
    merchant = Merchant(
        id=ids.merchant_id(),
        name=name,
        email=email,
        created_at=now,
        password_hash=hash_password(password) if password else None,
    )
    key = new_api_key(merchant.id, now)
    if not await storage.create_merchant(merchant, key.record):
        raise MerchantInputError(f"a merchant with the email {email} already exists")
    return CreatedMerchant(merchant=merchant, api_key=key.raw)


def webhook_endpoints(storage: Storage, settings: Settings) -> WebhookEndpoints:
    """Endpoint operations for the command line (the running service polls the outbox)."""
    return WebhookEndpoints(
        storage, SystemClock(), SecretBox(settings.secret_key), settings.webhook_allow_private
    )


async def unlock_customer(
    storage: Storage, code: str, merchant_id: str | None, now_us: int | None = None
) -> tuple[str, int]:
    """Lift a customer code's wrong-PIN lock and forget its wrong PINs.

    A test customer's lock is kept per merchant: with `merchant_id` only that merchant's
    is lifted, without it every merchant's. Any other code has one lock for all merchants.
    Returns the normalized code and how many running locks were lifted.
    """
    code = customers.normalize_code(code)
    if not code or len(code) > customers.MAX_CODE_LENGTH:
        raise UnlockInputError(
            f"a customer code is 1 to {customers.MAX_CODE_LENGTH} characters"
        )
    scope = None
    if merchant_id is not None:
        if await storage.merchant(merchant_id) is None:
            raise UnlockInputError(f"no merchant {merchant_id}")
        scope = customers.lock_scope(code, merchant_id)
    now = time.time_ns() // 1000 if now_us is None else now_us
    return code, await storage.unlock_customer(code, scope, now)
