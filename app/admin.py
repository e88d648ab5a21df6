"""Operator actions shared by the command line and the tests: creating merchants."""

from __future__ import annotations

import time

import attrs
from email_validator import EmailNotValidError, validate_email
from fgcpay.actors.webhook_endpoints import WebhookEndpoints
from fgcpay.clock import SystemClock
from fgcpay.domain import ids
from fgcpay.domain.merchants import Merchant, hash_password, new_api_key, normalize_email
from fgcpay.domain.secret_box import SecretBox
from fgcpay.settings import Settings
from fgcpay.storage import Storage


class MerchantInputError(Exception):
    """The operator's input cannot create a merchant; the message says why."""


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
        email = normalize_email(
            validate_email(email.strip(), check_deliverability=False).normalized
        )
    except EmailNotValidError as error:
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
