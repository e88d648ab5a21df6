"""py-spy on the service's workers while a load runs, read as text: where the main
(trio) threads' samples go, by package, and the service's own functions.

py-spy counts a thread inside a system call as idle, so system-call-heavy code is
under-represented; `idle=True` samples waiting too (for a latency, not a CPU cost).
"""

from __future__ import annotations

import collections
import subprocess
from collections.abc import Awaitable, Callable
from pathlib import Path

import trio

from .core import REPO, log, tool

_SITE = "site-packages/"


def _where(frame: str) -> tuple[str, str]:
    """(package, short name) of a collapsed frame `func (path:line)`."""
    func, _, rest = frame.partition(" (")
    path = rest.rstrip(")").rsplit(":", 1)[0]
    if _SITE in path:
        package = path.split(_SITE, 1)[1].split("/", 1)[0].removesuffix(".py")
        return package, f"{func} ({package})"
    # The command and its process supervisor: at the bottom of each main thread's stack,
    # not the service's own functions.
    entry = path.endswith(("/app/cli.py", "/app/workers.py"))
    if str(REPO) in path and not entry and "/.venv/" not in path:
        short = path.split(str(REPO) + "/", 1)[1]
        return "fgcpay/" + short.split("/", 1)[0], f"{func} ({short})"
    return "python", f"{func} ({Path(path).name})"


def summarise(raw: Path, top: int = 12) -> str:
    """Shares of the main threads' samples: by the package of the innermost frame, and
    the service's functions inclusively (any frame of the stack)."""
    leaves, inclusive, threads = (
        collections.Counter[str](),
        collections.Counter[str](),
        collections.Counter[str](),
    )
    total = 0
    for line in raw.read_text().splitlines():
        stack, _, count = line.rpartition(" ")
        frames = stack.split(";")
        thread = next((f for f in frames[:2] if f.startswith("thread")), "")
        n = int(count) if count.isdigit() else 0
        if "MainThread" not in thread:
            threads[thread.split(": ", 1)[-1]] += n
            continue
        frames = [f for f in frames if " (" in f and not f.startswith(("thread", "process"))]
        if not frames:
            continue
        total += n
        leaves[_where(frames[-1])[0]] += n
        for name in {_where(f)[1] for f in frames if _where(f)[0].startswith("fgcpay/")}:
            inclusive[name] += n
    if not total:
        return "(no samples)"
    others = ", ".join(f"{k} {v}" for k, v in threads.most_common(4)) or "none"
    out = [f"main-thread samples: {total}; other threads' samples: {others}", "by package:"]
    out += [f"  {n / total:6.1%}  {k}" for k, n in leaves.most_common(top)]
    out += ["the service's functions, the time under them:"]
    out += [f"  {n / total:6.1%}  {k}" for k, n in inclusive.most_common(top)]
    return "\n".join(out)


async def profile(label: str, pids: list[int], seconds: int, work: Path,
                  load: Callable[[], Awaitable[object]], idle: bool = False) -> str:  # fmt: skip
    """py-spy record (100 Hz, per thread) on every pid for `seconds` while `load` runs
    (cancelled 2 s after the profile ends, if it still runs)."""
    raws = [work / f"{label}-{pid}.raw" for pid in pids]
    spies = []
    for pid, raw in zip(pids, raws, strict=True):
        argv = [tool("py-spy"), "record", "--threads", "-r", "100", "-d", str(seconds),
                "--full-filenames", "--format", "raw", "-o", str(raw), "--pid", str(pid)] + (["--idle"] * idle)  # fmt: skip
        spies.append(
            await trio.lowlevel.open_process(
                argv, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL
            )
        )
    log(f"profiling {label} with py-spy for {seconds} s")
    with trio.move_on_after(seconds + 2):  # a load may run until cancelled
        await load()
    for spy in spies:
        await spy.wait()
    merged = work / f"{label}.raw"
    merged.write_text("".join(r.read_text() for r in raws if r.exists()))
    return f"### {label} (py-spy, {seconds} s{', idle counted' if idle else ''})\n" + summarise(
        merged
    )
