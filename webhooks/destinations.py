"""The SSRF guard: webhook targets in private or loopback networks are refused unless the
operator allows them (FGCPAY_WEBHOOK_ALLOW_PRIVATE=1).

- At registration only the URL's form and literal addresses are checked (no DNS: a
  merchant may register a name that does not resolve yet). Literals are read as the C
  resolver reads them (`2130706433`, `0x7f.1`, `0177.0.0.1` are 127.0.0.1), and IPv6
  forms that carry an IPv4 address (IPv4-mapped and -compatible, 6to4, Teredo, NAT64)
  are judged by the address they carry.
- At delivery the name is resolved once, every address is checked, and the connection
  goes to a checked address (`pinned_transport`): a second resolution could answer
  differently (DNS rebinding). The URL's name is kept for `Host`, TLS SNI and the
  certificate check, since httpcore takes those from the URL, not from `connect_tcp`.
"""

from __future__ import annotations

import functools
import ipaddress
import socket
import ssl
import typing
from collections.abc import Awaitable, Callable
from urllib.parse import urlsplit

import httpcore
import httpx
import trio

Address = ipaddress.IPv4Address | ipaddress.IPv6Address
Resolver = Callable[[str, int], Awaitable[list[str]]]

ALLOW_SETTING = "FGCPAY_WEBHOOK_ALLOW_PRIVATE"
PRIVATE_REFUSAL = (
    "private, loopback and link-local addresses are refused"
    f" (an operator may allow them with {ALLOW_SETTING}=1)"
)
NOT_RESOLVED = "the host name does not resolve"

_SHARED_ADDRESS_SPACE = ipaddress.ip_network("100.64.0.0/10")
_SIX_TO_FOUR = ipaddress.ip_network("2002::/16")
_TEREDO = ipaddress.ip_network("2001::/32")
_NAT64 = ipaddress.ip_network("64:ff9b::/96")
_NAT64_LOCAL = ipaddress.ip_network("64:ff9b:1::/48")  # RFC 8215: inside an operator's network
_IPV4_MAPPED = ipaddress.ip_network("::ffff:0:0/96")
_IPV4_TRANSLATED = ipaddress.ip_network("::ffff:0:0:0/96")
_IPV4_COMPATIBLE = ipaddress.ip_network("::/96")


def _ipv4_allowed(ip: ipaddress.IPv4Address) -> bool:
    return not (
        ip.is_private
        or ip.is_loopback
        or ip.is_link_local
        or ip.is_multicast
        or ip.is_reserved
        or ip.is_unspecified
        or ip in _SHARED_ADDRESS_SPACE
        or not ip.is_global
    )


def embedded_ipv4(ip: ipaddress.IPv6Address) -> list[ipaddress.IPv4Address] | None:
    """The IPv4 addresses an IPv6 transition form carries, or None for a plain address."""
    low32 = ipaddress.IPv4Address(int(ip) & 0xFFFFFFFF)
    if ip in _IPV4_MAPPED or ip in _IPV4_TRANSLATED or ip in _NAT64:
        return [low32]
    if ip in _SIX_TO_FOUR:
        assert ip.sixtofour is not None
        return [ip.sixtofour]
    if ip in _TEREDO:
        assert ip.teredo is not None
        server, client = ip.teredo  # the client part is stored obfuscated; this undoes it
        return [server, client]
    if ip in _IPV4_COMPATIBLE and int(ip) > 1:
        return [low32]
    return None


def address_allowed(address: str | Address) -> bool:
    """May a webhook be sent to this address (without the operator's permission)?"""
    ip = ipaddress.ip_address(address) if isinstance(address, str) else address
    if isinstance(ip, ipaddress.IPv4Address):
        return _ipv4_allowed(ip)
    if ip.scope_id is not None:
        return False
    if ip in _NAT64_LOCAL:
        return False
    carried = embedded_ipv4(ip)
    if carried is not None:
        # The prefix is a translation mechanism; where the packet ends up is what counts.
        # IPv4-compatible addresses (::a.b.c.d) are deprecated and routed nowhere useful.
        return ip not in _IPV4_COMPATIBLE and all(_ipv4_allowed(v4) for v4 in carried)
    return not (
        ip.is_private
        or ip.is_loopback
        or ip.is_link_local
        or ip.is_site_local
        or ip.is_multicast
        or ip.is_reserved
        or ip.is_unspecified
        or not ip.is_global
    )


def _ipv4_part(part: str) -> int | None:
    """One dotted part as inet_aton reads it: decimal, 0x hex or 0 octal."""
    if part[:2] in ("0x", "0X"):
        digits, base = part[2:], 16
        if not digits:
            return None
    elif len(part) > 1 and part.startswith("0"):
        digits, base = part[1:], 8
    else:
        digits, base = part, 10
    allowed = "0123456789abcdefABCDEF"[: 10 if base == 10 else 8 if base == 8 else 22]
    if not digits or any(ch not in allowed for ch in digits):
        return None
    return int(digits, base)


def _numeric_ipv4(host: str) -> ipaddress.IPv4Address | None:
    """`host` read as the C library's inet_aton reads it (what getaddrinfo connects to):
    one to four parts, the last filling the remaining bytes."""
    parts = host.removesuffix(".").split(".")
    if not 1 <= len(parts) <= 4:
        return None
    values = [_ipv4_part(part) for part in parts]
    if any(value is None for value in values):
        return None
    numbers = typing.cast(list[int], values)
    *leading, last = numbers
    if any(value > 255 for value in leading) or last >= 256 ** (4 - len(leading)):
        return None
    total = 0
    for value in leading:
        total = total << 8 | value
    return ipaddress.IPv4Address(total << (8 * (4 - len(leading))) | last)


def literal_address(host: str) -> Address | None:
    """The address `host` (a URL's host, without brackets) spells, or None for a name."""
    host = host.strip("[]")
    if ":" in host:
        try:
            return ipaddress.IPv6Address(host.replace("%25", "%"))
        except ValueError:
            return None
    return _numeric_ipv4(host)


def _is_localhost(host: str) -> bool:
    name = host.lower().removesuffix(".")
    return name == "localhost" or name.endswith(".localhost")  # RFC 6761: always loopback


def registration_refusal(url: str, allow_private: bool) -> str | None:
    """Why `url` cannot be registered, or None. Offline: no name is resolved here."""
    try:
        parts = urlsplit(url)
        hostname = parts.hostname
    except ValueError:
        return "the URL must be absolute http or https"
    if parts.scheme.lower() not in ("http", "https") or not hostname:
        return "the URL must be absolute http or https"
    if allow_private:
        return None
    literal = literal_address(hostname)
    if (literal is not None and not address_allowed(literal)) or _is_localhost(hostname):
        return PRIVATE_REFUSAL
    return None


async def system_resolve(host: str, port: int) -> list[str]:
    """The host's resolver (getaddrinfo, in a thread)."""
    infos = await trio.socket.getaddrinfo(host, port, type=socket.SOCK_STREAM)
    return [str(info[4][0]) for info in infos]


class DestinationRefused(httpcore.ConnectError):
    """The target's address is not allowed; nothing was sent."""


class _PinnedBackend(httpcore.AsyncNetworkBackend):
    """Resolves once, checks every address, and connects only to checked addresses."""

    def __init__(self, allow_private: bool, resolve: Resolver) -> None:
        self._allow_private = allow_private
        self._resolve = resolve
        self._inner = _trio_backend()

    async def connect_tcp(
        self,
        host: str,
        port: int,
        timeout: float | None = None,  # noqa: ASYNC109 (httpcore's interface)
        local_address: str | None = None,
        socket_options: typing.Iterable[httpcore.SOCKET_OPTION] | None = None,
    ) -> httpcore.AsyncNetworkStream:
        literal = literal_address(host)
        addresses = [str(literal)] if literal is not None else []
        if literal is None:
            if _is_localhost(host) and not self._allow_private:
                raise DestinationRefused(PRIVATE_REFUSAL)
            try:
                with trio.fail_after(float("inf") if timeout is None else timeout):
                    addresses = list(dict.fromkeys(await self._resolve(host, port)))
            except trio.TooSlowError:
                raise httpcore.ConnectTimeout(NOT_RESOLVED) from None
            except (OSError, UnicodeError, ValueError):
                raise DestinationRefused(NOT_RESOLVED) from None
            if not addresses:
                raise DestinationRefused(NOT_RESOLVED)
        if not self._allow_private and not all(address_allowed(a) for a in addresses):
            raise DestinationRefused(PRIVATE_REFUSAL)
        failure: Exception | None = None
        for address in addresses:  # each one checked above; never a fresh lookup
            try:
                return await self._inner.connect_tcp(
                    address.split("%")[0], port, timeout, local_address, socket_options
                )
            except httpcore.ConnectError as error:
                failure = error
        assert failure is not None
        raise failure

    async def connect_unix_socket(
        self,
        path: str,
        timeout: float | None = None,  # noqa: ASYNC109 (httpcore's interface)
        socket_options: typing.Iterable[httpcore.SOCKET_OPTION] | None = None,
    ) -> httpcore.AsyncNetworkStream:
        raise DestinationRefused("unix sockets are not webhook targets")

    async def sleep(self, seconds: float) -> None:
        await trio.sleep(seconds)


def _trio_backend() -> httpcore.AsyncNetworkBackend:
    from httpcore._backends.trio import TrioBackend  # the backend httpcore itself uses under trio

    return TrioBackend()


@functools.cache
def _default_tls() -> ssl.SSLContext:
    """The default TLS context (httpx's CAs), built once per process: loading the CAs
    costs tens of milliseconds of CPU, and one context serves every connection."""
    return httpx.create_ssl_context(trust_env=False)


class _PinnedTransport(httpx.AsyncHTTPTransport):
    """httpx's own transport (request mapping, error mapping) over a pinned connection pool."""

    def __init__(
        self,
        allow_private: bool,
        resolve: Resolver,
        limits: httpx.Limits,
        verify: ssl.SSLContext | None,
    ) -> None:
        context = verify or _default_tls()
        # The context given here too: httpx would otherwise load the CAs for a pool that
        # the pinned one below replaces.
        super().__init__(verify=context, trust_env=False, limits=limits)
        self._pool = httpcore.AsyncConnectionPool(
            ssl_context=context,
            max_connections=limits.max_connections,
            max_keepalive_connections=limits.max_keepalive_connections,
            keepalive_expiry=limits.keepalive_expiry,
            network_backend=_PinnedBackend(allow_private, resolve),
        )


def pinned_transport(
    allow_private: bool,
    resolve: Resolver,
    limits: httpx.Limits,
    verify: ssl.SSLContext | None = None,
) -> httpx.AsyncBaseTransport:
    """A transport for webhook deliveries: no proxies from the environment (they would
    bypass the guard), and connections only to addresses the guard checked. `verify`:
    the TLS context (default: the system's CAs, checked against the URL's name)."""
    return _PinnedTransport(allow_private, resolve, limits, verify)


async def refusal(url: str, allow_private: bool, resolve: Resolver = system_resolve) -> str | None:
    """Why a delivery to `url` would be refused now, resolving its name (for tools; the
    dispatcher checks inside `pinned_transport`, on the address it connects to)."""
    problem = registration_refusal(url, allow_private)
    if problem or allow_private:
        return problem
    host = urlsplit(url).hostname or ""
    if literal_address(host) is not None:
        return None
    try:
        addresses = await resolve(host, 443)
    except (OSError, UnicodeError, ValueError):
        return NOT_RESOLVED
    if not addresses:
        return NOT_RESOLVED
    return None if all(address_allowed(a) for a in addresses) else PRIVATE_REFUSAL
