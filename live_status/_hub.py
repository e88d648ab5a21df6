"""Live status fan-out: the newest status of a resource, to every local subscriber.

Each subscriber holds one slot, not a queue: a slow subscriber may miss an intermediate
status but always sees the latest, and memory stays bounded whatever the rate.
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

import attrs
import trio


@attrs.define(eq=False)
class Subscription:
    """Yields the latest status published for one resource, skipping stale ones."""

    resource_id: str
    _latest: Any = None
    _fresh: trio.Event = attrs.field(factory=trio.Event)

    def offer(self, status: Any) -> None:
        self._latest = status
        self._fresh.set()

    async def next(self) -> Any:
        """Wait for a status newer than the last one returned."""
        await self._fresh.wait()
        self._fresh = trio.Event()
        return self._latest


class StatusHub:
    """The local subscribers of each resource, and the newest status published to them."""

    def __init__(self) -> None:
        self._subscribers: dict[str, set[Subscription]] = {}

    @contextmanager
    def subscribe(self, resource_id: str) -> Iterator[Subscription]:
        subscription = Subscription(resource_id)
        self._subscribers.setdefault(resource_id, set()).add(subscription)
        try:
            yield subscription
        finally:
            subscribers = self._subscribers.get(resource_id)
            if subscribers is not None:
                subscribers.discard(subscription)
                if not subscribers:
                    del self._subscribers[resource_id]

    def publish(self, resource_id: str, status: Any) -> None:
        for subscription in self._subscribers.get(resource_id, ()):
            subscription.offer(status)

    def resource_ids(self) -> list[str]:
        """The resources that have a subscriber now."""
        return list(self._subscribers)
