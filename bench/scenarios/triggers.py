"""Triggers of the clock-driven event types (`subscription.charged` renewals,
`subscription.payment_failed`, `subscription.ended`), one at a time: each makes a test
clock and a subscription on it, approves it, advances the clock and waits for the
advance before answering 201. The figure is the slowest trigger's whole answer time.
docs/performance.md, "Triggers"."""

from __future__ import annotations

import json
from typing import Any

from ..clients import burst, tail
from ..core import Backend, quiet
from ..suite import Ctx, Spec

ABOUT = "POST /test_helpers/triggers of the clock-driven event types (a test clock each)"
FIGURES = {
    "clock": Spec("trigger of a clock-driven event, slowest", "s", 1.0),
}
CLOCK_DRIVEN = ("subscription.charged", "subscription.payment_failed", "subscription.ended")
# Each trigger keeps its test clock: at most 100 a merchant (3 x 30 here).
FULL = {"triggers": 30}
QUICK = {"triggers": 3}


async def run(ctx: Ctx, b: Backend, p: Any) -> None:
    _, key = b.merchant()
    headers = {"Authorization": f"Bearer {key}", "Content-Type": "application/json"}
    calls = [
        ("/api/v1/test_helpers/triggers", json.dumps({"event_type": event_type}).encode())
        for _ in range(p.triggers)
        for event_type in CLOCK_DRIVEN
    ]
    async with b.serve() as server:
        await quiet()
        _, statuses, took = await burst(server.port, calls, headers, 1)
    p99, detail = tail(took)
    wrong = "" if statuses == {201: len(calls)} else f"; NOT EVERY ANSWER 201: {statuses}"
    ctx.add(b, "clock", max(took) / 1000, f"p99 {p99:.1f} ms, {detail}{wrong}")
