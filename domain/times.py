"""Times: stored as integer microseconds since the Unix epoch, UTC; shown as ISO 8601."""

from __future__ import annotations

import time

MICROS = 1_000_000


def iso_ms(us: int) -> str:
    """ISO 8601, UTC, millisecond precision, `Z` suffix: how the API writes times."""
    seconds, micros = divmod(us, MICROS)
    stamp = time.strftime("%Y-%m-%dT%H:%M:%S", time.gmtime(seconds))
    return f"{stamp}.{micros // 1000:03d}Z"
