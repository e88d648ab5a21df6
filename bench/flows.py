"""How a merchant and a customer drive fgcpay, over `minihttp` connections: create a
session (merchant API), open the hosted page (CSRF cookie + token), confirm it (the
form post answered 303). Shared by `bench/hosted.py` and `bench/webhooks.py`."""

from __future__ import annotations

import json
import os
import re
from dataclasses import dataclass
from pathlib import Path
from urllib.parse import urlencode, urlsplit

from common import CREATE_BODY, CREATE_PATH
from minihttp import Connection, Response

_TOKEN = re.compile(rb'name="csrf_token" value="([^"]+)"')
CUSTOMER = {"customer_code": "TEST-0001", "pin": "1234"}


class FlowError(Exception):
    pass


@dataclass
class Page:
    session_id: str
    path: str  # /checkout/<id>
    cookie: str = ""
    token: str = ""


async def create_session(conn: Connection, api_key: str) -> Page:
    body = json.dumps(CREATE_BODY, separators=(",", ":")).encode()
    r = await conn.request(
        "POST", CREATE_PATH,
        {"Authorization": f"Bearer {api_key}", "Content-Type": "application/json"}, body,
    )  # fmt: skip
    if r.status != 201:
        raise FlowError(f"create answered {r.status}: {r.body[:300]!r}")
    data = json.loads(r.body)
    return Page(data["id"], urlsplit(data["checkout_url"]).path)


async def open_page(conn: Connection, page: Page) -> Response:
    """GET the hosted page; keeps its CSRF cookie and form token on `page`."""
    r = await conn.request("GET", page.path, {"Accept": "text/html"})
    if r.status != 200:
        raise FlowError(f"page answered {r.status}")
    cookie = r.cookies().get("fgc_csrf")
    match = _TOKEN.search(r.body)
    if not cookie or not match:
        raise FlowError("page without fgc_csrf cookie or csrf_token field")
    page.cookie, page.token = cookie, match.group(1).decode()
    return r


async def confirm(conn: Connection, page: Page) -> Response:
    """POST the form (TEST-0001 / 1234, a customer whose payments succeed); 303 = paid."""
    form = urlencode({"csrf_token": page.token, **CUSTOMER}).encode()
    r = await conn.request(
        "POST", page.path,
        {"Content-Type": "application/x-www-form-urlencoded", "Cookie": f"fgc_csrf={page.cookie}"},
        form,
    )  # fmt: skip
    if r.status != 303:
        raise FlowError(f"confirm answered {r.status}: {r.body[:300]!r}")
    return r


# -- which worker process holds a connection (multi-worker runs) ----------------------------


def _socket_inode(server_port: int, client_port: int) -> str | None:
    """The inode of the server-side socket of the loopback connection client_port ->
    server_port, from /proc/net/tcp (addresses are little-endian hex)."""
    local = f"0100007F:{server_port:04X}"
    remote = f"0100007F:{client_port:04X}"
    try:
        lines = Path("/proc/net/tcp").read_text().splitlines()[1:]
    except OSError:
        return None
    for line in lines:
        parts = line.split()
        if parts[1] == local and parts[2] == remote:
            return parts[9]
    return None


def owner_of(server_port: int, client_port: int, pids: list[int]) -> int | None:
    """Which of `pids` holds the accepted socket of our connection from `client_port`."""
    inode = _socket_inode(server_port, client_port)
    if inode is None:
        return None
    target = f"socket:[{inode}]"
    for pid in pids:
        try:
            fds = os.listdir(f"/proc/{pid}/fd")
        except OSError:
            continue
        for fd in fds:
            try:
                if os.readlink(f"/proc/{pid}/fd/{fd}") == target:
                    return pid
            except OSError:
                continue
    return None
