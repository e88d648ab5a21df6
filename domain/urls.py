"""Absolute http(s) URLs that merchants give us, and the origin of one for a header.

A merchant's URL ends up in a `Location`, a CSP `form-action` source and webhook requests,
so its host must be something every parser reads the same way: a DNS name of LDH labels,
a dotted-quad IPv4 address or a bracketed IPv6 address. Internationalized names are
accepted when they are valid IDNA 2008 as written (lowercase, no mapping), since browsers
then reach the same A-label; header values use that A-label. Nothing here resolves names.
"""

from __future__ import annotations

import ipaddress
import re
from urllib.parse import urlsplit

import attrs
import idna

# RFC 1035 / 1123 labels: letters, digits and inner hyphens, 1 to 63 characters; a name
# is one or more of them, dot-separated (one expression: every create checks two URLs).
_LABEL = r"[a-z0-9](?:[a-z0-9-]{0,61}[a-z0-9])?"
_DNS_NAME = re.compile(rf"{_LABEL}(?:\.{_LABEL})*")
# A WHATWG URL parser reads a host whose last label is a number as an IPv4 address
# (`127.1`, `0x7f.1`); only the dotted-quad form means the same to every parser.
_NUMERIC_LABEL = re.compile(r"[0-9]+|0x[0-9a-f]*")
# RFC 3986 userinfo: unreserved, percent-encoded, sub-delims and ":". Excludes "\\", which a
# browser reads as a path separator (`https://a.example\@b.example/` goes to a.example).
_USERINFO = re.compile(r"[A-Za-z0-9\-._~%!$&'()*+,;=:]*")
MAX_HOST = 253

NOT_HTTP_URL = "Must be an absolute http or https URL."


class UrlError(ValueError):
    """A URL the service does not accept; the message is fit for a merchant."""


@attrs.frozen
class HttpUrl:
    scheme: str  # "http" or "https"
    host: str  # ASCII: DNS name in A-label form, dotted-quad IPv4, or "[v6]" compressed
    port: int | None  # only when written explicitly

    @property
    def origin(self) -> str:
        """`scheme://host[:port]`, built from the parsed parts only (never the raw text)."""
        port = f":{self.port}" if self.port is not None else ""
        return f"{self.scheme}://{self.host}{port}"


def parse_http_url(value: str) -> HttpUrl:
    """The parts of an absolute http(s) URL; `UrlError` for anything else."""
    # Every white space character but the space itself is also unprintable.
    if " " in value or not value.isprintable():
        raise UrlError(
            "Must be an absolute http or https URL without spaces or control characters."
        )
    try:
        parts = urlsplit(value)
        port = parts.port  # raises ValueError for a port that is not 0..65535
    except ValueError:
        raise UrlError(NOT_HTTP_URL) from None
    scheme = parts.scheme.lower()
    if scheme not in ("http", "https") or not parts.netloc:
        raise UrlError(NOT_HTTP_URL)
    userinfo, at, hostport = parts.netloc.rpartition("@")
    if at and not _USERINFO.fullmatch(userinfo):
        raise UrlError("Must have only URL characters in its user name and password.")
    hostname = parts.hostname or ""
    if hostport.startswith("["):
        host = _ipv6_host(hostname)
    elif _ends_in_number(hostname):
        host = _ipv4_host(hostname)
    else:
        host = dns_name(hostname)
    return HttpUrl(scheme=scheme, host=host, port=port)


def origin_of(value: str) -> str | None:
    """The URL's origin for a header, or None for a URL `parse_http_url` refuses."""
    try:
        return parse_http_url(value).origin
    except UrlError:
        return None


def _ipv6_host(text: str) -> str:
    if "%" in text:  # a zone id means nothing outside this machine
        raise UrlError("Must not carry an IPv6 zone id.")
    try:
        return f"[{ipaddress.IPv6Address(text).compressed}]"
    except ValueError:
        raise UrlError("Must have a valid IPv6 address between the brackets.") from None


def _ends_in_number(text: str) -> bool:
    return bool(_NUMERIC_LABEL.fullmatch(text.rsplit(".", 1)[-1]))


def _ipv4_host(text: str) -> str:
    try:
        return str(ipaddress.IPv4Address(text))
    except ValueError:
        raise UrlError(
            "Must write an IPv4 host as four decimal numbers, such as 192.0.2.1."
        ) from None


def dns_name(text: str) -> str:
    """`text` (lowercase) as an ASCII DNS name in A-label form; `UrlError` if it is not one.

    Its last label must not be a number (that would be read as an IPv4 address).
    """
    if not text:
        raise UrlError(NOT_HTTP_URL)
    if not text.isascii():
        try:
            text = idna.encode(text, uts46=False).decode("ascii")
        except (idna.IDNAError, UnicodeError, ValueError):
            raise UrlError("Must have a host that is a valid DNS name (IDNA 2008).") from None
    if len(text) > MAX_HOST or _ends_in_number(text) or not _DNS_NAME.fullmatch(text):
        raise UrlError(
            "Must have a host that is a DNS name (letters, digits and hyphens, "
            "dot-separated labels of 1 to 63 characters) or an IP address."
        )
    if "xn--" not in text:
        return text
    for label in text.split("."):
        if label.startswith("xn--"):
            try:
                idna.decode(label)
            except (idna.IDNAError, UnicodeError, ValueError):
                raise UrlError("Must have a host whose xn-- labels are valid IDNA.") from None
    return text
