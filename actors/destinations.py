"""The SSRF guard: webhook targets in private or loopback networks are refused unless the
operator allows them (FGCPAY_WEBHOOK_ALLOW_PRIVATE=1). Checked when an endpoint is saved
and again before every delivery, after DNS resolution."""

from __future__ import annotations

import ipaddress
import socket
from urllib.parse import urlsplit

import trio


def address_allowed(address: str) -> bool:
    ip = ipaddress.ip_address(address)
    if isinstance(ip, ipaddress.IPv6Address) and ip.ipv4_mapped is not None:
        ip = ip.ipv4_mapped
    return not (
        ip.is_private
        or ip.is_loopback
        or ip.is_link_local
        or ip.is_multicast
        or ip.is_reserved
        or ip.is_unspecified
        or (isinstance(ip, ipaddress.IPv4Address) and ip in ipaddress.ip_network("100.64.0.0/10"))
    )


async def refusal(url: str, allow_private: bool) -> str | None:
    """Why a delivery to `url` is not allowed, or None when it is."""
    parts = urlsplit(url)
    if parts.scheme not in ("http", "https") or not parts.hostname:
        return "the URL must be absolute http or https"
    if allow_private:
        return None
    host = parts.hostname
    try:
        port = parts.port or (443 if parts.scheme == "https" else 80)
        infos = await trio.socket.getaddrinfo(host, port, type=socket.SOCK_STREAM)
    except (OSError, ValueError):
        return "the host name does not resolve"
    addresses = {str(info[4][0]) for info in infos}
    if not addresses:
        return "the host name does not resolve"
    if not all(address_allowed(address) for address in addresses):
        return "private, loopback and link-local addresses are not allowed"
    return None
