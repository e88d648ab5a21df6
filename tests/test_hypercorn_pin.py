"""Hypercorn's internals that fgcpay relies on, as they are in the pinned version, and the
protocol installed only while fgcpay serves.

`fgcpay.server` subclasses hypercorn's private `H11Protocol` and overrides private
methods; `fgcpay.asgi` and `fgcpay.hypercorn_config` replace two functions hypercorn looks
up by name. None of that is hypercorn's API: a release may change it without notice, so
pyproject.toml pins `hypercorn==0.18.*`, and this test records the source of each part
relied on (a hash of it) for 0.18.0. When it fails after an upgrade, read the new source
of the parts it names against what the module docstring of `fgcpay.server` (1. to 5.),
`fgcpay.asgi._install_worker_stop` and `fgcpay.hypercorn_config._keep_worker_failure`
say they do, run tests/test_connections.py, test_asgi.py and test_serve_shutdown.py, and
only then record the new hashes (and widen the pin).
"""

from __future__ import annotations

import hashlib
import inspect
import subprocess
import sys
import textwrap
from collections.abc import Callable
from pathlib import Path
from typing import Any

import hypercorn.protocol
import hypercorn.run
import hypercorn.trio.run
import hypercorn.trio.tcp_server
from fgcpay import server
from fgcpay.server import FgcpayH11Protocol
from hypercorn.config import Config
from hypercorn.protocol.h11 import H11Protocol
from hypercorn.trio.worker_context import WorkerContext

PINNED = "0.18.0"

# What each relied-on part is for (what to re-check), and its source's hash in PINNED.
RELIED_ON: dict[str, tuple[str, str]] = {
    # The methods FgcpayH11Protocol overrides, and the ones that call them or hold the
    # state they read (`connection`, `stream`, `keep_alive_requests`, `send`).
    "H11Protocol.__init__": ("5acca53c7d41773d", "the attributes the subclass reads"),
    "H11Protocol.handle": ("31b7d904a6cf59f9", "overridden: Closed/RawData handling, h2c"),
    "H11Protocol._handle_events": ("ef9aeffc27380262", "calls _send_error_response"),
    "H11Protocol._create_stream": ("7170bf28649d95f1", "sends Updated(idle=False)"),
    "H11Protocol._close_stream": ("6250ae85040025b4", "the end of a request"),
    "H11Protocol._maybe_recycle": ("dba7c077157520be", "overridden: 1. of fgcpay.server"),
    "H11Protocol.stream_send": ("c7ef437818f28b28", "overridden: 1., 2. and 4."),
    "H11Protocol._send_h11_event": ("fdb5e069793a1d99", "overridden: 4. (one send)"),
    "H11Protocol._send_error_response": ("41dc5295e47f10cd", "overridden: 3. (JSON)"),
    "H11Protocol._check_protocol": ("aeddfcf3da9e5d85", "h2c and the HTTP/2 preface"),
    "H11Protocol.initiate": ("7e396310351d45ed", "nothing to do for HTTP/1.1"),
    # `installed()` replaces the name this looks up for each connection.
    "ProtocolWrapper.__init__": ("e978b0c0e9e8d22c", "calls hypercorn.protocol.H11Protocol"),
    # The server side of Updated/Closed and its keep-alive timer (5.: _KeepAlive).
    "TCPServer.run": ("30e3a0c602fd1a3e", "builds ProtocolWrapper, the first timer"),
    "TCPServer.protocol_send": ("22b51ba714d07580", "Updated(idle) and Closed"),
    "TCPServer._idle_timeout": ("076077a62ad1c28f", "the timer _KeepAlive takes over"),
    # fgcpay.asgi._install_worker_stop replaces the trigger this looks up by name.
    "trio_worker": ("93848f30a88b8175", "looks up check_multiprocess_shutdown_event"),
    # fgcpay.hypercorn_config._keep_worker_failure wraps this (pgjones/hypercorn#269).
    "_join_exited": ("c30fcc788b572583", "the main process's exit status"),
}

PARTS: dict[str, Callable[..., Any]] = {
    **{
        f"H11Protocol.{name}": member
        for name, member in vars(H11Protocol).items()
        if inspect.isfunction(member)
    },
    "ProtocolWrapper.__init__": hypercorn.protocol.ProtocolWrapper.__init__,
    **{
        f"TCPServer.{name}": getattr(hypercorn.trio.tcp_server.TCPServer, name)
        for name in ("run", "protocol_send", "_idle_timeout")
    },
    "trio_worker": hypercorn.trio.run.trio_worker,
    "_join_exited": hypercorn.run._join_exited,
}


def source_hash(function: Callable[..., Any]) -> str:
    source = textwrap.dedent(inspect.getsource(function))
    return hashlib.sha256(source.encode()).hexdigest()[:16]


def test_the_hypercorn_internals_relied_on_are_those_of_the_pinned_version() -> None:
    changed = [
        f"{name} ({why})"
        for name, (recorded, why) in RELIED_ON.items()
        if name not in PARTS or source_hash(PARTS[name]) != recorded
    ]
    from importlib.metadata import version

    assert not changed, (
        f"hypercorn {version('hypercorn')} changed what fgcpay relies on (recorded for"
        f" {PINNED}): {', '.join(changed)}. Re-check them as this test's docstring says."
    )


def test_every_method_the_subclass_overrides_is_recorded() -> None:
    overridden = {
        f"H11Protocol.{name}"
        for name, member in vars(FgcpayH11Protocol).items()
        if inspect.isfunction(member) and name in vars(H11Protocol)
    }
    assert overridden <= set(RELIED_ON), (
        f"FgcpayH11Protocol overrides {sorted(overridden - set(RELIED_ON))} of hypercorn's"
        " H11Protocol: record their hashes in RELIED_ON"
    )


def test_importing_fgcpay_leaves_hypercorn_as_it_is() -> None:
    """In a fresh interpreter: the protocol is hypercorn's after importing the app."""
    check = (
        "import hypercorn.protocol as p\n"
        "before = p.H11Protocol\n"
        "import fgcpay.asgi, fgcpay.service, fgcpay.server\n"
        "assert p.H11Protocol is before, p.H11Protocol\n"
    )
    done = subprocess.run([sys.executable, "-c", check], capture_output=True, text=True)
    assert done.returncode == 0, done.stderr[-2000:]


def test_installed_builds_ours_for_fgcpay_only_and_is_undone() -> None:
    built: Any = hypercorn.protocol  # the module whose name ProtocolWrapper calls
    assert built.H11Protocol is H11Protocol
    with server.installed():
        with server.installed():  # a second server in the process
            pass
        factory: Any = built.H11Protocol
        assert factory is not H11Protocol, "still installed for the first server"
        args: tuple[Any, ...] = (WorkerContext(None), None, None, False, None, None, _send)

        async def app(*_: Any) -> None:  # another application, under hypercorn's config
            return None

        other = factory(app, Config(), *args)
        ours = factory(app, server.ServerConfig(), *args)
        assert type(other) is H11Protocol and type(ours) is FgcpayH11Protocol
    assert built.H11Protocol is H11Protocol, "hypercorn's own class is back"


async def _send(event: Any) -> None:
    return None


def test_the_upstream_report_still_reproduces_the_hang_on_the_pinned_version() -> None:
    """docs/operations.md's script for the upstream report, run as written: it shows
    hypercorn's hang (the workaround, 1. in fgcpay.server, is still needed). Once it
    does not, tell upstream it is fixed, and drop the workaround."""
    operations = (Path(__file__).parent.parent / "docs" / "operations.md").read_text()
    report = operations.split("### Upstream report", 1)[1]
    script = report.split("```python\n", 1)[1].split("```", 1)[0]
    done = subprocess.run(
        [sys.executable, "-c", script], capture_output=True, text=True, timeout=120
    )
    assert done.returncode == 0, done.stderr[-2000:]
    last = done.stdout.strip().splitlines()[-1]
    assert "then GET: HANGS: no answer, not closed after 3 s" in last, done.stdout
