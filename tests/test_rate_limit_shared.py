"""Rate limits hold across worker processes and hosts: every worker reserves tokens from
one bucket per key in the database, a few at a time, so N workers do not allow N times
the rate. The stated tolerance: at most `workers x batch` requests beyond the bucket
(burst plus refill), where batch is a tenth of the burst (at least 1)."""

from __future__ import annotations

import json
import logging
import os
import re
import socket
import subprocess
import sys
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Any

import attrs
import httpx
import pytest
import trio
import trio.lowlevel
import trio.testing
from fgcpay.core.clock import TrioClock
from fgcpay.core.settings import Settings
from fgcpay.storage import Database, rate_limits
from helpers import MerchantClient, start_server, wait_ready_blocking

RATE_LIMIT = re.compile(r'^"default";r=(\d+);t=(\d+)$')
BURST = 20
BATCH = 2  # a tenth of the burst
WORKERS = 2


def _check_headers(answer: httpx.Response, expected_remaining: float, slack: float) -> None:
    """The IETF draft headers on every answer; `r` within the tolerance of the truth."""
    assert answer.headers["RateLimit-Policy"] == f'"default";q={BURST};w={BURST}'
    match = RATE_LIMIT.match(answer.headers["RateLimit"])
    assert match, answer.headers["RateLimit"]
    remaining, reset = int(match.group(1)), int(match.group(2))
    assert 0 <= remaining < BURST
    assert abs(remaining - expected_remaining) <= slack, (remaining, expected_remaining)
    assert reset == BURST - remaining  # one token a second: the seconds until full
    if answer.status_code == 429:
        assert remaining == 0
        retry_after = answer.json()["details"]["retry_after_seconds"]
        assert answer.headers["Retry-After"] == str(retry_after)
        assert retry_after >= 1


async def test_two_workers_share_one_bucket_per_key(
    nursery: trio.Nursery, settings: Settings, clock: trio.testing.MockClock
) -> None:
    limited = attrs.evolve(settings, rate_limit_per_second=1.0, rate_limit_burst=BURST)
    wall = TrioClock()  # one wall clock for both "hosts"
    first = await start_server(nursery, limited, clock=wall)
    second = await start_server(nursery, limited, clock=wall)
    merchant = await first.merchant()
    workers = [merchant, MerchantClient(merchant.created, second.client)]
    started = trio.current_time()
    successes = 0

    async def fire(count: int) -> list[int]:
        nonlocal successes
        codes = []
        for n in range(count):
            answer = await workers[n % 2].get("/checkout/sessions")
            assert answer.status_code in (200, 429), answer.text
            successes += answer.status_code == 200
            refilled = (trio.current_time() - started) * limited.rate_limit_per_second
            _check_headers(
                answer,
                expected_remaining=max(0.0, BURST + refilled - successes),
                slack=WORKERS * BATCH + refilled,
            )
            codes.append(answer.status_code)
        return codes

    codes = await fire(3 * BURST)
    elapsed = trio.current_time() - started  # autojumps, if any, refill too
    allowed = BURST + elapsed * limited.rate_limit_per_second
    # Per-process buckets would allow about 2 x 20 here.
    assert allowed - WORKERS * BATCH <= codes.count(200) <= allowed + WORKERS * BATCH
    assert codes[-4:] == [429] * 4

    # Five seconds refill five tokens, for both workers together.
    clock.jump(5.0)
    before = trio.current_time()
    codes = await fire(4 * 5)
    refill = 5 + (trio.current_time() - before) * limited.rate_limit_per_second
    assert refill - WORKERS * BATCH <= codes.count(200) <= refill + WORKERS * BATCH
    await first.shutdown()
    await second.shutdown()


@attrs.define
class _CountingReservations:
    """Wraps the database's real `write` to count the token reservations and how many
    run at once."""

    real: Callable[..., Awaitable[Any]]
    calls: int = 0
    running: int = 0
    most_at_once: int = 0

    async def __call__(self, fn: Any, *args: Any) -> Any:
        if fn is not rate_limits.reserve:
            return await self.real(fn, *args)
        self.calls += 1
        self.running += 1
        self.most_at_once = max(self.most_at_once, self.running)
        try:
            await trio.lowlevel.checkpoint()  # let the other requests pile up behind this one
            return await self.real(fn, *args)
        finally:
            self.running -= 1


async def test_a_worker_reserves_a_batch_at_a_time_one_refill_at_once(
    nursery: trio.Nursery, settings: Settings, monkeypatch: pytest.MonkeyPatch
) -> None:
    server = await start_server(nursery, settings)  # 100 burst: batches of 10
    merchant = await server.merchant()
    counting = _CountingReservations(server.db.write)
    monkeypatch.setattr(server.db, "write", counting)
    codes: list[int] = []

    async def one() -> None:
        codes.append((await merchant.get("/checkout/sessions")).status_code)

    async with trio.open_nursery() as requests:
        for _ in range(30):
            requests.start_soon(one)
    assert codes == [200] * 30
    assert counting.calls == 3  # not a database write per request
    assert counting.most_at_once == 1
    last = await merchant.get("/checkout/sessions")
    # 31 taken; the tokens refilled meanwhile (50 a second) may show as well.
    remaining = int(RATE_LIMIT.match(last.headers["RateLimit"]).group(1))  # type: ignore[union-attr]
    assert 69 <= remaining <= 100
    await server.shutdown()


async def test_without_its_table_the_limiter_falls_back_to_the_process_bucket(
    nursery: trio.Nursery,
    settings: Settings,
    clock: trio.testing.MockClock,
    caplog: pytest.LogCaptureFixture,
) -> None:
    limited = attrs.evolve(settings, rate_limit_per_second=1.0, rate_limit_burst=3)
    server = await start_server(nursery, limited, clock=TrioClock())
    merchant = await server.merchant()

    def drop(tx: Any) -> None:
        tx.execute("DROP TABLE rate_limit_buckets")

    await server.db.write(drop)
    with caplog.at_level(logging.WARNING, logger="fgcpay"):
        answers = [await merchant.get("/checkout/sessions") for _ in range(4)]
    # The database cannot limit: each process limits on its own, never a 5xx.
    assert [a.status_code for a in answers] == [200, 200, 200, 429]
    assert [a.headers["RateLimit"] for a in answers] == [
        '"default";r=2;t=1',
        '"default";r=1;t=2',
        '"default";r=0;t=3',
        '"default";r=0;t=3',
    ]
    assert answers[3].headers["Retry-After"] == "1"
    warnings = [r for r in caplog.records if "rate limit" in r.getMessage()]
    assert len(warnings) == 1  # once per outage, not once per request
    await server.shutdown()


async def test_buckets_that_refilled_completely_are_purged(db: Database) -> None:
    now = 1_800_000_000_000_000
    taken = await db.write(rate_limits.reserve, "key:a", 5, 1.0, 20, now)
    assert (taken.granted, taken.left) == (5, 15.0)
    again = await db.write(rate_limits.reserve, "key:a", 5, 1.0, 20, now + 2_000_000)
    assert (again.granted, again.left) == (5, 12.0)  # 2 tokens refilled meanwhile
    await db.write(rate_limits.reserve, "key:b", 1, 1.0, 20, now + 30_000_000)
    # key:a is full again after 20 seconds; key:b was touched since.
    assert await db.write(rate_limits.purge_full, now + 10_000_000, 1000) == 1
    fresh = await db.write(rate_limits.reserve, "key:a", 30, 1.0, 20, now + 40_000_000)
    assert (fresh.granted, fresh.left) == (20, 0.0)
    empty = await db.write(rate_limits.reserve, "key:a", 30, 1.0, 20, now + 40_500_000)
    assert (empty.granted, empty.left) == (0, 0.5)
    # A stamp from a clock behind the row's refills nothing and keeps the row's stamp.
    behind = await db.write(rate_limits.reserve, "key:a", 1, 1.0, 20, now + 39_000_000)
    assert (behind.granted, behind.left) == (0, 0.5)
    later = await db.write(rate_limits.reserve, "key:a", 1, 1.0, 20, now + 41_000_000)
    assert (later.granted, later.left) == (1, 0.0)


async def test_the_memory_for_shared_buckets_is_bounded(
    db: Database, monkeypatch: pytest.MonkeyPatch
) -> None:
    from fgcpay.web import rate_limit

    monkeypatch.setattr(rate_limit, "MAX_BUCKETS", 40)
    limiter = rate_limit.RateLimiter(rate=10.0, burst=5, db=db)
    for n in range(100):
        assert (await limiter.take(f"key{n}")).allowed
        assert len(limiter._shares) <= 40


# -- `fgcpay serve --workers 2` as a real process -------------------------------------------

FGCPAY = [sys.executable, "-m", "fgcpay.cli"]


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def _wait_ready(url: str, process: subprocess.Popen[str]) -> None:
    def alive() -> None:
        assert process.poll() is None, process.stderr.read() if process.stderr else ""

    # Polling a separate process that has no other way to say it is up.
    wait_ready_blocking(url, alive=alive)


def test_serve_with_two_workers_keeps_one_limit(tmp_path: Path, postgres_url: str) -> None:
    env = {k: v for k, v in os.environ.items() if not k.startswith("FGCPAY_")}
    env.update(
        FGCPAY_DATABASE_URL=postgres_url,
        # Practically no refill during the test: the burst is all a key gets.
        FGCPAY_RATE_LIMIT_PER_SECOND="0.001",
        FGCPAY_RATE_LIMIT_BURST=str(BURST),
        FGCPAY_SHUTDOWN_GRACE_SECONDS="1",
    )
    created = subprocess.run(
        [*FGCPAY, "merchant", "create", "--name", "Acme", "--email", "rl@example.com"],
        cwd=tmp_path,
        env=env,
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert created.returncode == 0, created.stderr
    key = json.loads(created.stdout)["api_key"]
    port = _free_port()
    process = subprocess.Popen(
        [*FGCPAY, "serve", "--port", str(port), "--workers", str(WORKERS)],
        cwd=tmp_path,
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    try:
        url = f"http://127.0.0.1:{port}"
        _wait_ready(url, process)
        codes = trio.run(_fire_concurrently, url, key, 3 * BURST)
    finally:
        process.terminate()
        process.communicate(timeout=30)
    assert set(codes) == {200, 429}
    # Per-process buckets would allow up to 2 x 20.
    assert BURST - WORKERS * BATCH <= codes.count(200) <= BURST + WORKERS * BATCH


async def _fire_concurrently(url: str, key: str, count: int) -> list[int]:
    """`count` requests from 6 clients at once, a new connection each, so that the
    kernel hands them to both workers."""
    codes: list[int] = []
    limits = httpx.Limits(max_keepalive_connections=0)

    async def client() -> None:
        async with httpx.AsyncClient(base_url=url, limits=limits, timeout=30) as http:
            for _ in range(count // 6):
                answer = await http.get(
                    "/api/v1/checkout/sessions", headers={"Authorization": f"Bearer {key}"}
                )
                codes.append(answer.status_code)

    async with trio.open_nursery() as nursery:
        for _ in range(6):
            nursery.start_soon(client)
    return codes
