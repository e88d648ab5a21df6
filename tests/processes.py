"""`fgcpay serve`, or hypercorn serving `fgcpay.asgi:app`, as a real process, for the
tests that kill, stop or restart it; the worker processes under it; and `fgcpay listen`,
the developer's forwarder, as one."""

from __future__ import annotations

import json
import os
import re
import select
import signal
import socket
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import attrs
import trio
from helpers import wait_ready

FGCPAY = [sys.executable, "-m", "fgcpay.cli"]
HYPERCORN = [sys.executable, "-m", "hypercorn", "--worker-class", "trio"]
# What the Procfile's web line adds: fgcpay serve's limits, and the exit status kept.
PROCFILE_CONFIG = "python:fgcpay.hypercorn_config.ServeDefaults"
# The shortest lease the settings accept (twice the 10 s attempt deadline): a delivery
# leased by a killed process is sent again soon after the restart.
LEASE_SECONDS = 20


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


@attrs.define
class ServiceProcess:
    """`fgcpay serve` as an operator runs it, its output kept in `log`.

    `settings` are extra `FGCPAY_*` variables (without the prefix) over the defaults here,
    `environment` other variables (`PROMETHEUS_MULTIPROC_DIR`); `workers` is `serve
    --workers` (worker processes sharing the port).
    """

    cwd: Path
    database_url: str
    settings: dict[str, str] = attrs.field(factory=dict)
    port: int = attrs.field(factory=free_port)
    process: trio.Process | None = None
    workers: int = 1
    environment: dict[str, str] = attrs.field(factory=dict)

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    @property
    def log(self) -> Path:
        return self.cwd / "serve.log"

    def errors_logged(self) -> list[str]:
        """The log's lines that report an error (JSON lines at level error) or a traceback."""
        lines = self.log.read_text().splitlines()
        return [line for line in lines if '"level":"error"' in line or "Traceback" in line]

    def env(self) -> dict[str, str]:
        env = {k: v for k, v in os.environ.items() if not k.startswith("FGCPAY_")}
        chosen = {
            "DATABASE_URL": self.database_url,
            "WEBHOOK_ALLOW_PRIVATE": "1",
            "WEBHOOK_LEASE_SECONDS": str(LEASE_SECONDS),
            "SHUTDOWN_GRACE_SECONDS": "2",
            "LOG_LEVEL": "WARNING",
            **self.settings,
        }
        env.update({"FGCPAY_" + name: value for name, value in chosen.items()})
        env.update(self.environment)
        return env

    async def command(self, *args: str) -> dict[str, Any]:
        """Run `fgcpay <args>` on the same database; its one JSON line of output."""
        done = await trio.run_process(
            [*FGCPAY, *args], cwd=self.cwd, env=self.env(), capture_stdout=True
        )
        said: dict[str, Any] = json.loads(done.stdout)
        return said

    def argv(self) -> list[str]:
        return [*FGCPAY, "serve", "--port", str(self.port), "--workers", str(self.workers)]

    async def launch(self) -> trio.Process:
        """Start the process and return at once, before it serves: for a test that watches
        what it does from its first moment (a burst of renewals at start, say)."""
        with self.log.open("ab") as sink:
            self.process = await trio.lowlevel.open_process(
                self.argv(), cwd=self.cwd, env=self.env(), stdout=sink, stderr=sink,
                pass_fds=self.passed_fds(),
            )  # fmt: skip
        return self.process

    def passed_fds(self) -> tuple[int, ...]:
        return ()

    async def start(self) -> None:
        """Start serving and return once `/readyz` answers 200 (30 s at most)."""
        process = await self.launch()

        def alive() -> None:
            assert process.poll() is None, self.log.read_text()

        # Another process: polling its readiness is the only way to know.
        await wait_ready(self.url, within=30, alive=alive)

    def kill(self) -> None:
        """SIGKILL the process if it still runs, without waiting: in a `finally`, so that
        a failed test leaves no service behind."""
        if self.process is not None and self.process.poll() is None:
            self.process.kill()

    async def stop(self, signum: int = signal.SIGTERM) -> int:
        """Send `signum` and wait (15 s at most) for the exit status."""
        assert self.process is not None
        self.process.send_signal(signum)
        with trio.fail_after(15):
            return await self.process.wait()


def _bound_socket() -> socket.socket:
    sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    sock.bind(("127.0.0.1", 0))
    return sock


@attrs.define
class HypercornProcess(ServiceProcess):
    """`hypercorn --worker-class trio ... fgcpay.asgi:app`, with `config` as `--config`
    (by default the Procfile's; None: hypercorn's defaults) and `workers` as `--workers`,
    on a socket bound here and handed over as `--bind fd://N`: the port is known before
    hypercorn starts, and no other process can take it meanwhile. PORT is set, as a
    Procfile host sets it: the service's public URL follows it."""

    config: str | None = PROCFILE_CONFIG
    listener: socket.socket = attrs.field(factory=_bound_socket)
    port: int = attrs.field(
        default=attrs.Factory(lambda self: self.listener.getsockname()[1], takes_self=True)
    )

    def argv(self) -> list[str]:
        options = ["--workers", str(self.workers), "--bind", f"fd://{self.listener.fileno()}"]
        if self.config is not None:
            options += ["--config", self.config]
        return [*HYPERCORN, *options, "fgcpay.asgi:app"]

    def env(self) -> dict[str, str]:
        return {**super().env(), "PORT": str(self.port)}

    def passed_fds(self) -> tuple[int, ...]:
        return (self.listener.fileno(),)

    async def launch(self) -> trio.Process:
        """Start hypercorn (once: the socket is handed over, this process's copy closed,
        so that the port refuses connections once hypercorn has stopped)."""
        process = await super().launch()
        self.listener.close()
        return process


def worker_pids(parent: int) -> list[int]:
    """The worker processes of `parent` (multiprocessing's spawned children, not its
    resource tracker), as /proc shows them now."""
    found = []
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            stat = (entry / "stat").read_text()
            cmdline = (entry / "cmdline").read_bytes()
        except OSError:
            continue  # ended meanwhile
        # The fourth field, after the parenthesised command name, is the parent's pid.
        ppid = int(stat.rsplit(")", 1)[1].split()[1])
        if ppid == parent and b"--multiprocessing-fork" in cmdline:
            found.append(int(entry.name))
    return found


def ended_within(pids: list[int], seconds: float) -> bool:
    """Whether every process in `pids` has ended within `seconds` from now: each is
    awaited with a pidfd, readable once the process has exited (no polling)."""
    deadline = time.monotonic() + seconds
    handles = []
    for pid in pids:
        try:
            handles.append(os.pidfd_open(pid))
        except ProcessLookupError:
            continue  # already gone (and reaped)
    try:
        for handle in handles:
            remaining = max(0.0, deadline - time.monotonic())
            readable, _, _ = select.select([handle], [], [], remaining)
            if not readable:
                return False
        return True
    finally:
        for handle in handles:
            os.close(handle)


@attrs.define
class ListenProcess:
    """`fgcpay listen` as a developer runs it, the key in FGCPAY_API_KEY, its state under
    `config_home` (XDG_CONFIG_HOME); standard output read line by line, standard error
    kept in `errors`."""

    config_home: Path
    api_url: str
    api_key: str
    forward_to: str
    extra: list[str] = attrs.field(factory=list)
    process: trio.Process | None = None
    _pending: bytes = b""

    @property
    def errors(self) -> Path:
        return self.config_home / "listen.stderr"

    async def start(self) -> str:
        """Start it; the signing secret its first line shows (30 s at most)."""
        env = {k: v for k, v in os.environ.items() if not k.startswith("FGCPAY_")}
        env.update(XDG_CONFIG_HOME=str(self.config_home), FGCPAY_API_KEY=self.api_key)
        args = ["listen", "--api-url", self.api_url, "--forward-to", self.forward_to]
        self.config_home.mkdir(parents=True, exist_ok=True)
        with self.errors.open("ab") as sink:
            self.process = await trio.lowlevel.open_process(
                [*FGCPAY, *args, *self.extra], env=env, stdout=subprocess.PIPE, stderr=sink
            )
        ready = await self.line(within=30)
        found = re.search(r"\b(whsec_\S+)", ready)
        assert found, ready
        return found.group(1)

    async def line(self, within: float = 30) -> str:
        """Its next line of standard output."""
        assert self.process is not None and self.process.stdout is not None
        with trio.fail_after(within):
            while b"\n" not in self._pending:
                chunk = await self.process.stdout.receive_some(4096)
                assert chunk, f"it ended: {self.errors.read_text()}"
                self._pending += chunk
        line, _, self._pending = self._pending.partition(b"\n")
        return line.decode()

    async def stop(self) -> int:
        """Ctrl-C, and its exit status (15 s at most)."""
        assert self.process is not None
        self.process.send_signal(signal.SIGINT)
        with trio.fail_after(15):
            return await self.process.wait()

    async def rest(self) -> bytes:
        """What it wrote to standard output after the lines read so far, to its end."""
        assert self.process is not None and self.process.stdout is not None
        with trio.fail_after(15):
            while chunk := await self.process.stdout.receive_some(4096):
                self._pending += chunk
        return self._pending

    def kill(self) -> None:
        if self.process is not None and self.process.poll() is None:
            self.process.kill()
