"""Liveness and readiness, outside /api/v1, for load balancers and process managers."""

from __future__ import annotations

from fgcpay.domain import errors
from fgcpay.storage import DatabaseUnavailable
from fgcpay.web.plumbing import current_service
from quart import Blueprint, Response, jsonify

blueprint = Blueprint("health", __name__)

# The quarantined ids `/readyz` lists (the latest to end first); their count is given too.
QUARANTINED_SHOWN = 20


@blueprint.get("/healthz")
async def healthz() -> Response:
    """The process is up and serving."""
    return jsonify({"status": "ok"})


@blueprint.get("/readyz")
async def readyz() -> Response:
    """The database answers and nothing escalated; 503 `service_unavailable` otherwise.

    An escalated part (an actor kind or a background loop past its restart budget, see
    `fgcpay.core.supervision`) is named in the message and in `details.escalated`; the rest of
    the service still serves, and readiness returns once the part recovers.

    Ids quarantined now (an actor that crashed again within its restart period: its asks
    answered 503 with `Retry-After` for a cool-off) are listed, and do not fail readiness:
    one bad record is no reason to take the process out of a load balancer, where every
    other id still serves."""
    service = current_service()
    try:
        await service.db.ping()
    except Exception:
        raise errors.Unavailable(
            "The database does not answer.",
            retry_after_seconds=DatabaseUnavailable.retry_after_seconds,
        ) from None
    shown, count = service.actors.quarantine(QUARANTINED_SHOWN)
    quarantined = (
        {"quarantined": [q.as_json() for q in shown], "quarantined_count": count} if count else {}
    )
    escalated = service.supervisor.escalated()
    if escalated:
        raise errors.Unavailable(
            "Failing past its restart budget: " + ", ".join(escalated) + ".",
            {"escalated": escalated, **quarantined},
        )
    return jsonify({"status": "ready", **quarantined})
