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


class HubFull(Exception):
    """A subscription refused: the resource has `most` subscribers already (`whole` False),
    or the whole hub has (`whole` True)."""

    def __init__(self, most: int, *, whole: bool) -> None:
        super().__init__(most, whole)
        self.most = most
        self.whole = whole


class StatusHub:
    """The local subscribers of each resource, and the newest status published to them."""

    def __init__(self) -> None:
        self._subscribers: dict[str, set[Subscription]] = {}
        self._count = 0

    @contextmanager
    def subscribe(
        self,
        resource_id: str,
        *,
        most_each: int | None = None,
        most_in_all: int | None = None,
    ) -> Iterator[Subscription]:
        """Subscribe to `resource_id` for the block, unless it has `most_each` subscribers
        already or the hub `most_in_all` (then `HubFull`, and nothing held). Counted and
        added without a checkpoint between, so two subscribers never both take the last
        place."""
        held = self._subscribers.get(resource_id, ())
        if most_in_all is not None and self._count >= most_in_all:
            raise HubFull(most_in_all, whole=True)
        if most_each is not None and len(held) >= most_each:
            raise HubFull(most_each, whole=False)
        subscription = Subscription(resource_id)
        self._subscribers.setdefault(resource_id, set()).add(subscription)
        self._count += 1
        try:
            yield subscription
        finally:
            self._count -= 1
            subscribers = self._subscribers.get(resource_id)
            if subscribers is not None:
                subscribers.discard(subscription)
                if not subscribers:
                    del self._subscribers[resource_id]

    def publish(self, resource_id: str, status: Any) -> None:
        for subscription in self._subscribers.get(resource_id, ()):
            subscription.offer(status)

    def subscribers(self) -> int:
        """How many subscriptions are held now, of every resource."""
        return self._count

    def resource_ids(self) -> list[str]:
        """The resources that have a subscriber now."""
        return list(self._subscribers)
