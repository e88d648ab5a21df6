"""A fault hook for the crash-injection tests: make one step of the service raise, a few
times, without any switch in the product's configuration.

`Faults` wraps a running service's `Database.write`: a step named by the storage
function it runs crashes before that write (nothing committed) or right after it
(committed, then the caller crashes: the process's view of a crash between two steps).
Other steps (a comparison, a publish) are patched with `crash_calls`."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import attrs
import pytest


class InjectedCrash(Exception):
    """The crash a test injects (never raised by the product)."""


@attrs.define
class Faults:
    """Crash the next `times` writes of `fn` on `db` (`after`: once each has committed),
    reads of it, or calls of a function; `crashed` counts the crashes injected."""

    monkeypatch: pytest.MonkeyPatch
    crashed: int = 0

    def crash_writes(self, db: Any, fn: Callable[..., Any], times: int, after: bool) -> None:
        self._crash_db(db, "write", fn, times, after)

    def crash_reads(self, db: Any, fn: Callable[..., Any], times: int) -> None:
        """Crash the next `times` reads of `fn` on `db` (before reading)."""
        self._crash_db(db, "read", fn, times, after=False)

    def _crash_db(
        self, db: Any, method: str, fn: Callable[..., Any], times: int, after: bool
    ) -> None:
        real = getattr(db, method)

        async def run(called: Callable[..., Any], *args: Any, **kwargs: Any) -> Any:
            if called is not fn or self.crashed >= times:
                return await real(called, *args, **kwargs)
            self.crashed += 1
            if after:
                await real(called, *args, **kwargs)
            raise InjectedCrash(f"injected crash {'after' if after else 'in'} {fn.__name__}")

        self.monkeypatch.setattr(db, method, run)

    def crash_calls(self, owner: Any, name: str, times: int) -> None:
        """Crash the next `times` calls of `owner.name` (a sync or async function: the
        crash is raised where the call is made)."""
        real = getattr(owner, name)

        def crash(*args: Any, **kwargs: Any) -> Any:
            if self.crashed >= times:
                return real(*args, **kwargs)
            self.crashed += 1
            raise InjectedCrash(f"injected crash in {name}")

        self.monkeypatch.setattr(owner, name, crash)
