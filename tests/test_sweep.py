"""The durable timers' shared sweep: a backlog many batches long is handed over in one
sweep, each id once, and processes sweeping one backlog together mostly take different ids."""

from __future__ import annotations

import collections
import random
from typing import Any, cast

import attrs
import pytest
import trio
import trio.testing
from fgcpay.actors import ActorHost, Message
from fgcpay.core.clock import TrioClock
from fgcpay.storage import Database
from fgcpay.timers import _sweep
from fgcpay.timers._sweep import Sweeper

BATCH = 10


class Items:
    """Handling an item takes it off the backlog, as a renewal moves its due time on."""

    kind = "item"

    def __init__(self, backlog: set[str]) -> None:
        self.backlog = backlog
        self.handled: collections.Counter[str] = collections.Counter()

    async def activate(self, actor_id: str) -> None:
        return None

    def resting(self, state: None) -> bool:
        return False

    async def receive(self, actor_id: str, state: None, message: Any) -> tuple[None, None]:
        await trio.lowlevel.checkpoint()  # a write's wait: other tasks interleave
        self.handled[actor_id] += 1
        self.backlog.discard(actor_id)
        return state, None


@attrs.frozen
class Handle(Message[None]):
    """Handle the item (it leaves the backlog)."""


class BacklogSweeper(Sweeper):
    kind = "item"
    message = Handle()

    def __init__(self, host: ActorHost, backlog: set[str]) -> None:
        super().__init__(cast(Database, None), host, TrioClock())
        self.backlog = backlog
        self.offsets: list[int] = []

    async def due(self, now_us: int, limit: int, offset: int) -> list[str]:
        await trio.lowlevel.checkpoint()  # a read's wait
        self.offsets.append(offset)
        return sorted(self.backlog)[offset : offset + limit]

    async def next_due(self) -> int | None:
        return None


async def _host(nursery: trio.Nursery, backlog: set[str]) -> tuple[ActorHost, Items]:
    host = ActorHost(idle_seconds=60.0)
    items = Items(backlog)
    host.register(items)
    await nursery.start(host.run)
    return host, items


@pytest.fixture(autouse=True)
def small_batches(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(_sweep, "BATCH", BATCH)
    monkeypatch.setattr(_sweep, "random", random.Random(11))  # the same offsets every run


async def test_one_sweep_hands_over_a_backlog_many_batches_long_each_id_once(
    nursery: trio.Nursery, autojump_clock: trio.testing.MockClock
) -> None:
    backlog = {f"id{n:04}" for n in range(BATCH * _sweep.SPREAD * 5 + 3)}
    everything = set(backlog)
    host, items = await _host(nursery, backlog)
    sweeper = BacklogSweeper(host, backlog)

    await sweeper.sweep_once()

    assert set(items.handled) == everything and set(items.handled.values()) == {1}
    assert host.live == 0  # each actor ended right after its one message
    assert sweeper.offsets[0] == 0 and sweeper.offsets[-1] == 0
    assert max(sweeper.offsets) > 0  # the backlog's reads were spread


async def test_two_processes_sweeping_one_backlog_mostly_take_different_ids(
    nursery: trio.Nursery, autojump_clock: trio.testing.MockClock
) -> None:
    backlog = {f"id{n:04}" for n in range(BATCH * _sweep.SPREAD * 10)}
    everything = set(backlog)
    (host_a, items_a), (host_b, items_b) = (
        await _host(nursery, backlog),
        await _host(nursery, backlog),
    )

    async with trio.open_nursery() as sweeps:
        sweeps.start_soon(BacklogSweeper(host_a, backlog).sweep_once)
        sweeps.start_soon(BacklogSweeper(host_b, backlog).sweep_once)

    assert set(items_a.handled) | set(items_b.handled) == everything
    both = set(items_a.handled) & set(items_b.handled)
    # Reading the same first batch each time, nearly every id would be handled twice.
    assert len(both) < len(everything) // 4
    assert min(len(items_a.handled), len(items_b.handled)) > len(everything) // 4
