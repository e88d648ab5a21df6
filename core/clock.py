"""Wall-clock time for the service, injectable so tests can drive it with trio's MockClock."""

from __future__ import annotations

import time
from typing import Protocol

import trio
from fgcpay.domain.times import MICROS


class Clock(Protocol):
    def now_us(self) -> int:
        """Microseconds since the Unix epoch, UTC."""
        ...


class SystemClock:
    """The host's real-time clock."""

    def now_us(self) -> int:
        return time.time_ns() // 1000


class TrioClock:
    """Wall time that advances with trio's clock.

    Anchored at construction; under `trio.testing.MockClock` jumping the trio clock
    moves wall time too, so expiry and retry schedules run in zero real time in tests.
    """

    def __init__(self, start_us: int | None = None) -> None:
        self._start_us = time.time_ns() // 1000 if start_us is None else start_us
        self._start_trio = trio.current_time()

    def now_us(self) -> int:
        return self._start_us + int((trio.current_time() - self._start_trio) * MICROS)
