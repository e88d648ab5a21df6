"""`/api/v1/transactions` (the ledger: list, retrieve) and `/api/v1/balance`."""

from __future__ import annotations

from fgcpay.domain import balances, transactions
from fgcpay.domain.lists import Page, reject_query
from fgcpay.web.plumbing import current_service, principal
from fgcpay.web.responses import json_response
from quart import Blueprint, Response, request

from .listing import get_route, list_route
from .operations import operation

blueprint = Blueprint("ledger", __name__, url_prefix="/api/v1")
TAG = "Ledger"


list_route(
    blueprint,
    "/transactions",
    query=transactions.TransactionQuery,
    page=lambda service, merchant_id, query: service.ledger.page(
        merchant_id,
        query.type,
        query.starting_after,
        query.limit,
        query.checkout_session_id,
        query.subscription_id,
    ),
    wire=lambda _: transactions.to_json,
    operation_id="listTransactions",
    summary="List the ledger's transactions, newest first",
    description=(
        "Payments, subscription charges and approved refunds (negative entries, naming the "
        "session or subscription they refund); `type` filters by one of them, "
        "`checkout_session_id` and `subscription_id` by what they belong to (its payment or "
        "charges and their refunds' entries). Filters combine; an id of nothing of yours "
        "lists nothing."
    ),
    tag=TAG,
    answer="A page of transactions.",
    schema=Page[transactions.TransactionWire],
)
get_route(
    blueprint,
    "/transactions/<transaction_id>",
    get=lambda service: service.ledger.get,
    wire=lambda _: transactions.to_json,
    operation_id="getTransaction",
    summary="Retrieve a transaction",
    tag=TAG,
    answer="The transaction.",
    schema=transactions.TransactionWire,
)


@blueprint.get("/balance")
@operation(
    operation_id="getBalance",
    summary="Read your test-mode settlement summary (no parameters)",
    description=(
        "Running totals kept with every ledger row and refund, so the summary agrees with "
        "GET /transactions at every instant, however long the ledger."
    ),
    tag=TAG,
    rejects_query=True,
    status=200,
    answer="The balance.",
    schema=balances.BalanceWire,
)
async def get_balance() -> Response:
    reject_query(request.args)
    service = current_service()
    totals = await service.ledger.totals(principal().merchant.id)
    return json_response(balances.to_json(totals, service.clock.now_us()))
