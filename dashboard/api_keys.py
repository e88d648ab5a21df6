"""`/dashboard/api-keys` (Dashboard > Merchant API): the merchant's keys, creating a named
key (the raw key shown once, on the page that answers the form), revoking one after a
confirmation. A revoked key is refused at once by every process: API authentication
reads the key from the database on every request, with no cache."""

from __future__ import annotations

from fgcpay.domain.fields import unreadable
from fgcpay.domain.merchants import new_api_key
from fgcpay.http.plumbing import current_service
from fgcpay.storage import merchants
from quart import Response, request

from ._pages import blueprint, current, not_found, render, see_other, signed_in

MAX_NAME_LENGTH = 100


async def _list(status: int = 200, *, name: str = "", problem: str | None = None) -> Response:
    service = current_service()
    keys = await service.db.read(merchants.api_keys_of, current().merchant.id)
    # The notice after a revocation (`?revoked=<id>`) names the key only once it is revoked.
    asked = request.args.get("revoked")
    revoked = next((k for k in keys if k.id == asked and k.revoked_at is not None), None)
    return await render(
        "api_keys.html", status, keys=keys, name=name, problem=problem, revoked=revoked
    )


@blueprint.get("/api-keys")
@signed_in
async def api_keys() -> Response:
    return await _list()


@blueprint.post("/api-keys")
@signed_in
async def create_api_key() -> Response:
    service = current_service()
    name = (await request.form).get("name", "").strip()
    if not 1 <= len(name) <= MAX_NAME_LENGTH:
        problem = f"Give the key a name of 1 to {MAX_NAME_LENGTH} characters."
        return await _list(400, name=name[:MAX_NAME_LENGTH], problem=problem)
    if unreadable_name := unreadable(name):
        return await _list(
            400, name=name, problem=f"The key name must not contain {unreadable_name}."
        )
    key = new_api_key(current().merchant.id, service.clock.now_us(), name)
    await service.db.write(merchants.insert_api_key, key.record)
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
