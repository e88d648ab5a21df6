"""Sending a request: the URL, the key, an `Idempotency-Key` on every POST, retries of
429, 503 and connection errors, the answer decoded or raised as `ApiError`. Written once
as what a call is (`Call`, `Listing`) and when to retry (`_Retrying`); `SyncTransport` and
`AsyncTransport` differ only in how they wait and send."""

from __future__ import annotations

import datetime
import email.utils
import random
import time
import uuid
from collections.abc import AsyncIterator, Awaitable, Callable, Iterator, Mapping
from typing import Any, Generic, TypeVar
from urllib.parse import quote

import anyio
import attrs
import httpx

from ._errors import ApiError

T = TypeVar("T")
VERSION = "0.1.0"
API_PREFIX = "/api/v1"
DEFAULT_BASE_URL = "http://127.0.0.1:8000"
RETRIED_STATUSES = frozenset({429, 503})
# A `Retry-After` longer than this is waited this long: a client blocked for minutes by
# one header is worse than one more try.
LONGEST_WAIT_SECONDS = 60.0
# Without `Retry-After` (a connection error): 0.5 s, 1 s, 2 s, ... at most 8 s, jittered.
FIRST_BACKOFF_SECONDS = 0.5
LONGEST_BACKOFF_SECONDS = 8.0


@attrs.frozen
class Call(Generic[T]):
    """One request and how its answer becomes the model returned."""

    method: str
    path: str
    parse: Callable[[Mapping[str, Any]], T]
    body: Mapping[str, Any] | None = None
    idempotency_key: str | None = None


@attrs.frozen
class Listing(Generic[T]):
    """A list operation: every page of `path` with `filters`, each item parsed."""

    path: str
    parse: Callable[[Mapping[str, Any]], T]
    filters: Mapping[str, Any]


def segment(value: str) -> str:
    """An id as one path segment (a `/` or `?` in it cannot reach another route)."""
    return quote(str(value), safe="")


def wire(fields: Mapping[str, Any]) -> dict[str, Any]:
    """Body fields as JSON takes them: a datetime as RFC 3339 (it must carry a time zone)."""
    return {name: _wire_value(value) for name, value in fields.items()}


def _wire_value(value: Any) -> Any:
    if isinstance(value, datetime.datetime):
        if value.tzinfo is None:
            raise ValueError(f"{value!r} has no time zone: give an aware datetime (UTC)")
        return value.isoformat().replace("+00:00", "Z")
    if isinstance(value, datetime.date):
        return value.isoformat()
    return value


def retry_after(response: httpx.Response | None, attempt: int) -> float:
    """Seconds to wait before retry number `attempt + 1`: the answer's `Retry-After`
    (seconds or an HTTP date), else an exponential backoff with jitter."""
    given: str | None = None if response is None else response.headers.get("Retry-After")
    if given:
        try:
            seconds = float(given)
        except ValueError:
            try:
                when = email.utils.parsedate_to_datetime(given)
            except (TypeError, ValueError):
                when = None
            seconds = (
                (when - datetime.datetime.now(datetime.UTC)).total_seconds()
                if when is not None and when.tzinfo is not None
                else FIRST_BACKOFF_SECONDS
            )
        return min(max(seconds, 0.0), LONGEST_WAIT_SECONDS)
    backoff = min(FIRST_BACKOFF_SECONDS * 2.0**attempt, LONGEST_BACKOFF_SECONDS)
    return backoff * (0.5 + random.random() / 2)


def decoded(response: httpx.Response) -> Any:
    if response.status_code >= 400:
        raise ApiError.from_response(response)
    return response.json()


@attrs.define
class _Base:
    api_key: str = attrs.field(repr=False)
    base_url: str
    max_retries: int
    owned: bool  # whether closing the client closes the connections (not a caller's client)
    _api: str = attrs.field(init=False)
    _auth: str = attrs.field(init=False, repr=False)

    def __attrs_post_init__(self) -> None:
        if self.max_retries < 0:
            raise ValueError("max_retries must be 0 or more")
        self._api = self.base_url.rstrip("/") + API_PREFIX
        self._auth = f"Bearer {self.api_key}"

    def headers(self, method: str, idempotency_key: str | None) -> dict[str, str]:
        """The request's headers; a POST's key is made here, once per call, so that every
        retry of the call carries the same one and the service makes one object."""
        headers = {"Authorization": self._auth, "User-Agent": f"fgcpay-client-python/{VERSION}"}
        if method == "POST":
            headers["Idempotency-Key"] = idempotency_key or str(uuid.uuid4())
        return headers

    def retried(self, response: httpx.Response | None, attempt: int) -> float | None:
        """Seconds to wait before trying again, or None: answer (or raise) now."""
        if attempt >= self.max_retries:
            return None
        if response is not None and response.status_code not in RETRIED_STATUSES:
            return None
        return retry_after(response, attempt)


@attrs.define
class SyncTransport(_Base):
    http: httpx.Client = attrs.field(kw_only=True)
    # How a retry waits (a test replaces it to see the wait asked, or to act meanwhile).
    sleep: Callable[[float], None] = attrs.field(default=time.sleep, kw_only=True)

    def send(self, method: str, path: str, body: Any = None, params: Any = None,
             idempotency_key: str | None = None) -> Any:  # fmt: skip
        headers = self.headers(method, idempotency_key)
        url = self._api + path
        attempt = 0
        while True:
            try:
                response = self.http.request(method, url, json=body, params=params, headers=headers)
            except httpx.TransportError:
                wait = self.retried(None, attempt)
                if wait is None:
                    raise
            else:
                wait = self.retried(response, attempt)
                if wait is None:
                    return decoded(response)
                response.close()
            self.sleep(wait)
            attempt += 1

    def call(self, call: Call[T]) -> T:
        return call.parse(self.send(call.method, call.path, call.body, None, call.idempotency_key))

    def every(self, listing: Listing[T]) -> Iterator[T]:
        params = dict(listing.filters)
        while True:
            page = self.send("GET", listing.path, None, params)
            for item in page["data"]:
                yield listing.parse(item)
            if not page["has_more"] or not page.get("next_cursor"):
                return
            params["starting_after"] = page["next_cursor"]

    def close(self) -> None:
        if self.owned:
            self.http.close()


@attrs.define
class AsyncTransport(_Base):
    http: httpx.AsyncClient = attrs.field(kw_only=True)
    # anyio sleeps on whichever loop runs the client: trio's or asyncio's.
    sleep: Callable[[float], Awaitable[None]] = attrs.field(default=anyio.sleep, kw_only=True)

    async def send(self, method: str, path: str, body: Any = None, params: Any = None,
                   idempotency_key: str | None = None) -> Any:  # fmt: skip
        headers = self.headers(method, idempotency_key)
        url = self._api + path
        attempt = 0
        while True:
            try:
                response = await self.http.request(
                    method, url, json=body, params=params, headers=headers
                )
            except httpx.TransportError:
                wait = self.retried(None, attempt)
                if wait is None:
                    raise
            else:
                wait = self.retried(response, attempt)
                if wait is None:
                    return decoded(response)
                await response.aclose()
            await self.sleep(wait)
            attempt += 1

    async def call(self, call: Call[T]) -> T:
        return call.parse(
            await self.send(call.method, call.path, call.body, None, call.idempotency_key)
        )

    async def every(self, listing: Listing[T]) -> AsyncIterator[T]:
        params = dict(listing.filters)
        while True:
            page = await self.send("GET", listing.path, None, params)
            for item in page["data"]:
                yield listing.parse(item)
            if not page["has_more"] or not page.get("next_cursor"):
                return
            params["starting_after"] = page["next_cursor"]

    async def aclose(self) -> None:
        if self.owned:
            await self.http.aclose()
