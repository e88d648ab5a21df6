"""`/dashboard`: the merchant's balance summary (the figures of `GET /balance`)."""

from __future__ import annotations

from fgcpay.domain import balances
from fgcpay.http.plumbing import current_service
from quart import Response

from ._pages import blueprint, current, render, signed_in


@blueprint.get("")
@signed_in
async def home() -> Response:
    service = current_service()
    totals = await service.ledger.totals(current().merchant.id)
    return await render("home.html", balance=balances.to_json(totals, service.clock.now_us()))
