"""`GET /metrics`: the Prometheus text of every metric (`fgcpay.core.metrics`), outside /api/v1.

With `FGCPAY_METRICS_TOKEN` set it asks for `Authorization: Bearer <token>` (compared in
constant time; a wrong one is 401, counted per client address like a failed API key).
Without one it is open, except in production, where it is off (404): open metrics there
must be a decision, made by setting a token. No label carries a merchant's data, an id
or a secret: routes are templates, and the rest are fixed words.
"""

from __future__ import annotations

import hmac
import logging

import attrs
import trio
from fgcpay.core import metrics
from fgcpay.core.logs import log_event
from fgcpay.domain import errors
from fgcpay.storage import backlogs
from fgcpay.web.plumbing import METRICS_ROUTE, current_service, limit_by_address
from quart import Blueprint, Response, current_app, request

blueprint = Blueprint("metrics", __name__)

# The database's figures are read at most this often per process, however many
# Prometheus servers scrape it.
FACTS_MAX_AGE_SECONDS = 1.0


@attrs.define
class _FactsCache:
    facts: metrics.DatabaseFacts | None = None
    read_at: float | None = None  # trio time


@blueprint.get(METRICS_ROUTE)
async def metrics_text() -> Response:
    """Every metric, summed over this host's worker processes, with the database's backlogs."""
    service = current_service()
    await _check_token(service.settings.metrics_token, service.settings.production)
    facts = await _database_facts()
    service.sample_metrics()
    text = await trio.to_thread.run_sync(metrics.exposition, facts)
    return Response(text, content_type=metrics.CONTENT_TYPE, headers={"Cache-Control": "no-store"})


async def _check_token(token: str, production: bool) -> None:
    if not token:
        if production:
            raise errors.NotFound("No such resource or path.")
        return
    presented = request.headers.getlist("Authorization")
    scheme, _, given = (presented[0] if len(presented) == 1 else "").strip().partition(" ")
    # Compared as bytes (compare_digest refuses non-ASCII str); never logged or echoed.
    if scheme.lower() != "bearer" or not hmac.compare_digest(
        given.strip().encode(), token.encode()
    ):
        await limit_by_address()
        raise errors.Unauthenticated(
            "Missing or wrong metrics token. Send it as Authorization: Bearer"
            " <FGCPAY_METRICS_TOKEN>."
        )


async def _database_facts() -> metrics.DatabaseFacts | None:
    service = current_service()
    cache: _FactsCache = current_app.extensions.setdefault("fgcpay_metrics_facts", _FactsCache())
    now = trio.current_time()
    if cache.read_at is not None and now - cache.read_at < FACTS_MAX_AGE_SECONDS:
        return cache.facts
    try:
        found = await service.db.read(backlogs.backlogs)
    except Exception as error:  # said as fgcpay_database_up 0; the scrape still answers
        log_event(
            "metrics could not read the backlogs", logging.WARNING, error=type(error).__name__
        )
        facts = None
    else:
        now_us = service.clock.now_us()
        facts = metrics.DatabaseFacts(
            deliveries_pending=found.deliveries_pending,
            oldest_due_delivery_age_seconds=_overdue_seconds(found.next_delivery_at, now_us),
            expiry_lag_seconds=_overdue_seconds(found.next_expiry_at, now_us),
            renewal_lag_seconds=_overdue_seconds(found.next_renewal_at, now_us),
        )
    cache.facts, cache.read_at = facts, now
    return facts


def _overdue_seconds(due_at_us: int | None, now_us: int) -> float:
    """How long ago `due_at_us` passed; 0 when it has not (or there is none)."""
    if due_at_us is None or due_at_us > now_us:
        return 0.0
    return (now_us - due_at_us) / 1_000_000
