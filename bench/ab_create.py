#!/usr/bin/env python3
"""A/B of the create path: two checkouts' `fgcpay serve` (SQLite, 1 worker), alternating
rounds of `POST /api/v1/checkout/sessions` under the same wrk load, in one run.

    .venv/bin/python bench/ab_create.py --a /path/to/before/.venv --b .venv

Each side is a virtualenv whose `fgcpay` is the checkout to measure. Rounds alternate
(A B A B ...) so a change in the machine's load disturbs both sides alike; the figures
are req/s and the server's CPU per create (ms), each side's median over its rounds.
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
import tempfile
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

from common import CREATE_BODY, CREATE_PATH, Server, free_port, sh_json  # noqa: E402
from run import LoadResult, WrkConfig, load, lua_script  # noqa: E402


def start(label: str, venv: Path, work: Path) -> tuple[Server, str]:
    """`fgcpay serve` of the checkout installed in `venv`, on a fresh SQLite file."""
    cwd = work / label
    cwd.mkdir()
    env = {
        "PATH": "/usr/bin:/bin",
        "FGCPAY_DATABASE_URL": f"sqlite:///{cwd}/fgcpay.sqlite3",
        "FGCPAY_RATE_LIMIT_PER_SECOND": "1000000",
        "FGCPAY_RATE_LIMIT_BURST": "1000000",
        "FGCPAY_LOG_LEVEL": "INFO",
    }
    fgcpay = str(venv / "bin" / "fgcpay")
    created = sh_json(
        [fgcpay, "merchant", "create", "--name", "AB", "--email", "ab@example.com"], env, cwd
    )
    port = free_port()
    argv = [fgcpay, "serve", "--port", str(port), "--workers", "1"]
    server = Server(label, argv, env, cwd, port, 1, "/readyz", work)
    server.start()
    return server, str(created["api_key"])


def main() -> int:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--a", type=Path, required=True, help="virtualenv of the 'before' checkout")
    parser.add_argument("--b", type=Path, required=True, help="virtualenv of the 'after' checkout")
    parser.add_argument("--rounds", type=int, default=3, help="rounds per side")
    parser.add_argument("--duration", type=int, default=10, help="seconds per round")
    parser.add_argument("--connections", type=int, default=64)
    args = parser.parse_args()
    cfg = WrkConfig(threads=2, connections=args.connections, duration=args.duration)
    results: dict[str, list[LoadResult]] = {"A": [], "B": []}
    with tempfile.TemporaryDirectory(prefix="fgcpay-ab-") as tmp:
        work = Path(tmp)
        servers = {side: start(side, venv, work) for side, venv in (("A", args.a), ("B", args.b))}
        try:
            for _ in range(args.rounds):
                for side, (server, key) in servers.items():
                    headers = {"Authorization": f"Bearer {key}", "Content-Type": "application/json"}
                    script = lua_script(
                        work,
                        f"create-{side}",
                        "POST",
                        CREATE_PATH,
                        201,
                        headers,
                        json.dumps(CREATE_BODY),
                    )
                    results[side].append(
                        load(f"{side}: POST create session", server.url, script, cfg, 2, server)
                    )
        finally:
            for server, _ in servers.values():
                server.stop()
    print(f"\n{'side':<6} {'req/s (median)':>15} {'cpu ms/create (median)':>23}  rounds req/s")
    for side, rows in results.items():
        rps = statistics.median(r.rps for r in rows)
        cpu = statistics.median(r.server_cpu_ms_per_req or 0.0 for r in rows)
        print(f"{side:<6} {rps:>15.1f} {cpu:>23.3f}  {', '.join(f'{r.rps:.0f}' for r in rows)}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
