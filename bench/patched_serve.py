#!/usr/bin/env python3
"""`fgcpay` with experimental patches applied in memory: A/B measurements of changes
suggested to the application, without editing it.

    .venv/bin/python bench/patched_serve.py --patch per-sender-client serve --port P --workers 1

Everything after the patch options is `fgcpay`'s own command line. With `--workers N`
the spawned workers import this file again (as `__mp_main__`) and apply the same patches,
named in the environment variable BENCH_PATCHES. `bench/run.py`, `bench/hosted.py` and
`bench/webhooks.py` take `--patch NAME[,NAME]` and start the service through this file.

Patches (each a sketch of a suggested change, see docs/performance.md):

- per-sender-client, lean-sender: obsolete (the dispatcher no longer sends with httpx:
  its own keep-alive client, `webhooks/client.py`, is what lean-sender sketched); kept
  so old command lines say so.
- skip-clear-pin: obsolete (a right PIN's attempt now settles in the payment's own
  transaction, so there is no separate write left to skip); kept so old command lines
  say so instead of failing obscurely.
- ring-when-queued: the dispatcher is rung after a payment only when the payment queued
  a delivery (the merchant has an endpoint), instead of after every status change (each
  ring costs a claim transaction through the writer, even with nothing to claim).
- trace: not a change but a measurement: wall time of the hosted page's view functions,
  the actor's confirm, every repository function run through the database (by name),
  the SQLite writer's group commits and
  the garbage collector's pauses,
  written as JSON (per name: count, p50, p90, p99, mean in ms) to `bench-trace-<pid>.json`
  in the service's working directory when it stops.
"""

from __future__ import annotations

import os
import sys
import time
from pathlib import Path
from typing import Any

BENCH = Path(__file__).resolve().parent


def per_sender_client() -> None:
    raise SystemExit(
        "per-sender-client is obsolete: the dispatcher sends with its own keep-alive client"
        " (webhooks/client.py), not httpx"
    )


def lean_sender() -> None:
    raise SystemExit(
        "lean-sender is obsolete: the dispatcher's own client (webhooks/client.py) is the"
        " lean sender it sketched, with TLS and the SSRF guard"
    )


def skip_clear_pin() -> None:
    raise SystemExit(
        "skip-clear-pin is obsolete: a right PIN's attempt settles in the payment's transaction"
    )


def ring_when_queued() -> None:
    from fgcpay.storage import webhooks as sw
    from fgcpay.webhooks import dispatcher as wd

    queued = {"any": False}
    original_queue = sw._queue_deliveries
    original_ring = wd.WebhookDispatcher.ring

    async def _queue_deliveries(tx: Any, event: Any, now_us: int) -> int:
        n = await original_queue(tx, event, now_us)
        if n:
            queued["any"] = True
        return n

    def ring(self: Any) -> None:
        if queued["any"]:
            queued["any"] = False
            original_ring(self)

    sw._queue_deliveries = _queue_deliveries
    wd.WebhookDispatcher.ring = ring  # type: ignore[method-assign]


def trace() -> None:
    import atexit
    import collections
    import functools
    import json
    import statistics

    from fgcpay import service as service_module
    from fgcpay.actors import checkout_session
    from fgcpay.storage import _postgres, _sqlite

    samples: dict[str, list[float]] = {}

    def timed(name: str, fn: Any) -> Any:
        @functools.wraps(fn)
        async def wrapper(*args: Any, **kwargs: Any) -> Any:
            t0 = time.perf_counter()
            try:
                return await fn(*args, **kwargs)
            finally:
                samples.setdefault(name, []).append(time.perf_counter() - t0)

        return wrapper

    def by_repository_function(kind: str, run: Any) -> Any:
        @functools.wraps(run)
        async def wrapper(self: Any, fn: Any, *args: Any, **kwargs: Any) -> Any:
            name = f"db.{kind} {fn.__module__.rsplit('.', 1)[-1]}.{fn.__name__}"
            t0 = time.perf_counter()
            try:
                return await run(self, fn, *args, **kwargs)
            finally:
                samples.setdefault(name, []).append(time.perf_counter() - t0)

        return wrapper

    for database in (_sqlite.SqliteDatabase, _postgres.PostgresDatabase):
        for kind in ("read", "write"):
            setattr(database, kind, by_repository_function(kind, getattr(database, kind)))
    actor = checkout_session.CheckoutSessionActor
    actor._confirm = timed("actor._confirm", actor._confirm)  # type: ignore[method-assign]
    sessions = checkout_session.CheckoutSessions
    sessions.confirm = timed("CheckoutSessions.confirm (ask)", sessions.confirm)  # type: ignore[method-assign]

    commit = _sqlite.SqliteDatabase._commit_group

    def _commit_group(self: Any, conn: Any, tx: Any, batch: Any) -> None:
        t0 = time.perf_counter()
        commit(self, conn, tx, batch)
        took = time.perf_counter() - t0
        samples.setdefault("sqlite writer: one group commit", []).append(took)
        names = "+".join(sorted({job.fn.__name__ for job in batch}))
        samples.setdefault(f"sqlite writer: group commit of {names}", []).append(took)
        samples.setdefault("sqlite writer: group size (jobs, not ms)", []).append(len(batch) / 1000)

    _sqlite.SqliteDatabase._commit_group = _commit_group  # type: ignore[method-assign]

    import gc

    gc_started: dict[str, float] = {}

    def on_gc(phase: str, info: dict[str, int]) -> None:
        if phase == "start":
            gc_started["at"] = time.perf_counter()
        elif "at" in gc_started:
            samples.setdefault(f"gc pause, generation {info['generation']}", []).append(
                time.perf_counter() - gc_started.pop("at")
            )
            if info["generation"] == 2:
                objects = gc.get_objects()
                tracked.append((round(time.perf_counter() - t_start, 1), len(objects)))
                kinds = collections.Counter(
                    f"{type(o).__module__}.{type(o).__qualname__}" for o in objects
                )
                last_kinds[:] = kinds.most_common(12)
                del objects

    t_start = time.perf_counter()
    tracked: list[tuple[float, int]] = []
    last_kinds: list[tuple[str, int]] = []

    gc.callbacks.append(on_gc)

    original_create_app = service_module.create_app

    def create_app(service: Any) -> Any:
        app = original_create_app(service)
        for endpoint in (
            "hosted_page.confirm",
            "hosted_page.checkout_page",
            "hosted_page.status_socket",
        ):
            if endpoint in app.view_functions:
                app.view_functions[endpoint] = timed(
                    f"view {endpoint}", app.view_functions[endpoint]
                )
        return app

    service_module.create_app = create_app

    @atexit.register
    def dump() -> None:
        out = {}
        for name, values in samples.items():
            ms = sorted(v * 1000 for v in values)
            out[name] = {
                "n": len(ms), "p50": ms[len(ms) // 2], "p90": ms[int(len(ms) * 0.9)],
                "p99": ms[min(len(ms) - 1, int(len(ms) * 0.99))], "mean": statistics.fmean(ms),
            }  # fmt: skip
        out["gc: (seconds, tracked objects) after each full collection"] = tracked  # type: ignore[assignment]
        out["gc: most common tracked types after the last full collection"] = last_kinds  # type: ignore[assignment]
        Path(f"bench-trace-{os.getpid()}.json").write_text(json.dumps(out, indent=1))


PATCHES = {
    "per-sender-client": per_sender_client,
    "lean-sender": lean_sender,
    "skip-clear-pin": skip_clear_pin,
    "ring-when-queued": ring_when_queued,
    "trace": trace,
}


ENV = "BENCH_PATCHES"


def apply(names: list[str]) -> None:
    for name in names:
        if name not in PATCHES:
            raise SystemExit(f"unknown patch {name!r}; known: {', '.join(PATCHES)}")
        PATCHES[name]()


def main() -> int:
    argv = sys.argv[1:]
    names: list[str] = []
    while argv and argv[0] == "--patch":
        names += [n for n in argv[1].split(",") if n]
        argv = argv[2:]
    apply(names)
    # `--workers N` spawns processes that import this file again as `__mp_main__`: they
    # find the patch names here (see the end of this file).
    os.environ[ENV] = ",".join(names)
    from fgcpay.cli import main as fgcpay_main

    return int(fgcpay_main(argv) or 0)


if __name__ == "__main__":
    sys.exit(main())
elif __name__ == "__mp_main__" and os.environ.get(ENV):
    apply(os.environ[ENV].split(","))  # a worker spawned by `fgcpay serve --workers N`
