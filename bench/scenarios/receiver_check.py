"""The receiver check (`POST /api/v1/webhook_endpoints/{id}/check`) against a correct
receiver in this process on 127.0.0.1 (`minihttp.serve_ok` answering as `_verifying`
says: 200 when fgcpay's `verify` accepts a delivery, both families, 300 s either way,
else 400). Each
check is eight deliveries, one after another; measured from the request's send to its
answer, `checks` times after `warmup`, one at a time. Every report must pass all eight.
"""

from __future__ import annotations

import json
import time
from functools import partial
from typing import Any

import trio
from fgcpay.domain.signing import WebhookVerificationError, verify

from ..core import Backend, Window, free_port, percentile, quiet
from ..minihttp import Connection, Responder, serve_ok
from ..suite import Ctx, Spec

ABOUT = "POST /webhook_endpoints/{id}/check (8 deliveries) against a local verifying receiver"
FIGURES = {
    "check": Spec("receiver check against a local receiver, p99", "ms", 2000.0),
}
FULL = {"checks": 50, "warmup": 5}
QUICK = {"checks": 10, "warmup": 2}
_OK = b"HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\nok"
_REFUSED = b"HTTP/1.1 400 Bad Request\r\nContent-Length: 4\r\n\r\nnope"


def _verifying(secret: str) -> Responder:
    """A receiver's answer: 200 when fgcpay's `verify` accepts the delivery, else 400."""

    def respond(headers: list[tuple[bytes, bytes]], body: bytes) -> bytes:
        named = {k.decode("latin-1"): v.decode("latin-1") for k, v in headers}
        try:
            verify(body, named, secret, now=int(time.time()))
        except WebhookVerificationError:
            return _REFUSED
        return _OK

    return respond


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
        await nursery.start(
            partial(serve_ok, port, lambda *request: None, respond=_verifying(made["secret"]))
        )
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
