"""The merchant API's routes, in one list: the web application registers them
(`register`), and the OpenAPI document is built from them alone (`document`), with no
service and none of the other web surfaces."""

from __future__ import annotations

import json
from functools import cache
from typing import Any

from quart import Blueprint
from quart_trio import QuartTrio

from . import (
    checkout_sessions,
    deliveries,
    event_stream,
    health,
    ledger,
    metrics,
    openapi,
    refunds,
    sandboxes,
    subscriptions,
    test_clocks,
    test_helpers,
    webhooks,
)

BLUEPRINTS: tuple[Blueprint, ...] = (
    health.blueprint,
    metrics.blueprint,
    openapi.blueprint,
    checkout_sessions.blueprint,
    subscriptions.blueprint,
    test_clocks.blueprint,
    refunds.blueprint,
    test_helpers.blueprint,
    ledger.blueprint,
    webhooks.blueprint,
    event_stream.blueprint,
    deliveries.blueprint,
    sandboxes.blueprint,
)


def register(app: QuartTrio) -> None:
    """Add the API's routes (and the operator's health and metrics) to `app`."""
    for blueprint in BLUEPRINTS:
        app.register_blueprint(blueprint)


@cache
def document() -> dict[str, Any]:
    """The OpenAPI document of the API's routes (for tests and tools): built from a bare
    app holding those routes only, as `openapi.install` builds the one a service serves."""
    routes = QuartTrio(__name__)
    routes.url_map.strict_slashes = True
    routes.url_map.merge_slashes = False
    register(routes)
    openapi.install(routes)
    doc: dict[str, Any] = json.loads(routes.extensions[openapi.EXTENSION])
    return doc
