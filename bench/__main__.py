"""fgcpay's benchmarks, one runner (run from the repository root):

    .venv/bin/python -m bench --list
    .venv/bin/python -m bench create [lists ...|all] [--sqlite|--pg|--both] [--quick] [--json F]
    .venv/bin/python -m bench soak --pg [--quick | --minutes 60]   (not part of `all`)
    .venv/bin/python -m bench report F.json [...] [--write docs/performance.md]
    .venv/bin/python -m bench create --sqlite --baseline ../old/.venv/bin/fgcpay   (A/B)

Each scenario starts `fgcpay serve` as an operator does (a temporary directory,
127.0.0.1), on SQLite with 1 worker and on PostgreSQL (one durable throwaway cluster per
run: fsync, synchronous_commit and full_page_writes on) with --pg-workers, measures, and
prints one markdown table: figure | measured | target | ratio | verdict. A measurement,
not a test: a missed target is reported (and with --profile auto, profiled), never an
error. `--set name=value` changes one of a scenario's sizes (see `--list`).
"""

from __future__ import annotations

import argparse
import importlib
import json
import shlex
import shutil
import signal
import sys
import tempfile
import time
import traceback
from pathlib import Path
from types import ModuleType
from typing import Any

import trio

from . import core, report
from .suite import Ctx, machine, machine_line, params, table

SCENARIOS = ("create", "lists", "hosted", "webhooks", "renewals", "ledger", "refunds",
             "subscriptions", "events", "dashboard", "memory", "receiver_check",
             "triggers", "sandboxes", "client", "soak")  # fmt: skip
ALONE = ("soak",)  # an hour: run by name, never as part of `all`


def scenario(name: str) -> ModuleType:
    return importlib.import_module(f"bench.scenarios.{name}")


def specs() -> dict[str, Any]:
    return {name: scenario(name).FIGURES for name in SCENARIOS}


async def run_backend(ctx: Ctx, module: ModuleType, name: str, backend: str, p: Any,
                      cluster: Any, workers: int) -> None:  # fmt: skip
    cwd = ctx.work / f"{name}-{backend}"
    cwd.mkdir()
    if backend == "sqlite":
        b = core.Backend("sqlite", f"sqlite:///{cwd}/fgcpay.sqlite3", cwd, 1)
    else:
        cluster.psql(f"CREATE DATABASE bench_{name}")
        b = core.Backend(
            "postgres", cluster.url(f"bench_{name}"), cwd, workers, cluster.postmaster_pid()
        )
    core.log(f"{name}, {b.label} ({b.workers} worker(s)): {vars(p)}")
    await module.run(ctx, b, p)


def main(argv: list[str] | None = None) -> int:
    argv = sys.argv[1:] if argv is None else argv
    if argv[:1] == ["report"]:
        return report.main(argv[1:], specs())
    parser = argparse.ArgumentParser(
        prog="python -m bench",
        description=__doc__,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    parser.add_argument("scenarios", nargs="*", metavar="scenario", help="a name of --list, or all")
    parser.add_argument(
        "--list", action="store_true", help="the scenarios (with names: their sizes)"
    )
    group = parser.add_mutually_exclusive_group()
    group.add_argument("--sqlite", dest="backends", action="store_const", const=["sqlite"])
    group.add_argument("--pg", dest="backends", action="store_const", const=["postgres"])
    group.add_argument(
        "--both", dest="backends", action="store_const", const=["sqlite", "postgres"]
    )
    parser.add_argument("--quick", action="store_true", help="small sizes: a smoke test of seconds")
    parser.add_argument("--json", type=Path, help="write the figures (and the machine) here")
    parser.add_argument("--set", action="append", default=[], metavar="NAME=VALUE")
    parser.add_argument("--pg-workers", type=int, default=2)
    parser.add_argument("--minutes", type=float, help="the soak's length (--set minutes=M)")
    parser.add_argument("--profile", choices=("auto", "always", "never"),
                        help="py-spy when a target is missed (default; never with --quick)")  # fmt: skip
    parser.add_argument(
        "--tests-wait", type=float, help="s to wait for a pytest run to end (600; 0 with --quick)"
    )
    parser.add_argument(
        "--quiet-wait", type=float, help="s to wait for idle CPUs (30; 0 with --quick)"
    )
    parser.add_argument("--keep", action="store_true", help="keep the working directory (logs)")
    parser.add_argument(
        "--baseline",
        metavar="FGCPAY",
        help="another revision's fgcpay script (its checkout's .venv/bin/fgcpay): create "
        "measures it too, in the same rounds on the same database (an A/B of a change)",
    )
    args = parser.parse_args(argv)
    if args.list and args.scenarios:  # the sizes of those named
        if unknown := [n for n in args.scenarios if n not in SCENARIOS]:
            parser.error(f"unknown scenario {unknown}")
        for name in args.scenarios:
            print(f"{name}: {scenario(name).FULL}; --quick: {scenario(name).QUICK}")
        return 0
    if args.list or not args.scenarios:
        print("\n".join(f"{name:<14} {scenario(name).ABOUT}" for name in SCENARIOS))
        return 0
    if args.minutes is not None:
        args.set.append(f"minutes={args.minutes:g}")
    names = (
        [n for n in SCENARIOS if n not in ALONE] if args.scenarios == ["all"] else args.scenarios
    )
    unknown = [n for n in names if n not in SCENARIOS]
    sizes = {k for n in names if n in SCENARIOS for k in scenario(n).FULL}
    unknown += [s.partition("=")[0] for s in args.set if s.partition("=")[0] not in sizes]
    if unknown or shutil.which("wrk") is None:
        parser.error(
            f"unknown scenario or size {unknown}"
            if unknown
            else "wrk is missing: apt-get install -y wrk"
        )
    core.QUIET["tests_wait"] = (
        args.tests_wait if args.tests_wait is not None else 0 if args.quick else 600
    )
    core.QUIET["wait"] = args.quiet_wait if args.quiet_wait is not None else 0 if args.quick else 30
    profile = args.profile or ("never" if args.quick else "auto")
    backends = args.backends or ["sqlite", "postgres"]
    work = Path(tempfile.mkdtemp(prefix="fgcpay-bench-"))
    ctx = Ctx(work, args.quick, profile, specs(), baseline=args.baseline)
    info = machine() | {"command": "python -m bench " + shlex.join(argv), "quick": args.quick}
    cluster, failed = None, []

    def save() -> None:  # after each part too: a run stopped midway keeps what it measured
        if args.json:
            args.json.write_text(json.dumps(ctx.as_json(info), indent=1))

    # `kill` stops a run as Ctrl-C does: its servers and cluster stopped, not left behind.
    signal.signal(signal.SIGTERM, signal.default_int_handler)
    try:
        if "postgres" in backends:
            cluster = core.durable_cluster()
        for name in names:
            ctx.scenario, module = name, scenario(name)
            p = params(module, args.quick, args.set)
            for backend in backends:
                try:
                    trio.run(run_backend, ctx, module, name, backend, p, cluster, args.pg_workers)
                except Exception:  # the others still run
                    failed.append(f"{name} on {backend}")
                    core.log(f"{name} on {backend} FAILED:\n{traceback.format_exc()}")
                save()
            print(f"\n## {name}\n\n{table(ctx.specs, [f for f in ctx.figures if f.scenario == name])}\n",
                  flush=True)  # fmt: skip
    except KeyboardInterrupt:
        core.log("interrupted")
    finally:
        if cluster is not None:
            cluster.stop()
        info |= {"load_end": core.loadavg(), "other_max_pct": max(core.OTHERS, default=0.0),
                 "finished": time.strftime("%Y-%m-%d %H:%M"), "failed": failed}  # fmt: skip
        print(machine_line(info))
        for text in ctx.profiles:
            print(f"\n{text}")
        save()
        if args.keep:
            core.log(f"kept {work}")
        else:
            shutil.rmtree(work, ignore_errors=True)
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
