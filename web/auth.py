"""Bearer authentication with API keys, per the contract."""

from __future__ import annotations

import hmac
from collections.abc import Sequence

import attrs
from fgcpay.domain import errors, ids
from fgcpay.domain.merchants import ApiKey, Merchant
from fgcpay.storage import Database, merchants

KEY_BODY_LENGTH = 32


@attrs.frozen
class Principal:
    merchant: Merchant
    api_key: ApiKey


def _invalid(message: str = "Invalid API key.") -> errors.Unauthenticated:
    return errors.Unauthenticated(message)


async def authenticate(db: Database, authorizations: Sequence[str]) -> Principal:
    """The merchant behind `Authorization: Bearer <key>` (every value of the header, as
    received), or 401 `invalid_api_key`.

    The message names the kind of problem but never echoes the key.
    """
    if len(authorizations) > 1:
        # Two keys (perhaps two merchants'): picking one would act for the wrong merchant.
        raise _invalid("Send exactly one Authorization header.")
    authorization = authorizations[0] if authorizations else None
    if not authorization:
        raise _invalid("Missing API key. Send it as the header Authorization: Bearer fp_test_...")
    scheme, _, token = authorization.strip().partition(" ")
    token = token.strip()
    if scheme.lower() != "bearer" or not token:
        raise _invalid("Malformed Authorization header. Use: Authorization: Bearer fp_test_...")
    if token.startswith(ids.LIVE_KEY_PREFIX):
        raise _invalid("Live mode is not enabled. Use a test key (fp_test_...).")
    if not ids.looks_like_id(token, ids.API_KEY_PREFIX, KEY_BODY_LENGTH):
        raise _invalid()
    found, refused = await _look_up(db, ids.api_key_hash(token))
    if refused is not None:
        raise refused
    assert found is not None
    return found


async def refusal_now(db: Database, caller: Principal) -> errors.Unauthenticated | None:
    """The 401 `caller`'s key would get if the request came now (revoked, or its merchant
    deleted with its sandbox while the request ran), or None while the key still holds."""
    return (await _look_up(db, caller.api_key.key_hash))[1]


async def _look_up(
    db: Database, key_hash: str
) -> tuple[Principal | None, errors.Unauthenticated | None]:
    found = await db.read(merchants.api_key_by_hash, key_hash)
    if found is None:
        return None, _invalid()
    api_key, merchant = found
    # The lookup is by hash; comparing again in constant time keeps the check itself
    # free of timing differences whatever the database does.
    if not hmac.compare_digest(api_key.key_hash, key_hash):
        return None, _invalid()
    if api_key.revoked_at is not None:
        return None, _invalid("This API key has been revoked.")
    return Principal(merchant=merchant, api_key=api_key), None
