"""Doorbells of the event streams held in this process, one set per merchant: rung when a
transaction that wrote the merchant's events has committed, in this process or (through
the database's notifications) in another."""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager

import attrs
import trio


@attrs.define(eq=False)
class Bell:
    """One stream's doorbell: a ring is kept until the stream looks, never queued (one
    ring or a thousand, the stream reads once)."""

    merchant_id: str
    _rung: trio.Event = attrs.field(factory=trio.Event)

    def ring(self) -> None:
        self._rung.set()

    def arm(self) -> None:
        """Forget the rings so far: call before reading, so a ring during the read wakes
        the wait that follows."""
        if self._rung.is_set():
            self._rung = trio.Event()

    async def wait(self) -> None:
        await self._rung.wait()


class EventBells:
    """The bells of this process's streams, by merchant."""

    def __init__(self) -> None:
        self._bells: dict[str, set[Bell]] = {}

    @contextmanager
    def bell(self, merchant_id: str) -> Iterator[Bell]:
        bell = Bell(merchant_id)
        self._bells.setdefault(merchant_id, set()).add(bell)
        try:
            yield bell
        finally:
            bells = self._bells.get(merchant_id)
            if bells is not None:
                bells.discard(bell)
                if not bells:
                    del self._bells[merchant_id]

    def ring(self, merchant_id: str) -> None:
        for bell in self._bells.get(merchant_id, ()):
            bell.ring()

    def ring_all(self) -> None:
        """After the listener lost its connection: what was notified meanwhile was not heard."""
        for bells in self._bells.values():
            for bell in bells:
                bell.ring()
