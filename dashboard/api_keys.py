"""`/dashboard/api-keys` (Dashboard > Merchant API): the merchant's keys, creating a named
key (the raw key shown once, on the page that answers the form), revoking one after a
confirmation. A revoked key is refused at once by every process: API authentication
reads the key from the database on every request, with no cache.

The create form carries a one-use token besides its CSRF token (which is the same for
every form of the browser's session): the key it makes is stored with the token's hash,
so sending that form again (a refresh of the "key created" page, a double click, on any
process) makes no second key, and answers a page naming the key without its raw value."""

from __future__ import annotations

import hashlib
import secrets

from fgcpay.domain import limits
from fgcpay.domain.fields import unreadable
from fgcpay.domain.merchants import new_api_key
from fgcpay.storage import merchants
from fgcpay.web.plumbing import current_service
from quart import Response, request

from ._pages import blueprint, current, form_expired, not_found, render, see_other, signed_in

MAX_NAME_LENGTH = 100
# The one-use token of a create form: 32 characters of `secrets.token_urlsafe`; a longer
# one is no token of ours.
MAX_FORM_TOKEN_LENGTH = 64
# A key id is `key_` and 16 characters; a longer `?revoked=` names none of ours.
MAX_KEY_ID_LENGTH = 64


async def _list(status: int = 200, *, name: str = "", problem: str | None = None) -> Response:
    service = current_service()
    merchant_id = current().merchant.id
    # Every active key (they are bounded) and only the most recently revoked (they are not).
    shown = await service.db.read(
        merchants.api_keys_shown, merchant_id, limits.MOST_REVOKED_API_KEYS_SHOWN
    )
    # The notice after a revocation (`?revoked=<id>`) names the key only once it is revoked.
    asked = request.args.get("revoked", "")[:MAX_KEY_ID_LENGTH]
    revoked = None
    if asked:
        key = await service.db.read(merchants.api_key_of, merchant_id, asked)
        revoked = key if key is not None and key.revoked_at is not None else None
    return await render(
        "api_keys.html",
        status,
        keys=shown.active + shown.revoked,
        revoked_not_shown=shown.revoked_not_shown,
        most_active=limits.MAX_ACTIVE_API_KEYS_PER_MERCHANT,
        name=name,
        problem=problem,
        revoked=revoked,
        form_token=secrets.token_urlsafe(24),
    )


@blueprint.get("/api-keys")
@signed_in
async def api_keys() -> Response:
    return await _list()


@blueprint.post("/api-keys")
@signed_in
async def create_api_key() -> Response:
    service = current_service()
    form = await request.form
    form_token = form.get("form_token", "")
    if not 1 <= len(form_token) <= MAX_FORM_TOKEN_LENGTH:
        return await form_expired()  # a page from before the token: reloaded, it has one
    name = form.get("name", "").strip()
    if not 1 <= len(name) <= MAX_NAME_LENGTH:
        problem = f"Give the key a name of 1 to {MAX_NAME_LENGTH} characters."
        return await _list(400, name=name[:MAX_NAME_LENGTH], problem=problem)
    if unreadable_name := unreadable(name):
        return await _list(
            400, name=name, problem=f"The key name must not contain {unreadable_name}."
        )
    key = new_api_key(current().merchant.id, service.clock.now_us(), name)
    token_hash = hashlib.sha256(form_token.encode()).hexdigest()
    most = limits.MAX_ACTIVE_API_KEYS_PER_MERCHANT
    stored = await service.db.write(merchants.insert_api_key_once, key.record, token_hash, most)
    if stored is None:
        problem = f"You have {most} active keys, the most one may have: revoke one first."
        return await _list(409, name=name, problem=problem)
    if stored.id != key.record.id:
        # This form was sent before: its key was shown then, and only then.
        return await render("api_key_already_created.html", key=stored)
    # Answered here, not after a redirect: the raw key is never stored anywhere to be
    # shown on a later page (and the answer is never cached: `Cache-Control: no-store`).
    return await render("api_key_created.html", 201, key=key.record, raw_key=key.raw)


@blueprint.get("/api-keys/<key_id>/revoke")
@signed_in
async def confirm_revoke(key_id: str) -> Response:
    key = await current_service().db.read(merchants.api_key_of, current().merchant.id, key_id)
    if key is None:
        return await not_found()
    return await render("api_key_revoke.html", key=key)


@blueprint.post("/api-keys/<key_id>/revoke")
@signed_in
async def revoke(key_id: str) -> Response:
    service = current_service()
    merchant_id = current().merchant.id
    if await service.db.read(merchants.api_key_of, merchant_id, key_id) is None:
        return await not_found()
    await service.db.write(merchants.revoke_api_key, merchant_id, key_id, service.clock.now_us())
    return see_other(f"/dashboard/api-keys?revoked={key_id}")
