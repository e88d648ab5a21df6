"""`fgcpay.core.supervision`'s rules on their own, on MockClock: a budget of N failures within
T seconds, the capped doubling backoff, and a supervisor that escalates a child once and
recovers it when it goes quiet or succeeds."""

from __future__ import annotations

import trio
import trio.testing
from fgcpay.core.supervision import Backoff, Budget, Supervisor


def test_a_budget_allows_n_failures_within_the_period_and_not_one_more() -> None:
    budget = Budget(limit=5, period=10.0)
    assert [budget.spend(t) for t in (0.0, 1.0, 2.0, 3.0, 4.0)] == [False] * 5
    assert budget.spend(9.9)  # the sixth within 10 s


def test_failures_spread_wider_than_the_period_never_exhaust_a_budget() -> None:
    budget = Budget(limit=5, period=10.0)
    # One every 2 s, for ever: five in any 10 s, never six.
    assert not any(budget.spend(2.0 * n) for n in range(1000))
    assert budget.last == 1998.0


def test_a_backoff_doubles_up_to_its_cap_and_jitter_only_shortens_it() -> None:
    backoff = Backoff(base=1.0, cap=30.0)
    assert [backoff.delay(n) for n in range(1, 8)] == [1, 2, 4, 8, 16, 30, 30]
    assert backoff.delay(10_000) == 30  # no overflow, however long it fails
    jittered = Backoff(base=1.0, cap=30.0, jitter=0.5)
    delays = [jittered.delay(5) for _ in range(200)]
    assert all(8.0 <= delay <= 16.0 for delay in delays)
    assert len(set(delays)) > 1


async def test_a_child_escalates_once_and_recovers_when_quiet(
    nursery: trio.Nursery, autojump_clock: trio.testing.MockClock
) -> None:
    supervisor = Supervisor(quiet_seconds=60.0)
    await nursery.start(supervisor.run)
    child = supervisor.child("loop x", limit=2, period=10.0)
    assert [child.failed(RuntimeError("a"), "id1") for _ in range(2)] == [False, False]
    assert child.failed(RuntimeError("b"), "id2")
    assert supervisor.escalated() == ["loop x"]
    await trio.sleep(30)
    child.failed(RuntimeError("c"))  # still failing: the quiet minute starts again
    await trio.sleep(59)
    assert supervisor.escalated() == ["loop x"]
    await trio.sleep(2)
    assert supervisor.escalated() == []


async def test_a_child_recovers_at_once_when_it_succeeds(
    autojump_clock: trio.testing.MockClock,
) -> None:
    supervisor = Supervisor()
    retries = supervisor.loop("y", limit=1, period=10.0, backoff=Backoff(1.0, 4.0))
    assert [retries.failed(RuntimeError("down")) for _ in range(4)] == [1, 2, 4, 4]
    assert supervisor.escalated() == ["loop y"]
    retries.succeeded()
    assert supervisor.escalated() == []
    assert retries.failed(RuntimeError("down")) == 1  # the backoff starts over
