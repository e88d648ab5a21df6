"""The one table format, and what a scenario is given.

A scenario module declares ABOUT (one line), FIGURES (what it measures: label, unit,
target), FULL and QUICK (its sizes) and `async def run(ctx, backend, p)`, which measures
and calls `ctx.add(backend, key, value, detail)` for each figure. Every figure is printed
as a row of one markdown table: figure | measured | target | ratio | verdict. The ratio
is measured / target: above 1 meets a "higher is better" target (a rate), below 1 meets a
limit (a latency, a memory growth).
"""

from __future__ import annotations

import os
import platform
import sqlite3
import subprocess
import sys
import time
from dataclasses import asdict, dataclass, field
from pathlib import Path
from types import SimpleNamespace
from typing import Any

from .core import loadavg, log


@dataclass(frozen=True)
class Spec:
    label: str
    unit: str  # "x", "ms", "/s", "MiB", "s"
    target: float | dict[str, float] | None = None  # one for both backends, or per backend
    higher: bool = False  # a rate (higher is better) or a limit (lower is better)
    proposed: bool = False  # a target this suite proposes (none was set before)

    def target_for(self, backend: str) -> float | None:
        return self.target.get(backend) if isinstance(self.target, dict) else self.target


@dataclass
class Figure:
    scenario: str
    key: str
    backend: str
    value: float
    detail: str = ""


def number(value: float, unit: str) -> str:
    if unit == "x":
        return f"{value:.2f}x"
    if unit == "/s":
        return f"{value:,.0f}/s"
    if unit in ("ms", "s"):
        return f"{value:,.2f} {unit}"
    return f"{value:,.1f} {unit}"


def cells(spec: Spec, backend: str, value: float | None) -> tuple[str, str, str]:
    """Target, ratio and verdict of a figure (its value None: not measured)."""
    target = spec.target_for(backend)
    if target is None:
        return "none set", "—", "—"
    shown = (
        f"{target:g}x"
        if spec.unit == "x"
        else f"{target:,g}{'' if spec.unit == '/s' else ' '}{spec.unit}"
    )
    text = (">= " if spec.higher else "< ") + shown
    text += " (proposed)" if spec.proposed else ""
    if value is None:
        return text, "—", "—"
    met = value >= target if spec.higher else value < target
    return text, f"{value / target:.2f}", "met" if met else "**missed**"


LABELS = {"sqlite": "SQLite", "postgres": "PostgreSQL"}


def table(specs: dict[str, dict[str, Spec]], figures: list[Figure]) -> str:
    rows = ["| figure | measured | target | ratio | verdict |", "|---|---|---|---:|---|"]
    for f in figures:
        spec = specs[f.scenario][f.key]
        measured = number(f.value, spec.unit) + (f" ({f.detail})" if f.detail else "")
        target, ratio, verdict = cells(spec, f.backend, f.value)
        rows.append(
            f"| {spec.label}, {LABELS[f.backend]} | {measured} | {target} | {ratio} | {verdict} |"
        )
    return "\n".join(rows)


def _pg_version() -> str:
    try:
        out = subprocess.run(["psql", "--version"], capture_output=True, text=True).stdout
        return "PostgreSQL " + out.split()[2]
    except (OSError, IndexError):
        return "PostgreSQL ?"


def machine() -> dict[str, Any]:
    model = next((line.split(":", 1)[1].strip() for line in
                  Path("/proc/cpuinfo").read_text().splitlines()
                  if line.startswith("model name")), platform.machine())  # fmt: skip
    return {
        "cpus": os.cpu_count(), "cpu": model, "python": sys.version.split()[0],
        "sqlite": sqlite3.sqlite_version, "postgres": _pg_version(),
        "started": time.strftime("%Y-%m-%d %H:%M"), "load_start": loadavg(),
    }  # fmt: skip


def machine_line(m: dict[str, Any]) -> str:
    return (
        f"{m['started']}, `{m['command']}`{' (quick sizes: a smoke test, not a measurement)' if m.get('quick') else ''}; "
        f"{m['cpus']} CPUs ({m['cpu']}), Python {m['python']}, SQLite {m['sqlite']}, "
        f"{m['postgres']}; load average {m['load_start']} at the start, {m.get('load_end', '?')} "
        f"at the end; other processes used at most {m.get('other_max_pct', 0):.0f} % of the "
        "machine during a measured part"
    )


@dataclass
class Ctx:
    """What a run gives its scenarios: a working directory, sizes, the figures so far."""

    work: Path
    quick: bool
    profile: str  # auto (when a target is missed), always, never
    specs: dict[str, dict[str, Spec]]
    scenario: str = ""
    # Another revision's `fgcpay` (its checkout's .venv/bin/fgcpay): scenarios that can
    # measure it beside this tree's, in the same rounds, do (`--baseline`).
    baseline: str | None = None
    figures: list[Figure] = field(default_factory=list)
    profiles: list[str] = field(default_factory=list)
    # What a scenario keeps beside its figures, by scenario (the soak's windows), saved in
    # the JSON as it is.
    notes: dict[str, Any] = field(default_factory=dict)

    def add(self, backend: Any, key: str, value: float, detail: str = "") -> bool:
        """Record a figure; True when its target is missed (the cue to profile)."""
        name = getattr(backend, "name", backend)
        figure = Figure(self.scenario, key, name, value, detail)
        self.figures.append(figure)
        log(table(self.specs, [figure]).splitlines()[-1])
        return cells(self.specs[self.scenario][key], name, value)[2] == "**missed**"

    def want_profile(self, missed: bool) -> bool:
        return self.profile == "always" or (self.profile == "auto" and missed)

    def as_json(self, info: dict[str, Any]) -> dict[str, Any]:
        return {"machine": info, "figures": [asdict(f) for f in self.figures],
                "profiles": self.profiles, "notes": self.notes}  # fmt: skip


def params(module: Any, quick: bool, overrides: list[str]) -> SimpleNamespace:
    """The scenario's sizes: FULL, or QUICK over FULL, then `--set name=value`."""
    values = dict(module.FULL) | (dict(module.QUICK) if quick else {})
    for item in overrides:
        name, _, text = item.partition("=")
        if name in values:  # an option of another scenario is ignored here
            values[name] = type(values[name])(text)
    return SimpleNamespace(**values)
