"""`/api/v1/sandboxes`: create (with the sandbox's key, shown once), list, retrieve,
delete. Every route refuses a sandbox's own key (403 `sandboxes_not_allowed`)."""

from __future__ import annotations

from collections.abc import Awaitable, Callable

from fgcpay.domain import sandboxes
from fgcpay.domain.lists import Page
from fgcpay.domain.sandboxes import Sandbox, SandboxQuery
from fgcpay.web.body import json_object
from fgcpay.web.plumbing import current_service, principal
from fgcpay.web.responses import json_response
from fgcpay.web.service import Service
from quart import Blueprint, Response

from .idempotency import decided_by, idempotent_secret
from .listing import get_route, list_route
from .operations import operation

blueprint = Blueprint("sandboxes", __name__, url_prefix="/api/v1/sandboxes")
TAG = "Sandboxes"


@blueprint.post("")
@operation(
    operation_id="createSandbox",
    summary="Create a sandbox: an isolated merchant of your own, with its API key",
    description=(
        "A sandbox is a merchant of its own: everything made with its key is its alone, "
        "and neither your key nor its key sees the other's objects (404). `ttl_seconds` "
        "deletes it with all its data within a minute of `expires_at`. At most 1,000 live "
        "sandboxes per merchant (409 `sandbox_limit_reached`); a sandbox's key cannot make "
        "sandboxes (403 `sandboxes_not_allowed`)."
    ),
    tag=TAG,
    body=sandboxes.SandboxCreate,
    body_optional=True,
    status=201,
    answer="Created; the answer carries the sandbox's API key, shown this once.",
    schema=sandboxes.CreatedSandboxWire,
    idempotent=True,
    conflicts=True,
    forbids=True,
)
@idempotent_secret
async def create_sandbox() -> Response:
    service = current_service()
    parent = principal().merchant
    await service.sandboxes.check_allowed(parent.id)
    parsed = sandboxes.parse_create(await json_object(allow_empty=True))
    return await decided_by(
        201,
        lambda answer: service.sandboxes.create(
            parent, parsed, lambda sandbox, key: answer((sandbox, key))
        ),
        lambda made: sandboxes.to_json(made[0], made[1]),
    )


async def _page(
    service: Service, merchant_id: str, query: SandboxQuery
) -> tuple[list[Sandbox], bool]:
    await service.sandboxes.check_allowed(merchant_id)
    return await service.sandboxes.page(merchant_id, query.starting_after, query.limit)


def _get(service: Service) -> Callable[[str, str], Awaitable[Sandbox]]:
    async def get(merchant_id: str, sandbox_id: str) -> Sandbox:
        await service.sandboxes.check_allowed(merchant_id)
        return await service.sandboxes.get(merchant_id, sandbox_id)

    return get


list_route(
    blueprint,
    "",
    query=SandboxQuery,
    page=_page,
    wire=lambda _: sandboxes.to_json,
    operation_id="listSandboxes",
    summary="List your live sandboxes, newest first",
    tag=TAG,
    answer="A page of sandboxes (never their keys).",
    schema=Page[sandboxes.SandboxWire],
    forbids=True,
)
get_route(
    blueprint,
    "/<sandbox_id>",
    get=_get,
    wire=lambda _: sandboxes.to_json,
    operation_id="getSandbox",
    summary="Retrieve a sandbox (never its key)",
    tag=TAG,
    answer="The sandbox.",
    schema=sandboxes.SandboxWire,
    forbids=True,
)


@blueprint.delete("/<sandbox_id>")
@operation(
    operation_id="deleteSandbox",
    summary="Delete a sandbox with all its data",
    description=(
        "From this answer on its key is 401 on every process, its hosted pages are 404, "
        "none of its webhooks is sent any more, and none of its rows remain. Your balance "
        "and ledger are untouched."
    ),
    tag=TAG,
    status=200,
    answer="Deleted.",
    schema=sandboxes.DeletedSandboxWire,
    forbids=True,
)
async def delete_sandbox(sandbox_id: str) -> Response:
    service = current_service()
    merchant_id = principal().merchant.id
    await service.sandboxes.check_allowed(merchant_id)
    deleted = await service.sandboxes.delete(merchant_id, sandbox_id)
    return json_response(sandboxes.deleted_to_json(deleted.id))
