"""How a merchant, a customer and a signed-in dashboard user drive fgcpay, over
`minihttp` connections, and timed reads one request at a time."""

from __future__ import annotations

import json
import os
import re
import secrets
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from pathlib import Path
from urllib.parse import urlencode, urlsplit

import trio

from .core import CREATE_BODY, CREATE_PATH, percentile
from .minihttp import Connection, Response

CSRF_TOKEN = re.compile(rb'name="csrf_token" value="([^"]+)"')
CUSTOMER = {"customer_code": "TEST-0001", "pin": "1234"}  # a customer whose payments succeed
# Customers paying at once are spread over merchants, this many to each: one customer
# code's attempts at a merchant are decided one after another (its wrong-PIN counter is
# locked by each payment's transaction), so one merchant would measure that queue.
PAYERS_PER_MERCHANT = 4
_ALERT = re.compile(rb'role="alert"[^>]*>\s*([^<]+)')


def merchants_for(payers: int) -> int:
    """How many merchants `payers` customers paying at once need."""
    return -(-payers // PAYERS_PER_MERCHANT)


def expect(r: Response, status: int, what: str) -> Response:
    if r.status != status:
        alert = _ALERT.search(r.body)  # a page's refusal: its message, not its head
        shown = alert.group(1).strip() if alert else r.body[:300]
        raise RuntimeError(f"{what} answered {r.status}: {shown!r}")
    return r


def api(key: str) -> dict[str, str]:
    return {"Authorization": f"Bearer {key}", "Content-Type": "application/json"}


@dataclass
class Page:
    """A hosted page: a checkout session to pay or a subscription to approve."""

    id: str
    path: str  # /checkout/<id>
    cookie: str = ""
    token: str = ""


async def create(conn: Connection, key: str, path: str = CREATE_PATH,
                 body: dict[str, str] | None = None) -> Page:  # fmt: skip
    r = await conn.request("POST", path, api(key), json.dumps(body or CREATE_BODY).encode())
    data = json.loads(expect(r, 201, f"POST {path}").body)
    return Page(data["id"], urlsplit(data["checkout_url"]).path)


async def open_page(conn: Connection, page: Page) -> Response:
    """GET the page; keeps its CSRF cookie and form token on `page`."""
    r = expect(await conn.request("GET", page.path, {"Accept": "text/html"}), 200, "page")
    cookie, match = r.cookies().get("fgc_csrf"), CSRF_TOKEN.search(r.body)
    if not cookie or not match:
        raise RuntimeError("page without fgc_csrf cookie or csrf_token field")
    page.cookie, page.token = cookie, match.group(1).decode()
    return r


async def confirm(conn: Connection, page: Page) -> Response:
    """POST the page's form (pays a session, approves a subscription): 303."""
    form = urlencode({"csrf_token": page.token, **CUSTOMER}).encode()
    headers = {"Content-Type": "application/x-www-form-urlencoded",
               "Cookie": f"fgc_csrf={page.cookie}"}  # fmt: skip
    return expect(await conn.request("POST", page.path, headers, form), 303, "confirm")


async def sign_in(conn: Connection, email: str, password: str) -> dict[str, str]:
    """Sign in to the dashboard; the headers of a signed-in browser."""
    r = expect(await conn.request("GET", "/dashboard/sign-in"), 200, "sign-in page")
    csrf, match = r.cookies().get("fgc_dashboard_csrf", ""), CSRF_TOKEN.search(r.body)
    form = urlencode({"csrf_token": match.group(1).decode() if match else "",
                      "email": email, "password": password, "next": "/dashboard"})  # fmt: skip
    headers = {"Content-Type": "application/x-www-form-urlencoded",
               "Cookie": f"fgc_dashboard_csrf={csrf}"}  # fmt: skip
    r = expect(
        await conn.request("POST", "/dashboard/sign-in", headers, form.encode()), 303, "sign-in"
    )
    session = r.cookies()["fgc_dashboard_session"]
    return {"Cookie": f"fgc_dashboard_csrf={csrf}; fgc_dashboard_session={session}"}


Paths = Mapping[str, str | Callable[[], str]]  # name -> a path, or what draws one each time


async def reads(port: int, paths: Paths, headers: dict[str, str], count: int,
                warmup: int) -> dict[str, list[float]]:  # fmt: skip
    """Each GET `count` times after `warmup` untimed, one at a time on one keep-alive
    connection: ms from the first byte written to the last byte read."""
    conn, out = Connection("127.0.0.1", port), {}
    for name, path in paths.items():
        took = []
        for i in range(warmup + count):
            url = path() if callable(path) else path
            r = expect(await conn.request("GET", url, headers), 200, f"GET {name}")
            if i >= warmup:
                took.append((r.done_at - r.sent_at) * 1000)
        out[name] = took
    await conn.aclose()
    return out


def tail(values: list[float]) -> tuple[float, str]:
    """The p99 of latencies in ms, and the p50, max and count beside it."""
    text = f"p50 {percentile(values, 50):.2f}, max {max(values):.2f} ms, n={len(values)}"
    return percentile(values, 99), text


# -- which worker process holds a connection (several workers) ---------------------------


def owner_of(server_port: int, client_port: int, pids: list[int]) -> int | None:
    """Which of `pids` holds the server side of our loopback connection from
    `client_port`: its socket's inode from /proc/net/tcp, found among their descriptors."""
    want = (f"0100007F:{server_port:04X}", f"0100007F:{client_port:04X}")
    lines = Path("/proc/net/tcp").read_text().splitlines()[1:]
    inode = next((p[9] for p in map(str.split, lines) if (p[1], p[2]) == want), None)
    for pid in pids if inode else []:
        try:
            if any(os.readlink(f"/proc/{pid}/fd/{fd}") == f"socket:[{inode}]"
                   for fd in os.listdir(f"/proc/{pid}/fd")):  # fmt: skip
                return pid
        except OSError:
            continue
    return None


class WorkerConnections:
    """One keep-alive connection held by each worker, so a request can be sent on purpose
    to the worker that holds a websocket, or to another. (Left to the kernel, a new
    connection mostly lands on the same worker when requests come one at a time.)"""

    def __init__(self, port: int, pids: list[int]) -> None:
        self.port, self.pids, self.by_pid = port, pids, dict[int, Connection]()

    async def get(self, pid: int) -> Connection:
        if pid in self.by_pid:
            return self.by_pid[pid]
        spare: list[Connection] = []  # kept open meanwhile, so the next lands elsewhere
        try:
            for _ in range(200):
                conn = Connection("127.0.0.1", self.port)
                await conn.request("GET", "/readyz")
                assert conn.stream is not None
                if owner_of(self.port, conn.stream.socket.getsockname()[1], self.pids) == pid:
                    self.by_pid[pid] = conn
                    return conn
                spare.append(conn)
            raise RuntimeError(f"no connection landed on worker {pid}")
        finally:
            for conn in spare:
                await conn.aclose()

    async def aclose(self) -> None:
        for conn in self.by_pid.values():
            await conn.aclose()


async def in_parallel(count: int, job: Callable[[int], object]) -> None:
    """`job(i)` for i in range(count), all at once."""
    async with trio.open_nursery() as nursery:
        for i in range(count):
            nursery.start_soon(job, i)  # type: ignore[arg-type]


async def burst(port: int, calls: list[tuple[str, bytes]], headers: dict[str, str],
                clients: int) -> tuple[float, dict[int, int], list[float]]:  # fmt: skip
    """POST each (path, body) once from `clients` connections at once, with an
    Idempotency-Key each: the seconds from the first request to the last answer, the count
    of each status, the latencies in ms."""
    todo, statuses, took = iter(calls), dict[int, int](), list[float]()

    async def client(_: int) -> None:
        conn = Connection("127.0.0.1", port)
        for path, body in todo:  # shared: each call goes to one client
            r = await conn.request(
                "POST", path, headers | {"Idempotency-Key": secrets.token_hex(16)}, body
            )
            statuses[r.status] = statuses.get(r.status, 0) + 1
            took.append((r.done_at - r.sent_at) * 1000)
        await conn.aclose()

    started = trio.current_time()
    await in_parallel(clients, client)
    return trio.current_time() - started, statuses, took


def worst(took: dict[str, list[float]]) -> tuple[float, str, str]:
    """The worst p99 of several reads, each one's, and the worst one's name."""
    p99 = {name: percentile(values, 99) for name, values in took.items()}
    name = max(p99, key=lambda k: p99[k])
    return p99[name], ", ".join(f"{k} {v:.2f}" for k, v in p99.items()) + " ms", name
