#!/usr/bin/env python3
"""fgcpay memory and throughput over a long create load: a regression benchmark for leaks.

    .venv/bin/python bench/soak.py                          # PostgreSQL, 2 workers, 100,000 creates
    .venv/bin/python bench/soak.py --backend sqlite         # SQLite, 1 worker
    .venv/bin/python bench/soak.py --count 20000 --every 2000   # a quick check

The service is started as an operator starts it (`fgcpay serve --workers N`, PostgreSQL
on a durable throwaway cluster: fsync and synchronous_commit on) and created checkout
sessions in slices of about `--every` by wrk (-t2 -c64; each slice runs for as long as
`--every` creates took at the rate of the slice before, so readings fall near every
`--every` creates; the count printed is the exact one). After each slice it prints the creates so far, that slice's creates/s and
p99, and each worker's resident memory. At the end, two verdicts: memory (the last
reading < 1.2x the reading after the first slice) and throughput (the last slice against
the first: no decay).

This is a measurement, not a test: it reports, it never fails on a missed target.
"""

from __future__ import annotations

import argparse
import json
import shutil
import sys
import tempfile
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

from common import fgcpay_server, loadavg, log, rss_mib, sh_json, tool  # noqa: E402
from run import Bench, WrkConfig, run_wrk  # noqa: E402

MEMORY_TARGET = 1.2


def main() -> int:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--backend", choices=("postgres", "sqlite"), default="postgres")
    parser.add_argument("--workers", type=int, help="default: 2 on PostgreSQL, 1 on SQLite")
    parser.add_argument("--count", type=int, default=100_000, help="creates in all")
    parser.add_argument(
        "--every", type=int, default=10_000, help="creates per slice (one reading each)"
    )
    parser.add_argument("--threads", type=int, default=2)
    parser.add_argument("--connections", type=int, default=64)
    parser.add_argument("--json", type=Path, help="also write the readings as JSON here")
    args = parser.parse_args()
    workers = args.workers or (2 if args.backend == "postgres" else 1)
    work = Path(tempfile.mkdtemp(prefix="fgcpay-soak-"))
    cluster = None
    try:
        if args.backend == "postgres":
            from pg_durable import start_durable_cluster

            cluster = start_durable_cluster()
            cluster.psql("CREATE DATABASE soak")
            url = cluster.url("soak")
        else:
            url = f"sqlite:///{work}/soak.sqlite3"
        bench = Bench(argparse.Namespace(patch=None), work)
        env = bench.env(url)
        merchant = sh_json(
            [tool("fgcpay"), "merchant", "create", "--name", "Soak", "--email", "soak@example.com"],
            env, work,
        )  # fmt: skip
        service = fgcpay_server(f"fgcpay-{args.backend}", env, work, workers, work)
        service.start()
        readings: list[dict[str, object]] = []
        try:
            pids = service.worker_pids()
            script = bench.create_script(merchant["api_key"])
            seconds = 5  # the first slice measures the rate the next ones are sized by
            log(
                f"{args.backend}, {workers} worker(s): {args.count:,} creates in slices of "
                f"{args.every:,}; loadavg {loadavg()}"
            )
            before = [rss_mib(pid) for pid in pids]
            print(
                f"{'created':>9} {'creates/s':>10} {'p99 ms':>8}  worker RSS MiB (at start: "
                + " / ".join(f"{r:.1f}" for r in before)
                + ")",
                flush=True,
            )
            total = 0
            while total < args.count:
                cfg = WrkConfig(args.threads, args.connections, seconds)
                result = run_wrk(f"slice {len(readings) + 1}", service.url, script, cfg, service)
                total += result.requests
                left = min(args.every, args.count - total)
                seconds = max(1, round(left / max(result.rps, 1.0)))
                rss = [rss_mib(pid) for pid in pids]
                bad = result.unexpected + result.socket_errors
                readings.append({"created": total, "slice": result.requests, "rps": result.rps,
                                 "p99_ms": result.p99_ms, "rss_mib": rss, "unexpected": bad})  # fmt: skip
                print(
                    f"{total:>9,} {result.rps:>10.1f} {result.p99_ms:>8.1f}  "
                    + " / ".join(f"{r:.1f}" for r in rss)
                    + (f"  ({bad} not 201)" if bad else ""),
                    flush=True,
                )
        finally:
            service.stop()
        first, last = readings[0], readings[-1]
        # Throughput from slices of a fair size (the last few may be a small remainder).
        fair = [r for r in readings if int(r["slice"]) >= args.every // 2] or readings  # type: ignore[call-overload]
        growth = max(b / a for a, b in zip(first["rss_mib"], last["rss_mib"], strict=True))  # type: ignore[arg-type]
        speed = float(fair[-1]["rps"]) / float(fair[0]["rps"])  # type: ignore[arg-type]
        print(
            f"* memory: last / first reading = {growth:.2f}x for the worker that grew most "
            f"(target < {MEMORY_TARGET}x: {'MET' if growth < MEMORY_TARGET else 'MISSED'})"
        )
        print(
            f"* throughput: last slice / first slice of at least {args.every // 2:,} creates = "
            f"{float(fair[-1]['rps']):.1f}/{float(fair[0]['rps']):.1f} = {speed:.2f}x"
        )  # type: ignore[arg-type]
        if args.json:
            args.json.write_text(json.dumps({"backend": args.backend, "workers": workers,
                                             "readings": readings}, indent=2))  # fmt: skip
    finally:
        if cluster is not None:
            cluster.stop()
        shutil.rmtree(work, ignore_errors=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
