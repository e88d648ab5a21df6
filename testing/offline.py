"""A trigger run by a command (`fgcpay trigger`), in its own process: the actors, test
clocks and refunds of a host of its own for as long as it takes, as `fgcpay refund
approve` reviews a refund (the service's processes may hold actors of the same objects:
storage's conditional writes decide between them). The events it makes are written to
the outbox; the running service's dispatcher finds and delivers them on its next poll."""

from __future__ import annotations

import attrs
import trio
from fgcpay.actors.checkout_session import CheckoutSessions
from fgcpay.actors.command_host import command_host
from fgcpay.actors.refunds import Refunds
from fgcpay.actors.subscription import Subscriptions
from fgcpay.actors.test_clocks import TestClocks
from fgcpay.core.clock import Clock, SystemClock
from fgcpay.core.settings import Settings
from fgcpay.domain.errors import ServiceError
from fgcpay.storage import Database, merchants
from fgcpay.timers.test_clock_advances import TestClockAdvances

from .triggers import Triggered, trigger


class TriggerInputError(Exception):
    """The operator's input names no merchant to trigger for; the message says why."""


@attrs.frozen
class _Parts:
    db: Database
    clock: Clock
    checkout: CheckoutSessions
    subscriptions: Subscriptions
    test_clocks: TestClocks
    refunds: Refunds


async def trigger_offline(
    db: Database, settings: Settings, merchant_id: str, event_type: str, object_id: str | None
) -> Triggered:
    """`trigger` for `merchant_id`, through actors run here; `ServiceError` as the API
    answers it."""
    if await db.read(merchants.merchant_by_id, merchant_id) is None:
        raise TriggerInputError(f"no merchant {merchant_id}")
    clock = SystemClock()
    host = command_host(db, clock, settings)
    outcome: Triggered | ServiceError
    async with trio.open_nursery() as nursery:
        await nursery.start(host.run)
        advances = TestClockAdvances(db, host, clock, nursery)
        parts = _Parts(
            db=db,
            clock=clock,
            checkout=CheckoutSessions(
                db=db,
                host=host,
                clock=clock,
                ttl_seconds=settings.checkout_ttl_seconds,
                eur_cents_per_fgc=settings.eur_cents_per_fgc,
            ),
            subscriptions=Subscriptions(
                db=db,
                host=host,
                clock=clock,
                public_url=settings.public_url,
                eur_cents_per_fgc=settings.eur_cents_per_fgc,
            ),
            test_clocks=TestClocks(
                db=db, host=host, clock=clock, nursery=nursery, on_advance_begun=advances.start
            ),
            refunds=Refunds(db=db, host=host),
        )
        try:
            outcome = await trigger(parts, merchant_id, event_type, object_id)
        except ServiceError as refused:
            outcome = refused  # raised below, not inside the nursery (which would group it)
        finally:
            nursery.cancel_scope.cancel()
    if isinstance(outcome, ServiceError):
        raise outcome
    return outcome
