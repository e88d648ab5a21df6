"""The SSRF guard: webhook targets in private or loopback networks are refused unless the
operator allows them (FGCPAY_WEBHOOK_ALLOW_PRIVATE=1).

- At registration only the URL's form and literal addresses are checked (no DNS: a
  merchant may register a name that does not resolve yet). Literals are read as the C
  resolver reads them (`2130706433`, `0x7f.1`, `0177.0.0.1` are 127.0.0.1), and IPv6
  forms that carry an IPv4 address (IPv4-mapped and -compatible, 6to4, Teredo, NAT64)
  are judged by the address they carry.
- At delivery, for each new connection, the name is resolved once, every address is
  checked (`checked_addresses`), and the connection goes to a checked address: a second
  resolution could answer differently (DNS rebinding). The URL's name is kept for `Host`,
  TLS SNI and the certificate check (`webhooks/client.py`).
"""

from __future__ import annotations

import ipaddress
import socket
import typing
from collections.abc import Awaitable, Callable
from urllib.parse import urlsplit

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


class DestinationRefused(Exception):
    """The target's address is not allowed, or its name does not resolve: nothing was sent."""


async def checked_addresses(
    host: str,
    port: int,
    allow_private: bool,
    resolve: Resolver,
) -> list[str]:
    """The addresses a connection to `host` may go to, every one checked: the literal
    itself, or the name resolved once (never a second lookup: the caller connects only to
    these). Raises `DestinationRefused` when any address is not allowed or the name does
    not resolve; the caller bounds the time it takes."""
    literal = literal_address(host)
    if literal is not None:
        addresses = [str(literal)]
    else:
        if _is_localhost(host) and not allow_private:
            raise DestinationRefused(PRIVATE_REFUSAL)
        try:
            addresses = list(dict.fromkeys(await resolve(host, port)))
        except (OSError, UnicodeError, ValueError):
            raise DestinationRefused(NOT_RESOLVED) from None
        if not addresses:
            raise DestinationRefused(NOT_RESOLVED)
    if not allow_private and not all(address_allowed(a) for a in addresses):
        raise DestinationRefused(PRIVATE_REFUSAL)
    # A scope (`%eth0`) is only ever allowed with private targets; the socket takes it apart.
    return [address.split("%")[0] for address in addresses]


async def refusal(url: str, allow_private: bool, resolve: Resolver = system_resolve) -> str | None:
    """Why a delivery to `url` would be refused now, resolving its name (for tools; the
    dispatcher's client checks with `checked_addresses`, on the address it connects to)."""
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
