"""Waiting, in a test, for what only polling can see (another process, a database), always
under a deadline that fails the test with what it waited for."""

from __future__ import annotations

import time
from collections.abc import Awaitable, Callable

import httpx
import trio

from ._service import CLIENT_TLS

# Polling pace: quick enough that a test is not slowed, slow enough not to load the machine.
EVERY = 0.05


async def wait_until(
    condition: Callable[[], Awaitable[bool]], *, within: float, what: str, every: float = EVERY
) -> None:
    """Poll `condition` every `every` seconds (trio time) until it is true.

    Fails the test with `what` if it is still false after `within` seconds, or if a poll
    is still running then. Only for what no event says: a state change the test can
    observe through a trio.Event or a channel is awaited, not polled.
    """
    with trio.move_on_after(within):
        # What is polled has no event to await (ruff's ASYNC110 asks for one).
        while not await condition():  # noqa: ASYNC110
            await trio.sleep(every)
        return
    raise AssertionError(f"not within {within:g} s: {what}")


def poll_until(
    condition: Callable[[], bool],
    *,
    within: float,
    what: str | Callable[[], str],
    every: float = EVERY,
) -> None:
    """`wait_until` for tests that drive other processes without trio: blocking, in real
    time. `what` may be a function, to describe the failure (a log, say) only then."""
    deadline = time.monotonic() + within
    while not condition():
        if time.monotonic() >= deadline:
            raise AssertionError(f"not within {within:g} s: {what() if callable(what) else what}")
        time.sleep(every)


def _is_ready(response: httpx.Response) -> bool:
    return response.status_code == 200


async def wait_ready(
    url: str, *, within: float = 30, alive: Callable[[], None] = lambda: None
) -> None:
    """Until `url`'s `/readyz` answers 200. `alive` is asked before each poll and raises
    (with the process's output, say) when the service has died: no use waiting then."""

    async def ready() -> bool:
        alive()
        try:
            return _is_ready(await client.get(url + "/readyz"))
        except httpx.TransportError:
            return False

    async with httpx.AsyncClient(timeout=5, verify=CLIENT_TLS) as client:
        await wait_until(ready, within=within, what=f"{url}/readyz answering 200")


def wait_ready_blocking(
    url: str,
    *,
    within: float = 30,
    alive: Callable[[], None] = lambda: None,
    log: Callable[[], str] = lambda: "",
) -> None:
    """`wait_ready` without trio; `log` is shown if the service is not ready in time."""

    def ready() -> bool:
        alive()
        try:
            return _is_ready(httpx.get(url + "/readyz", timeout=1, verify=CLIENT_TLS))
        except httpx.TransportError:
            return False

    poll_until(ready, within=within, what=lambda: f"{url}/readyz answering 200\n{log()}")
