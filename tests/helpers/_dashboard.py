"""The merchant dashboard as a browser without JavaScript uses it: an HTTP client with its
own cookies that reads each form's CSRF token from the page before posting it."""

from __future__ import annotations

import re
import secrets
from collections.abc import Mapping

import attrs
import httpx

from ._service import CLIENT_TLS, Server

PASSWORD = "a long enough password 7"
TOKEN = re.compile(r'name="csrf_token" value="([^"]+)"')
# A form's one-use token (the create-key form's), sent back as a browser sends it.
FORM_TOKEN = re.compile(r'name="form_token" value="([^"]+)"')
SESSION_COOKIE = "fgc_dashboard_session"


@attrs.define
class Dashboard:
    """One browser on the dashboard (its cookie jar is its own)."""

    client: httpx.AsyncClient

    async def get(self, path: str) -> httpx.Response:
        return await self.client.get(path)

    async def submit(
        self, path: str, data: Mapping[str, str | list[str]], page: str | None = None
    ) -> httpx.Response:
        """Open `page` (default: `path`), then post its form to `path` with its token."""
        opened = await self.client.get(page or path)
        found = TOKEN.search(opened.text)
        assert found, f"no form on {page or path}: {opened.status_code}"
        return await self.client.post(path, data={**form_fields(opened.text), **data})

    @property
    def session_id(self) -> str | None:
        return self.client.cookies.get(SESSION_COOKIE)

    async def create_key(self, name: str) -> str:
        """A new key, as the page shows it once."""
        answer = await self.submit("/dashboard/api-keys", {"name": name})
        assert answer.status_code == 201, answer.text
        return raw_key(answer.text)

    async def aclose(self) -> None:
        await self.client.aclose()


def form_fields(html: str) -> dict[str, str]:
    """The hidden fields of the page's form a browser sends back: its CSRF token, and its
    one-use token where it has one."""
    found = TOKEN.search(html)
    assert found, "no form on the page"
    fields = {"csrf_token": found.group(1)}
    if once := FORM_TOKEN.search(html):
        fields["form_token"] = once.group(1)
    return fields


def raw_key(html: str) -> str:
    found = re.search(r'value="(fp_test_[A-Za-z0-9]+)"', html)
    assert found, "no raw key on the page"
    return found.group(1)


def open_dashboard(server: Server, *, keep_alive: bool = True) -> Dashboard:
    """A fresh browser on `server` (`keep_alive=False` under a MockClock: see start_server)."""
    limits = httpx.Limits(max_keepalive_connections=20 if keep_alive else 0)
    client = httpx.AsyncClient(base_url=server.url, timeout=30, limits=limits, verify=CLIENT_TLS)
    return Dashboard(client)


def new_email() -> str:
    return f"{secrets.token_hex(4)}@example.com"


async def signed_up(
    server: Server, name: str = "Acme Coffee", email: str | None = None, **options: bool
) -> tuple[Dashboard, str]:
    """A new merchant, signed up (and so signed in) in a fresh browser; and its email."""
    dashboard = open_dashboard(server, **options)
    email = email or new_email()
    answer = await dashboard.submit(
        "/dashboard/sign-up", {"name": name, "email": email, "password": PASSWORD}
    )
    assert answer.status_code == 303 and answer.headers["location"] == "/dashboard", answer.text
    return dashboard, email


async def sign_in(dashboard: Dashboard, email: str, password: str = PASSWORD) -> httpx.Response:
    return await dashboard.submit(
        "/dashboard/sign-in", {"email": email, "password": password}, page="/dashboard/sign-in"
    )
