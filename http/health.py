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
    """The database answers; 503 `service_unavailable` otherwise."""
    try:
        await current_service().db.ping()
    except Exception:
        raise errors.Unavailable(
            "The database does not answer.",
            retry_after_seconds=DatabaseUnavailable.retry_after_seconds,
        ) from None
    return jsonify({"status": "ready"})
