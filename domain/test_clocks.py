"""Test clocks (test mode): a merchant's own frozen time that subscriptions on it live by."""

from __future__ import annotations

import attrs

READY = "ready"
ADVANCING = "advancing"  # running everything due up to the new frozen_time
STATUSES = (READY, ADVANCING)


@attrs.frozen
class TestClock:
    """One test clock as stored; times in microseconds (UTC)."""

    __test__ = False  # a record, not a test class for pytest to collect

    id: str
    merchant_id: str
    name: str | None
    frozen_time: int
    status: str
    version: int
    created_at: int
    updated_at: int
