"""Supervision as OTP does it: a restart budget within a period, escalation past it, and
the registry of what escalated, which `/readyz` and the metrics read.

- `Budget`: at most `limit` failures within any `period` seconds (OTP's intensity and
  period). Failures spread wider than that never exhaust it, however many there are.
- `Backoff`: a doubling delay, capped; with jitter for loops, so several processes
  retrying one database do not retry in step.
- `Retries`: how a background loop retries a failed round: after a `Backoff` (jittered,
  capped), its failures counted against its child's budget; quiet at the capped backoff
  once escalated, recovered by its next success.
- `Supervisor`: the supervised children of one process (an actor kind, a background
  loop), each a `Supervised` with its own budget. A child past its budget *escalates*:
  one ERROR line says which ids crashed and why, a counter and a gauge say so in the
  metrics, `/readyz` answers 503 naming it. It recovers at its next success (a loop
  that went through), or once it has been quiet for `quiet_seconds` (an actor kind:
  its crashes stopped), with an INFO line.

Time is trio's, so tests drive every budget and delay with `MockClock`. The failures a
child reports are logged by the child's own `Supervised` (a WARNING each, silent while
it is escalated), so every supervised part logs alike and never an ERROR a second.
"""

from __future__ import annotations

import logging
import math
import random
from collections import deque
from typing import Any

import attrs
import trio
from fgcpay.core import metrics
from fgcpay.core.logs import log_event

# How much of an error's message a log line keeps: enough to recognize it, never a dump
# (and `fgcpay.core.logs` masks anything shaped like a secret in what is kept).
ERROR_CHARS = 200
# The crashes one escalation line lists (the most recent).
REPORTED_FAILURES = 10


@attrs.define
class Budget:
    """At most `limit` failures within any `period` seconds.

    Only the last `limit + 1` failure times are kept: the budget is exceeded exactly when
    the oldest of those is still within the period, so memory stays bounded however
    fast failures come."""

    limit: int
    period: float
    _times: deque[float] = attrs.field(init=False)

    def __attrs_post_init__(self) -> None:
        self._times = deque(maxlen=self.limit + 1)

    def spend(self, now: float) -> bool:
        """Record one failure at `now` (trio time); True when it exceeds the budget."""
        self._times.append(now)
        return len(self._times) > self.limit and self._times[0] > now - self.period

    @property
    def last(self) -> float:
        """When the last failure was recorded (-inf: never)."""
        return self._times[-1] if self._times else -math.inf


@attrs.frozen
class Backoff:
    """A delay that doubles from `base` with each failure in a row, capped at `cap`.

    `jitter` (0 to 1) takes up to that share off at random: processes retrying one
    database after one outage spread out rather than hammering it together."""

    base: float
    cap: float
    jitter: float = 0.0

    def delay(self, failures: int) -> float:
        """The delay after `failures` failures in a row (1: the first)."""
        full = min(self.cap, self.base * math.pow(2, min(max(failures - 1, 0), 60)))
        return full * (1.0 - self.jitter * random.random())


@attrs.frozen
class Failure:
    """One failure as an escalation line shows it: the id or step, the error's type and
    the start of its message."""

    subject: str | None
    error_type: str
    error: str

    @classmethod
    def of(cls, error: BaseException, subject: str | None) -> Failure:
        return cls(subject, type(error).__name__, str(error)[:ERROR_CHARS])

    def as_json(self) -> dict[str, Any]:
        found: dict[str, Any] = {"error_type": self.error_type, "error": self.error}
        if self.subject is not None:
            found = {"id": self.subject, **found}
        return found


@attrs.define(eq=False)
class Supervised:
    """One supervised child: its budget, its recent failures and whether it escalated.
    Made by `Supervisor.child`; the child calls `failed` on each failure and `succeeded`
    when it went through (a loop's round)."""

    name: str  # what /readyz and the metric's label say, e.g. "actor kind checkout_session"
    budget: Budget
    supervisor: Supervisor
    escalated: bool = False
    _recent: deque[Failure] = attrs.field(factory=lambda: deque(maxlen=REPORTED_FAILURES))

    def failed(self, error: BaseException, subject: str | None = None, **context: Any) -> bool:
        """Count one failure (`subject`: the id that crashed or the step that failed;
        `context`: fields for its WARNING line). True while the child is escalated."""
        now = trio.current_time()
        failure = Failure.of(error, subject)
        self._recent.append(failure)
        exceeded = self.budget.spend(now)
        if self.escalated:
            return True  # said once already: quiet until it recovers
        log_event(
            f"{self.name} failed",
            logging.WARNING,
            supervised=self.name,
            **failure.as_json(),
            **context,
        )
        if exceeded:
            self.supervisor.escalate(self, list(self._recent))
        return self.escalated

    def quarantined(self) -> None:
        """One of its ids was quarantined (its crash was counted by `failed`, whose line
        says for how long): counted in the metrics."""
        metrics.quarantine(self.name)

    def succeeded(self) -> None:
        """It went through: an escalated child recovers at once."""
        if self.escalated:
            self.supervisor.recover(self, "succeeded")

    @property
    def quiet_at(self) -> float:
        """When it will have been quiet long enough to recover (trio time)."""
        return self.budget.last + self.supervisor.quiet_seconds


# A background loop: the first retry after about a second, then doubling to half a minute;
# past 5 failures within a minute (some 30 s of failing in a row) it escalates.
LOOP_LIMIT = 5
LOOP_PERIOD_SECONDS = 60.0
LOOP_BACKOFF = Backoff(base=1.0, cap=30.0, jitter=0.5)


@attrs.define(eq=False)
class Retries:
    """A background loop's failed rounds: each `failed` says how long to wait before the
    next round (the backoff for the failures in a row) and counts against the loop's
    budget; `succeeded` resets the backoff and recovers the loop if it escalated. Made by
    `Supervisor.loop`."""

    child: Supervised
    backoff: Backoff
    in_a_row: int = 0

    def failed(self, error: Exception, subject: str | None = None) -> float:
        """Count a failed round (`subject`: what it was working on, if one thing); the
        seconds to wait before the next."""
        self.in_a_row += 1
        self.child.failed(error, subject, in_a_row=self.in_a_row)
        return self.backoff.delay(self.in_a_row)

    def succeeded(self) -> None:
        self.in_a_row = 0
        self.child.succeeded()


class Supervisor:
    """What the supervised parts of one process report to, and what escalated among them.

    Start `run` in the service's nursery: it recovers children that went quiet."""

    def __init__(self, quiet_seconds: float = 60.0) -> None:
        self.quiet_seconds = quiet_seconds
        self._children: dict[str, Supervised] = {}
        self._changed = trio.Event()

    def child(self, name: str, limit: int, period: float) -> Supervised:
        """The supervised child `name`, with a budget of `limit` failures in `period`
        seconds (made on first use; one per name)."""
        found = self._children.get(name)
        if found is None:
            found = self._children[name] = Supervised(name, Budget(limit, period), self)
            metrics.supervised(name, escalated=False)
        return found

    def loop(
        self,
        name: str,
        limit: int = LOOP_LIMIT,
        period: float = LOOP_PERIOD_SECONDS,
        backoff: Backoff = LOOP_BACKOFF,
    ) -> Retries:
        """The retries of one background loop, supervised as `loop <name>`. Loops of one
        name (a test clock's advances) share one budget, each with its own backoff."""
        return Retries(self.child(f"loop {name}", limit, period), backoff)

    def escalated(self) -> list[str]:
        """The names of the children escalated now, sorted."""
        return sorted(name for name, child in self._children.items() if child.escalated)

    def escalate(self, child: Supervised, failures: list[Failure]) -> None:
        """`child` exceeded its budget: say so once (line, metrics, readiness)."""
        if child.escalated:
            return
        child.escalated = True
        metrics.escalation(child.name)
        log_event(
            f"{child.name} escalated: more than {child.budget.limit} failures in"
            f" {child.budget.period:g} s",
            logging.ERROR,
            supervised=child.name,
            limit=child.budget.limit,
            period_seconds=child.budget.period,
            failures=[failure.as_json() for failure in failures],
        )
        self._changed.set()

    def recover(self, child: Supervised, reason: str) -> None:
        if not child.escalated:
            return
        child.escalated = False
        metrics.supervised(child.name, escalated=False)
        log_event(f"{child.name} recovered", logging.INFO, supervised=child.name, reason=reason)

    async def run(self, *, task_status: trio.TaskStatus[None] = trio.TASK_STATUS_IGNORED) -> None:
        """Recover each escalated child once it has failed no more for `quiet_seconds`
        (sleeping until the nearest such time; no timer at all while none escalated)."""
        task_status.started()
        while True:
            self._changed = trio.Event()
            now = trio.current_time()
            waiting = [child for child in self._children.values() if child.escalated]
            for child in waiting:
                if child.quiet_at <= now:
                    self.recover(child, "quiet")
            wake_at = min((c.quiet_at for c in waiting if c.escalated), default=math.inf)
            with trio.move_on_at(wake_at):
                await self._changed.wait()
