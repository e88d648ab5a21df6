"""Times: stored as integer microseconds since the Unix epoch, UTC; shown as ISO 8601."""

from __future__ import annotations

import time

MICROS = 1_000_000

# The time range every stored time lies in (contract, "Test clocks"): from the epoch to the
# end of the year 9999's last second. Past it, dates have five-digit years that RFC 3339
# cannot write and `datetime` cannot hold.
MIN_TIME_US = 0  # 1970-01-01T00:00:00Z
MAX_TIME_US = 253_402_300_800 * MICROS - 1  # 9999-12-31T23:59:59.999999Z
MAX_TIME = "9999-12-31T23:59:59Z"


def iso_ms(us: int) -> str:
    """ISO 8601, UTC, millisecond precision, `Z` suffix: how the API writes times."""
    seconds, micros = divmod(us, MICROS)
    stamp = time.strftime("%Y-%m-%dT%H:%M:%S", time.gmtime(seconds))
    return f"{stamp}.{micros // 1000:03d}Z"
