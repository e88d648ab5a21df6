"""Token buckets per API key (and per client address for unauthenticated calls).

Refill `rate` tokens a second up to `burst`. State is per process: with N worker
processes a key may get up to N times the rate (documented in the API reference).
"""

from __future__ import annotations

import math

import attrs
import trio

MAX_BUCKETS = 100_000


@attrs.define
class _Bucket:
    tokens: float
    stamp: float


@attrs.frozen
class Verdict:
    allowed: bool
    remaining: int
    reset_seconds: int  # until the bucket is full again
    retry_after: int  # until one token is available (0 when allowed)


class RateLimiter:
    def __init__(self, rate: float, burst: int) -> None:
        self.rate = rate
        self.burst = burst
        self._buckets: dict[str, _Bucket] = {}

    @property
    def window_seconds(self) -> int:
        return max(1, math.ceil(self.burst / self.rate))

    def take(self, key: str) -> Verdict:
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
