"""`/dashboard/sandboxes`: the merchant's sandboxes (isolated, disposable merchants for
parallel test runs), newest first and paged as the other lists; creating one (a name, a
time to live) with its API key shown once, on the page that answers the form; deleting
one after a confirmation. Every change is `service.sandboxes`, the code the API runs
(`POST`/`GET`/`DELETE /sandboxes`), so its limits, refusals and deletion are the same.

The create form carries a one-use token besides its CSRF token, as the API keys' does,
so that sending it again (a refresh of the "sandbox created" page, a double click, on
any process) makes no second sandbox and never shows the key again. The token is the
form's idempotency key: claimed in the idempotency records (scope: the merchant, `POST`,
this page, the token's hash) before the sandbox is made, and completed in the same
transaction as the sandbox, with only the sandbox's id (never its key) as the answer.
"""

from __future__ import annotations

import hashlib
import json
import secrets
from typing import Any
from urllib.parse import urlencode

import trio
from fgcpay.domain import errors
from fgcpay.domain.idempotency import Completion, Scope, StoredResponse, request_hash
from fgcpay.domain.lists import parse_query
from fgcpay.domain.sandboxes import Sandbox, SandboxQuery, parse_create
from fgcpay.storage import idempotency as idempotency_rows
from fgcpay.web.plumbing import current_service
from quart import Response, request, url_for

from ._listing import BAD_QUERY
from ._pages import blueprint, current, form_expired, not_found, render, see_other, signed_in

PAGE = "/dashboard/sandboxes"
# The one-use token of a create form: 32 characters of `secrets.token_urlsafe`; a longer
# one is no token of ours.
MAX_FORM_TOKEN_LENGTH = 64
# What the form keeps of a refused field to show it again (the API's own bounds are
# 100 characters for a name and 6 digits for a time to live).
KEPT_NAME = 200
KEPT_TTL = 20
# Every form's request is "this form": the token alone decides (a form sent back with
# other values is still the one form, and makes no second sandbox).
FORM_FINGERPRINT = request_hash(b"dashboard sandbox form")
# Giving up a claim of a create that failed: bounded, as the API's release is.
RELEASE_SECONDS = 5.0


def _problems(error: errors.ValidationFailed) -> dict[str, str]:
    return {problem.field: problem.message for problem in error.errors}


async def _list(
    status: int = 200,
    *,
    form: dict[str, str] | None = None,
    problems: dict[str, str] | None = None,
    refused: str | None = None,
) -> Response:
    """The list (a page of it, `limit` and `starting_after` as the API's) and the form."""
    service = current_service()
    args = {k: v for k, v in request.args.to_dict(flat=False).items() if k != "deleted"}
    problem = None
    found: list[Sandbox] = []
    has_more = False
    paged = False
    merchant_id = current().merchant.id
    try:
        await service.sandboxes.check_allowed(merchant_id)
        query = parse_query(SandboxQuery, args)
        paged = query.starting_after is not None
        found, has_more = await service.sandboxes.page(
            merchant_id, query.starting_after, query.limit
        )
    except errors.ValidationFailed:  # a cursor or limit this page did not make
        problem = BAD_QUERY
        status = 400 if status == 200 else status
    except errors.ServiceError as not_allowed:
        if not_allowed.status != 403:
            raise
        # A sandbox's own merchant (signed in with a password the operator gave it): it has
        # no sandboxes and can make none; the page says so instead of offering the form.
        return await render("sandboxes.html", 403, forbidden=not_allowed.message)
    next_url = None
    if has_more and found:
        next_url = (
            url_for("dashboard.sandboxes") + "?" + urlencode({"starting_after": found[-1].id})
        )
    return await render(
        "sandboxes.html",
        status,
        sandboxes=found,
        next_url=next_url,
        paged=paged,
        problem=problem,
        form=form or {"name": "", "ttl_seconds": ""},
        problems=problems or {},
        refused=refused,
        deleted=request.args.get("deleted") == "1",
        form_token=secrets.token_urlsafe(24),
    )


@blueprint.get("/sandboxes")
@signed_in
async def sandboxes() -> Response:
    return await _list()


def _body(form: Any) -> dict[str, Any]:
    """The form's fields as the API's body: a blank field is left out; a time to live of
    digits is a number, anything else is passed on as text for the API's rules to refuse,
    naming the field."""
    body: dict[str, Any] = {}
    name = form.get("name", "").strip()
    if name:
        body["name"] = name
    ttl = form.get("ttl_seconds", "").strip()
    if ttl:
        # Bounded before int(): a long run of digits is refused by the rules as text.
        body["ttl_seconds"] = int(ttl) if ttl.isascii() and ttl.isdigit() and len(ttl) <= 9 else ttl
    return body


@blueprint.post("/sandboxes")
@signed_in
async def create_sandbox() -> Response:
    service = current_service()
    form = await request.form
    form_token = form.get("form_token", "")
    if not 1 <= len(form_token) <= MAX_FORM_TOKEN_LENGTH:
        return await form_expired()  # a page from before the token: reloaded, it has one
    kept = {
        "name": form.get("name", "")[:KEPT_NAME],
        "ttl_seconds": form.get("ttl_seconds", "")[:KEPT_TTL],
    }
    try:
        asked = parse_create(_body(form))
    except errors.ValidationFailed as refused:
        return await _list(400, form=kept, problems=_problems(refused))
    parent = current().merchant
    token_hash = hashlib.sha256(form_token.encode()).hexdigest()
    scope = Scope(parent.id, "POST", PAGE, token_hash)
    owner = secrets.token_hex(12)
    with trio.CancelScope(shield=True):  # a claim nobody knows of would hold the form
        claim = await service.db.write(
            idempotency_rows.claim, scope, FORM_FINGERPRINT, owner, service.clock.now_us()
        )
    if not claim.owned:
        # This form was sent before: its key was shown then (or is being shown), only then.
        return await _already_created(claim.response)

    def answer(sandbox: Sandbox, api_key: str) -> Completion:
        # Only the id, never the key: it is not stored, so no later page can show it.
        body = json.dumps({"id": sandbox.id})
        return Completion(scope, owner, StoredResponse(201, {}, body))

    made = False
    try:
        sandbox, api_key = await service.sandboxes.create(parent, asked, answer)
        made = True
    except errors.ServiceError as refused:
        if refused.status not in (403, 409):
            raise
        # Refused as the API refuses it (409 past the limit, 403 for a sandbox's own
        # merchant): nothing made, the form again with the reason.
        return await _list(refused.status, form=kept, refused=refused.message)
    finally:
        if not made:
            with trio.move_on_after(RELEASE_SECONDS, shield=True):
                await service.db.write(idempotency_rows.release, scope, owner)
    # Answered here, not after a redirect: the raw key is never stored anywhere to be
    # shown on a later page (and the answer is never cached: `Cache-Control: no-store`).
    return await render("sandbox_created.html", 201, sandbox=sandbox, api_key=api_key)


async def _already_created(stored: StoredResponse | None) -> Response:
    """The answer to a form sent again: the sandbox it made, named without its key (or
    none yet, while the first sending is still making it; or gone, once deleted)."""
    sandbox = None
    if stored is not None:
        made_id = str(json.loads(stored.body)["id"])
        sandbox = await _sandbox(made_id)
    return await render("sandbox_already_created.html", sandbox=sandbox, done=stored is not None)


async def _sandbox(sandbox_id: str) -> Sandbox | None:
    try:
        return await current_service().sandboxes.get(current().merchant.id, sandbox_id)
    except errors.NotFound:
        return None


@blueprint.get("/sandboxes/<sandbox_id>/delete")
@signed_in
async def confirm_delete_sandbox(sandbox_id: str) -> Response:
    sandbox = await _sandbox(sandbox_id)
    if sandbox is None:
        return await not_found()
    return await render("sandbox_delete.html", sandbox=sandbox)


@blueprint.post("/sandboxes/<sandbox_id>/delete")
@signed_in
async def delete_sandbox(sandbox_id: str) -> Response:
    try:
        await current_service().sandboxes.delete(current().merchant.id, sandbox_id)
    except errors.NotFound:
        return await not_found()
    return see_other(f"{PAGE}?deleted=1")
