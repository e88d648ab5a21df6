"""Liveness and readiness, outside /api/v1, for load balancers and process managers."""

from __future__ import annotations

from fgcpay.domain import errors
from fgcpay.storage import DatabaseUnavailable
from quart import Blueprint, Response, jsonify

from .plumbing import current_service

blueprint = Blueprint("health", __name__)


@blueprint.get("/healthz")
async def healthz() -> Response:
    """The process is up and serving."""
    return jsonify({"status": "ok"})


@blueprint.get("/readyz")
async def readyz() -> Response:
    """The database answers and nothing escalated; 503 `service_unavailable` otherwise.

    An escalated part (an actor kind or a background loop past its restart budget, see
    `fgcpay.supervision`) is named in the message and in `details.escalated`; the rest of
    the service still serves, and readiness returns once the part recovers."""
    service = current_service()
    try:
        await service.db.ping()
    except Exception:
        raise errors.Unavailable(
            "The database does not answer.",
            retry_after_seconds=DatabaseUnavailable.retry_after_seconds,
        ) from None
    escalated = service.supervisor.escalated()
    if escalated:
        raise errors.Unavailable(
            "Failing past its restart budget: " + ", ".join(escalated) + ".",
            {"escalated": escalated},
        )
    return jsonify({"status": "ready"})
