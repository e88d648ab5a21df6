"""The payments' list and detail pages, one way for every resource: a page of the
merchant's items through the same client API as its `GET` list (the same query model,
filter and keyset cursor: `storage/paging.py`), newest first with a link to the next
page; and one item through the same `get` (an unknown id, or another merchant's, is 404).
A detail page shows the resource's one wire form, the API's serializer."""

from __future__ import annotations

import json
from collections.abc import Awaitable, Callable, Mapping, Sequence
from typing import TYPE_CHECKING, Any, Generic, TypeVar
from urllib.parse import urlencode

import attrs
from fgcpay.domain import errors
from fgcpay.domain.lists import parse_list_query
from fgcpay.domain.money import format_fgc
from fgcpay.web.plumbing import current_service
from pydantic import BaseModel
from quart import Response, request, url_for

from ._pages import current, not_found, render

if TYPE_CHECKING:
    from fgcpay.web.service import Service

Item = TypeVar("Item")
# (service, merchant_id, filter value, starting_after, limit) -> (items, has_more)
PageOf = Callable[["Service", str, str | None, str | None, int], Awaitable[tuple[list[Item], bool]]]
GetOne = Callable[["Service", str, str], Awaitable[Item]]

# The payments' pages, as their tabs show them: (list endpoint, label).
TABS = [
    ("dashboard.checkout_sessions", "Checkout sessions"),
    ("dashboard.subscriptions", "Subscriptions"),
    ("dashboard.refunds", "Refunds"),
    ("dashboard.transactions", "Transactions"),
    ("dashboard.events", "Events"),
]
# A wire form's fields that name another resource: the detail page links them.
LINKS = {
    "checkout_session_id": "dashboard.checkout_session",
    "subscription_id": "dashboard.subscription",
    "refund_id": "dashboard.refund",
    "transaction_id": "dashboard.transaction",
}
BAD_QUERY = "This filter or page link is not valid: showing nothing. Start again from the newest."


@attrs.frozen
class Listing(Generic[Item]):
    """One resource's pages: `endpoint` lists, `detail` shows one (by `item_id`)."""

    endpoint: str
    detail: str
    title: str  # "Checkout sessions"
    noun: str  # "checkout session"
    query: type[BaseModel]
    filter_name: str  # "status", or "type" for transactions and events
    choices: Sequence[str]
    columns: Sequence[str]
    page: PageOf[Item]
    get: GetOne[Item]
    cells: Callable[[Item], Sequence[str]]  # the row's cells; the first links to it
    item_id: Callable[[Item], str]


def amount(minor: int, currency: str) -> str:
    return f"{format_fgc(minor)} {currency}"


def shown(value: Any) -> str:
    """A wire form's value as the detail page shows it."""
    if value is None:
        return "\u2014"
    if isinstance(value, dict | list):
        return json.dumps(value, indent=2, ensure_ascii=False) if value else "{}"
    if isinstance(value, bool):
        return "true" if value else "false"
    return str(value)


async def list_page(listing: Listing[Item]) -> Response:
    service = current_service()
    # An empty choice of the filter's form is no filter.
    args = {k: v for k, v in request.args.to_dict(flat=False).items() if any(v)}
    chosen = args.get(listing.filter_name, [""])[0]
    context: dict[str, Any] = {"listing": listing, "tabs": TABS, "chosen": chosen}
    try:
        query = parse_list_query(listing.query, args, listing.filter_name)
        items, has_more = await listing.page(
            service, current().merchant.id, query.status, query.starting_after, query.limit
        )
    except errors.ValidationFailed:
        return await render("list.html", 400, rows=[], next_url=None, problem=BAD_QUERY, **context)
    rows = [(url_for(listing.detail, item_id=listing.item_id(i)), listing.cells(i)) for i in items]
    next_url = None
    if has_more:
        after = {"starting_after": listing.item_id(items[-1])}
        if query.status:
            after[listing.filter_name] = query.status
        next_url = url_for(listing.endpoint) + "?" + urlencode(after)
    return await render(
        "list.html", rows=rows, next_url=next_url, paged=bool(query.starting_after), **context
    )


async def find(listing: Listing[Item], item_id: str) -> Item | None:
    """The merchant's item, or None (404) for an unknown id or another merchant's."""
    try:
        return await listing.get(current_service(), current().merchant.id, item_id)
    except errors.NotFound:
        return None


async def detail_page(
    listing: Listing[Item],
    item_id: str,
    wire: Callable[[Item], Mapping[str, Any]],
    status: int = 200,
    **extra: Any,
) -> Response:
    """The item's page: its wire form's fields (ids of other resources linked), and
    whatever `extra` the resource's template adds (its actions, a notice)."""
    item = await find(listing, item_id)
    if item is None:
        return await not_found()
    fields = [
        (name, shown(value), _link(name, value, listing.item_id(item)))
        for name, value in wire(item).items()
    ]
    return await render(
        "detail.html", status, listing=listing, tabs=TABS, item=item, fields=fields, **extra
    )


def _link(name: str, value: Any, own_id: str) -> str | None:
    endpoint = LINKS.get(name)
    if endpoint is None or not isinstance(value, str) or value == own_id:
        return None
    return url_for(endpoint, item_id=value)
