"""The Python client's own cost (clients/python, `fgcpay_client.Fgcpay`): the CPU its
calling thread spends per `checkout_sessions.create(...)` against the same create sent
as a bare httpx call (`httpx.Client.post` with the same headers, `Idempotency-Key`
included, and `.json()` of the answer), one create at a time to the same service, in
alternating rounds of this run. What the client adds is its layer: the headers, the retry
loop, and the generated model the answer is parsed into (four datetimes among its fields).

Measured with `time.thread_time()` of the thread that makes the calls, so the service,
the database and this process's other threads are not counted."""

from __future__ import annotations

import statistics
import time
import uuid
from collections.abc import Callable
from typing import Any

import httpx
import trio

from ..core import CREATE_BODY, CREATE_PATH, Backend, quiet
from ..suite import Ctx, Spec

ABOUT = "client.checkout_sessions.create() against a bare httpx POST: CPU of the calling thread"
FIGURES = {
    "cpu": Spec("client CPU per create / bare httpx's", "x", {"sqlite": 1.15}),
}
# Rounds alternate which side goes first, so that a drift of the machine's speed within a
# round weighs on both; the median of the rounds is the figure.
FULL = {"creates": 400, "rounds": 7, "warmup": 100}
QUICK = {"creates": 50, "rounds": 3, "warmup": 20}


def _cpu_per_call(call: Callable[[], Any], count: int) -> float:
    """CPU seconds of this thread per `call()`, over `count` calls."""
    start = time.thread_time()
    for _ in range(count):
        call()
    return (time.thread_time() - start) / count


def _measure(url: str, key: str, p: Any) -> tuple[list[float], list[float]]:
    from fgcpay_client import Fgcpay

    headers = {"Authorization": f"Bearer {key}"}

    with httpx.Client(timeout=30) as http, Fgcpay(key, base_url=url) as client:

        def bare() -> None:
            answer = http.post(
                url + CREATE_PATH,
                json=CREATE_BODY,
                headers={**headers, "Idempotency-Key": str(uuid.uuid4())},
            )
            if answer.status_code != 201:
                raise RuntimeError(f"bare create: {answer.status_code} {answer.text}")
            answer.json()

        def wrapped() -> None:
            client.checkout_sessions.create(**CREATE_BODY)

        _cpu_per_call(bare, p.warmup)
        _cpu_per_call(wrapped, p.warmup)
        bares: list[float] = []
        clients: list[float] = []
        for n in range(p.rounds):
            sides = [(bare, bares), (wrapped, clients)]
            for call, into in sides if n % 2 == 0 else sides[::-1]:
                into.append(_cpu_per_call(call, p.creates))
    return bares, clients


async def run(ctx: Ctx, b: Backend, p: Any) -> None:
    _, key = b.merchant()
    async with b.serve() as server:
        await quiet()
        bares, clients = await trio.to_thread.run_sync(_measure, server.url, key, p)
    bare, client = statistics.median(bares), statistics.median(clients)
    pairs = [c / x for c, x in zip(clients, bares, strict=True)]
    ctx.add(
        b,
        "cpu",
        client / bare,
        f"{client * 1e6:,.0f} vs {bare * 1e6:,.0f} µs per create; {p.rounds} rounds of "
        f"{p.creates} a side, each round {min(pairs):.2f}-{max(pairs):.2f}x",
    )
