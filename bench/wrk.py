"""wrk runs: one request (method, path, headers, body) repeated by `-t -c` connections for
`-d` seconds, its expected status counted in Lua, the summary printed by Lua as JSON.

wrk is closed-loop: with 64 connections a request waits behind ~63 others, so its p99 is
queueing, not service time; latencies are measured elsewhere one request at a time.
"""

from __future__ import annotations

import json
import subprocess
from dataclasses import dataclass
from pathlib import Path

import trio

from .core import Server, Window

LUA = """
wrk.method, wrk.path = {method}, {path}
{setup}
local threads = {{}}
function setup(thread) table.insert(threads, thread) end
function init(args) unexpected = 0 end
function response(status, headers, body)
  if status ~= {expected} then unexpected = unexpected + 1 end
end
function done(summary, latency, requests)
  local bad = 0
  for _, t in ipairs(threads) do bad = bad + t:get("unexpected") end
  local e = summary.errors
  io.write(string.format('BENCH_JSON {{"requests":%d,"us":%d,"unexpected":%d,' ..
    '"socket_errors":%d,"p50_us":%d,"p99_us":%d}}\\n', summary.requests, summary.duration,
    bad, e.connect + e.read + e.write + e.timeout, latency:percentile(50),
    latency:percentile(99)))
end
"""


@dataclass
class Load:
    requests: int
    seconds: float
    p50_ms: float
    p99_ms: float
    bad: int  # answers other than the expected status, and socket errors
    window: Window

    @property
    def rps(self) -> float:
        return self.requests / self.seconds if self.seconds else 0.0

    def cpu(self) -> str:
        """Service CPU per request, ms."""
        return self.window.per(self.requests)


def script(work: Path, name: str, method: str, path: str, expected: int,
           headers: dict[str, str], body: str | None = None) -> Path:  # fmt: skip
    q = json.dumps  # a JSON string is a valid Lua string literal here
    setup = [f"wrk.headers[{q(k)}] = {q(v)}" for k, v in headers.items()]
    if body is not None:
        setup.append(f"wrk.body = {q(body)}")
    out = work / f"{name}.lua"
    text = LUA.format(method=q(method), path=q(path), setup="\n".join(setup), expected=expected)
    out.write_text(text)
    return out


def _wrk(url: str, lua: Path, seconds: float, connections: int, threads: int) -> dict[str, int]:
    argv = ["wrk", f"-t{threads}", f"-c{connections}", f"-d{max(1, round(seconds))}s",
            "--latency", "--timeout", "10s", "-s", str(lua), url]  # fmt: skip
    done = subprocess.run(argv, capture_output=True, text=True, timeout=seconds + 60)
    line = next((x for x in done.stdout.splitlines() if x.startswith("BENCH_JSON ")), None)
    if done.returncode != 0 or line is None:
        raise RuntimeError(f"wrk failed ({done.returncode}):\n{done.stdout}\n{done.stderr}")
    result: dict[str, int] = json.loads(line.split(" ", 1)[1])
    return result


async def wrk(server: Server, lua: Path, seconds: float, connections: int = 64,
              warmup: float = 0, threads: int = 2, db: int | None = None) -> Load:  # fmt: skip
    """Load `server` with the request of `lua`: `warmup` s untimed, then `seconds` timed,
    with the server's (and PostgreSQL's) CPU over the timed part."""
    if warmup > 0:
        await trio.to_thread.run_sync(_wrk, server.url, lua, warmup, connections, threads)
    with Window(server.pid, db) as window:
        data = await trio.to_thread.run_sync(_wrk, server.url, lua, seconds, connections, threads)
    return Load(data["requests"], data["us"] / 1e6, data["p50_us"] / 1000, data["p99_us"] / 1000,
                data["unexpected"] + data["socket_errors"], window)  # fmt: skip
