"""`/api/v1/test_clocks`: create, list, retrieve, advance, delete."""

from __future__ import annotations

from typing import Annotated

from fgcpay.domain import test_clocks
from fgcpay.domain.fields import validate
from fgcpay.domain.lists import Page
from fgcpay.web.body import json_object
from fgcpay.web.plumbing import current_service, principal
from fgcpay.web.responses import json_response
from pydantic import Field
from quart import Blueprint, Response

from .idempotency import created, idempotent
from .listing import by_status, get_route, list_route
from .operations import operation

blueprint = Blueprint("test_clocks", __name__, url_prefix="/api/v1/test_clocks")
TAG = "Test clocks"


class DeletedTestClockWire(test_clocks.TestClockWire):
    """The answer of DELETE: the clock as it was, marked deleted."""

    deleted: Annotated[
        bool, Field(description="Always true: the clock and its subscriptions are gone.")
    ]


@blueprint.post("")
@operation(
    operation_id="createTestClock",
    summary="Create a test clock frozen at a time of your choice",
    tag=TAG,
    body=test_clocks.TestClockCreate,
    status=201,
    answer="Created, status `ready`.",
    schema=test_clocks.TestClockWire,
    idempotent=True,
)
@idempotent
async def create_test_clock() -> Response:
    service = current_service()
    parsed = test_clocks.parse_create(await json_object())
    clock = service.test_clocks.build(parsed, principal().merchant.id)
    return await created(
        test_clocks.to_json(clock),
        lambda completion: service.test_clocks.create(clock, completion),
    )


list_route(
    blueprint,
    "",
    query=test_clocks.TestClockQuery,
    page=by_status(lambda service: service.test_clocks.page),
    wire=lambda _: test_clocks.to_json,
    operation_id="listTestClocks",
    summary="List test clocks, newest first",
    tag=TAG,
    answer="A page of test clocks.",
    schema=Page[test_clocks.TestClockWire],
)
get_route(
    blueprint,
    "/<clock_id>",
    get=lambda service: service.test_clocks.get,
    wire=lambda _: test_clocks.to_json,
    operation_id="getTestClock",
    summary="Retrieve a test clock",
    tag=TAG,
    answer="The test clock.",
    schema=test_clocks.TestClockWire,
)


@blueprint.post("/<clock_id>/advance")
@operation(
    operation_id="advanceTestClock",
    summary="Move a test clock forward; what falls due up to its new time runs in order",
    description=(
        "Answers at once with the clock `advancing`; it reads `ready` once every renewal, "
        "retry and ending due up to `frozen_time` has run. Poll the clock to know. One "
        "advance may bill at most 1,000 periods of any one subscription and 10,000 charges "
        "in all (renewals and retries), and a clock's subscriptions at most 100,000 "
        "charges over its life (then delete it and make another): beyond any of these it "
        "is 400 `test_clock_advance_too_far`, nothing changes, and "
        "`details.max_frozen_time` is the furthest time an advance may reach now."
    ),
    tag=TAG,
    body=test_clocks.TestClockAdvance,
    status=200,
    answer="The clock at its new time, `advancing` until what is due has run.",
    schema=test_clocks.TestClockWire,
    idempotent=True,
    conflicts=True,
)
@idempotent
async def advance_test_clock(clock_id: str) -> Response:
    service = current_service()
    merchant_id = principal().merchant.id
    # The body's form first; whether it is later than the clock's time is decided against
    # the stored clock by the advance itself (after 404 and 409).
    frozen_time = validate(test_clocks.TestClockAdvance, await json_object()).frozen_time
    advanced = await service.test_clocks.advance(merchant_id, clock_id, frozen_time)
    return json_response(test_clocks.to_json(advanced))


@blueprint.delete("/<clock_id>")
@operation(
    operation_id="deleteTestClock",
    summary="Delete a test clock and the subscriptions on it",
    tag=TAG,
    status=200,
    answer="The deleted clock, with `deleted: true`.",
    schema=DeletedTestClockWire,
)
async def delete_test_clock(clock_id: str) -> Response:
    deleted = await current_service().test_clocks.delete(principal().merchant.id, clock_id)
    return json_response({**test_clocks.to_json(deleted), "deleted": True})
