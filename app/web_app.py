"""The web application: the merchant API, the hosted page and the dashboard, composed over
the shared plumbing for one running service."""

from __future__ import annotations

from fgcpay import dashboard
from fgcpay.hosted_page import routes as hosted_page
from fgcpay.http import api, openapi
from fgcpay.web import errors, plumbing
from fgcpay.web.body import MAX_BODY_BYTES
from fgcpay.web.service import Service
from quart_trio import QuartTrio


def create_app(service: Service) -> QuartTrio:
    """An app serving `service`: the merchant API, health checks and metrics, the hosted
    pages and the merchant dashboard."""
    app = QuartTrio("fgcpay.web_app")
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
    plumbing.attach(app, service)
    errors.register_error_handlers(
        app,
        {"/dashboard": dashboard.error_page, "/checkout": hosted_page.error_page},
        explain=plumbing.key_refused_meanwhile,
    )
    plumbing.install(app)
    api.register(app)
    app.register_blueprint(hosted_page.blueprint)
    app.register_blueprint(dashboard.blueprint)
    openapi.install(app)
    return app
