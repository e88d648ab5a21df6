"""`/dashboard/transactions` (the ledger, by type) and `/dashboard/events` (the events of
the last 30 days, by type; an event's page shows the exact body its deliveries send,
pretty-printed): reads only, through the same client APIs as the API's lists."""

from __future__ import annotations

import json
from typing import Any

from fgcpay.domain import transactions
from fgcpay.domain.events import EVENT_TYPES, Event, EventQuery
from fgcpay.domain.transactions import Transaction
from quart import Response, url_for

from ._listing import Listing, amount, detail_page, list_page
from ._pages import blueprint, signed_in, when

TRANSACTIONS: Listing[Transaction] = Listing(
    endpoint="dashboard.transactions",
    detail="dashboard.transaction",
    title="Transactions",
    noun="transaction",
    query=transactions.TransactionQuery,
    filter_name="type",
    choices=transactions.TYPES,
    columns=("Type", "Amount", "Of", "Created"),
    page=lambda service, *page: service.ledger.page(*page),
    get=lambda service, merchant_id, item_id: service.ledger.get(merchant_id, item_id),
    cells=lambda t: (
        t.kind,
        amount(t.amount_minor, t.currency),
        t.refund_id or t.subscription_id or t.checkout_session_id or "\u2014",
        when(t.created_at),
    ),
    item_id=lambda t: t.id,
)

EVENTS: Listing[Event] = Listing(
    endpoint="dashboard.events",
    detail="dashboard.event",
    title="Events",
    noun="event",
    query=EventQuery,
    filter_name="type",
    choices=EVENT_TYPES,
    columns=("Type", "About", "Created"),
    page=lambda service, *page: service.webhook_endpoints.events(*page),
    get=lambda service, merchant_id, item_id: service.webhook_endpoints.event(merchant_id, item_id),
    cells=lambda e: (e.type, e.resource_id, when(e.created_at)),
    item_id=lambda e: e.id,
)


def _event_fields(event: Event) -> dict[str, Any]:
    body: dict[str, Any] = json.loads(event.body)
    return {name: value for name, value in body.items() if name != "data"}


@blueprint.get("/transactions", endpoint="transactions")
@signed_in
async def transactions_list() -> Response:
    return await list_page(TRANSACTIONS)


@blueprint.get("/transactions/<item_id>")
@signed_in
async def transaction(item_id: str) -> Response:
    return await detail_page(TRANSACTIONS, item_id, transactions.to_json)


@blueprint.get("/events")
@signed_in
async def events() -> Response:
    return await list_page(EVENTS)


@blueprint.get("/events/<item_id>")
@signed_in
async def event(item_id: str) -> Response:
    # The payload as sent: the body's bytes parsed and indented, nothing added.
    return await detail_page(
        EVENTS,
        item_id,
        _event_fields,
        payload=lambda e: json.dumps(json.loads(e.body), indent=2, ensure_ascii=False),
        about=_about,
    )


def _about(event: Event) -> str | None:
    """The link to the page of what the event is about (every event names one of ours)."""
    for prefix, endpoint in (
        ("cs_test_", "dashboard.checkout_session"),
        ("sub_test_", "dashboard.subscription"),
        ("re_test_", "dashboard.refund"),
    ):
        if event.resource_id.startswith(prefix):
            return url_for(endpoint, item_id=event.resource_id)
    return None
