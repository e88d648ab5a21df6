#!/usr/bin/env python3
"""fgcpay ledger reads and refunds: GET /balance and GET /transactions with 1,000,000
ledger rows for one merchant, and refunds created per second.

    .venv/bin/python bench/ledger.py                      # SQLite (1 worker), then PostgreSQL (2)
    .venv/bin/python bench/ledger.py --backend sqlite --rows 50000 --requests 300 --refunds 500

The service runs as an operator runs it (`fgcpay serve --workers N`; PostgreSQL on a
durable throwaway cluster; rate limits raised, bench/common.py `fgcpay_env`). One
merchant from `fgcpay merchant create`; then `--rows` ledger rows of that merchant are
loaded straight into its database in one transaction (COPY on PostgreSQL), a year of
them: payments of paid checkout sessions (with the sessions), monthly subscription
charges (with the subscriptions), approved refunds (the refunds and their negative
entries, the payments' reservations), the balance's running totals to agree; then
ANALYZE, and `fgcpay ledger verify` must exit 0.

Reads, one keep-alive connection, `--requests` each after a short warm-up: GET /balance,
GET /transactions?limit=20 (the first page; pages after a random row of the ledger; and
`type=refund`, first page and after a random refund entry). Refunds: `--clients`
connections POST /refunds (`amount_fgc` 1.00, an Idempotency-Key each) against
`--refunds` distinct paid sessions, then `--refunds-one` of 0.01 against one payment;
refunds/s from the first request to the last answer, and the service's CPU per refund.
`fgcpay ledger verify` again at the end. A measurement, never a test.
"""

from __future__ import annotations

import argparse
import json
import operator
import os
import random
import secrets
import shutil
import sys
import tempfile
import time
from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import attrs
import trio

sys.path.insert(0, str(Path(__file__).resolve().parent))

from common import (  # noqa: E402
    QUIET,
    CpuWindow,
    Db,
    create_merchant,
    fgcpay_env,
    fgcpay_server,
    ledger_verify,
    loadavg,
    log,
    percentile,
    service_database,
    wait_for_quiet,
)
from fgcpay.domain import ids, periods, refunds  # noqa: E402
from fgcpay.domain.checkout import PAID, CheckoutSession  # noqa: E402
from fgcpay.domain.money import format_fgc  # noqa: E402
from fgcpay.domain.subscriptions import ACTIVE, Subscription  # noqa: E402
from fgcpay.domain.transactions import PAYMENT, SUBSCRIPTION_CHARGE, Transaction  # noqa: E402
from fgcpay.storage import checkout_sessions, subscriptions, transactions  # noqa: E402
from fgcpay.storage import refunds as refund_rows  # noqa: E402
from minihttp import Connection  # noqa: E402

TARGET_MS = {"sqlite": 10.0, "postgres": 20.0}
CHARGES, REFUNDS = 0.20, 0.05  # shares of the ledger's rows; payments are the rest
MINUTE, DAY = 60_000_000, periods.DAY_US
BALANCE = "merchant_id, shard, paid_minor, refunded_minor, pending_minor, transaction_count"
PAGE = "/api/v1/transactions?limit=20"
READS = ("balance", "first page", "deep page", "type=refund", "type=refund, deep")
BURSTS = ("distinct sessions", "one payment")


def table(name: str, columns: str, records: list[Any]) -> tuple[str, str, list[tuple[Any, ...]]]:
    """Records as rows of `name`, in the order of a storage module's COLUMNS."""
    get = operator.attrgetter(
        *("metadata_json" if c == "metadata" else c for c in columns.split(", "))
    )
    return name, columns, [get(record) for record in records]


@dataclass
class Ledger:
    """The rows to load, and what the measurements need from them."""

    tables: list[tuple[str, str, list[tuple[Any, ...]]]]
    want: dict[str, Any]  # the balance's figures
    cursors: list[str]  # ledger rows at random depths
    refund_cursors: list[str]  # refund entries at random depths
    refundable: list[str]  # paid sessions never refunded, for the refunds measured
    one: str  # the session whose payment takes the refunds of 0.01


def ledger_rows(merchant: str, count: int, refundable: int, rng: random.Random) -> Ledger:
    """A year of one merchant's ledger, `count` rows (see the module's docstring)."""
    now = int(time.time() * 1_000_000)
    start = now - 365 * DAY

    def record(cls: Any, **fields: Any) -> Any:
        return cls(merchant_id=merchant, currency="FGC", customer_code="TEST-0001", **fields)

    subs: list[Subscription] = []
    paid: list[Transaction] = []
    while len(paid) < count * CHARGES:  # monthly subscriptions approved about a year ago
        anchor = start + rng.randrange(30 * DAY)
        n = next(p for p in range(14) if periods.period_start(anchor, "monthly", p) > now)
        renews, last = (periods.period_start(anchor, "monthly", p) for p in (n, n - 1))
        if renews < now + DAY:  # nothing falls due while the bench runs
            continue
        amount = rng.choice((500, 990, 1250, 2900, 4900))
        sub = record(
            Subscription, id=ids.subscription_id(), status=ACTIVE, version=n + 1,
            interval="monthly", amount_minor=amount, eur_cents=amount, description="bench plan",
            merchant_customer_reference=f"customer-{len(subs)}", customer_email=None,
            success_url="https://shop.example/ok", cancel_url="https://shop.example/cancel",
            external_reference=None, metadata_json="{}", max_total_minor=None, end_date=None,
            test_clock_id=None, created_at=anchor - MINUTE, updated_at=last, approved_at=anchor,
            charge_count=n, charged_total_minor=n * amount, current_period_start=last,
            current_period_end=renews, next_action_at=renews,
        )  # fmt: skip
        subs.append(sub)
        paid += [record(Transaction, id=ids.transaction_id(), kind=SUBSCRIPTION_CHARGE,
                        checkout_session_id=None, amount_minor=amount, subscription_id=sub.id,
                        created_at=periods.period_start(anchor, "monthly", p), period=p)
                 for p in range(n)]  # fmt: skip
    n_refunds = round(count * REFUNDS)
    sessions: list[CheckoutSession] = []
    for _ in range(count - len(paid) - n_refunds):
        at, amount = rng.randrange(start, now - 10 * MINUTE), rng.randrange(100, 100_000)
        created = at - rng.randrange(MINUTE // 2, 10 * MINUTE)
        session = CheckoutSession(
            id=ids.checkout_session_id(), merchant_id=merchant, status=PAID, version=2,
            amount_minor=amount, currency="FGC", eur_cents=amount, description="bench order",
            success_url="https://shop.example/ok", cancel_url="https://shop.example/cancel",
            customer_email=None, customer_reference=None, external_reference=None,
            metadata_json="{}", created_at=created, updated_at=at, expires_at=created + DAY,
            paid_at=at,
        )  # fmt: skip
        sessions.append(session)
        paid.append(record(Transaction, id=ids.transaction_id(), kind=PAYMENT,
                           checkout_session_id=session.id, amount_minor=amount, created_at=at))  # fmt: skip
    # Approved refunds of payments and charges at least a week old, of all (most) or part.
    old = [i for i, t in enumerate(paid) if t.created_at < now - 7 * DAY]
    made, entries = [], []
    for i in rng.sample(old, n_refunds):
        payment = paid[i]
        amount = payment.amount_minor
        if rng.random() < 0.4:
            amount = rng.randrange(1, amount)
        asked = payment.created_at + rng.randrange(5 * MINUTE, 3 * DAY)
        approved = asked + rng.randrange(5 * MINUTE, 3 * DAY)
        refund = refunds.Refund(
            id=ids.refund_id(), merchant_id=merchant, status=refunds.APPROVED, version=2,
            amount_minor=amount, currency="FGC", transaction_id=payment.id,
            checkout_session_id=payment.checkout_session_id,
            subscription_id=payment.subscription_id, reason="requested_by_customer",
            metadata_json="{}", created_at=asked, updated_at=approved, reviewed_at=approved,
        )  # fmt: skip
        made.append(refund)
        entries.append(refunds.ledger_entry(refund, payment, transaction_id=ids.transaction_id(),
                                            now_us=approved))  # fmt: skip
        paid[i] = attrs.evolve(payment, refund_reserved_minor=amount)
    for rows in (subs, paid, sessions, made, entries):  # as a year's writes lie on disk
        rows.sort(key=operator.attrgetter("created_at"))
    paid_minor = sum(t.amount_minor for t in paid)
    refunded_minor = sum(r.amount_minor for r in made)
    untouched = [t for t in paid if t.kind == PAYMENT and not t.refund_reserved_minor]
    rng.shuffle(untouched)
    return Ledger(
        tables=[
            table("checkout_sessions", checkout_sessions.COLUMNS, sessions),
            table("subscriptions", subscriptions.COLUMNS, subs),
            table("transactions", transactions.COLUMNS, paid),
            table("refunds", refund_rows.COLUMNS, made),
            table("transactions", transactions.COLUMNS, entries),  # after their refunds
            ("balance_shards", BALANCE, [(merchant, 0, paid_minor, refunded_minor, 0, count)]),
        ],
        want={"paid_total_fgc": format_fgc(paid_minor), "refunded_fgc": format_fgc(refunded_minor),
              "transaction_count": count},
        cursors=[t.id for t in rng.sample(paid + entries, min(1000, count))],
        refund_cursors=[t.id for t in rng.sample(entries, min(1000, len(entries)))],
        refundable=[str(t.checkout_session_id) for t in untouched[:refundable]],
        one=str(max(untouched[refundable:], key=operator.attrgetter("amount_minor")).checkout_session_id),
    )  # fmt: skip


@dataclass
class Result:
    backend: str
    workers: int
    reads: dict[str, list[float]] = field(default_factory=dict)  # ms per request
    refunds: dict[str, str] = field(default_factory=dict)  # refunds/s (CPU ms per refund)
    per_s: dict[str, float] = field(default_factory=dict)
    other_pct: float = 0.0
    checks: dict[str, Any] = field(default_factory=dict)
    ok: bool = False


def fmt_ms(ms: list[float]) -> str:
    return f"{percentile(ms, 50):.2f} / {percentile(ms, 99):.2f} / {max(ms):.2f}"


async def measure_reads(port: int, headers: dict[str, str], ledger: Ledger, args: argparse.Namespace,
                        window: Callable[[], CpuWindow], result: Result) -> None:  # fmt: skip
    """Each read `args.requests` times, one at a time on one keep-alive connection."""
    rng = random.Random(11)
    paths: dict[str, Callable[[], str]] = {
        "balance": lambda: "/api/v1/balance",
        "first page": lambda: PAGE,
        "deep page": lambda: f"{PAGE}&starting_after={rng.choice(ledger.cursors)}",
        "type=refund": lambda: f"{PAGE}&type=refund",
        "type=refund, deep": lambda: f"{PAGE}&type=refund&starting_after={rng.choice(ledger.refund_cursors)}",
    }  # fmt: skip
    conn = Connection("127.0.0.1", port)
    for name, path in paths.items():
        for _ in range(args.warmup):
            await conn.request("GET", path(), headers)
        cpu, took = window().start(), []
        for _ in range(args.requests):
            answer = await conn.request("GET", path(), headers)
            if answer.status != 200:
                raise RuntimeError(f"GET {name}: {answer.status} {answer.body[:200]!r}")
            took.append((answer.done_at - answer.sent_at) * 1000)
        cpu.stop()
        result.reads[name], result.other_pct = took, max(result.other_pct, cpu.other_pct)
        log(f"  {name}: {fmt_ms(took)} ms; {cpu.describe(len(took), 'request')}")
    await conn.aclose()


async def create_refunds(port: int, headers: dict[str, str], bodies: list[dict[str, str]],
                         clients: int) -> tuple[float, Counter[int], list[float]]:  # fmt: skip
    """POST every body to /refunds from `clients` connections at once: the seconds from
    the first request to the last answer, the count of each status, the latencies in ms."""
    todo, statuses, took = iter(bodies), Counter[int](), list[float]()

    async def client() -> None:
        conn = Connection("127.0.0.1", port)
        for body in todo:  # shared: each body goes to one client
            key = {"Idempotency-Key": secrets.token_hex(16), "Content-Type": "application/json"}
            answer = await conn.request(
                "POST", "/api/v1/refunds", headers | key, json.dumps(body).encode()
            )
            statuses[answer.status] += 1
            took.append((answer.done_at - answer.sent_at) * 1000)
        await conn.aclose()

    started = trio.current_time()
    async with trio.open_nursery() as nursery:
        for _ in range(clients):
            nursery.start_soon(client)
    return trio.current_time() - started, statuses, took


async def run(
    args: argparse.Namespace, backend: str, url: str, db_pid: int | None, work: Path
) -> Result:
    result = Result(backend, 1 if backend == "sqlite" else args.pg_workers)
    cwd = work / backend
    cwd.mkdir()
    env = fgcpay_env(url)
    merchant, api_key = await trio.to_thread.run_sync(create_merchant, env, cwd)
    headers = {"Authorization": f"Bearer {api_key}"}
    ledger = ledger_rows(merchant, args.rows, args.refunds, random.Random(7))
    log(
        f"{backend}: loading {args.rows:,} ledger rows: {', '.join(f'{len(r):,} {t}' for t, _, r in ledger.tables)}"
    )
    took = time.monotonic()
    db = Db(url)
    await trio.to_thread.run_sync(db.load, ledger.tables)
    db.conn.close()
    ledger.tables.clear()
    result.checks["verify after the load"] = await trio.to_thread.run_sync(ledger_verify, env, cwd)
    log(f"  loaded, analyzed and verified in {time.monotonic() - took:.0f} s")
    server = fgcpay_server(f"fgcpay-{backend}", env, cwd, result.workers, work)
    await trio.to_thread.run_sync(server.start)
    try:

        def window() -> CpuWindow:
            return CpuWindow(server_pids=[server.proc.pid if server.proc else None], db_pid=db_pid)

        await trio.to_thread.run_sync(wait_for_quiet)
        log(f"  reads on one connection, {args.requests:,} each (loadavg {loadavg()})")
        await measure_reads(server.port, headers, ledger, args, window, result)
        bodies = {
            "distinct sessions": [{"checkout_session_id": s, "amount_fgc": "1.00"} for s in ledger.refundable],
            "one payment": [{"checkout_session_id": ledger.one, "amount_fgc": "0.01"}] * args.refunds_one,
        }  # fmt: skip
        for name in BURSTS:
            await trio.to_thread.run_sync(wait_for_quiet)
            cpu = window().start()
            seconds, statuses, took = await create_refunds(
                server.port, headers, bodies[name], args.clients
            )
            cpu.stop()
            made = statuses[201] or 1  # (all refused: the checks say so)
            result.checks[f"{name}: statuses"] = dict(statuses)
            result.per_s[name] = made / seconds
            pg = f" +pg {cpu.db_cpu * 1000 / made:.2f}" if db_pid else ""
            result.refunds[name] = (
                f"{made / seconds:,.0f} ({cpu.server_cpu * 1000 / made:.2f}{pg} ms)"
            )
            result.other_pct = max(result.other_pct, cpu.other_pct)
            log(
                f"  refunds, {name}: {made:,} in {seconds:.1f} s, {fmt_ms(took)} ms; {cpu.describe(made, 'refund')}"
            )
        conn = Connection("127.0.0.1", server.port)
        balance = json.loads((await conn.request("GET", "/api/v1/balance", headers)).body)
        await conn.aclose()
    finally:
        await trio.to_thread.run_sync(server.stop)
    checks = result.checks
    asked = {BURSTS[0]: len(ledger.refundable), BURSTS[1]: args.refunds_one}
    pending = asked[BURSTS[0]] * 100 + asked[BURSTS[1]]  # minor units: 1.00, then 0.01 each
    want = ledger.want | {"refunds_pending_fgc": format_fgc(pending)}
    checks["balance"] = {k: balance[k] for k in want}
    checks["verify at the end"] = await trio.to_thread.run_sync(ledger_verify, env, cwd)
    result.ok = (
        checks["balance"] == want
        and all(checks[f"{name}: statuses"] == {201: n} for name, n in asked.items())
        and checks["verify after the load"] == checks["verify at the end"] == 0
    )
    log(f"  checks {'OK' if result.ok else 'FAILED'}: {result.checks}")
    return result


def report(results: list[Result], args: argparse.Namespace) -> None:
    print()
    print(f"fgcpay ledger: {args.rows:,} ledger rows of one merchant; reads {args.requests:,} each on one "
          f"connection (ms: p50 / p99 / max); refunds from {args.clients} connections, per s "
          f"(service CPU per refund); {os.cpu_count()} CPUs, {time.strftime('%Y-%m-%d %H:%M')}")  # fmt: skip
    print(
        f"| backend | {' | '.join(READS)} | refunds, {' | refunds, '.join(BURSTS)} | other | checks |"
    )
    print("|---|" + "---:|" * (len(READS) + len(BURSTS) + 1) + "---|")
    for r in results:
        cells = [fmt_ms(r.reads[name]) for name in READS] + [r.refunds[name] for name in BURSTS]
        print(f"| {r.backend}, {r.workers} worker(s) | {' | '.join(cells)} | {r.other_pct:.0f} % | {'ok' if r.ok else 'FAILED'} |")  # fmt: skip
    for r in results:
        worst = max(percentile(r.reads[name], 99) for name in READS)
        verdict = "MET" if worst < TARGET_MS[r.backend] else "MISSED"
        print(f"* {r.backend}: worst read p99 {worst:.2f} ms (target < {TARGET_MS[r.backend]:.0f} ms: "
              f"{verdict}); {r.per_s[BURSTS[0]]:,.0f} refunds/s of distinct sessions, "
              f"{r.per_s[BURSTS[1]]:,.0f}/s of one payment")  # fmt: skip


def main() -> int:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--backend", choices=("sqlite", "postgres"), action="append")
    parser.add_argument("--rows", type=int, default=1_000_000, help="ledger rows loaded")
    parser.add_argument("--requests", type=int, default=3000, help="timed requests per read")
    parser.add_argument("--warmup", type=int, default=100, help="untimed requests before each")
    parser.add_argument("--refunds", type=int, default=5000, help="refunds of distinct sessions")
    parser.add_argument("--refunds-one", type=int, default=2000, help="refunds of one payment")
    parser.add_argument("--clients", type=int, default=32, help="connections creating refunds")
    parser.add_argument("--pg-workers", type=int, default=2)
    parser.add_argument("--quiet-wait", type=float, default=30.0, help="see bench/common.py")
    parser.add_argument("--tests-wait", type=float, default=600.0, help="see bench/common.py")
    args = parser.parse_args()
    QUIET["wait"], QUIET["tests_wait"] = args.quiet_wait, args.tests_wait
    work = Path(tempfile.mkdtemp(prefix="fgcpay-ledger-"))
    results = []
    try:
        for name in args.backend or ["sqlite", "postgres"]:
            with service_database(name, work, "ledger") as (url, db_pid):
                results.append(trio.run(run, args, name, url, db_pid, work))
    finally:
        if results:
            report(results, args)
        shutil.rmtree(work, ignore_errors=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
