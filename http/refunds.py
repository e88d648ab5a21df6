"""`/api/v1/refunds`: create, list, retrieve; and, in test mode, the merchant's own review
of its refunds (`/api/v1/test_helpers/refunds/{id}/approve|reject`)."""

from __future__ import annotations

from fgcpay.domain import errors, limits, refunds
from fgcpay.domain.lists import Page
from fgcpay.storage import limits as limit_counts
from fgcpay.web.body import json_object, no_body
from fgcpay.web.plumbing import current_service, principal
from quart import Blueprint, Response

from .idempotency import decided_by, idempotent
from .listing import by_status, get_route, list_route
from .operations import operation

blueprint = Blueprint("refunds", __name__, url_prefix="/api/v1")
TAG = "Refunds"


@blueprint.post("/refunds")
@operation(
    operation_id="createRefund",
    summary="Create a refund of a payment or subscription charge, pending review",
    description=(
        "Names exactly one of `checkout_session_id` (a paid session) and `transaction_id` "
        "(a payment or subscription charge). Without `amount_fgc` the whole refundable rest "
        "(paid minus the refunds not rejected) is refunded; above it is 400. 404 for an "
        "unknown session or transaction, 409 `checkout_session_not_paid` for a session that "
        "was not paid. No money moves in test mode."
    ),
    tag=TAG,
    body=refunds.RefundCreate,
    status=201,
    answer="Created, status `pending_review`.",
    schema=refunds.RefundWire,
    idempotent=True,
    conflicts=True,
    finds=True,
)
@idempotent
async def create_refund() -> Response:
    service = current_service()
    merchant_id = principal().merchant.id
    parsed = refunds.parse_create(await json_object())
    await _check_refund_count(merchant_id, parsed)
    return await decided_by(
        201, lambda answer: service.refunds.create(merchant_id, parsed, answer), refunds.to_json
    )


async def _check_refund_count(merchant_id: str, parsed: refunds.RefundRequest) -> None:
    """400 on the field naming the payment once it has `MAX_REFUNDS_PER_PAYMENT` refunds
    (of any status). Counted before the refund desk's conditional write: two refunds racing
    at the bound may both pass it, one over, never more than what was paid."""
    db = current_service().db
    most = limits.MAX_REFUNDS_PER_PAYMENT
    if parsed.transaction_id is not None:
        field = "transaction_id"
        count = await db.read(
            limit_counts.refunds_of_transaction, merchant_id, parsed.transaction_id
        )
    else:
        assert parsed.checkout_session_id is not None  # exactly one: `parse_create`
        field = "checkout_session_id"
        count = await db.read(
            limit_counts.refunds_of_session, merchant_id, parsed.checkout_session_id
        )
    if count >= most:
        raise errors.ValidationFailed(
            [errors.FieldError(field, f"This payment has {most} refunds, the most one may have.")]
        )


list_route(
    blueprint,
    "/refunds",
    query=refunds.RefundQuery,
    page=by_status(lambda service: service.refunds.page),
    wire=lambda _: refunds.to_json,
    operation_id="listRefunds",
    summary="List refunds, newest first",
    tag=TAG,
    answer="A page of refunds.",
    schema=Page[refunds.RefundWire],
)
get_route(
    blueprint,
    "/refunds/<refund_id>",
    get=lambda service: service.refunds.get,
    wire=lambda _: refunds.to_json,
    operation_id="getRefund",
    summary="Retrieve a refund",
    tag=TAG,
    answer="The refund.",
    schema=refunds.RefundWire,
)


async def _review(refund_id: str, decision: str) -> Response:
    await no_body()
    service, merchant_id = current_service(), principal().merchant.id
    # The 200 is stored with the review's write: a retry after a 503 replays it.
    return await decided_by(
        200,
        lambda answer: service.refunds.review(merchant_id, refund_id, decision, answer),
        refunds.to_json,
    )


@blueprint.post("/test_helpers/refunds/<refund_id>/approve")
@operation(
    operation_id="approveRefund",
    summary="Test mode: approve one of your refunds, as a reviewer would",
    description=(
        "For testing refund webhooks end to end: the refund becomes `approved`, a negative "
        "entry joins the ledger and `refund.approved` is sent. 409 "
        "`refund_already_reviewed` once approved or rejected."
    ),
    tag=TAG,
    no_body=True,
    status=200,
    answer="The refund, `approved`.",
    schema=refunds.RefundWire,
    idempotent=True,
    conflicts=True,
)
@idempotent
async def approve_refund(refund_id: str) -> Response:
    return await _review(refund_id, "approve")


@blueprint.post("/test_helpers/refunds/<refund_id>/reject")
@operation(
    operation_id="rejectRefund",
    summary="Test mode: reject one of your refunds, as a reviewer would",
    description=(
        "The refund becomes `rejected`: its amount is refundable again, and "
        "`refund.rejected` is sent. 409 `refund_already_reviewed` once approved or rejected."
    ),
    tag=TAG,
    no_body=True,
    status=200,
    answer="The refund, `rejected`.",
    schema=refunds.RefundWire,
    idempotent=True,
    conflicts=True,
)
@idempotent
async def reject_refund(refund_id: str) -> Response:
    return await _review(refund_id, "reject")
