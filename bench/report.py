"""`python -m bench report F.json [...] [--write docs/performance.md]`: the tables of
docs/performance.md, from the runner's JSON, with the figures before it side by side.

Each scenario's table stands between `<!-- bench:NAME -->` and `<!-- /bench:NAME -->` in
the doc; `--write` replaces what is between them and leaves the prose around alone.
Without `--write` the tables are printed. A later file's figure replaces an earlier one's;
a quick run's figures are left out unless `--quick-ok`.
"""

from __future__ import annotations

import argparse
import json
import re
from pathlib import Path
from typing import Any

from .suite import LABELS, Spec, cells, machine_line, number

# The last figures measured by the scripts the runner replaced (docs/performance.md before
# issue 15), for the "before" column: (scenario, key, backend) -> (figure, date).
BEFORE: dict[tuple[str, str, str], tuple[str, str]] = {
    ("create", "ratio", "sqlite"): (
        "0.62-0.63x of the echo (1,161-1,176 vs 1,862-1,891 req/s); 0.37x of a GET hello-world, request log off",
        "2026-11-22/23",
    ),
    ("create", "ratio", "postgres"): (
        "0.28x of a GET hello-world (825.9 vs 2,942.8 req/s), request log off",
        "2026-11-24",
    ),
    ("create", "cpu", "sqlite"): ("1.33 ms (request log off)", "2026-11-23"),
    ("create", "cpu", "postgres"): ("1.90 ms +pg 0.31", "2026-11-24"),
    ("create", "scaling", "postgres"): ("1.75x (825.9 vs 471.1 req/s)", "2026-11-24"),
    ("lists", "p99", "sqlite"): ("3.2 ms (2.2 / 3.2 / 2.0), 1M sessions", "2026-11-23"),
    ("lists", "p99", "postgres"): ("7.4 ms (7.4 / 7.2 / 6.5), 1M sessions", "2026-11-24"),
    ("hosted", "push", "sqlite"): ("6.26 ms", "2026-11-23"),
    ("hosted", "push", "postgres"): ("11.04 ms (p50 6.84)", "2026-11-24"),
    ("hosted", "confirms", "sqlite"): ("220.3/s", "2026-11-23"),
    ("hosted", "confirms", "postgres"): ("95.6/s", "2026-11-23"),
    ("webhooks", "latency", "sqlite"): ("4.39 ms", "2026-11-22"),
    ("webhooks", "latency", "postgres"): ("9.30 ms", "2026-11-22"),
    ("webhooks", "drain", "sqlite"): ("335/s", "2026-11-22"),
    ("webhooks", "drain", "postgres"): ("229/s", "2026-11-22"),
    ("renewals", "rate", "sqlite"): ("2,265/s", "2026-11-24"),
    ("renewals", "rate", "postgres"): ("3,521/s", "2026-11-24"),
    ("renewals", "memory", "sqlite"): ("1.17x", "2026-11-24"),
    ("renewals", "memory", "postgres"): ("1.16x", "2026-11-24"),
    ("ledger", "p99", "sqlite"): ("2.37-2.54 ms, two runs (worst of the five reads)", "2026-11-24"),
    ("ledger", "p99", "postgres"): (
        "3.70-6.09 ms, two runs (worst of the five reads)",
        "2026-11-24",
    ),
    ("refunds", "create", "sqlite"): ("517-557/s", "2026-11-24"),
    ("refunds", "create", "postgres"): ("300-335/s", "2026-11-24"),
    ("refunds", "one_payment", "sqlite"): ("234-303/s", "2026-11-24"),
    ("refunds", "one_payment", "postgres"): ("240-294/s", "2026-11-24"),
    ("memory", "memory", "sqlite"): ("1.02x over 100,814 creates, none paid (soak)", "2026-11-24"),
    ("memory", "memory", "postgres"): (
        "1.01x over 100,283 creates, none paid (soak)",
        "2026-11-24",
    ),
    ("memory", "steady", "sqlite"): ("1.17x (752 -> 879 creates/s, soak)", "2026-11-24"),
    ("memory", "steady", "postgres"): ("1.32x (695.5 -> 914.9 creates/s, soak)", "2026-11-24"),
}
NOT_YET = "not yet measured"


def render(name: str, specs: dict[str, Spec], figures: list[dict[str, Any]],
           runs: list[dict[str, Any]]) -> str:  # fmt: skip
    """One scenario's table: every figure of its catalog on both backends."""
    measured = {(f["key"], f["backend"]): f for f in figures if f["scenario"] == name}
    rows = ["| figure | before | measured | target | ratio | verdict |",
            "|---|---|---|---|---:|---|"]  # fmt: skip
    for key, spec in specs.items():
        for backend in ("sqlite", "postgres"):
            target = spec.target_for(backend)
            if isinstance(spec.target, dict) and target is None:
                continue  # a figure of the other backend only
            before = BEFORE.get((name, key, backend))
            f = measured.get((key, backend))
            value = None if f is None else float(f["value"])
            now = NOT_YET if f is None else number(value or 0.0, spec.unit) + (
                f" ({f['detail']})" if f["detail"] else "")  # fmt: skip
            rows.append(f"| {spec.label}, {LABELS[backend]} | "
                        f"{f'{before[0]} ({before[1]})' if before else '—'} | {now} | "
                        + " | ".join(cells(spec, backend, value)) + " |")  # fmt: skip
    # The runs whose figures the table shows: a run whose figures later files all
    # replaced measured none of it.
    shown = {id(f) for f in measured.values()}
    used = [r for r in runs if any(id(f) in shown for f in r["figures"])]
    lines = [f"Measured {machine_line(r['machine'])}." for r in used]
    # A scenario's own table beside its figures (the soak's windows), from its run.
    lines += ["\nIts windows:\n\n" + r["notes"][name]["table"] for r in used
              if "table" in r.get("notes", {}).get(name, {})]  # fmt: skip
    lines = lines or [
        "Not yet measured with `python -m bench`; the before column is the last figure of "
        "the scripts it replaced."]  # fmt: skip
    return "\n".join(rows) + "\n\n" + "\n".join(lines)


def main(argv: list[str], specs: dict[str, dict[str, Spec]]) -> int:
    parser = argparse.ArgumentParser(prog="python -m bench report", description=__doc__)
    parser.add_argument("results", nargs="*", type=Path, help="JSON written by --json")
    parser.add_argument("--write", type=Path, help="replace the tables in this markdown file")
    parser.add_argument("--quick-ok", action="store_true", help="take quick runs' figures too")
    args = parser.parse_args(argv)
    runs = [json.loads(p.read_text()) for p in args.results]
    runs = [r for r in runs if args.quick_ok or not r["machine"].get("quick")]
    figures = [f for r in runs for f in r["figures"]]  # a later file's figure wins
    tables = {name: render(name, specs[name], figures, runs) for name in specs}
    if args.write is None:
        print("\n\n".join(f"## {name}\n\n{text}" for name, text in tables.items()))
        return 0
    doc = args.write.read_text()
    # Only the scenarios these runs measured: a run of one scenario leaves the others'
    # tables as they were (their last measurement), not "not yet measured".
    measured = {f["scenario"] for f in figures}
    for name, text in tables.items():
        if name not in measured:
            continue
        marker = re.compile(rf"(<!-- bench:{name} -->\n).*?(\n<!-- /bench:{name} -->)", re.S)
        if not marker.search(doc):
            raise SystemExit(f"{args.write}: no <!-- bench:{name} --> ... <!-- /bench:{name} -->")
        doc = marker.sub(lambda m, t=text: m.group(1) + t + m.group(2), doc)  # type: ignore[misc]
    args.write.write_text(doc)
    return 0
