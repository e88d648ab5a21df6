"""Merchant accounts: sign-up, sign-in with its limits, server-side sessions, sign-out.

Passwords are hashed and checked off the event loop (argon2id takes tens of milliseconds
of a core and 19 MiB), a few at a time, so sign-ins never stall other requests and a
flood of them cannot take the machine's memory.
"""

from __future__ import annotations

import logging
from collections.abc import Sequence

import attrs
import trio
from fgcpay.core.clock import Clock
from fgcpay.core.logs import log_event
from fgcpay.domain import dashboard, ids
from fgcpay.domain.dashboard import DashboardSession
from fgcpay.domain.fields import EmailError, email_address, unreadable
from fgcpay.domain.merchants import (
    Merchant,
    hash_password,
    needs_rehash,
    normalize_email,
    password_problem,
    verify_password,
)
from fgcpay.storage import Database, dashboard_sessions, merchants, sign_in_attempts

MAX_NAME_LENGTH = 200
WRONG = "The email or password is not right."
# A sign-in's settle or release waits this long at most (shielded from cancellation).
SETTLE_SECONDS = 10.0
# How many hashes may run at once in a process (each holds 19 MiB while it runs).
HASHING_AT_ONCE = 4


@attrs.frozen
class SignedIn:
    """A new session: the merchant and the raw session id, for the cookie only."""

    merchant: Merchant
    session_id: str = attrs.field(repr=False)


@attrs.frozen
class Refused:
    """A sign-in or sign-up that did not happen: a message for the whole form, and one
    per field (by field name)."""

    message: str | None = None
    fields: dict[str, str] = attrs.field(factory=dict)
    locked: bool = False


@attrs.frozen
class Current:
    """The signed-in merchant of a request and its session."""

    merchant: Merchant
    session: DashboardSession


@attrs.define(eq=False)
class Accounts:
    db: Database
    clock: Clock
    secret_key: str = attrs.field(repr=False)
    _hashing: trio.CapacityLimiter = attrs.field(
        factory=lambda: trio.CapacityLimiter(HASHING_AT_ONCE)
    )

    async def hash_password(self, password: str) -> str:
        return await trio.to_thread.run_sync(hash_password, password, limiter=self._hashing)

    async def _verify(self, password: str, stored: str | None) -> bool:
        return await trio.to_thread.run_sync(
            verify_password, password, stored, limiter=self._hashing
        )

    async def sign_up(
        self, name: str, email: str, password: str, replaces: str | None
    ) -> SignedIn | Refused:
        """A new merchant (no API key yet: it creates its own) and its first session."""
        problems: dict[str, str] = {}
        name = name.strip()
        if not 1 <= len(name) <= MAX_NAME_LENGTH:
            problems["name"] = f"Enter your business name (1 to {MAX_NAME_LENGTH} characters)."
        elif unreadable_name := unreadable(name):  # the hosted page shows it to customers
            problems["name"] = f"Your business name must not contain {unreadable_name}."
        try:
            email = normalize_email(email_address(email.strip()))
        except EmailError as error:
            problems["email"] = f"Enter a valid email address: {error}."
        if problem := password_problem(password):
            problems["password"] = problem
        if problems:
            return Refused(fields=problems)
        now = self.clock.now_us()
        merchant = Merchant(
            id=ids.merchant_id(),
            name=name,
            email=email,
            created_at=now,
            password_hash=await self.hash_password(password),
        )
        if not await self.db.write(merchants.insert_merchant, merchant, None):
            return Refused(fields={"email": "An account with this email exists. Sign in."})
        return await self._start_session(merchant, replaces)

    async def sign_in(
        self, email: str, password: str, address: str, replaces: str | None
    ) -> SignedIn | Refused:
        """A new session for the merchant whose email and password these are.

        Every attempt is reserved from the email's counter and the address's before the
        password is compared (an unknown email is counted and timed like a known one);
        five failures for an email, or twenty from an address, in 15 minutes lock it
        for 15 minutes, and no password is compared while it is locked.
        """
        email = normalize_email(email)
        if not email or not password:
            return Refused("Enter your email and password.")
        limits = dashboard.sign_in_limits(self.secret_key, email, address)
        # Shielded: a reservation under way commits whether or not its caller waits, and
        # only its answer says whether there is an attempt to give back.
        with trio.CancelScope(shield=True):
            refused = await self.db.write(sign_in_attempts.reserve, limits, self.clock.now_us())
        if refused is not None:
            return _locked(refused.locked_until, self.clock.now_us())
        compared = False
        try:
            merchant = await self.db.read(merchants.merchant_by_email, email)
            stored = merchant.password_hash if merchant else None
            matched = await self._verify(password[: 4 * 1024], stored)
            compared = True
        finally:
            if not compared:  # crashed or cancelled first: nothing to count
                await self._release(limits)
        # A password compared is counted even when the request is cancelled meanwhile (a
        # client leaving before the answer gets no free guess), within a bound: a database
        # that does not answer leaves the attempt to lapse with its window.
        locked_until: int | None = None
        with trio.move_on_after(SETTLE_SECONDS, shield=True):
            locked_until = await self.db.write(
                sign_in_attempts.settle, limits, matched, self.clock.now_us()
            )
        if not matched or merchant is None:
            if locked_until is not None:
                return _locked(locked_until, self.clock.now_us())
            return Refused(WRONG)
        if merchant.password_hash and needs_rehash(merchant.password_hash):
            await self.set_password(merchant.id, password, end_sessions=False)
        return await self._start_session(merchant, replaces)

    async def _release(self, limits: Sequence[dashboard.Limit]) -> None:
        """Give back a reserved attempt nobody compared: shielded, so a cancelled sign-in
        still does, and bounded, so a database that does not answer cannot hold it."""
        with trio.move_on_after(SETTLE_SECONDS, shield=True):
            try:
                await self.db.write(sign_in_attempts.release, limits)
                return
            except Exception as error:  # the crash that brought us here is the one to raise
                log_event(
                    "a sign-in attempt was not released; it ends with its window",
                    logging.WARNING,
                    error_type=type(error).__name__,
                )
                return
        log_event(
            "a sign-in attempt was not released; it ends with its window",
            logging.WARNING,
            error_type="timeout",
        )

    async def _start_session(self, merchant: Merchant, replaces: str | None) -> SignedIn:
        # A fresh id at every sign-in: an id planted in the browser before is never
        # signed in, and the browser's previous session ends here.
        session_id = dashboard.new_session_id()
        now = self.clock.now_us()
        record = DashboardSession(dashboard.session_hash(session_id), merchant.id, now, now)
        old = dashboard.session_hash(replaces) if replaces else None
        await self.db.write(dashboard_sessions.insert, record, old)
        return SignedIn(merchant=merchant, session_id=session_id)

    async def current(self, session_id: str | None) -> Current | None:
        """The signed-in merchant of the session id a cookie holds, or None (no such
        session, or one idle for 12 hours, which ends here)."""
        if not session_id or len(session_id) > 100:
            return None
        id_hash = dashboard.session_hash(session_id)
        session = await self.db.read(dashboard_sessions.by_hash, id_hash)
        if session is None:
            return None
        now = self.clock.now_us()
        if session.idle_at(now):
            await self.db.write(dashboard_sessions.delete, id_hash)
            return None
        merchant = await self.db.read(merchants.merchant_by_id, session.merchant_id)
        if merchant is None:
            return None
        if session.needs_touch(now):
            await self.db.write(dashboard_sessions.touch, session.merchant_id, id_hash, now)
        return Current(merchant=merchant, session=session)

    async def sign_out(self, session_id: str) -> None:
        await self.db.write(dashboard_sessions.delete, dashboard.session_hash(session_id))

    async def set_password(self, merchant_id: str, password: str, *, end_sessions: bool) -> bool:
        """Replace a merchant's password (ending its sessions when asked: a reset);
        False for an unknown merchant."""
        password_hash = await self.hash_password(password)
        return await self.db.write(
            merchants.set_password_hash, merchant_id, password_hash, end_sessions
        )


def _locked(locked_until: int | None, now_us: int) -> Refused:
    minutes = dashboard.minutes_left(locked_until, now_us)
    unit = "minute" if minutes == 1 else "minutes"
    return Refused(
        "Too many failed sign-ins: signing in is locked for this email or from this"
        f" network. Try again in {minutes} {unit}.",
        locked=True,
    )
