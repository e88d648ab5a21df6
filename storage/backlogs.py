"""What waits in the database, for the metrics: the webhook outbox and the durable timers'
due times. Each figure is one statement on a partial index, whatever the backlog's size,
so any process may ask at every scrape and every process gets the same answer."""

from __future__ import annotations

import attrs

from . import checkout_sessions, subscriptions
from ._database import Tx

PENDING_COUNT_LIMIT = 100_000
"""Pending deliveries are counted up to this many: the count reads one index entry each."""


@attrs.frozen
class Backlogs:
    deliveries_pending: int  # at most PENDING_COUNT_LIMIT
    # The earliest `next_attempt_at` of a pending delivery, due or not (None: none pending).
    next_delivery_at: int | None
    next_expiry_at: int | None  # the earliest `expires_at` of a session still payable
    next_renewal_at: int | None  # the earliest due time of a subscription on the real clock


def backlogs(tx: Tx) -> Backlogs:
    pending = tx.fetchval(
        "SELECT COUNT(*) FROM (SELECT 1 FROM deliveries WHERE status = 'pending' LIMIT ?) p",
        PENDING_COUNT_LIMIT,
    )
    next_delivery = tx.fetchval(
        "SELECT MIN(next_attempt_at) FROM deliveries WHERE status = 'pending'"
    )
    return Backlogs(
        deliveries_pending=int(pending),
        next_delivery_at=None if next_delivery is None else int(next_delivery),
        next_expiry_at=checkout_sessions.next_expiry(tx),
        next_renewal_at=subscriptions.next_due(tx),
    )
