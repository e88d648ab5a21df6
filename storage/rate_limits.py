"""SQL for the shared rate-limit buckets (`rate_limit_buckets`).

A worker calls `reserve` only when it has run out of the tokens it reserved before, so a
key costs one small write per batch of requests, not one per request. The refill by
elapsed time, the grant and the debit happen in one upsert, atomically, whatever the
number of workers and hosts.

Every worker reserves from the same buckets (a merchant's, an address's), and a group may
hold several: `reserve` declares its bucket's key, so two processes' writers lock buckets
in one order (storage/_database.py, "the lock order"). The purge takes only buckets
nobody holds.
"""

from __future__ import annotations

import attrs

from ._database import Tx, locks, skip_locked


@attrs.frozen
class Reservation:
    granted: int  # tokens now owned by the caller, 0..want
    left: float  # tokens left in the shared bucket after the grant


@locks(lambda bucket_key: [("rate_limit", bucket_key)])
def reserve(
    tx: Tx, bucket_key: str, want: int, rate: float, burst: int, now_us: int
) -> Reservation:
    """Take up to `want` whole tokens from the bucket `bucket_key`, refilled first by
    `rate` tokens a second (up to `burst`) since its last reservation. A bucket seen for
    the first time starts full.

    A stamp from a clock behind the row's never moves it back, and refills nothing: a
    host whose clock is ahead by `s` seconds can add at most `rate * s` tokens once.
    """
    if tx.dialect == "postgresql":
        least, greatest = "LEAST", "GREATEST"
    else:
        least, greatest = "MIN", "MAX"
    refilled = (
        f"{least}(CAST(? AS DOUBLE PRECISION), b.tokens"
        f" + {greatest}(CAST(? AS BIGINT) - b.stamp_us, 0) * CAST(? AS DOUBLE PRECISION))"
    )
    granted = f"{least}(CAST(? AS BIGINT), FLOOR({refilled}))"
    refill_args = (float(burst), now_us, rate / 1_000_000)
    grant_args = (want, *refill_args)
    first = min(want, burst)
    row = tx.fetchrow(
        "INSERT INTO rate_limit_buckets AS b (bucket_key, tokens, stamp_us, granted)"
        " VALUES (?, ?, ?, ?) ON CONFLICT (bucket_key) DO UPDATE SET"
        f" granted = {granted}, tokens = {refilled} - {granted},"
        f" stamp_us = {greatest}(b.stamp_us, CAST(? AS BIGINT))"
        " RETURNING granted, tokens",
        bucket_key,
        float(burst - first),
        now_us,
        first,
        *grant_args,
        *refill_args,
        *grant_args,
        now_us,
    )
    assert row is not None  # an upsert with RETURNING always returns its row
    return Reservation(granted=int(row["granted"]), left=float(row["tokens"]))


def purge_full(tx: Tx, older_than_us: int, limit: int) -> int:
    """Delete buckets untouched since `older_than_us`, which the caller picks so that
    they have refilled completely by now: a missing row reads as a full bucket. On
    PostgreSQL it passes over a bucket another transaction holds (a reservation): never
    waiting, it never waits in a circle."""
    return tx.execute(
        "DELETE FROM rate_limit_buckets WHERE bucket_key IN (SELECT bucket_key"
        f" FROM rate_limit_buckets WHERE stamp_us < ? LIMIT ?{skip_locked(tx)})",
        older_than_us,
        limit,
    )
