#!/usr/bin/env python3
"""The list queries alone on PostgreSQL with 1,000,000 sessions: is a slow list page the
database's doing or the service's? An aid to reading `bench/run.py`'s list figures.

    .venv/bin/python bench/pg_list_check.py [--rows 1000000] [--runs 1000]

Starts a durable throwaway cluster (`bench/pg_durable.py`), applies the migrations with
`fgcpay migrate`, makes a merchant and bulk-loads the same rows as `bench/run.py` (COPY,
VACUUM (ANALYZE), CHECKPOINT). Then, on one psycopg connection with prepared statements
(as the service's pool does), each list query of `bench/run.py` runs `--runs` times one
after another: p50/p99/max of the round trip, and EXPLAIN (ANALYZE, BUFFERS) of each, as a
custom plan and as the generic plan a prepared statement may switch to.

With `--service`, it then starts `fgcpay serve --workers 2` on that database and sends
`--runs` deep-page requests (`?limit=20&starting_after=<90 % deep>`) one at a time over
one keep-alive connection, printing the slow ones with their send times, so that a
periodic cause (a background loop of the service) shows.
"""

from __future__ import annotations

import argparse
import re
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

import trio  # noqa: E402
from common import (  # noqa: E402
    create_merchant,
    fgcpay_env,
    fgcpay_server,
    fmt_summary,
    log,
    summary_ms,
    tool,
    wait_for_quiet,
)
from minihttp import Connection, clock  # noqa: E402
from pg_durable import find_pg_bin, start_durable_cluster  # noqa: E402
from run import pg_bulk_insert  # noqa: E402

COLUMNS = (
    "id, merchant_id, status, version, amount_minor, currency, eur_cents, description,"
    " success_url, cancel_url, customer_email, customer_reference, external_reference,"
    " metadata, created_at, updated_at, expires_at, paid_at"
)
BASE = f"SELECT {COLUMNS} FROM checkout_sessions"
QUERIES = {
    "first page": (
        f"{BASE} WHERE merchant_id = $1 ORDER BY created_at DESC, id DESC LIMIT $2",
        "m,l",
    ),
    "status=paid": (
        f"{BASE} WHERE merchant_id = $1 AND status = $2 ORDER BY created_at DESC, id DESC LIMIT $3",
        "m,s,l",
    ),
    "starting_after 90% deep": (
        f"{BASE} WHERE merchant_id = $1 AND (created_at, id) < ($2, $3)"
        " ORDER BY created_at DESC, id DESC LIMIT $4",
        "m,c,i,l",
    ),
    "cursor lookup (by id)": (f"{BASE} WHERE id = $1 AND merchant_id = $2", "i,m"),
}


def check(url: str, merchant_id: str, anchor: str, runs: int) -> None:
    import psycopg

    with psycopg.connect(url, autocommit=True) as conn:
        row = conn.execute(
            "SELECT created_at FROM checkout_sessions WHERE id = %s", (anchor,)
        ).fetchone()
        values = {"m": merchant_id, "s": "paid", "l": 21, "c": row[0] if row else 0, "i": anchor}
        for name, (sql, keys) in QUERIES.items():
            args = [values[k] for k in keys.split(",")]
            query = re.sub(r"\$\d+", "%s", sql)
            times = []
            for _ in range(runs):
                t0 = time.perf_counter()
                conn.execute(query, args, prepare=True).fetchall()
                times.append(time.perf_counter() - t0)
            print(f"{name:<26} {fmt_summary(summary_ms(times))}")
            for mode in ("force_custom_plan", "force_generic_plan"):
                conn.execute(f"SET plan_cache_mode = {mode}")
                plan = conn.execute(f"EXPLAIN (ANALYZE, BUFFERS) {query}", args).fetchall()
                print(f"  -- {mode}:")
                for line in plan:
                    print("     " + line[0])
            conn.execute("RESET plan_cache_mode")


async def through_service(port: int, api_key: str, anchor: str, runs: int) -> None:
    conn = Connection("127.0.0.1", port)
    path = f"/api/v1/checkout/sessions?limit=20&starting_after={anchor}"
    headers = {"Authorization": f"Bearer {api_key}"}
    for _ in range(50):
        await conn.request("GET", path, headers)
    start = clock()
    times: list[tuple[float, float]] = []
    for _ in range(runs):
        r = await conn.request("GET", path, headers)
        assert r.status == 200, r.status
        times.append((r.sent_at - start, r.done_at - r.sent_at))
    print(
        f"through fgcpay (2 workers, one connection): {fmt_summary(summary_ms([d for _, d in times]))}"
    )
    slow = [(at, d) for at, d in times if d > 0.030]
    print(
        f"{len(slow)} requests over 30 ms, at (s after the first): "
        + ", ".join(f"{at:.2f} ({d * 1000:.0f} ms)" for at, d in slow[:40])
    )


def main() -> int:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--rows", type=int, default=1_000_000)
    parser.add_argument("--runs", type=int, default=1000)
    parser.add_argument("--service", action="store_true", help="also time the page through fgcpay")
    parser.add_argument("--patch", help="start fgcpay through bench/patched_serve.py (e.g. trace)")
    parser.add_argument(
        "--keep", action="store_true", help="keep the service's directory (traces, logs)"
    )
    args = parser.parse_args()
    if find_pg_bin() is None:
        print("no PostgreSQL server binaries (apt-get install -y postgresql)")
        return 2
    cluster = start_durable_cluster()
    cwd = Path(tempfile.mkdtemp(prefix="fgcpay-pg-list-"))
    try:
        cluster.psql("CREATE DATABASE bench")
        url = cluster.url("bench")
        env = fgcpay_env(url)
        subprocess.run(
            [tool("fgcpay"), "migrate"],
            env=env,
            cwd=cwd,
            check=True,
            capture_output=True,
            timeout=120,
        )
        merchant_id, api_key = create_merchant(env, cwd)
        log(f"loading {args.rows:,} sessions (COPY, VACUUM (ANALYZE), CHECKPOINT)")
        anchor, took = pg_bulk_insert(url, merchant_id, args.rows)
        log(f"loaded in {took:.1f} s")
        wait_for_quiet()
        check(url, merchant_id, anchor, args.runs)
        if args.service:
            server = fgcpay_server("fgcpay-pg", env, cwd, 2, cwd, args.patch)
            server.start()
            try:
                wait_for_quiet()
                trio.run(through_service, server.port, api_key, anchor, args.runs)
            finally:
                server.stop()
    finally:
        cluster.stop()
        if args.keep:
            log(f"kept {cwd}")
        else:
            shutil.rmtree(cwd, ignore_errors=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
