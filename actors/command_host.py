"""The actor host a command runs in its own process (`fgcpay refund approve`, `fgcpay
trigger`): the checkout-session and subscription actors with their refund desk, for as
long as the command takes. The service's processes may hold actors of the same objects:
storage's conditional writes decide between them. Nothing here publishes a status or
rings a dispatcher: what the command writes reaches the outbox, and the running service's
dispatcher and sweeps find it on their next poll."""

from __future__ import annotations

from fgcpay.core.clock import Clock
from fgcpay.core.settings import Settings
from fgcpay.storage import Database

from ._runtime import ActorHost
from .checkout_session import CheckoutSessionActor
from .refund_desk import RefundDesk
from .subscription import SubscriptionActor


def command_host(db: Database, clock: Clock, settings: Settings) -> ActorHost:
    """An actor host for one command: run it (`nursery.start(host.run)`) before asking."""
    desk = RefundDesk(db, clock, lambda refund: None)
    host = ActorHost()
    host.register(
        CheckoutSessionActor(
            db, clock, settings.secret_key, settings.public_url, lambda session: None, desk
        )
    )
    host.register(
        SubscriptionActor(
            db, clock, settings.secret_key, settings.public_url, lambda sub: None, desk
        )
    )
    return host
