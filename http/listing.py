"""The merchant API's list and retrieve routes, written once for every resource.

A list: the query string through the resource's query model (every unknown, repeated or
bad parameter named in one 400), one page of the merchant's items newest first, in the
list envelope (`Page`). A retrieve: the merchant's item by the id in the path (404 for an
unknown id or another merchant's), in its wire form. A resource says only what differs:
its query model, how to fetch a page or one item, and its wire form; the route's
`@operation` declaration is passed on, so the OpenAPI document is built as for any view.
"""

from __future__ import annotations

import re
from collections.abc import Awaitable, Callable
from functools import partial
from typing import Any, Protocol, TypeVar, overload

from fgcpay.domain.lists import envelope, parse_query, reject_query
from fgcpay.web.plumbing import current_service, principal
from fgcpay.web.responses import json_response
from fgcpay.web.service import Service
from pydantic import BaseModel
from quart import Blueprint, Response, request
from werkzeug.datastructures import MultiDict

from .operations import operation


class Identified(Protocol):
    """A listed item: its id is the next page's cursor."""

    @property
    def id(self) -> str: ...


Item = TypeVar("Item", bound=Identified)
Found = TypeVar("Found")
Query = TypeVar("Query", bound=BaseModel)
# The items' wire form in the running service (a wire form may name its public URL): asked
# once a request, then applied to each item.
Wire = Callable[[Service], Callable[[Found], Any]]
# (service, merchant id, query) -> (a page of the merchant's items, whether more follow)
PageOf = Callable[[Service, str, Query], Awaitable[tuple[list[Item], bool]]]
Linked = TypeVar("Linked", contravariant=True)


class StatusQuery(Protocol):
    """A list's query with the usual filter, `status`, beside `limit` and `starting_after`."""

    @property
    def limit(self) -> int: ...
    @property
    def status(self) -> str | None: ...
    @property
    def starting_after(self) -> str | None: ...


class StatusPage(Protocol[Item]):
    """A service's page of a merchant's items by status (the resource's `page` method)."""

    def __call__(
        self, merchant_id: str, /, *, status: str | None, starting_after: str | None, limit: int
    ) -> Awaitable[tuple[list[Item], bool]]: ...


def by_status(
    page: Callable[[Service], StatusPage[Item]],
) -> Callable[[Service, str, StatusQuery], Awaitable[tuple[list[Item], bool]]]:
    """A list's `page` for a query of the usual parameters: the service's `page` method."""
    return lambda service, merchant_id, query: page(service)(
        merchant_id, status=query.status, starting_after=query.starting_after, limit=query.limit
    )


class LinkedWire(Protocol[Linked]):
    """A wire form that names the service's public URL (a `checkout_url`)."""

    def __call__(self, item: Linked, /, public_url: str) -> Any: ...


def linked(to_json: LinkedWire[Found]) -> Wire[Found]:
    """`to_json` as a `Wire`: given the running service's public URL."""
    return lambda service: partial(to_json, public_url=service.settings.public_url)


@overload
def list_route(
    blueprint: Blueprint,
    rule: str,
    *,
    query: type[Query],
    page: PageOf[Query, Item],
    wire: Wire[Item],
    **declared: Any,
) -> None: ...


@overload
def list_route(
    blueprint: Blueprint,
    rule: str,
    *,
    query: None,
    page: Callable[[Service, str, None], Awaitable[tuple[list[Item], bool]]],
    wire: Wire[Item],
    **declared: Any,
) -> None: ...


def list_route(
    blueprint: Blueprint,
    rule: str,
    *,
    query: type[BaseModel] | None,
    page: Callable[[Service, str, Any], Awaitable[tuple[list[Item], bool]]],
    wire: Wire[Item],
    **declared: Any,
) -> None:
    """Register `GET rule` on `blueprint`: a page of the merchant's items.

    `query` is the list's query model (`None`: the list takes no parameters and any is
    400), `page` fetches a page for the parsed query, `wire` is the items' wire form, and
    `declared` the operation's declaration for the document (its status is 200; its query
    is `query`)."""
    parse = _parser(query)

    async def view() -> Response:
        parsed = parse(request.args)
        service = current_service()
        rows, has_more = await page(service, principal().merchant.id, parsed)
        to_wire = wire(service)
        data = [to_wire(row) for row in rows]
        return json_response(envelope(data, has_more, rows[-1].id if rows else None))

    declared.update(status=200, query=query, rejects_query=query is None)
    _add(blueprint, rule, view, declared)


def _parser(query: type[BaseModel] | None) -> Callable[[MultiDict[str, str]], Any]:
    if query is None:
        return reject_query
    return lambda args: parse_query(query, args.to_dict(flat=False))


def get_route(
    blueprint: Blueprint,
    rule: str,
    *,
    get: Callable[[Service], Callable[[str, str], Awaitable[Found]]],
    wire: Wire[Found],
    respond: Callable[[Any], Response] = json_response,
    **declared: Any,
) -> None:
    """Register `GET rule` on `blueprint` (`rule` ends in the id's path parameter): the
    merchant's item, `respond(wire(item))`, a JSON answer unless `respond` says otherwise.

    `get` is the service's lookup by (merchant id, item id), raising NotFound (a 404) for
    an unknown id or another merchant's; `declared` is the operation's declaration for the
    document (its status is 200)."""
    found = re.fullmatch(r".*/<(\w+)>", rule)
    if found is None:
        raise ValueError(f"{rule} does not end in a path parameter")
    name = found[1]

    async def view(**path: str) -> Response:
        service = current_service()
        item = await get(service)(principal().merchant.id, path[name])
        return respond(wire(service)(item))

    declared.update(status=200)
    _add(blueprint, rule, view, declared)


def _add(
    blueprint: Blueprint,
    rule: str,
    view: Callable[..., Awaitable[Response]],
    declared: dict[str, Any],
) -> None:
    # The endpoint is the operation id in snake case, as a hand-written view's name would be
    # (`listCheckoutSessions` -> `list_checkout_sessions`).
    endpoint = re.sub(r"(?<!^)(?=[A-Z])", "_", declared["operation_id"]).lower()
    view.__name__ = view.__qualname__ = endpoint
    blueprint.add_url_rule(rule, endpoint, operation(**declared)(view), methods=["GET"])
