"""A finished request leaves nothing behind: memory stays flat however many are served."""

from __future__ import annotations

import gc

import attrs
import trio
from fgcpay.core.settings import Settings
from helpers import create, start_server
from quart.ctx import RequestContext

REQUESTS = 300


def _live_request_contexts() -> int:
    gc.collect()
    return sum(1 for thing in gc.get_objects() if isinstance(thing, RequestContext))


async def test_served_requests_are_not_kept_alive(
    nursery: trio.Nursery, settings: Settings
) -> None:
    # On PostgreSQL, the driver's idle-connection timers once kept every request's context
    # (and so the whole request) alive for 300 s in an asyncio loop: ~15 KiB a create.
    unlimited = attrs.evolve(settings, rate_limit_burst=10_000, rate_limit_per_second=10_000.0)
    server = await start_server(nursery, unlimited)
    merchant = await server.merchant()
    for _ in range(20):  # warm up pools and caches
        await create(merchant)
    before = _live_request_contexts()
    for _ in range(REQUESTS):
        await create(merchant)
    kept = _live_request_contexts() - before
    assert kept < REQUESTS // 10, f"{kept} of {REQUESTS} finished requests are still alive"
    await server.shutdown()
