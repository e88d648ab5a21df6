"""`/dashboard`: the merchant's balance summary (the figures of `GET /balance`) and, under
it, the chart of the last 30 days' paid volume and refunds."""

from __future__ import annotations

from fgcpay.domain import balances
from fgcpay.domain.money import format_fgc
from fgcpay.web.plumbing import current_service
from quart import Response

from ._chart import chart, day_label
from ._pages import blueprint, current, render, signed_in


@blueprint.get("")
@signed_in
async def home() -> Response:
    service = current_service()
    merchant_id = current().merchant.id
    now = service.clock.now_us()
    totals = await service.ledger.totals(merchant_id)
    balance = balances.to_json(totals, now)
    days = await service.ledger.daily_volume(merchant_id, now)
    return await render(
        "home.html",
        balance=balance,
        chart=chart(days, balance["currency"]),
        day_label=day_label,
        format_fgc=format_fgc,
        now=now,
    )
