"""The Quart-trio application factory."""

from __future__ import annotations

from typing import TYPE_CHECKING

from fgcpay import dashboard
from fgcpay.hosted_page import routes as hosted_page
from quart_trio import QuartTrio

from . import (
    checkout_sessions,
    deliveries,
    errors,
    event_stream,
    health,
    ledger,
    metrics,
    openapi,
    plumbing,
    refunds,
    subscriptions,
    test_clocks,
    webhooks,
)
from .body import MAX_BODY_BYTES

if TYPE_CHECKING:
    from fgcpay.service import Service


def create_app(service: Service) -> QuartTrio:
    """An app serving `service`: the merchant API, health checks and metrics, the hosted
    pages and the merchant dashboard."""
    app = QuartTrio(__name__)
    app.config.update(
        MAX_CONTENT_LENGTH=MAX_BODY_BYTES,
        # We start no Quart background tasks; waiting for them only delays exit.
        BACKGROUND_TASK_SHUTDOWN_TIMEOUT=0,
        JSON_SORT_KEYS=False,
        PROPAGATE_EXCEPTIONS=False,
    )
    app.json.sort_keys = False  # type: ignore[attr-defined]
    # Only the paths as published: a trailing or doubled slash matches nothing (a 404),
    # where werkzeug would otherwise serve it or redirect to a URL built from the request's
    # `Host` header.
    app.url_map.strict_slashes = True
    app.url_map.merge_slashes = False
    app.extensions["fgcpay"] = service
    errors.register_error_handlers(
        app, {"/dashboard": dashboard.error_page, "/checkout": hosted_page.error_page}
    )
    plumbing.install(app)
    app.register_blueprint(health.blueprint)
    app.register_blueprint(metrics.blueprint)
    app.register_blueprint(openapi.blueprint)
    app.register_blueprint(checkout_sessions.blueprint)
    app.register_blueprint(subscriptions.blueprint)
    app.register_blueprint(test_clocks.blueprint)
    app.register_blueprint(refunds.blueprint)
    app.register_blueprint(ledger.blueprint)
    app.register_blueprint(webhooks.blueprint)
    app.register_blueprint(event_stream.blueprint)
    app.register_blueprint(deliveries.blueprint)
    app.register_blueprint(hosted_page.blueprint)
    app.register_blueprint(dashboard.blueprint)
    openapi.install(app)
    return app
