"""The client's address behind trusted proxies (`FGCPAY_TRUSTED_PROXY_HOPS`).

Hypercorn's `ProxyFixMiddleware` (mode "legacy") applies the same rule to the address;
it is written once here rather than used because hypercorn's copies the whole scope
(`deepcopy`) for every request, and takes `X-Forwarded-Proto` and `X-Forwarded-Host` as
they come (replacing `Host`), whether or not `FGCPAY_PUBLIC_URL` is set.

With `hops` proxies in front of the service, each appending the address of the peer it
received the request from to `X-Forwarded-For`, the client's address is the hops-th
address from the right: the ones further left were written by whoever sent the request
to the first proxy, the client itself included, and are never believed. With `hops = 0`
the forwarding headers are ignored: the client is the socket's peer.

When the header holds fewer addresses than `hops` (the request did not come through
every proxy: one of them was bypassed, or hops is set too high), or the value at that
place is not an IP address, the client is the socket's peer (the nearest proxy, or
whoever connected): a value the client could have written is never used, at the price of
sharing that peer's limits.

The scheme and host a proxy forwards (`X-Forwarded-Proto`, `X-Forwarded-Host`, taken at
the same place from the right) are used only when `FGCPAY_PUBLIC_URL` is not set: then
they become the request's scheme and `Host`, once validated (`http` or `https`; a host
name or IP address with an optional port); an invalid one is ignored.
"""

from __future__ import annotations

import ipaddress
import re
from collections.abc import Iterable, Mapping
from typing import Any

from hypercorn.typing import (
    ASGIFramework,
    ASGIReceiveCallable,
    ASGISendCallable,
    HTTPScope,
    Scope,
    WebsocketScope,
)

# A DNS name or IPv4 address, or a bracketed IPv6 address, with an optional port.
_HOST = re.compile(
    r"(?:[A-Za-z0-9](?:[A-Za-z0-9-]{0,61}[A-Za-z0-9])?(?:\.[A-Za-z0-9](?:[A-Za-z0-9-]{0,61}"
    r"[A-Za-z0-9])?)*|\[[0-9A-Fa-f:.]+\])(?::[0-9]{1,5})?"
)


def trusted_value(headers: Iterable[tuple[bytes, bytes]], name: bytes, hops: int) -> str | None:
    """The hops-th comma-separated value from the right of the `name` headers (all of
    them, in order), or None with fewer values than hops (or hops 0)."""
    if hops <= 0:
        return None
    values: list[bytes] = []
    for header, value in headers:
        if header.lower() == name:
            values.extend(value.split(b","))
    if len(values) < hops:
        return None
    return values[-hops].strip().decode("latin-1")


def forwarded_address(value: str | None) -> str | None:
    """The IP address in one `X-Forwarded-For` value (some proxies add a port: `a.b.c.d:p`,
    `[v6]:p`), or None if it holds none."""
    if not value:
        return None
    candidates = [value]
    if value.startswith("["):
        candidates.append(value[1:].partition("]")[0])
    elif value.count(":") == 1:
        candidates.append(value.partition(":")[0])
    for candidate in candidates:
        try:
            return str(ipaddress.ip_address(candidate))
        except ValueError:
            continue
    return None


def client_address(scope: Mapping[str, Any], hops: int) -> str:
    """The client's address for limits and logs, by the rule of the module docstring."""
    if hops > 0:
        found = forwarded_address(trusted_value(scope.get("headers", ()), b"x-forwarded-for", hops))
        if found is not None:
            return found
    client = scope.get("client")
    return str(client[0]) if client else "unknown"


class TrustedProxies:
    """ASGI middleware: the request's client (and, without `FGCPAY_PUBLIC_URL`, its
    scheme and host) as the trusted proxies forwarded them. Only wrapped around the
    application when hops > 0 (`behind_proxies`)."""

    def __init__(self, app: ASGIFramework, hops: int, use_forwarded_url: bool) -> None:
        self.app = app
        self.hops = hops
        self.use_forwarded_url = use_forwarded_url

    async def __call__(
        self, scope: Scope, receive: ASGIReceiveCallable, send: ASGISendCallable
    ) -> None:
        if scope["type"] == "http" or scope["type"] == "websocket":
            scope = self._resolved(scope)
        await self.app(scope, receive, send)

    def _resolved(self, scope: HTTPScope | WebsocketScope) -> Scope:
        resolved = dict(scope)  # hypercorn's own scope stays as it is (its access log)
        headers = scope["headers"]
        resolved["client"] = (client_address(scope, self.hops), 0)
        if self.use_forwarded_url:
            scheme = trusted_value(headers, b"x-forwarded-proto", self.hops)
            if scheme is not None and scheme.lower() in ("http", "https"):
                resolved["scheme"] = scheme.lower()
                if scope["type"] == "websocket":
                    resolved["scheme"] = "wss" if scheme.lower() == "https" else "ws"
            host = trusted_value(headers, b"x-forwarded-host", self.hops)
            if host is not None and _HOST.fullmatch(host):
                resolved["headers"] = [
                    *(item for item in headers if item[0].lower() != b"host"),
                    (b"host", host.encode("ascii")),
                ]
        return resolved  # type: ignore[return-value]


def behind_proxies(app: ASGIFramework, hops: int, public_url_set: bool) -> ASGIFramework:
    """`app` as it should be served with `hops` trusted proxies in front: as it is with
    none (nothing to resolve, nothing to pay per request)."""
    if hops <= 0:
        return app
    return TrustedProxies(app, hops, use_forwarded_url=not public_url_set)
