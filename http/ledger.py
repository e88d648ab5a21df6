"""`/api/v1/transactions` (the ledger: list, retrieve) and `/api/v1/balance`."""

from __future__ import annotations

from fgcpay.domain import balances, transactions
from fgcpay.domain.lists import Page, envelope, reject_query
from fgcpay.web.plumbing import current_service, principal
from fgcpay.web.responses import json_response
from quart import Blueprint, Response, request

from .operations import operation

blueprint = Blueprint("ledger", __name__, url_prefix="/api/v1")
TAG = "Ledger"


@blueprint.get("/transactions")
@operation(
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
    query=transactions.TransactionQuery,
    status=200,
    answer="A page of transactions.",
    schema=Page[transactions.TransactionWire],
)
async def list_transactions() -> Response:
    query = transactions.parse_ledger_query(request.args.to_dict(flat=False))
    rows, has_more = await current_service().ledger.page(
        principal().merchant.id,
        query.page.status,
        query.page.starting_after,
        query.page.limit,
        query.checkout_session_id,
        query.subscription_id,
    )
    data = [transactions.to_json(row) for row in rows]
    return json_response(envelope(data, has_more, rows[-1].id if rows else None))


@blueprint.get("/transactions/<transaction_id>")
@operation(
    operation_id="getTransaction",
    summary="Retrieve a transaction",
    tag=TAG,
    status=200,
    answer="The transaction.",
    schema=transactions.TransactionWire,
)
async def get_transaction(transaction_id: str) -> Response:
    found = await current_service().ledger.get(principal().merchant.id, transaction_id)
    return json_response(transactions.to_json(found))


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
