"""The hosted page in a real browser when its websocket is refused (a page with many tabs
open, a busy server: docs/api.md, Limits): it polls `GET /checkout/<id>/status` instead,
at once, and still turns paid when the customer pays in another tab."""

from __future__ import annotations

import threading
import time
from typing import Any

import pytest
import trio
from fgcpay.domain import limits
from helpers import WAIT_MS, Server, browser, in_browser
from hosted import Customer, new_session

pytestmark = pytest.mark.usefixtures("need_browser")


async def test_a_page_whose_socket_is_refused_polls_and_turns_paid(
    server: Server, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(limits, "MAX_STATUS_SOCKETS_PER_PAGE", 0)  # every socket refused
    _, session = await new_session(server)
    sid = str(session["id"])
    page_open = threading.Event()
    paid = threading.Event()

    def scenario() -> None:
        with browser() as b:
            page = b.new_page()
            sockets: list[Any] = []
            frames: list[object] = []
            polls: list[int] = []  # at each poll, how many sockets the page had tried

            def on_socket(socket: Any) -> None:
                sockets.append(socket)
                socket.on("framereceived", lambda frame: frames.append(frame))

            page.on("websocket", on_socket)
            page.on(
                "request",
                lambda r: polls.append(len(sockets)) if r.url.endswith("/status") else None,
            )
            try:
                page.goto(str(session["checkout_url"]))
                page.wait_for_function("document.body.dataset.status === 'created'")
                # Refused once, the page polls at once, not after three refusals.
                deadline = time.monotonic() + WAIT_MS / 1000
                while not polls:
                    assert time.monotonic() < deadline, "the page never polled its status"
                    page.wait_for_timeout(20)
                assert polls[0] == 1, polls
            finally:
                page_open.set()  # on failure too, so the test ends and reports it
            paid.wait(timeout=30)
            page.get_by_test_id("paid").wait_for(state="visible", timeout=WAIT_MS)
            assert not page.get_by_role("button", name="Pay").is_visible()
            assert sockets and not frames  # it tried the socket, which never opened

    async with trio.open_nursery() as nursery:
        nursery.start_soon(in_browser, scenario)
        await trio.to_thread.run_sync(page_open.wait)
        customer = Customer(server)
        assert (await customer.pay(sid)).status_code == 303
        await customer.close()
        paid.set()
