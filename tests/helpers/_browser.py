"""Headless chromium driven by Playwright's sync API, from a thread beside the trio one, and
the merchant's site a customer returns to from the hosted page."""

from __future__ import annotations

import os
import shutil
import threading
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import TYPE_CHECKING, Any

import trio

if TYPE_CHECKING:
    from playwright.sync_api import Browser, Page

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


@contextmanager
def browser() -> Iterator[Browser]:
    from playwright.sync_api import sync_playwright

    with sync_playwright() as playwright:
        instance = playwright.chromium.launch(executable_path=CHROMIUM, args=LAUNCH_ARGS)
        try:
            yield instance
        finally:
            instance.close()


def screenshot(page: Page, name: str) -> None:
    ARTIFACTS.mkdir(exist_ok=True)
    page.screenshot(path=str(ARTIFACTS / f"{name}.png"), full_page=True)


async def in_browser(scenario: Callable[[], None]) -> None:
    """Run `scenario` in a plain thread and wait for it (Playwright's sync API runs its
    own asyncio loop, which must not be the trio thread)."""
    failure: list[BaseException] = []

    def run() -> None:
        try:
            scenario()
        except BaseException as error:  # handed to the test below
            failure.append(error)

    thread = threading.Thread(target=run, name="browser", daemon=True)
    thread.start()
    await trio.to_thread.run_sync(thread.join)
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
