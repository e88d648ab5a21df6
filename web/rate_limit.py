"""Token buckets per API key (and per client address for unauthenticated calls), shared
by every worker process and host through the database.

Refill `rate` tokens a second up to `burst`. The bucket of record is a database row;
asking it for every request would cost a write per request, so each process reserves
a small batch of tokens at a time (`batch`: a tenth of the burst, at least 1) and spends
them locally. While one request of a key refills, the other requests of that key in this
process wait for it: one reservation at a time per key per process, never parallel ones.
After a reservation finds the bucket empty, the process answers 429 locally until the
next token is due, so a client hammering past its limit costs no writes either.

Tolerance: reserved tokens are already debited from the shared bucket, and a process
holds at most `batch` of them, so in any interval of T seconds a key gets at most
`burst + rate * T + processes * batch` requests, against `burst + rate * T` for one
exact bucket; and tokens held by a process its requests no longer reach make it at
most that many fewer. Stamps come from each host's clock: a host whose clock runs
ahead by s seconds can add `rate * s` tokens once (stamps never move back).

If the database cannot reserve (error or no answer within `RESERVE_TIMEOUT`), the limiter
fails open to per-process buckets for `DEGRADED_SECONDS` and logs one warning: an outage
of the limiter must not turn into 5xx answers for every merchant, and each process still
enforces the rate on its own (N processes then allow up to N times the rate).
"""

from __future__ import annotations

import logging
import math

import attrs
import trio
from fgcpay.core.clock import Clock, SystemClock
from fgcpay.core.logs import log_event
from fgcpay.core.supervision import Supervisor
from fgcpay.storage import Database, rate_limits

MAX_BUCKETS = 100_000
# How long a request may wait for the database's reservation before the limiter gives
# up on it, and how long it then limits per process before asking the database again.
RESERVE_TIMEOUT = 2.0
DEGRADED_SECONDS = 5.0
# Rows untouched this much longer than a full refill are deleted, every PURGE_SECONDS,
# up to PURGE_BATCH rows a statement.
PURGE_SECONDS = 600.0
PURGE_BATCH = 1000


@attrs.define
class _Bucket:
    tokens: float
    stamp: float


@attrs.define
class _Share:
    """This process's view of one shared bucket."""

    held: int = 0  # reserved tokens not yet spent
    left: float = 0.0  # tokens the shared bucket kept after our last reservation
    seen: float = 0.0  # trio time of that reservation
    empty_until: float = -math.inf  # the shared bucket has no whole token before this
    refilling: trio.Event | None = None


@attrs.frozen
class Verdict:
    allowed: bool
    remaining: int
    reset_seconds: int  # until the bucket is full again
    retry_after: int  # until one token is available (0 when allowed)


class RateLimiter:
    """`await take(key)` decides one request. Without a database `db` (or while it fails)
    the buckets live in this process only."""

    def __init__(
        self,
        rate: float,
        burst: int,
        db: Database | None = None,
        clock: Clock | None = None,
        supervisor: Supervisor | None = None,
    ) -> None:
        self.rate = rate
        # The purge's failed rounds, supervised as `loop rate limit purge` (a limiter
        # without a database has no purge).
        self._purges = (supervisor or Supervisor()).loop("rate limit purge")
        self.burst = burst
        self.batch = max(1, burst // 10)
        self._db = db
        self._clock = clock or SystemClock()
        self._buckets: dict[str, _Bucket] = {}
        self._shares: dict[str, _Share] = {}
        self._degraded_until = -math.inf
        self._warned = False

    @property
    def window_seconds(self) -> int:
        return max(1, math.ceil(self.burst / self.rate))

    async def take(self, key: str) -> Verdict:
        if self._db is None:
            return self._take_local(key)
        share = self._shares.get(key)
        if share is None:
            if len(self._shares) >= MAX_BUCKETS:
                self._forget_idle_shares()
            share = self._shares[key] = _Share()
        while True:
            now = trio.current_time()
            if now < self._degraded_until:
                return self._take_local(key)
            if share.held >= 1:
                share.held -= 1
                return self._verdict(share, now, allowed=True)
            if now < share.empty_until:
                return self._verdict(share, now, allowed=False)
            if share.refilling is not None:
                await share.refilling.wait()
                continue
            await self._refill(key, share)

    async def _refill(self, key: str, share: _Share) -> None:
        assert self._db is not None
        share.refilling = done = trio.Event()
        reservation = None
        try:
            with trio.move_on_after(RESERVE_TIMEOUT):
                reservation = await self._db.write(
                    rate_limits.reserve,
                    key,
                    self.batch,
                    self.rate,
                    self.burst,
                    self._clock.now_us(),
                )
        except Exception as error:  # any database failure: limit per process instead
            self._degrade(type(error).__name__)
        else:
            if reservation is None:
                self._degrade("timeout")
        finally:
            share.refilling = None
            done.set()
        if reservation is None:
            return
        if self._warned:
            self._warned = False
            log_event("rate limits are shared through the database again")
        now = trio.current_time()
        share.held += reservation.granted
        share.left = reservation.left
        share.seen = now
        if reservation.granted == 0:
            share.empty_until = now + (1.0 - reservation.left) / self.rate

    def _degrade(self, reason: str) -> None:
        self._degraded_until = trio.current_time() + DEGRADED_SECONDS
        if not self._warned:  # once per outage, not once per request
            self._warned = True
            log_event(
                "rate limits fall back to per-process buckets: the database cannot reserve tokens",
                logging.WARNING,
                error_type=reason,
            )

    def _verdict(self, share: _Share, now: float, *, allowed: bool) -> Verdict:
        # Our estimate of the key's whole bucket: what we hold, plus what the shared
        # bucket kept at our last reservation and has refilled since (other processes'
        # spending since is unknown to us: within the stated tolerance). Tokens held
        # for long may add up to more than a bucket: never show more than one holds.
        shared = min(float(self.burst), share.left + (now - share.seen) * self.rate)
        tokens = min(float(self.burst - 1 if allowed else self.burst), share.held + shared)
        missing = self.burst - tokens
        return Verdict(
            allowed=allowed,
            remaining=int(tokens),
            reset_seconds=math.ceil(missing / self.rate) if missing > 0 else 0,
            retry_after=0 if allowed else max(1, math.ceil(share.empty_until - now)),
        )

    def _forget_idle_shares(self) -> None:
        # Dropping a share gives up the tokens it holds: stricter, never looser.
        for key, share in list(self._shares.items()):
            if share.refilling is None:
                del self._shares[key]
            if len(self._shares) < MAX_BUCKETS // 2:
                return

    async def run(self, *, task_status: trio.TaskStatus[None] = trio.TASK_STATUS_IGNORED) -> None:
        """Delete shared buckets that have refilled completely, every few minutes (a
        missing row reads as a full bucket, so this changes no answer)."""
        task_status.started()
        if self._db is None:
            return
        full_us = int((self.burst / self.rate + 60) * 1_000_000)
        wait = PURGE_SECONDS
        while True:
            await trio.sleep(wait)
            try:
                older_than = self._clock.now_us() - full_us
                while await self._db.write(rate_limits.purge_full, older_than, PURGE_BATCH):
                    pass
            except Exception as error:  # trio.Cancelled is no Exception: it passes
                wait = min(self._purges.failed(error), PURGE_SECONDS)
                continue
            self._purges.succeeded()
            wait = PURGE_SECONDS

    # -- per process: without the database, and while it fails ----------------------------

    def _take_local(self, key: str) -> Verdict:
        now = trio.current_time()
        bucket = self._buckets.get(key)
        if bucket is None:
            if len(self._buckets) >= MAX_BUCKETS:
                self._forget_full(now)
            bucket = self._buckets[key] = _Bucket(float(self.burst), now)
        else:
            bucket.tokens = min(self.burst, bucket.tokens + (now - bucket.stamp) * self.rate)
            bucket.stamp = now
        allowed = bucket.tokens >= 1.0
        if allowed:
            bucket.tokens -= 1.0
        missing = self.burst - bucket.tokens
        return Verdict(
            allowed=allowed,
            remaining=int(bucket.tokens),
            reset_seconds=math.ceil(missing / self.rate) if missing > 0 else 0,
            retry_after=0 if allowed else max(1, math.ceil((1.0 - bucket.tokens) / self.rate)),
        )

    def _forget_full(self, now: float) -> None:
        # A bucket that has refilled completely carries no information: drop it.
        for key, bucket in list(self._buckets.items()):
            if bucket.tokens + (now - bucket.stamp) * self.rate >= self.burst:
                del self._buckets[key]
        while len(self._buckets) >= MAX_BUCKETS:
            self._buckets.pop(next(iter(self._buckets)))
