"""The receiver check (`POST /api/v1/webhook_endpoints/{id}/check`) against a correct
receiver in this process: a raw trio server that verifies each delivery with fgcpay's
`verify` (both families, 300 s either way) and answers 200 or 400, on 127.0.0.1. Each
check is eight deliveries, one after another; measured from the request's send to its
answer, `checks` times after `warmup`, one at a time. Every report must pass all eight.
"""

from __future__ import annotations

import json
import time
from typing import Any

import trio
from fgcpay.domain.signing import WebhookVerificationError, verify

from ..core import Backend, Window, free_port, percentile, quiet
from ..minihttp import Connection
from ..suite import Ctx, Spec

ABOUT = "POST /webhook_endpoints/{id}/check (8 deliveries) against a local verifying receiver"
FIGURES = {
    "check": Spec("receiver check against a local receiver, p99", "ms", 2000.0),
}
FULL = {"checks": 50, "warmup": 5}
QUICK = {"checks": 10, "warmup": 2}
_OK = b"HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\nok"
_REFUSED = b"HTTP/1.1 400 Bad Request\r\nContent-Length: 4\r\n\r\nnope"


async def _serve(stream: trio.SocketStream, secret: str) -> None:
    """HTTP/1.1 with keep-alive and Content-Length bodies: what the webhook client sends."""
    buf = bytearray()
    try:
        while True:
            while (at := buf.find(b"\r\n\r\n")) < 0:
                if not (data := await stream.receive_some(65536)):
                    return
                buf += data
            _, *lines = bytes(buf[:at]).decode("latin-1").split("\r\n")
            del buf[: at + 4]
            headers = {
                k.strip().lower(): v.strip() for k, _, v in (x.partition(":") for x in lines)
            }
            length = int(headers.get("content-length", "0"))
            while len(buf) < length:
                if not (data := await stream.receive_some(65536)):
                    return
                buf += data
            body = bytes(buf[:length])
            del buf[:length]
            try:
                verify(body, headers, secret, now=int(time.time()))
            except WebhookVerificationError:
                await stream.send_all(_REFUSED)
            else:
                await stream.send_all(_OK)
    except (trio.BrokenResourceError, trio.ClosedResourceError):
        return
    finally:
        await trio.aclose_forcefully(stream)


async def _check(api: Connection, path: str, auth: dict[str, str]) -> float:
    """One check, which must pass: its time in ms, from the send to the answer."""
    with trio.fail_after(30):
        answer = await api.request("POST", path, auth)
    report = json.loads(answer.body)
    if answer.status != 200 or not report["passed"]:
        raise RuntimeError(f"the check failed: {answer.status} {report}")
    return (answer.headers_at - answer.sent_at) * 1000


async def run(ctx: Ctx, b: Backend, p: Any) -> None:
    merchant_id, key = b.merchant()
    port = free_port()
    made = b.command("webhook-endpoint", "create", "--merchant", merchant_id,
                     "--url", f"http://127.0.0.1:{port}/hooks")  # fmt: skip
    path = f"/api/v1/webhook_endpoints/{made['id']}/check"
    auth = {"Authorization": f"Bearer {key}"}
    took: list[float] = []
    async with trio.open_nursery() as nursery:
        listeners = await trio.open_tcp_listeners(port, host="127.0.0.1")
        await nursery.start(trio.serve_listeners, lambda s: _serve(s, made["secret"]), listeners)
        async with b.serve() as server:
            await quiet()
            api = Connection("127.0.0.1", server.port)
            for _ in range(p.warmup):
                await _check(api, path, auth)
            with Window(server.pid, b.db_pid) as window:
                for _ in range(p.checks):
                    took.append(await _check(api, path, auth))
            await api.aclose()
        nursery.cancel_scope.cancel()
    ctx.add(b, "check", percentile(took, 99),
            f"p50 {percentile(took, 50):.2f}, max {max(took):.2f} ms, "
            f"n={len(took)}; CPU {window.per(len(took))} ms/check")  # fmt: skip
