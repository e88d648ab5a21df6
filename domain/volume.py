"""The dashboard home's chart: a merchant's paid volume and refunds per UTC day over the
last days, from the ledger (payments and subscription charges; approved refunds' entries)."""

from __future__ import annotations

from collections.abc import Iterable

import attrs

from .periods import DAY_US

CHART_DAYS = 30


@attrs.frozen
class DayVolume:
    """One UTC day of the ledger, in minor units (refunds as a positive amount)."""

    day: int  # days since the Unix epoch
    paid_minor: int = 0
    refunded_minor: int = 0

    @property
    def start_us(self) -> int:
        return self.day * DAY_US


def window(now_us: int, days: int = CHART_DAYS) -> tuple[int, int]:
    """[since, until) in microseconds: today (UTC) and the `days - 1` days before it."""
    today = now_us // DAY_US
    return (today - days + 1) * DAY_US, (today + 1) * DAY_US


def every_day(
    now_us: int, sums: Iterable[tuple[int, int, int]], days: int = CHART_DAYS
) -> list[DayVolume]:
    """One entry per day of `window(now_us, days)`, oldest first, from the per-day sums
    (day, paid, refunded) the ledger has (a day without rows is zeros)."""
    today = now_us // DAY_US
    found = {day: DayVolume(day, paid, refunded) for day, paid, refunded in sums}
    return [found.get(day, DayVolume(day)) for day in range(today - days + 1, today + 1)]
