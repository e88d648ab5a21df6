"""Checkout sessions: the actor that owns each session's state transitions, and the
operations the HTTP layer calls."""

from __future__ import annotations

from collections.abc import Callable
from decimal import Decimal
from typing import Any

import attrs

from fgcpay.clock import Clock
from fgcpay.domain import checkout, errors, ids
from fgcpay.domain.checkout import CheckoutRequest, CheckoutSession
from fgcpay.domain.idempotency import Completion
from fgcpay.storage import Storage

from ._runtime import ActorHost

KIND = "checkout_session"


@attrs.frozen
class Expire:
    """The session's `expires_at` has passed (sent by the expiry sweep)."""


@attrs.frozen
class Snapshot:
    """Reply with the session as the actor holds it."""


Listener = Callable[[CheckoutSession], None]


class CheckoutSessionActor:
    """Behaviour of one checkout session. State: the session, or None if it does not exist."""

    kind = KIND

    def __init__(self, storage: Storage, clock: Clock, on_change: Listener) -> None:
        self.storage = storage
        self.clock = clock
        self.on_change = on_change

    async def activate(self, actor_id: str) -> CheckoutSession | None:
        return await self.storage.checkout_session(actor_id)

    async def receive(
        self, actor_id: str, state: CheckoutSession | None, message: Any
    ) -> tuple[CheckoutSession | None, Any]:
        if state is None:
            raise errors.NotFound("No such checkout session.")
        if isinstance(message, Snapshot):
            return state, state
        if isinstance(message, Expire):
            state = await self._expire(state)
            return state, state
        raise TypeError(f"unexpected message {message!r}")

    async def _expire(self, session: CheckoutSession) -> CheckoutSession:
        now = self.clock.now_us()
        if session.status != checkout.CREATED or not session.is_expired_at(now):
            return session
        if await self.storage.expire_checkout_session(session, now):
            expired = attrs.evolve(
                session, status=checkout.EXPIRED, version=session.version + 1, updated_at=now
            )
            self.on_change(expired)
            return expired
        # Another process moved it on first: storage decided; take its word.
        fresh = await self.storage.checkout_session(session.id)
        return fresh if fresh is not None else session


@attrs.define
class CheckoutSessions:
    """Creating, reading and listing sessions; state changes go through the actors."""

    storage: Storage
    host: ActorHost
    clock: Clock
    ttl_seconds: int
    eur_cents_per_fgc: Decimal
    on_created: Callable[[CheckoutSession], None] = lambda session: None

    def build(self, request: CheckoutRequest, merchant_id: str) -> CheckoutSession:
        return checkout.new_session(
            request,
            session_id=ids.checkout_session_id(),
            merchant_id=merchant_id,
            now_us=self.clock.now_us(),
            ttl_seconds=self.ttl_seconds,
            eur_cents_per_fgc=self.eur_cents_per_fgc,
        )

    async def create(self, session: CheckoutSession, completion: Completion | None) -> None:
        """Store a new session (and its idempotent answer) in one transaction."""
        await self.storage.insert_checkout_session(session, completion)
        self.on_created(session)

    async def get(self, merchant_id: str, session_id: str) -> CheckoutSession:
        found = None
        if ids.looks_like_id(session_id, "cs_test_", 24):
            found = await self.storage.merchant_checkout_session(merchant_id, session_id)
        if found is None:
            raise errors.NotFound("No such checkout session.", {"id": session_id[:64]})
        return found

    async def page(
        self, merchant_id: str, status: str | None, starting_after: str | None, limit: int
    ) -> tuple[list[CheckoutSession], bool]:
        after = None
        if starting_after is not None:
            anchor = None
            if ids.looks_like_id(starting_after, "cs_test_", 24):
                anchor = await self.storage.merchant_checkout_session(merchant_id, starting_after)
            if anchor is None:
                raise errors.ValidationFailed(
                    [errors.FieldError("starting_after", "Must be a next_cursor from a previous page.")]
                )
            after = (anchor.created_at, anchor.id)
        rows = await self.storage.checkout_sessions_page(merchant_id, status, after, limit + 1)
        return rows[:limit], len(rows) > limit

    async def expire(self, session_id: str) -> CheckoutSession:
        result: CheckoutSession = await self.host.ask(KIND, session_id, Expire())
        return result
