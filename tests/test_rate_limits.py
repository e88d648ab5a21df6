"""Rate limits per API key (token bucket), with the IETF draft headers."""

from __future__ import annotations

import attrs
import trio
import trio.testing
from fgcpay.core.clock import TrioClock
from fgcpay.core.settings import Settings
from fgcpay.web.rate_limit import RateLimiter
from helpers import start_server


async def test_burst_then_429_with_retry_after(
    nursery: trio.Nursery, settings: Settings, clock: trio.testing.MockClock
) -> None:
    limited = attrs.evolve(settings, rate_limit_per_second=1.0, rate_limit_burst=3)
    server = await start_server(nursery, limited, clock=TrioClock())
    merchant = await server.merchant()
    answers = [await merchant.get("/checkout/sessions") for _ in range(4)]
    assert [a.status_code for a in answers] == [200, 200, 200, 429]
    assert [a.headers["RateLimit"] for a in answers[:3]] == [
        '"default";r=2;t=1',
        '"default";r=1;t=2',
        '"default";r=0;t=3',
    ]
    assert answers[0].headers["RateLimit-Policy"] == '"default";q=3;w=3'
    limited_answer = answers[3]
    body = limited_answer.json()
    assert body["code"] == "rate_limited"
    assert body["details"] == {"retry_after_seconds": 1}
    assert limited_answer.headers["Retry-After"] == "1"
    # Another merchant's key has its own bucket.
    other = await server.merchant("Other")
    assert (await other.get("/checkout/sessions")).status_code == 200
    # One second later one token is back.
    clock.jump(1.0)
    assert (await merchant.get("/checkout/sessions")).status_code == 200
    assert (await merchant.get("/checkout/sessions")).status_code == 429
    await server.shutdown()


async def test_failed_authentication_is_limited_per_client(
    nursery: trio.Nursery, settings: Settings, clock: trio.testing.MockClock
) -> None:
    limited = attrs.evolve(settings, rate_limit_per_second=1.0, rate_limit_burst=2)
    server = await start_server(nursery, limited, clock=TrioClock())
    bad = {"Authorization": "Bearer fp_test_" + "q" * 32}
    codes = [
        (await server.client.get("/checkout/sessions", headers=bad)).status_code for _ in range(3)
    ]
    assert codes == [401, 401, 429]
    await server.shutdown()


async def test_bucket_memory_is_bounded(clock: trio.testing.MockClock) -> None:
    from fgcpay.web import rate_limit

    limiter = RateLimiter(rate=10.0, burst=5)
    for n in range(rate_limit.MAX_BUCKETS + 10):
        await limiter.take(f"key{n}")
    assert len(limiter._buckets) <= rate_limit.MAX_BUCKETS
