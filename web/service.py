"""What a request handler may reach of the running service, as a protocol.

The web surfaces (the merchant API, the hosted page, the dashboard) are written against
this, never against `fgcpay.service.Service` that composes the parts: that module is the
composition root and imports the web surfaces, so naming it from a handler would close an
import cycle. mypy checks that the composed service satisfies it where the application is
built (`fgcpay.web_app.create_app`).
"""

from __future__ import annotations

from typing import Protocol

from fgcpay.accounts import Accounts
from fgcpay.accounts.sandboxes import Sandboxes
from fgcpay.actors import ActorHost
from fgcpay.actors.checkout_session import CheckoutSessions
from fgcpay.actors.ledger import Ledger
from fgcpay.actors.refunds import Refunds
from fgcpay.actors.subscription import Subscriptions
from fgcpay.actors.test_clocks import TestClocks
from fgcpay.core.clock import Clock
from fgcpay.core.settings import Settings
from fgcpay.core.supervision import Supervisor
from fgcpay.domain.merchants import ApiKey
from fgcpay.live_status import StatusHub
from fgcpay.storage import Database
from fgcpay.webhooks.check import ReceiverChecks
from fgcpay.webhooks.endpoints import WebhookEndpoints
from fgcpay.webhooks.stream import EventStreams

from .rate_limit import RateLimiter


class Service(Protocol):
    """The running service's parts, read-only to a handler."""

    @property
    def settings(self) -> Settings: ...
    @property
    def clock(self) -> Clock: ...
    @property
    def db(self) -> Database: ...
    @property
    def rate_limiter(self) -> RateLimiter: ...
    @property
    def actors(self) -> ActorHost: ...
    @property
    def supervisor(self) -> Supervisor: ...
    @property
    def checkout(self) -> CheckoutSessions: ...
    @property
    def subscriptions(self) -> Subscriptions: ...
    @property
    def test_clocks(self) -> TestClocks: ...
    @property
    def refunds(self) -> Refunds: ...
    @property
    def ledger(self) -> Ledger: ...
    @property
    def accounts(self) -> Accounts: ...
    @property
    def sandboxes(self) -> Sandboxes: ...
    @property
    def status_hub(self) -> StatusHub: ...
    @property
    def webhook_endpoints(self) -> WebhookEndpoints: ...
    @property
    def event_streams(self) -> EventStreams: ...
    @property
    def receiver_checks(self) -> ReceiverChecks: ...

    def note_key_used(self, key: ApiKey) -> None:
        """Record that `key` answered a request (at most once a minute, off the request path)."""

    def sample_metrics(self) -> None:
        """Set this process's gauges to what it holds now (before a scrape is answered)."""
