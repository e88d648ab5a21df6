"""Creates against the ceiling of the same stack (bench/echo_app.py: the same request
echoed), both measured in this run, the service with its request log at INFO; on
PostgreSQL also 2 workers against 1, in the same rounds; with `--baseline`, another
revision's service on the same database, in the same rounds (an A/B of a change).
docs/performance.md, "Creates", says how."""

from __future__ import annotations

import json
import statistics
from contextlib import AsyncExitStack
from typing import Any

from ..core import CREATE_BODY, CREATE_PATH, Backend, Server, echo_server, quiet, running
from ..pyspy import profile
from ..suite import Ctx, Spec
from ..wrk import Load, script, wrk

ABOUT = "POST /checkout/sessions (request log at INFO) against the quart-trio echo ceiling"
FIGURES = {
    "ratio": Spec("creates / echo ceiling, same body and headers", "x", {"sqlite": 0.8, "postgres": 0.7}, higher=True),
    "cpu": Spec("service CPU per create", "ms"),
    "scaling": Spec("creates, 2 workers / 1 worker", "x", {"postgres": 1.8}, higher=True),
    "baseline": Spec("creates, this tree / --baseline's", "x", higher=True),
}  # fmt: skip
# Many short rounds, the sides alternating: the machine's speed drifts within minutes (the
# echo's CPU per request moved by a quarter between two runs ten minutes apart), and a
# median of seven pairs follows it better than one of three.
FULL = {"seconds": 5.0, "warmup": 3.0, "round_warmup": 1.0, "connections": 64, "rounds": 7,
        "profile_seconds": 10}  # fmt: skip
QUICK = {"seconds": 2.0, "warmup": 0.5, "round_warmup": 0.5, "rounds": 3}


async def run(ctx: Ctx, b: Backend, p: Any) -> None:
    _, key = b.merchant()
    headers = {"Authorization": f"Bearer {key}", "Content-Type": "application/json"}
    lua = script(b.cwd, "create", "POST", CREATE_PATH, 201, headers, json.dumps(CREATE_BODY))
    creates: list[Load] = []
    echoes: list[Load] = []

    async def measure(server: Server, into: list[Load], db: int | None) -> None:
        await quiet()
        warmup = p.round_warmup if into else p.warmup
        into.append(await wrk(server, lua, p.seconds, p.connections, warmup, db=db))

    service = b.server(FGCPAY_LOG_LEVEL="INFO")
    echo = echo_server(b.cwd, b.workers)
    # With several workers, one worker on the same database too, in the same rounds.
    one = b.server("fgcpay-1w", workers=1, FGCPAY_LOG_LEVEL="INFO") if b.workers > 1 else None
    singles: list[Load] = []
    baseline = b.server("baseline", FGCPAY_LOG_LEVEL="INFO") if ctx.baseline else None
    if baseline is not None and ctx.baseline is not None:
        baseline.argv[0] = ctx.baseline  # the same command line, the other revision
    based: list[Load] = []
    async with AsyncExitStack() as servers:
        for server in (service, echo, one, baseline):
            if server is not None:
                await servers.enter_async_context(running(server))
        for _ in range(p.rounds):  # alternating, so that a change of the machine's load hits all
            await measure(service, creates, b.db_pid)
            await measure(echo, echoes, None)
            if one is not None:
                await measure(one, singles, b.db_pid)
            if baseline is not None:
                await measure(baseline, based, b.db_pid)
        rps, ceiling = (statistics.median(x.rps for x in loads) for loads in (creates, echoes))
        create, bare = (sorted(x, key=lambda x: x.rps)[len(x) // 2] for x in (creates, echoes))
        bad = sum(x.bad for x in creates + echoes)
        pairs = [c.rps / e.rps for c, e in zip(creates, echoes, strict=True)]
        detail = (
            f"{rps:,.0f} vs {ceiling:,.0f} req/s; CPU {create.cpu()} vs {bare.cpu()} ms/req;"
            f" {len(pairs)} rounds a side, each round {min(pairs):.2f}-{max(pairs):.2f}x"
        )
        missed = ctx.add(
            b, "ratio", rps / ceiling, detail + (f"; {bad} bad answers" if bad else "")
        )
        cpu, n = create.window, max(create.requests, 1)
        pg = f"+pg {cpu.db_cpu * 1000 / n:.2f} ms" if b.db_pid else ""
        ctx.add(b, "cpu", cpu.server_cpu * 1000 / n, pg)
        if ctx.want_profile(missed):
            for label, server in ((f"create-{b.name}", service), (f"echo-{b.name}", echo)):

                async def load(server: Server = server) -> None:
                    await wrk(server, lua, p.profile_seconds + 2, p.connections)

                seconds = p.profile_seconds
                ctx.profiles.append(await profile(label, server.pids(), seconds, b.cwd, load))
    if based:
        old = statistics.median(x.rps for x in based)
        then = sorted(based, key=lambda x: x.rps)[len(based) // 2]
        pairs = [c.rps / x.rps for c, x in zip(creates, based, strict=True)]
        ctx.add(
            b,
            "baseline",
            rps / old,
            f"{rps:,.0f} vs {old:,.0f} req/s; CPU {create.cpu()} vs {then.cpu()} ms/req;"
            f" each round {min(pairs):.2f}-{max(pairs):.2f}x",
        )
    if singles:
        alone = statistics.median(x.rps for x in singles)
        pairs = [c.rps / x.rps for c, x in zip(creates, singles, strict=True)]
        ctx.add(
            b,
            "scaling",
            rps / alone,
            f"{rps:,.0f} vs {alone:,.0f} req/s; each round {min(pairs):.2f}-{max(pairs):.2f}x",
        )
