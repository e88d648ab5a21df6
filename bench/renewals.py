#!/usr/bin/env python3
"""fgcpay renewal burst: 100,000 active subscriptions falling due at the same instant.

    .venv/bin/python bench/renewals.py                    # SQLite (1 worker), then PostgreSQL (2)
    .venv/bin/python bench/renewals.py --backend sqlite --count 20000   # a quick look

The service runs as an operator runs it (`fgcpay serve --workers N`; PostgreSQL on a
durable throwaway cluster, fsync and synchronous_commit on; SQLite as the service sets
it). `--merchants` merchants come from `fgcpay merchant create`, each with one webhook
endpoint (`fgcpay webhook-endpoint create`, all events) pointing at a receiver in this
process (`bench/minihttp.py`: 200 at once), so every renewal writes its event and its
delivery row, and the dispatcher delivers while the renewals run.

With the service running, `--count` `active` monthly subscriptions of TEST-0001 (who
pays renewals), with their period-0 charges, are inserted straight into its database in
one transaction, all with `next_action_at` = one instant in the past: the real clock's
renewal sweep finds them (FGCPAY_EXPIRY_POLL_SECONDS=2, so within 2 s). Renewals/s is
the period-1 ledger rows over the time from the first to the last (their `created_at`,
the service's clock). Afterwards it checks that every subscription got exactly one
renewal charge and one `subscription.charged` event with its delivery, and prints each
worker's RSS before the load, right after the burst, and once the actors' idle time
(FGCPAY_ACTOR_IDLE_SECONDS, 60 s) has passed. A measurement, never a test.
"""

from __future__ import annotations

import argparse
import os
import shutil
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import trio

sys.path.insert(0, str(Path(__file__).resolve().parent))

from common import (  # noqa: E402
    QUIET,
    CpuWindow,
    Db,
    fgcpay_env,
    fgcpay_server,
    free_port,
    ledger_verify,
    loadavg,
    log,
    rss_mib,
    service_database,
    sh_json,
    tool,
    wait_for_quiet,
)
from fgcpay.domain import ids, periods  # noqa: E402
from fgcpay.domain.subscriptions import ACTIVE, Subscription  # noqa: E402
from fgcpay.domain.transactions import SUBSCRIPTION_CHARGE  # noqa: E402
from fgcpay.storage import subscriptions as subscription_rows  # noqa: E402
from minihttp import serve_ok  # noqa: E402

TARGET_PER_S = 2000.0
MEMORY_TARGET = 1.2
IDLE_SECONDS = 60.0  # the service's default FGCPAY_ACTOR_IDLE_SECONDS
LEDGER = "id, merchant_id, kind, customer_code, amount_minor, currency, mode, created_at, subscription_id, period"
BALANCE = "merchant_id, shard, paid_minor, refunded_minor, pending_minor, transaction_count"


def burst_rows(
    merchants: list[str], count: int
) -> tuple[int, list[tuple[Any, ...]], list[tuple[Any, ...]]]:
    """`count` active monthly subscriptions approved a month ago, all due at one instant
    (already past), and their period-0 charges."""
    anchor = int(time.time() * 1_000_000) - 31 * periods.DAY_US
    due = periods.period_start(anchor, "monthly", 1)
    subs, charges = [], []
    for i in range(count):
        merchant = merchants[i % len(merchants)]
        sub = Subscription(
            id=ids.subscription_id(), merchant_id=merchant, status=ACTIVE, version=2,
            interval="monthly", amount_minor=1250, currency="FGC", eur_cents=1250,
            description="bench renewal", merchant_customer_reference=f"customer-{i}",
            customer_email=None, success_url="https://shop.example/ok",
            cancel_url="https://shop.example/cancel", external_reference=None, metadata_json="{}",
            max_total_minor=None, end_date=None, test_clock_id=None, created_at=anchor - 1,
            updated_at=anchor, approved_at=anchor, customer_code="TEST-0001", charge_count=1,
            charged_total_minor=1250, current_period_start=anchor, current_period_end=due,
            next_action_at=due,
        )  # fmt: skip
        subs.append(tuple(getattr(sub, name) for name in subscription_rows._FIELDS))
        charges.append((ids.transaction_id(), merchant, SUBSCRIPTION_CHARGE, "TEST-0001", 1250,
                        "FGC", "test", anchor, sub.id, 0))  # fmt: skip
    return due, subs, charges


def opening_balances(charges: list[tuple[Any, ...]]) -> list[tuple[Any, ...]]:
    """The balance's running totals of the charges loaded (as the service keeps them in
    the transaction that writes each ledger row): one shard row per merchant."""
    totals: dict[str, list[int]] = {}
    for charge in charges:
        paid = totals.setdefault(charge[1], [0, 0])
        paid[0] += charge[4]
        paid[1] += 1
    return [(merchant, 0, paid, 0, 0, count) for merchant, (paid, count) in totals.items()]


def rss_all(pids: list[int]) -> list[float]:
    return [rss_mib(pid) for pid in pids]


def fmt_rss(values: list[float]) -> str:
    return " / ".join(f"{v:.1f}" for v in values)


async def run(
    args: argparse.Namespace, backend: str, url: str, workers: int, db_pid: int | None, work: Path
) -> dict[str, Any]:
    cwd = work / backend
    cwd.mkdir()
    env = fgcpay_env(url, FGCPAY_WEBHOOK_ALLOW_PRIVATE="1", FGCPAY_EXPIRY_POLL_SECONDS="2")
    port = free_port()
    received: set[str] = set()

    def on_request(
        method: str, target: str, headers: list[tuple[bytes, bytes]], body: bytes, at: float
    ) -> None:
        received.add(next((v.decode() for k, v in headers if k == b"service-event-id"), ""))

    merchants = []
    for i in range(args.merchants):
        argv = [
            tool("fgcpay"),
            "merchant",
            "create",
            "--name",
            f"Shop {i}",
            "--email",
            f"shop{i}@example.com",
        ]
        merchant_id = (await trio.to_thread.run_sync(sh_json, argv, env, cwd))["merchant_id"]
        argv = [tool("fgcpay"), "webhook-endpoint", "create", "--merchant", merchant_id,
                "--url", f"http://127.0.0.1:{port}/hooks"]  # fmt: skip
        await trio.to_thread.run_sync(sh_json, argv, env, cwd)
        merchants.append(merchant_id)
    db = Db(url)
    result: dict[str, Any] = {"backend": backend, "workers": workers}
    async with trio.open_nursery() as nursery:
        await nursery.start(serve_ok, port, on_request)
        server = fgcpay_server(f"fgcpay-{backend}", env, cwd, workers, work)
        await trio.to_thread.run_sync(server.start)
        try:
            pids = server.worker_pids()
            result["rss_before"] = rss_all(pids)
            due, subs, charges = burst_rows(merchants, args.count)
            await trio.to_thread.run_sync(wait_for_quiet)
            log(
                f"{backend}, {workers} worker(s): loading {args.count:,} subscriptions due at one instant (loadavg {loadavg()})"
            )
            took = time.monotonic()
            await trio.to_thread.run_sync(db.load, [
                ("subscriptions", subscription_rows.COLUMNS, subs),
                ("transactions", LEDGER, charges),
                ("balance_shards", BALANCE, opening_balances(charges)),
            ])  # fmt: skip
            loaded = time.monotonic()
            log(f"  loaded in {loaded - took:.1f} s; waiting for the renewals")
            cpu = CpuWindow(
                server_pids=[server.proc.pid if server.proc else None], db_pid=db_pid
            ).start()
            peak = result["rss_before"]
            renewed = 0
            while renewed < args.count and time.monotonic() - loaded < args.timeout:
                await trio.sleep(1.0)
                renewed = await trio.to_thread.run_sync(
                    db.value, "SELECT COUNT(*) FROM transactions WHERE period >= 1"
                )
                peak = [max(a, b) for a, b in zip(peak, rss_all(pids), strict=True)]
            cpu.stop()
            result["rss_burst"], result["rss_peak"] = rss_all(pids), peak
            log(
                f"  {renewed:,} renewed {time.monotonic() - loaded:.1f} s after the load; RSS {fmt_rss(result['rss_burst'])} MiB (peak {fmt_rss(peak)})"
            )
            first, last = await trio.to_thread.run_sync(lambda: (
                db.value("SELECT MIN(created_at) FROM transactions WHERE period >= 1"),
                db.value("SELECT MAX(created_at) FROM transactions WHERE period >= 1"),
            ))  # fmt: skip
            result["seconds"] = (last - first) / 1e6
            result["per_s"] = renewed / max(result["seconds"], 1e-6)
            result["cpu_ms"] = cpu.server_cpu * 1000 / max(renewed, 1)
            result["db_cpu_ms"] = cpu.db_cpu * 1000 / max(renewed, 1)
            result["delivered_in_burst"] = len(received)
            log(
                f"  {result['per_s']:.0f} renewals/s over {result['seconds']:.1f} s, {len(received):,} events delivered meanwhile; {cpu.describe(renewed, 'renewal')}"
            )
            log(f"  waiting {args.idle_wait:.0f} s for the actors' idle time")
            await trio.sleep(args.idle_wait)
            result["rss_idle"] = rss_all(pids)
            result["delivered_after_idle"] = len(received)
            log(
                f"  RSS after the idle time {fmt_rss(result['rss_idle'])} MiB; {len(received):,} events delivered"
            )
        finally:
            await trio.to_thread.run_sync(server.stop)
        nursery.cancel_scope.cancel()
    checks = {
        "renewal charges": "SELECT COUNT(*) FROM transactions WHERE period = 1",
        "subscriptions charged": "SELECT COUNT(DISTINCT subscription_id) FROM transactions WHERE period = 1",
        "charges past period 1": "SELECT COUNT(*) FROM transactions WHERE period > 1",
        "charged events": "SELECT COUNT(*) FROM events WHERE type = 'subscription.charged'",
        "subscriptions with an event": "SELECT COUNT(DISTINCT resource_id) FROM events WHERE type = 'subscription.charged'",
        "their deliveries": "SELECT COUNT(*) FROM deliveries d JOIN events e ON e.id = d.event_id WHERE e.type = 'subscription.charged'",
        "still due": f"SELECT COUNT(*) FROM subscriptions WHERE next_action_at <= {due}",
    }
    result["checks"] = {name: db.value(sql) for name, sql in checks.items()}
    # The balance's running totals agree with the ledger (exit status 0).
    result["checks"]["ledger verify"] = await trio.to_thread.run_sync(ledger_verify, env, cwd)
    want = {"charges past period 1": 0, "still due": 0, "ledger verify": 0}
    result["ok"] = all(v == want.get(k, args.count) for k, v in result["checks"].items())
    log(f"  checks {'OK' if result['ok'] else 'FAILED'}: {result['checks']}")
    db.conn.close()
    return result


def backend(args: argparse.Namespace, name: str, work: Path) -> dict[str, Any]:
    workers = 1 if name == "sqlite" else args.pg_workers
    with service_database(name, work, "renewals") as (url, db_pid):
        return trio.run(run, args, name, url, workers, db_pid, work)


def report(results: list[dict[str, Any]], args: argparse.Namespace) -> None:
    print()
    print(f"fgcpay renewal burst: {args.count:,} subscriptions due at one instant, {args.merchants} merchants "
          f"with one endpoint each; {os.cpu_count()} CPUs, {time.strftime('%Y-%m-%d %H:%M')}")  # fmt: skip
    print(
        f"| backend | renewals/s | seconds | service CPU ms/renewal | worker RSS MiB before / after burst (peak) / after {args.idle_wait:.0f} s idle | delivered by then | checks |"
    )
    print("|---|---:|---:|---:|---|---:|---|")
    for r in results:
        rss = " ; ".join(f"{a:.1f} / {b:.1f} ({p:.1f}) / {c:.1f}" for a, b, p, c in
                         zip(r["rss_before"], r["rss_burst"], r["rss_peak"], r["rss_idle"], strict=True))  # fmt: skip
        cpu = f"{r['cpu_ms']:.2f}" + (f" +pg {r['db_cpu_ms']:.2f}" if r["db_cpu_ms"] else "")
        print(f"| {r['backend']}, {r['workers']} worker(s) | {r['per_s']:,.0f} | {r['seconds']:.1f} | {cpu} | {rss} "
              f"| {r['delivered_after_idle']:,} | {'ok' if r['ok'] else 'FAILED'} |")  # fmt: skip
    for r in results:
        growth = max(c / a for a, c in zip(r["rss_before"], r["rss_idle"], strict=True))
        print(f"* {r['backend']}: {r['per_s']:,.0f} renewals/s (target >= {TARGET_PER_S:,.0f}: "
              f"{'MET' if r['per_s'] >= TARGET_PER_S else 'MISSED'}); RSS after idle / before = {growth:.2f}x "
              f"(target < {MEMORY_TARGET}x: {'MET' if growth < MEMORY_TARGET else 'MISSED'})")  # fmt: skip


def main() -> int:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--backend", choices=("sqlite", "postgres"), action="append")
    parser.add_argument("--count", type=int, default=100_000)
    parser.add_argument("--merchants", type=int, default=4)
    parser.add_argument("--pg-workers", type=int, default=2)
    parser.add_argument(
        "--timeout", type=float, default=600.0, help="seconds to wait for the renewals"
    )
    parser.add_argument(
        "--idle-wait", type=float, default=IDLE_SECONDS + 10, help="seconds before the last RSS"
    )
    parser.add_argument("--quiet-wait", type=float, default=30.0, help="see bench/common.py")
    parser.add_argument("--tests-wait", type=float, default=600.0, help="see bench/common.py")
    args = parser.parse_args()
    QUIET["wait"], QUIET["tests_wait"] = args.quiet_wait, args.tests_wait
    work = Path(tempfile.mkdtemp(prefix="fgcpay-renewals-"))
    results = []
    try:
        for name in args.backend or ["sqlite", "postgres"]:
            results.append(backend(args, name, work))
    finally:
        report(results, args)
        shutil.rmtree(work, ignore_errors=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
