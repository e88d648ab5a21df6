"""`/dashboard/webhooks`: the merchant's webhook endpoints (add with an event selection,
edit the events, set or clear the injected faults, delete after a confirmation, rotate
the secret, send a test event, check the receiver, reveal the secret on a fresh sign-in)
and each endpoint's deliveries with their attempts (a redeliver button on each; an
injected fault named on its attempt).

Every change is the operation the API and the operator's command run
(`webhooks/endpoints.py`), and the deliveries are the one delivery log
(`webhooks/delivery_log.py`), so the checks, the SSRF guard and the events are the same.
"""

from __future__ import annotations

import re
from typing import Any

from fgcpay.domain import endpoints, errors
from fgcpay.domain.deliveries import DELIVERY_STATUSES, Delivery, parse_delivery_query
from fgcpay.domain.endpoint_requests import EndpointChange, parse_endpoint
from fgcpay.domain.endpoints import WebhookEndpoint
from fgcpay.domain.events import ALL_EVENTS, EVENT_TYPES
from fgcpay.domain.faults import FIELDS as FAULT_FIELDS
from fgcpay.domain.faults import PROBABILITIES, FaultsError, parse_faults
from fgcpay.web.plumbing import current_service
from fgcpay.webhooks.delivery_log import DeliveryLog
from quart import Response, request

from ._pages import blueprint, current, not_found, render, see_other, signed_in

PAGE_SIZE = 20
QUEUED = re.compile(r"[0-9]{1,4}")
# What a notice (`?done=`) after a change says; anything else shows none.
NOTICES = {
    "created": "The endpoint is added. Reveal its signing secret below to set up your receiver.",
    "events": "The event selection is saved: it applies to events from now on.",
    "faults": "The faults are saved: they apply to deliveries created from now on.",
    "faults_cleared": "Faults are off: deliveries created from now on are sent clean.",
    "rotated": "The secret is rotated. Deliveries are signed with the old and the new secret"
    " for 24 hours; reveal the new one below.",
}


def _event_choices() -> list[tuple[str, str]]:
    return [(ALL_EVENTS, "All events")] + [(t, t) for t in EVENT_TYPES]


def _problems(error: errors.ValidationFailed) -> dict[str, str]:
    return {problem.field: problem.message for problem in error.errors}


async def _endpoint(endpoint_id: str) -> WebhookEndpoint | None:
    try:
        return await current_service().webhook_endpoints.get(current().merchant.id, endpoint_id)
    except errors.NotFound:
        return None


async def _list(
    status: int = 200, *, form: dict[str, Any] | None = None, problems: dict[str, str] | None = None
) -> Response:
    found = await current_service().webhook_endpoints.all_of(current().merchant.id)
    return await render(
        "webhooks.html",
        status,
        endpoints=found,
        choices=_event_choices(),
        form=form or {"url": "", "events": [ALL_EVENTS]},
        problems=problems or {},
        deleted=request.args.get("deleted") == "1",
    )


@blueprint.get("/webhooks")
@signed_in
async def webhooks_page() -> Response:
    return await _list()


@blueprint.post("/webhooks")
@signed_in
async def add_webhook() -> Response:
    form = await request.form
    url = form.get("url", "").strip()
    chosen = form.getlist("events")
    kept = {"url": url[:2048], "events": chosen}
    try:
        parsed = parse_endpoint({"url": url, "enabled_events": chosen})
        endpoint, _ = await current_service().webhook_endpoints.create(
            current().merchant.id, parsed
        )
    except errors.ValidationFailed as refused:
        return await _list(400, form=kept, problems=_problems(refused))
    # The secret is not shown here: like every later look at it, it needs a fresh sign-in.
    return see_other(f"/dashboard/webhooks/{endpoint.id}?done=created")


async def _detail(endpoint: WebhookEndpoint, status: int = 200, **context: Any) -> Response:
    """The endpoint's page: its settings, its forms and a page of its deliveries."""
    args = request.args
    query_args = {
        name: args.getlist(name) for name in ("status", "starting_after") if args.get(name)
    }
    query_args["endpoint_id"] = [endpoint.id]
    query_args["limit"] = [str(PAGE_SIZE)]
    merchant_id = current().merchant.id
    try:
        query = parse_delivery_query(query_args)
        deliveries, has_more = await DeliveryLog(current_service().db).page(merchant_id, query)
    except errors.ValidationFailed:  # a filter or cursor not made by this page
        return await not_found()
    context.setdefault("notice", NOTICES.get(args.get("done", "")))
    context.setdefault("problems", {})
    context.setdefault("fault_form", _fault_form(endpoint))
    context.setdefault("fault_fields", ["faults", *(f"faults.{name}" for name in FAULT_FIELDS)])
    return await render(
        "webhook.html",
        status,
        endpoint=endpoint,
        wire=endpoints.to_json(endpoint),
        choices=_event_choices(),
        now=current_service().clock.now_us(),
        deliveries=deliveries,
        next_cursor=deliveries[-1].id if has_more and deliveries else None,
        status_filter=query.page.status,
        statuses=DELIVERY_STATUSES,
        **context,
    )


def _fault_form(endpoint: WebhookEndpoint) -> dict[str, str]:
    """The faults form's values: the endpoint's faults, blank where there are none."""
    shown = endpoints.to_json(endpoint)["faults"]
    if shown is None:
        return {name: "" for name in FAULT_FIELDS}
    # Python's shortest form of a number reads back as the same number.
    return {name: "0" if value == 0 else str(value) for name, value in shown.items()}


@blueprint.get("/webhooks/<endpoint_id>")
@signed_in
async def webhook(endpoint_id: str) -> Response:
    endpoint = await _endpoint(endpoint_id)
    if endpoint is None:
        return await not_found()
    return await _detail(endpoint)


@blueprint.post("/webhooks/<endpoint_id>/events")
@signed_in
async def edit_webhook_events(endpoint_id: str) -> Response:
    endpoint = await _endpoint(endpoint_id)
    if endpoint is None:
        return await not_found()
    chosen = (await request.form).getlist("events")
    try:
        await current_service().webhook_endpoints.set_events(
            current().merchant.id, endpoint.id, chosen
        )
    except errors.ValidationFailed as refused:
        return await _detail(endpoint, 400, problems=_problems(refused), notice=None)
    except errors.NotFound:
        return await not_found()
    return see_other(f"/dashboard/webhooks/{endpoint.id}?done=events")


def _fault_values(form: Any) -> dict[str, Any]:
    """The faults form's fields as the API's `faults` object: a blank field is left out
    (0), a number is read as JSON reads it, anything else is passed on as text for the
    API's rules to refuse, naming the field."""
    values: dict[str, Any] = {}
    for name in FAULT_FIELDS:
        raw = form.get(name, "").strip()
        if not raw:
            continue
        try:
            values[name] = float(raw) if name in PROBABILITIES else int(raw)
        except ValueError:
            values[name] = raw[:64]
    return values


@blueprint.post("/webhooks/<endpoint_id>/faults")
@signed_in
async def edit_webhook_faults(endpoint_id: str) -> Response:
    """Set the endpoint's `faults` (as `PATCH` does), or clear them (the form's clear
    button)."""
    endpoint = await _endpoint(endpoint_id)
    if endpoint is None:
        return await not_found()
    form = await request.form
    clear = form.get("clear") is not None
    try:
        faults = None if clear else parse_faults(_fault_values(form))
    except FaultsError as refused:
        kept = {name: form.get(name, "")[:64] for name in FAULT_FIELDS}
        problems = {refused.field: str(refused)}
        return await _detail(endpoint, 400, problems=problems, fault_form=kept, notice=None)
    try:
        await current_service().webhook_endpoints.update(
            current().merchant.id, endpoint.id, EndpointChange(faults=faults, faults_given=True)
        )
    except errors.NotFound:
        return await not_found()
    done = "faults_cleared" if faults is None else "faults"
    return see_other(f"/dashboard/webhooks/{endpoint.id}?done={done}")


@blueprint.post("/webhooks/<endpoint_id>/rotate")
@signed_in
async def rotate_webhook_secret(endpoint_id: str) -> Response:
    try:
        endpoint, _ = await current_service().webhook_endpoints.rotate_secret(
            current().merchant.id, endpoint_id
        )
    except errors.NotFound:
        return await not_found()
    return see_other(f"/dashboard/webhooks/{endpoint.id}?done=rotated")


@blueprint.post("/webhooks/<endpoint_id>/test")
@signed_in
async def send_test_event(endpoint_id: str) -> Response:
    endpoint = await _endpoint(endpoint_id)
    if endpoint is None:
        return await not_found()
    sent = await current_service().webhook_endpoints.send_test(current().merchant.id, endpoint.id)
    return await _detail(endpoint, test_result=sent, notice=None)


@blueprint.post("/webhooks/<endpoint_id>/check")
@signed_in
async def check_receiver(endpoint_id: str) -> Response:
    """The API's receiver check (`POST /webhook_endpoints/{id}/check`), its report shown
    on the endpoint's page."""
    endpoint = await _endpoint(endpoint_id)
    if endpoint is None:
        return await not_found()
    service = current_service()
    try:
        report = await service.receiver_checks.check_endpoint(
            endpoint.id, endpoint.url, service.webhook_endpoints.signing_secrets(endpoint)
        )
    except errors.ValidationFailed as refused:  # the private-network rule: nothing was sent
        return await _detail(endpoint, 400, check_refused=refused.errors[0].message, notice=None)
    except errors.RateLimited as running:
        return await _detail(endpoint, 429, check_refused=running.message, notice=None)
    return await _detail(endpoint, check_report=report, notice=None)


@blueprint.post("/webhooks/<endpoint_id>/secret")
@signed_in
async def reveal_webhook_secret(endpoint_id: str) -> Response:
    """The signing secrets, only within 5 minutes of signing in (a session left open on a
    shared computer does not give them away); else the way to sign in again."""
    endpoint = await _endpoint(endpoint_id)
    if endpoint is None:
        return await not_found()
    if not current().session.fresh_at(current_service().clock.now_us()):
        return await render("webhook_secret.html", 403, endpoint=endpoint, signing_secrets=None)
    found = current_service().webhook_endpoints.signing_secrets(endpoint)
    return await render("webhook_secret.html", endpoint=endpoint, signing_secrets=found)


@blueprint.get("/webhooks/<endpoint_id>/delete")
@signed_in
async def confirm_delete_webhook(endpoint_id: str) -> Response:
    endpoint = await _endpoint(endpoint_id)
    if endpoint is None:
        return await not_found()
    return await render("webhook_delete.html", endpoint=endpoint)


@blueprint.post("/webhooks/<endpoint_id>/delete")
@signed_in
async def delete_webhook(endpoint_id: str) -> Response:
    try:
        await current_service().webhook_endpoints.delete(current().merchant.id, endpoint_id)
    except errors.NotFound:
        return await not_found()
    return see_other("/dashboard/webhooks?deleted=1")


async def _delivery(endpoint_id: str, delivery_id: str) -> tuple[WebhookEndpoint, Delivery] | None:
    endpoint = await _endpoint(endpoint_id)
    if endpoint is None:
        return None
    try:
        delivery = await DeliveryLog(current_service().db).get(current().merchant.id, delivery_id)
    except errors.NotFound:
        return None
    if delivery.endpoint_id != endpoint.id:
        return None
    return endpoint, delivery


@blueprint.get("/webhooks/<endpoint_id>/deliveries/<delivery_id>")
@signed_in
async def webhook_delivery(endpoint_id: str, delivery_id: str) -> Response:
    found = await _delivery(endpoint_id, delivery_id)
    if found is None:
        return await not_found()
    endpoint, delivery = found
    # The count the redelivery put in the link, if it is one (a few ASCII digits).
    queued = request.args.get("queued", "")
    return await render(
        "webhook_delivery.html",
        endpoint=endpoint,
        delivery=delivery,
        queued=int(queued) if QUEUED.fullmatch(queued) else None,
    )


@blueprint.post("/webhooks/<endpoint_id>/deliveries/<delivery_id>/redeliver")
@signed_in
async def redeliver_webhook(endpoint_id: str, delivery_id: str) -> Response:
    """The API's redelivery (`POST /events/{id}/redeliver`): a new delivery of the event
    to each endpoint subscribed to it now."""
    found = await _delivery(endpoint_id, delivery_id)
    if found is None:
        return await not_found()
    endpoint, delivery = found
    queued = await current_service().webhook_endpoints.redeliver(
        current().merchant.id, delivery.event_id
    )
    return see_other(f"/dashboard/webhooks/{endpoint.id}/deliveries/{delivery.id}?queued={queued}")
