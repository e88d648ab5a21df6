#!/usr/bin/env python3
"""What one webhook POST costs the sender in CPU, by HTTP client: an aid to reading the
webhook drain profile (`bench/webhooks.py`), not a benchmark of fgcpay.

    .venv/bin/python bench/httpx_cost.py [--requests 6000] [--concurrency 32]

A receiver (`bench/minihttp.py`, answering 200 at once) runs in a child process; this
process posts a webhook-sized body (~1.2 KB, the dispatcher's 8 headers) from
`--concurrency` trio tasks, and reports requests/s and this process's CPU per request for:

- httpx.AsyncClient configured as the dispatcher configures it (`max_connections` =
  `max_keepalive_connections` = 32, 10 s timeout, `client.stream` + `aiter_raw`);
- the same client used with `client.post` (response read whole);
- `bench/minihttp.py`'s keep-alive connection, one per task (a floor for Python on trio).

It also times the dispatcher's per-attempt work that is not I/O (signing both header
families, opening the sealed secret).
"""

from __future__ import annotations

import argparse
import resource
import subprocess
import sys
import time
from pathlib import Path

import trio

BENCH = Path(__file__).resolve().parent
sys.path.insert(0, str(BENCH))

from common import free_port, wait_for_quiet  # noqa: E402
from minihttp import Connection, serve_ok  # noqa: E402

BODY = (b'{"id":"evt_0123456789abcdefghijklmn","object":"event","type":"checkout.session.paid",'
        + b'"mode":"test","created_at":"2026-11-22T14:35:01.915Z","sequence":2,"data":{"object":{'
        + b'"x":"' + b"y" * 1000 + b'"}}}')  # fmt: skip
HEADERS = {
    "Content-Type": "application/json",
    "User-Agent": "fgcpay-webhooks/1",
    "Service-Timestamp": "1795000000",
    "Service-Signature": "v1=" + "a" * 64,
    "Service-Event-Id": "evt_0123456789abcdefghijklmn",
    "webhook-id": "evt_0123456789abcdefghijklmn",
    "webhook-timestamp": "1795000000",
    "webhook-signature": "v1," + "A" * 44,
}


def cpu() -> float:
    u = resource.getrusage(resource.RUSAGE_SELF)
    return u.ru_utime + u.ru_stime


async def run_httpx(url: str, total: int, concurrency: int, stream: bool, pool: int) -> None:
    import httpx

    client = httpx.AsyncClient(
        timeout=10.0, follow_redirects=False,
        limits=httpx.Limits(max_connections=pool, max_keepalive_connections=pool),
    )  # fmt: skip

    async def task(n: int) -> None:
        for _ in range(n):
            if stream:
                async with client.stream("POST", url, content=BODY, headers=HEADERS) as r:
                    async for _chunk in r.aiter_raw():
                        pass
                    assert r.status_code == 200
            else:
                r = await client.post(url, content=BODY, headers=HEADERS)
                assert r.status_code == 200

    async with client:
        async with trio.open_nursery() as nursery:
            for _ in range(concurrency):
                nursery.start_soon(task, total // concurrency)


async def run_mini(port: int, total: int, concurrency: int) -> None:
    async def task(n: int) -> None:
        conn = Connection("127.0.0.1", port)
        for _ in range(n):
            r = await conn.request("POST", "/hooks", HEADERS, BODY)
            assert r.status == 200
        await conn.aclose()

    async with trio.open_nursery() as nursery:
        for _ in range(concurrency):
            nursery.start_soon(task, total // concurrency)


def measure(label: str, fn, *args) -> None:  # type: ignore[no-untyped-def]
    c0, t0 = cpu(), time.perf_counter()
    trio.run(fn, *args)
    c1, t1 = cpu(), time.perf_counter()
    n = (args[1] // args[2]) * args[2]
    print(
        f"{label:<58} {n / (t1 - t0):8.0f} req/s  {(c1 - c0) * 1000 / n:6.3f} ms CPU/req",
        flush=True,
    )


def per_attempt_work() -> None:
    try:  # the installed package (never the repository root: its http/ would shadow the stdlib)
        from fgcpay.domain import webhooks
        from fgcpay.domain.secret_box import SecretBox
    except ImportError:
        print("(fgcpay not importable: skipping the signing micro-benchmark)")
        return
    box = SecretBox("bench-secret")
    sealed = box.seal(webhooks.new_secret())
    n = 5000
    t0 = time.perf_counter()
    for _ in range(n):
        secret = box.open(sealed)
        webhooks.signed_headers("evt_0123456789abcdefghijklmn", BODY, 1795000000, [secret])
    took = (time.perf_counter() - t0) / n
    print(
        f"{'signing both families + opening the sealed secret':<58} {'':>8}        {took * 1000:6.3f} ms CPU/attempt"
    )


def main() -> int:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--requests", type=int, default=6000)
    parser.add_argument("--concurrency", type=int, default=32)
    parser.add_argument("--serve", type=int, help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.serve:
        trio.run(serve_ok, args.serve, lambda *a: None)
        return 0
    port = free_port()
    receiver = subprocess.Popen([sys.executable, __file__, "--serve", str(port)])
    try:
        time.sleep(1.0)
        wait_for_quiet()
        url = f"http://127.0.0.1:{port}/hooks"
        n, c = args.requests, args.concurrency
        print(f"{n} POSTs of {len(BODY)} bytes, {c} concurrent tasks, receiver in another process")
        measure(
            "httpx stream+aiter_raw, pool 32 (as the dispatcher)", run_httpx, url, n, c, True, 32
        )
        measure("httpx post, pool 32", run_httpx, url, n, c, False, 32)
        measure(
            "httpx stream+aiter_raw, pool 32, 1 task at a time", run_httpx, url, n // 4, 1, True, 32
        )
        measure("minihttp keep-alive connection per task", run_mini, port, n, c)
        per_attempt_work()
    finally:
        receiver.terminate()
        receiver.wait(timeout=10)
    return 0


if __name__ == "__main__":
    sys.exit(main())
