"""Summarise a `py-spy record --format raw` file (collapsed stacks) as text.

    .venv/bin/python bench/profile_summary.py /tmp/x.raw [--top 40] [--thread NAME]

Prints, per thread, the functions with the largest inclusive and self share of samples.
"""

from __future__ import annotations

import argparse
import collections
import re
import sys

_FRAME = re.compile(r"^(?P<func>.*?) \((?P<file>[^()]*?)(?::(?P<line>\d+))?\)$")


def _short(frame: str) -> str:
    m = _FRAME.match(frame)
    if not m:
        return frame
    path = m.group("file")
    for marker in ("site-packages/", "lib/python3.11/", "/work/main/"):
        if marker in path:
            path = path.split(marker, 1)[1]
            break
    return f"{m.group('func')} ({path})"


def summarise(path: str, top: int, thread_filter: str | None) -> str:
    per_thread: dict[str, collections.Counter[str]] = collections.defaultdict(collections.Counter)
    self_time: dict[str, collections.Counter[str]] = collections.defaultdict(collections.Counter)
    totals: collections.Counter[str] = collections.Counter()
    with open(path) as fh:
        for line in fh:
            line = line.rstrip("\n")
            if not line:
                continue
            stack, _, count_text = line.rpartition(" ")
            try:
                count = int(count_text)
            except ValueError:
                continue
            frames = stack.split(";")
            thread = frames[0] if frames and frames[0].startswith(("process", "thread")) else "?"
            if frames and frames[0].startswith("process"):
                thread = frames[1] if len(frames) > 1 and frames[1].startswith("thread") else frames[0]
            if thread_filter and thread_filter not in thread:
                continue
            calls = [f for f in frames if not f.startswith(("process", "thread"))]
            totals[thread] += count
            for name in {_short(f) for f in calls}:
                per_thread[thread][name] += count
            if calls:
                self_time[thread][_short(calls[-1])] += count
    out = []
    for thread, total in totals.most_common():
        out.append(f"== {thread}: {total} samples")
        out.append("-- inclusive")
        for name, n in per_thread[thread].most_common(top):
            out.append(f"{100 * n / total:6.1f}%  {name}")
        out.append("-- self")
        for name, n in self_time[thread].most_common(top // 2):
            out.append(f"{100 * n / total:6.1f}%  {name}")
    return "\n".join(out)


def main() -> int:
    parser = argparse.ArgumentParser()
    parser.add_argument("path")
    parser.add_argument("--top", type=int, default=40)
    parser.add_argument("--thread")
    args = parser.parse_args()
    print(summarise(args.path, args.top, args.thread))
    return 0


if __name__ == "__main__":
    sys.exit(main())
