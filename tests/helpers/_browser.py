"""Headless chromium driven by Playwright's sync API, from a thread beside the trio one, and
the merchant's site a customer returns to from the hosted page."""

from __future__ import annotations

import os
import queue
import shutil
import threading
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import TYPE_CHECKING, Any

import trio

if TYPE_CHECKING:
    from playwright.sync_api import Browser, Page, Playwright

CHROMIUM = os.environ.get("FGCPAY_CHROMIUM", "/usr/bin/chromium")
ARTIFACTS = Path(__file__).parent.parent / "artifacts"
LAUNCH_ARGS = [
    "--headless", "--no-sandbox", "--disable-gpu", "--disable-background-networking",
    "--disable-component-update", "--disable-sync", "--no-first-run", "--disable-quic",
]  # fmt: skip
WAIT_MS = 15_000


def browser_missing() -> str | None:
    """Why the browser tests cannot run here, or None when they can."""
    if not Path(CHROMIUM).exists() and not shutil.which("chromium"):
        return f"no chromium at {CHROMIUM} (apt-get install chromium)"
    try:
        import playwright.sync_api  # noqa: F401
    except ImportError:
        return "playwright is not installed (pip install playwright)"
    return None


class _BrowserThread:
    """The one thread that drives chromium, for the whole run.

    Playwright's sync API belongs to the thread that started it, and starting it with a
    chromium took ~0.7 s a test; so every scenario runs here in turn (`in_browser`), on
    one chromium launched at the first (`browser`), and `close_browser` ends both.
    """

    def __init__(self) -> None:
        self._jobs: queue.SimpleQueue[Callable[[], None] | None] = queue.SimpleQueue()
        self._playwright: Playwright | None = None
        self._browser: Browser | None = None
        self._thread = threading.Thread(target=self._run, name="browser", daemon=True)
        self._thread.start()

    def submit(self, job: Callable[[], None]) -> None:
        self._jobs.put(job)

    def browser(self) -> Browser:
        """The chromium, launched at the first call (and again if it has died)."""
        assert threading.current_thread() is self._thread, "browser() is for scenarios"
        if self._browser is None or not self._browser.is_connected():
            if self._playwright is None:
                from playwright.sync_api import sync_playwright

                self._playwright = sync_playwright().start()
            self._browser = self._playwright.chromium.launch(
                executable_path=CHROMIUM, args=LAUNCH_ARGS
            )
        return self._browser

    def close(self) -> None:
        self._jobs.put(None)
        self._thread.join(timeout=30)

    def _run(self) -> None:
        while (job := self._jobs.get()) is not None:
            job()
        try:
            if self._browser is not None and self._browser.is_connected():
                self._browser.close()
        finally:
            if self._playwright is not None:
                self._playwright.stop()


_driver: _BrowserThread | None = None


def _browser_thread() -> _BrowserThread:
    global _driver
    if _driver is None:
        _driver = _BrowserThread()
    return _driver


def close_browser() -> None:
    """End the browser thread and its chromium, if a test started them."""
    global _driver
    if _driver is not None:
        _driver.close()
        _driver = None


@contextmanager
def browser() -> Iterator[Browser]:
    """The run's chromium, inside an `in_browser` scenario. Its pages come each in a
    context of their own (`Browser.new_page`), as in a fresh browser, and every context
    the scenario opened is closed after it."""
    shared = _browser_thread().browser()
    try:
        yield shared
    finally:
        for context in shared.contexts:
            context.close()


def screenshot(page: Page, name: str) -> None:
    ARTIFACTS.mkdir(exist_ok=True)
    page.screenshot(path=str(ARTIFACTS / f"{name}.png"), full_page=True)


async def in_browser(scenario: Callable[[], None]) -> None:
    """Run `scenario` on the browser thread and wait for it (Playwright's sync API runs its
    own asyncio loop, which must not be the trio thread)."""
    failure: list[BaseException] = []
    done = threading.Event()

    def run() -> None:
        try:
            scenario()
        except BaseException as error:  # handed to the test below
            failure.append(error)
        finally:
            done.set()

    _browser_thread().submit(run)
    await trio.to_thread.run_sync(done.wait)
    if failure:
        raise failure[0]


def fill_and_pay(page: Page, code: str, pin: str) -> None:
    page.get_by_label("Customer code").fill(code)
    page.get_by_label("PIN").fill(pin)
    page.get_by_role("button", name="Pay").click()


class _Shop(BaseHTTPRequestHandler):
    """The merchant's site: only the page customers return to."""

    def do_GET(self) -> None:  # noqa: N802
        body = b"<!doctype html><title>Shop</title><h1>Thank you for your order</h1>"
        self.send_response(200)
        self.send_header("Content-Type", "text/html")
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def log_message(self, *args: Any) -> None:
        pass


@contextmanager
def shop_site() -> Iterator[str]:
    """A merchant's site on 127.0.0.1 whose every page says "Thank you for your order"
    (a `success_url` for the browser to land on); yields its base URL."""
    httpd = ThreadingHTTPServer(("127.0.0.1", 0), _Shop)
    thread = threading.Thread(target=httpd.serve_forever, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{httpd.server_address[1]}"
    finally:
        httpd.shutdown()
        httpd.server_close()
