"""The service's lifetime: it owns the root nursery, starts its parts with
`nursery.start`, then serves hypercorn's trio worker inside it.

Shutdown (SIGTERM or SIGINT): hypercorn stops accepting and gives requests in flight the
grace period, then the root scope is cancelled and every part ends.
"""

from __future__ import annotations

import gc
import logging
import signal
import sys
from collections.abc import AsyncIterator, Awaitable, Callable, Iterator
from contextlib import asynccontextmanager, contextmanager
from functools import partial
from typing import Any

import attrs
import trio
from fgcpay import server
from fgcpay.accounts import Accounts
from fgcpay.accounts.sandboxes import Sandboxes
from fgcpay.actors import ActorHost
from fgcpay.actors.checkout_session import CheckoutSessionActor, CheckoutSessions
from fgcpay.actors.ledger import Ledger
from fgcpay.actors.refund_desk import RefundDesk
from fgcpay.actors.refunds import Refunds
from fgcpay.actors.subscription import SubscriptionActor, Subscriptions
from fgcpay.actors.test_clocks import TestClocks
from fgcpay.core import metrics
from fgcpay.core.clock import Clock, SystemClock
from fgcpay.core.logs import log_event
from fgcpay.core.settings import Settings, default_public_url
from fgcpay.core.supervision import Supervisor
from fgcpay.domain.checkout import CheckoutSession
from fgcpay.domain.customers import TEST_CUSTOMERS, pin_hmac
from fgcpay.domain.dashboard import SESSION_IDLE_US
from fgcpay.domain.merchants import ApiKey
from fgcpay.domain.secret_box import SecretBox
from fgcpay.domain.subscriptions import Subscription
from fgcpay.live_status import EventBells, StatusHub, follow_changes, publish_status
from fgcpay.server import ServerConfig
from fgcpay.storage import (
    Database,
    customers,
    dashboard_sessions,
    idempotency,
    merchants,
    open_database,
    sign_in_attempts,
)
from fgcpay.timers.expiry import ExpirySweeper
from fgcpay.timers.renewals import RenewalSweeper
from fgcpay.timers.sandboxes import SandboxExpiry
from fgcpay.timers.test_clock_advances import TestClockAdvances
from fgcpay.web import limits
from fgcpay.web.plumbing import protocol_error_answer
from fgcpay.web.proxies import behind_proxies
from fgcpay.web.rate_limit import RateLimiter
from fgcpay.web_app import create_app
from fgcpay.webhooks.check import ReceiverChecks
from fgcpay.webhooks.dispatcher import WebhookDispatcher
from fgcpay.webhooks.endpoints import WebhookEndpoints
from fgcpay.webhooks.stream import EventStreams
from hypercorn.config import Sockets
from hypercorn.trio import serve as hypercorn_serve

# `last_used_at` is informative; writing it more often than this would cost a write per request.
KEY_TOUCH_INTERVAL_US = 60 * 1_000_000


@attrs.define(eq=False)
class Service:
    """Everything a request handler may reach, built once per process."""

    settings: Settings
    clock: Clock
    db: Database
    nursery: trio.Nursery
    rate_limiter: RateLimiter
    actors: ActorHost
    # What the actor kinds and background loops escalate to; /readyz reads it.
    supervisor: Supervisor
    checkout: CheckoutSessions
    sweeper: ExpirySweeper
    status_hub: StatusHub
    dispatcher: WebhookDispatcher
    webhook_endpoints: WebhookEndpoints
    subscriptions: Subscriptions
    test_clocks: TestClocks
    test_clock_advances: TestClockAdvances
    renewals: RenewalSweeper
    refunds: Refunds
    ledger: Ledger
    accounts: Accounts
    sandboxes: Sandboxes
    sandbox_expiry: SandboxExpiry
    event_streams: EventStreams
    receiver_checks: ReceiverChecks
    _touched: dict[str, int] = attrs.field(factory=dict)

    def sample_metrics(self) -> None:
        """Set this process's gauges (actors, mailboxes, connections) to what it holds now."""
        load = self.actors.load()
        metrics.sample(load.live, load.messages, load.deepest, self.db.connection_use())

    def note_key_used(self, key: ApiKey) -> None:
        """Record `last_used_at` for the dashboard, at most once a minute, off the request path."""
        now = self.clock.now_us()
        last = max(key.last_used_at or 0, self._touched.get(key.id, 0))
        if now - last < KEY_TOUCH_INTERVAL_US:
            return
        self._touched[key.id] = now
        if len(self._touched) > 100_000:
            self._touched.clear()
        self.nursery.start_soon(self._touch, key.merchant_id, key.id, now)

    async def _touch(self, merchant_id: str, key_id: str, now: int) -> None:
        try:
            await self.db.write(merchants.touch_api_key, merchant_id, key_id, now)
        except Exception as error:  # informative only: never fail a request over it
            log_event("could not record key use", logging.WARNING, error=type(error).__name__)


@asynccontextmanager
async def open_service(settings: Settings, clock: Clock | None = None) -> AsyncIterator[Service]:
    """Open the database, start the background parts; yield the running `Service`; stop
    them all."""
    clock = clock or SystemClock()
    shared = metrics.activate()
    if settings.production and not settings.metrics_token:
        log_event(
            "GET /metrics is off: set FGCPAY_METRICS_TOKEN to serve it in production",
            logging.WARNING,
        )
    async with open_database(
        settings.database_url, settings.db_pool_size, settings.db_timeout_seconds
    ) as db:
        async with trio.open_nursery() as nursery:
            supervisor = Supervisor()
            actors = ActorHost(
                idle_seconds=settings.actor_idle_seconds,
                ask_timeout=settings.actor_ask_timeout_seconds,
                supervisor=supervisor,
            )
            sweeper = ExpirySweeper(db, actors, clock, settings.expiry_poll_seconds)
            # The durable timers poll alike for other processes' work.
            renewals = RenewalSweeper(db, actors, clock, settings.expiry_poll_seconds)
            # A clock a dead process left advancing is one more durable timer.
            advances = TestClockAdvances(db, actors, clock, nursery, settings.expiry_poll_seconds)
            status_hub = StatusHub()
            sandboxes = Sandboxes(db, clock, actors)
            # Expired sandboxes, and deletions a process left unfinished, one more timer.
            sandbox_expiry = SandboxExpiry(
                db, clock, supervisor, sandboxes.expire, settings.expiry_poll_seconds
            )
            sandboxes.on_created = sandbox_expiry.schedule
            sandboxes.on_unfinished = sandbox_expiry.unfinished
            event_streams = EventStreams(db, clock, EventBells())
            box = SecretBox(settings.secret_key)
            dispatcher = WebhookDispatcher(
                db,
                clock,
                box,
                allow_private=settings.webhook_allow_private,
                poll_seconds=settings.webhook_poll_seconds,
                lease_seconds=settings.webhook_lease_seconds,
                supervisor=supervisor,
            )

            def session_changed(session: CheckoutSession) -> None:
                publish_status(status_hub, session.id, session.status)
                dispatcher.ring()  # its event and deliveries were committed with the change

            def subscription_written(subscription: Subscription) -> None:
                dispatcher.ring()  # its events were committed with it
                # A creation (its end_date) or an approval (the first renewal) sets a due
                # time the sweep may otherwise sleep past.
                if subscription.test_clock_id is None and subscription.next_action_at:
                    renewals.schedule(subscription.next_action_at)

            def subscription_changed(subscription: Subscription) -> None:
                publish_status(status_hub, subscription.id, subscription.status)
                subscription_written(subscription)

            # A payment's owner (its session's or subscription's actor) decides its refunds;
            # their events were committed with each change.
            desk = RefundDesk(db, clock, lambda refund: dispatcher.ring())
            actors.register(
                CheckoutSessionActor(
                    db, clock, settings.secret_key, settings.public_url, session_changed, desk
                )
            )
            actors.register(
                SubscriptionActor(
                    db, clock, settings.secret_key, settings.public_url, subscription_changed, desk
                )
            )
            await db.write(customers.set_pin_hmacs, seeded_pin_hmacs(settings.secret_key))
            service = Service(
                settings=settings,
                clock=clock,
                db=db,
                nursery=nursery,
                rate_limiter=RateLimiter(
                    settings.rate_limit_per_second,
                    settings.rate_limit_burst,
                    db,
                    clock,
                    supervisor=supervisor,
                ),
                actors=actors,
                supervisor=supervisor,
                checkout=CheckoutSessions(
                    db=db,
                    host=actors,
                    clock=clock,
                    ttl_seconds=settings.checkout_ttl_seconds,
                    eur_cents_per_fgc=settings.eur_cents_per_fgc,
                    on_created=lambda session: sweeper.schedule(session.expires_at),
                ),
                sweeper=sweeper,
                status_hub=status_hub,
                dispatcher=dispatcher,
                webhook_endpoints=WebhookEndpoints(
                    db,
                    clock,
                    box,
                    settings.webhook_allow_private,
                    dispatcher.ring,
                    dispatcher.send_once,
                ),
                subscriptions=Subscriptions(
                    db=db,
                    host=actors,
                    clock=clock,
                    public_url=settings.public_url,
                    eur_cents_per_fgc=settings.eur_cents_per_fgc,
                    on_created=subscription_written,
                ),
                test_clocks=TestClocks(
                    db=db,
                    host=actors,
                    clock=clock,
                    nursery=nursery,
                    on_advance_begun=advances.start,
                ),
                test_clock_advances=advances,
                renewals=renewals,
                refunds=Refunds(db=db, host=actors),
                ledger=Ledger(db=db),
                accounts=Accounts(db, clock, settings.secret_key),
                sandboxes=sandboxes,
                sandbox_expiry=sandbox_expiry,
                event_streams=event_streams,
                # The dispatcher's resolver, looked up at each check (a test stands in for DNS).
                receiver_checks=ReceiverChecks(
                    clock,
                    settings.webhook_allow_private,
                    lambda host, port: dispatcher.resolver(host, port),
                    limit=settings.webhook_check_seconds,
                ),
            )
            await nursery.start(follow_changes, db, status_hub, event_streams.bells, nursery)
            await nursery.start(event_streams.run)
            await nursery.start(supervisor.run)
            await nursery.start(actors.run)
            await nursery.start(sweeper.run)
            await nursery.start(renewals.run)
            await nursery.start(advances.run)
            await nursery.start(sandbox_expiry.run)
            await nursery.start(dispatcher.run)
            await nursery.start(run_housekeeping, db, clock, supervisor)
            await nursery.start(service.rate_limiter.run)
            if shared is not None:
                # Another worker may answer the scrape: keep this one's gauges current.
                await nursery.start(sample_metrics, service)
            try:
                yield service
            finally:
                nursery.cancel_scope.cancel()


def seeded_pin_hmacs(secret_key: str) -> list[tuple[str, str]]:
    """The test customers' PINs as HMACs under this server's secret (never stored in clear)."""
    return [(code, pin_hmac(secret_key, code, pin)) for code, pin, _ in TEST_CUSTOMERS]


async def sample_metrics(
    service: Service, *, task_status: trio.TaskStatus[None] = trio.TASK_STATUS_IGNORED
) -> None:
    """Every `metrics.SAMPLE_SECONDS`, set this worker's gauges for whichever worker
    answers the next scrape. (One process alone samples when it answers: no timer, which
    would also wake a test's MockClock for nothing.)"""
    task_status.started()
    try:
        while True:
            service.sample_metrics()
            await trio.sleep(metrics.SAMPLE_SECONDS)
    finally:
        # The service is stopping: its live gauges leave the sums now, not at the next
        # scrape that finds the process gone.
        metrics.deactivate()


HOUSEKEEPING_SECONDS = 600.0
PURGE_BATCH = 1000  # rows one purge statement deletes at most


async def run_housekeeping(
    db: Database,
    clock: Clock,
    supervisor: Supervisor,
    *,
    task_status: trio.TaskStatus[None] = trio.TASK_STATUS_IGNORED,
) -> None:
    """Drop idempotency records past their 24 hours, dashboard sessions idle for 12 hours
    and sign-in counters that hold nothing any more, every few minutes. A round that fails
    is retried after the loops' backoff, supervised as `loop housekeeping`."""
    task_status.started()
    retries = supervisor.loop("housekeeping")
    while True:
        try:
            while await db.write(idempotency.purge_expired, clock.now_us(), PURGE_BATCH) > 0:
                pass
            idle_since = clock.now_us() - SESSION_IDLE_US
            while await db.write(dashboard_sessions.purge_idle, idle_since, PURGE_BATCH) > 0:
                pass
            while await db.write(sign_in_attempts.purge_stale, clock.now_us(), PURGE_BATCH) > 0:
                pass
        except Exception as error:  # trio.Cancelled is no Exception: it passes
            await trio.sleep(min(retries.failed(error), HOUSEKEEPING_SECONDS))
            continue
        retries.succeeded()
        await trio.sleep(HOUSEKEEPING_SECONDS)


def hypercorn_config(settings: Settings, workers: int = 1) -> ServerConfig:
    config = ServerConfig()
    config.bind = [f"{settings.host}:{settings.port}"]
    config.worker_class = "trio"
    config.workers = workers
    config.graceful_timeout = settings.shutdown_grace_seconds
    config.accesslog = None  # one structured line per request comes from the app
    config.errorlog = logging.getLogger("hypercorn.error")
    config.backlog = 1024
    # Connection limits and timeouts: see fgcpay.server.
    config.keep_alive_timeout = limits.KEEP_ALIVE_SECONDS
    config.h11_max_incomplete_size = limits.MAX_HEADER_BYTES
    return config


async def wait_for_signal() -> None:
    """Return on SIGTERM or SIGINT: the trigger of a graceful shutdown."""
    with trio.open_signal_receiver(signal.SIGTERM, signal.SIGINT) as signals:
        async for signum in signals:
            log_event("shutting down", signal=signal.Signals(signum).name)
            return


def _with_bound_port(settings: Settings, sockets: Sockets) -> Settings:
    """Port 0 means "any free port": once bound, derive PUBLIC_URL from the real one."""
    if settings.port != 0 or not sockets.insecure_sockets:
        return settings
    port = int(sockets.insecure_sockets[0].getsockname()[1])
    derived = settings.public_url == default_public_url(settings.host, 0)
    return settings.with_bind(settings.host, port, explicit_public_url=not derived)


@attrs.frozen
class Running:
    """What `serve` reports once it accepts connections."""

    urls: list[str]
    service: Service


async def serve(
    settings: Settings,
    *,
    sockets: Sockets | None = None,
    shutdown_trigger: Callable[[], Awaitable[Any]] | None = None,
    clock: Clock | None = None,
    task_status: trio.TaskStatus[Running] = trio.TASK_STATUS_IGNORED,
) -> None:
    """Run one worker: the service and `hypercorn.trio.serve` inside one root nursery.

    `sockets` are bound sockets to serve on (shared by worker processes); `serve` takes
    them over and they are closed when it stops accepting. Without them it binds
    `settings.host:port` itself. `task_status.started` reports the bound addresses
    (`http://127.0.0.1:PORT`) and the running service. Returns after `shutdown_trigger`
    (default: SIGTERM or SIGINT) and a graceful drain of at most
    `settings.shutdown_grace_seconds`.
    """
    config = hypercorn_config(settings)
    if sockets is None:
        # Bound here rather than by hypercorn: port 0 must be known before PUBLIC_URL is.
        sockets = config.create_sockets()
    settings = _with_bound_port(settings, sockets)
    async with open_service(settings, clock) as service:
        config.protocol_error_answer = partial(protocol_error_answer, service)
        config.bind = _hand_over(sockets)
        trigger = shutdown_trigger or wait_for_signal

        async def shutting_down() -> None:
            await trigger()
            # Hypercorn waits for open connections: the event streams end now (1001).
            service.event_streams.close_all()

        app = behind_proxies(
            create_app(service), settings.trusted_proxy_hops, settings.public_url_set
        )
        with start_up_heap_frozen(), gil_switch_interval(), server.installed():
            async with trio.open_nursery() as nursery:
                urls = await nursery.start(
                    partial(
                        hypercorn_serve, app, config, shutdown_trigger=shutting_down, mode="asgi"
                    )
                )
                task_status.started(Running(urls=urls, service=service))
    log_event("stopped")


GIL_SWITCH_SECONDS = 0.02
"""How long the trio thread may hold the GIL while a database thread waits for it, before
the interpreter takes it away (Python's default: 0.005 s). See `gil_switch_interval`."""


@contextmanager
def gil_switch_interval(seconds: float = GIL_SWITCH_SECONDS) -> Iterator[None]:
    """While serving, let the trio thread keep the GIL longer than Python's default 5 ms
    when a database thread wants it (`sys.setswitchinterval`).

    A busy trio thread lets go of the GIL at every system call (each socket read and
    write, each wait for events): every few hundred microseconds under load, which is
    when the database threads take it and hand results back. Past the interval the
    interpreter forces the switch instead, in the middle of a request's work, and the trio
    thread then waits to get the GIL back. On the create path that forced switching cost
    about a tenth of the worker's CPU per request (docs/performance.md, Creates: 0.93
    against 0.82 ms with 20 ms). A thread waiting for the GIL waits longer only while the
    trio thread runs Python for more than 5 ms without a system call, which no request's
    work does in one piece. The interval before the first holder is restored when the
    last one leaves (services in one process, as in tests, may stop in any order)."""
    if _gil.holders == 0:
        _gil.before = sys.getswitchinterval()
        sys.setswitchinterval(seconds)
    _gil.holders += 1
    try:
        yield
    finally:
        _gil.holders -= 1
        if _gil.holders == 0:
            sys.setswitchinterval(_gil.before)


@attrs.define
class _GilHolders:
    holders: int = 0
    before: float = 0.0  # the interval before the first holder


_gil = _GilHolders()


@contextmanager
def start_up_heap_frozen() -> Iterator[None]:
    """While serving, leave the objects made at start-up (modules, the app and its routes,
    the schemas, the service's parts: some 100,000) out of the garbage collector's full
    collections (`gc.freeze`), which otherwise walk them all every few hundred requests
    (about 50 ms each, 5 % of a create's CPU). They are handed back on the way out."""
    gc.freeze()
    try:
        yield
    finally:
        gc.unfreeze()


def _hand_over(sockets: Sockets) -> list[str]:
    """Binds that give hypercorn the already bound sockets (`fd://N`), and with them their
    ownership: hypercorn closes a listener when it stops accepting, which must refuse new
    connections at once, so no second object may keep (or later close) the descriptor."""
    return [f"fd://{sock.detach()}" for sock in sockets.insecure_sockets]
