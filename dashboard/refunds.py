"""`/dashboard/refunds`: the list (pending review first to filter), a refund's page, and
its review: approve or reject through `Refunds.review`, the one way a review is made (the
test helpers and `fgcpay refund approve|reject` call it too), so the ledger entry, the
balance and `refund.approved` or `refund.rejected` follow the same way."""

from __future__ import annotations

from fgcpay.domain import errors, refunds
from fgcpay.domain.refunds import Refund
from fgcpay.web.plumbing import current_service
from quart import Response, request

from ._listing import Listing, amount, detail_page, list_page
from ._pages import blueprint, current, not_found, see_other, signed_in, when

REFUNDS: Listing[Refund] = Listing(
    endpoint="dashboard.refunds",
    detail="dashboard.refund",
    title="Refunds",
    noun="refund",
    query=refunds.RefundQuery,
    filter_name="status",
    choices=refunds.STATUSES,
    columns=("Amount", "Status", "Reason", "Created"),
    page=lambda service, *page: service.refunds.page(*page),
    get=lambda service, merchant_id, item_id: service.refunds.get(merchant_id, item_id),
    cells=lambda r: (
        amount(r.amount_minor, r.currency),
        r.status,
        r.reason or "\u2014",
        when(r.created_at),
    ),
    item_id=lambda r: r.id,
)
# What the page says once a decision is made (`?reviewed=<decision>`).
DONE = {
    "approve": "Refund approved: its entry is in the ledger and refund.approved is sent.",
    "reject": "Refund rejected: its amount is refundable again and refund.rejected is sent.",
}


def _pending(refund: Refund) -> bool:
    return refunds.STATES.allows(refund.status, refunds.APPROVED)


async def _refund_page(item_id: str, status: int = 200, problem: str = "") -> Response:
    return await detail_page(
        REFUNDS,
        item_id,
        refunds.to_json,
        status,
        actions="dashboard/_refund_actions.html",
        pending=_pending,
        done=DONE.get(request.args.get("reviewed", "")),
        problem=problem,
    )


@blueprint.get("/refunds", endpoint="refunds")
@signed_in
async def refunds_list() -> Response:
    return await list_page(REFUNDS)


@blueprint.get("/refunds/<item_id>")
@signed_in
async def refund(item_id: str) -> Response:
    return await _refund_page(item_id)


@blueprint.post("/refunds/<item_id>/review")
@signed_in
async def review(item_id: str) -> Response:
    decision = (await request.form).get("decision", "")
    if decision not in refunds.DECISIONS:
        return await _refund_page(item_id, 400, "Choose to approve or to reject the refund.")
    try:
        await current_service().refunds.review(current().merchant.id, item_id, decision)
    except errors.NotFound:
        return await not_found()
    except errors.Conflict as conflict:
        return await _refund_page(item_id, conflict.status, conflict.message)
    return see_other(f"/dashboard/refunds/{item_id}?reviewed={decision}")
