"""Read `py-spy record --threads --format raw` output (collapsed stacks) as text.

    .venv/bin/python bench/profile_summary.py /tmp/x.raw [--top 40]      # per function
    .venv/bin/python bench/profile_summary.py /tmp/x.raw --breakdown      # per component

`bench/run.py`, `bench/hosted.py` and `bench/webhooks.py` call `breakdown`: every sample of a worker's main (trio)
thread is charged to one component. A sample whose stack passes through one of the
service's own functions is charged to that function's component (first match in the
order of `APP_BUCKETS`, so `random_base62` called from `build` counts as ids); any other
sample is charged to the innermost library frame (Quart/werkzeug, hypercorn/h11,
psycopg, trio's worker threads), and what is left is trio's own scheduler and epoll loop.
"""

from __future__ import annotations

import argparse
import collections
import re
import sys

_FRAME = re.compile(r"^(?P<func>.*?) \((?P<file>[^()]*?)(?::(?P<line>\d+))?\)$")

# (component, function names as py-spy prints them), most specific first.
APP_BUCKETS: list[tuple[str, tuple[str, ...]]] = [
    # the webhook dispatcher (bench/webhooks.py)
    ("webhook: SSRF check", ("checked_addresses", "refusal")),
    ("webhook: HTTP POST (webhooks/client.py: h11, socket I/O)", ("WebhookClient.post",)),
    ("webhook: sign + open secret", ("signed_headers", "WebhookDispatcher._signing_secrets")),
    (
        "webhook: record attempts (DB write)",
        ("record_attempts", "WebhookDispatcher._record_finished"),
    ),
    ("webhook: claim + next due (DB)", ("claim_due", "next_due", "WebhookDispatcher._claim_loop")),
    ("webhook: sender rest", ("WebhookDispatcher._attempt", "WebhookDispatcher._sender")),
    # the hosted page (bench/hosted.py)
    ("page: render template (Jinja)", ("render_template",)),
    ("confirm: actor (reads, PIN, 2 writes)", ("CheckoutSessionActor._confirm", "ActorHost._live")),
    ("page/confirm: session + merchant reads", ("CheckoutSessions.find", "merchant_by_id")),
    ("confirm: form parse", ("TrioRequest.form", "_load_form_data")),
    ("websocket: handler + push", ("status_socket",)),
    ("page/confirm: handlers (rest)", ("checkout_page", "confirm", "_render", "_context")),
    # the merchant API (bench/run.py)
    ("ids: random_base62 (secrets.choice per char)", ("random_base62",)),
    ("auth: key sha256 + DB lookup", ("authenticate",)),
    ("rate limit + key-use note", ("_authenticate_and_limit",)),
    ("body read (quart request.get_data)", ("TrioRequest.get_data",)),
    ("JSON parse + validation", ("json_object", "parse_create", "parse_list_query")),
    ("session build + to_json + dumps", ("CheckoutSessions.build", "to_json", "dump", "envelope")),
    (
        "DB write (hand-off to the group writer)",
        ("SqliteDatabase.write", "PostgresDatabase.write", "CheckoutSessions.create"),
    ),
    ("DB list query + row mapping", ("CheckoutSessions.page",)),
    ("DB read (other)", ("SqliteDatabase.read", "PostgresDatabase.read")),
    (
        "before/after_request hooks (req id, headers, log)",
        ("install.<locals>._begin", "install.<locals>._finish"),
    ),
    (
        "handlers + idempotency wrapper (rest)",
        (
            "create_checkout_session",
            "list_checkout_sessions",
            "get_checkout_session",
            "idempotent.<locals>.wrapper",
            "hello",
        ),
    ),
]
LIB_BUCKETS: list[tuple[str, tuple[str, ...]]] = [
    (
        "Quart/werkzeug (contexts, routing, req/resp objects)",
        ("quart/", "quart_trio/", "werkzeug/", "flask/", "blinker/"),
    ),
    (
        "hypercorn + h11 (HTTP parse/serialise, socket I/O)",
        ("hypercorn/", "h11/", "h2/", "wsproto/"),
    ),
    (
        "database threads (group threads, worker threads, psycopg)",
        ("storage/_threads.py", "trio/_threads.py", "trio/_core/_thread_cache.py", "psycopg/"),
    ),
]
REST = "trio scheduler, epoll, other"


def parse_frame(frame: str) -> tuple[str, str]:
    m = _FRAME.match(frame)
    if not m:
        return frame, ""
    return m.group("func"), m.group("file")


def _short(frame: str) -> str:
    func, path = parse_frame(frame)
    for marker in ("site-packages/", "lib/python3.11/", "/work/main/"):
        if marker in path:
            path = path.split(marker, 1)[1]
            break
    return f"{func} ({path})" if path else func


def read_samples(path: str) -> list[tuple[str, list[str], int]]:
    """(thread label, frames root first, count) per line."""
    samples = []
    with open(path) as fh:
        for line in fh:
            line = line.rstrip("\n")
            stack, _, count_text = line.rpartition(" ")
            if not stack or not count_text.isdigit():
                continue
            frames = stack.split(";")
            thread = "?"
            if frames and frames[0].startswith(("thread", "process")):
                thread = frames.pop(0)
                if frames and frames[0].startswith("thread"):
                    thread = frames.pop(0)
            samples.append((thread, frames, int(count_text)))
    return samples


def _thread_name(label: str) -> str:
    # "thread (1234): MainThread" -> "MainThread"
    return label.split(": ", 1)[1] if ": " in label else label


def _task_frames(frames: list[str]) -> list[str]:
    """The frames of the trio task that was running: those below trio's `unrolled_run`
    (above it sit the entry point and `trio.run`, the same for every sample)."""
    for i in range(len(frames) - 1, -1, -1):
        if frames[i].startswith("unrolled_run ("):
            return frames[i + 1 :]
    return frames


def _bucket(frames: list[str]) -> str:
    frames = _task_frames(frames)
    funcs = {parse_frame(f)[0] for f in frames}
    for name, wanted in APP_BUCKETS:
        if funcs.intersection(wanted):
            return name
    for frame in reversed(frames):
        _, path = parse_frame(frame)
        for name, markers in LIB_BUCKETS:
            if any(marker in path for marker in markers):
                return name
    return REST


def breakdown(path: str, cpu_ms_per_req: float | None, expected_samples: int | None = None) -> str:
    """Components of the main threads' samples, with an estimate of CPU ms per request.

    `cpu_ms_per_req` is the server's CPU time per request measured in the unprofiled run;
    each component gets its share of it (the sampler pauses the process, so its own cost
    is not in the shares). `expected_samples` (rate * seconds * processes) only serves
    to report how busy the main threads were."""
    samples = read_samples(path)
    main = [(frames, n) for thread, frames, n in samples if _thread_name(thread) == "MainThread"]
    others = collections.Counter()
    for thread, _, n in samples:
        name = _thread_name(thread)
        if name != "MainThread":
            others[name] += n
    total = sum(n for _, n in main)
    if not total:
        return "(no samples)"
    buckets: collections.Counter[str] = collections.Counter()
    leaves: collections.Counter[str] = collections.Counter()
    for frames, n in main:
        buckets[_bucket(frames)] += n
        if frames:
            leaves[_short(frames[-1])] += n
    busy = min(1.0, total / expected_samples) if expected_samples else 1.0
    lines = [f"main-thread samples: {total}" + (f" ({busy:.0%} busy)" if expected_samples else "")]
    if cpu_ms_per_req:
        lines[0] += f"; ~cpu ms/req = share x {cpu_ms_per_req:.2f} ms measured without the profiler"
    if others:
        lines.append("other threads: " + ", ".join(f"{k} {v}" for k, v in others.most_common(4)))
    lines.append(f"{'component':<56} {'share':>6} {'~cpu ms/req':>11}")
    for name, n in buckets.most_common():
        share = n / total
        ms = f"{share * cpu_ms_per_req:11.3f}" if cpu_ms_per_req else f"{'-':>11}"
        lines.append(f"{name:<56} {share:6.1%} {ms}")
    lines.append("top self (leaf) frames:")
    for name, n in leaves.most_common(12):
        lines.append(f"  {n / total:6.1%}  {name}")
    return "\n".join(lines)


def summarise(path: str, top: int) -> str:
    per_thread: dict[str, collections.Counter[str]] = collections.defaultdict(collections.Counter)
    self_time: dict[str, collections.Counter[str]] = collections.defaultdict(collections.Counter)
    totals: collections.Counter[str] = collections.Counter()
    for thread, frames, count in read_samples(path):
        totals[thread] += count
        for name in {_short(f) for f in frames}:
            per_thread[thread][name] += count
        if frames:
            self_time[thread][_short(frames[-1])] += count
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
    parser.add_argument("--breakdown", action="store_true")
    args = parser.parse_args()
    print(breakdown(args.path, None) if args.breakdown else summarise(args.path, args.top))
    return 0


if __name__ == "__main__":
    sys.exit(main())
