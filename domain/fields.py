"""Field rules shared by every creation request: text, URLs, emails, metadata.

A `Fields` collects every problem of a request body, so one 400 lists them all.
"""

from __future__ import annotations

import json
import re
import unicodedata
from typing import Any

from .errors import FieldError, ValidationFailed
from .urls import UrlError, dns_name, parse_http_url

MAX_URL = 2048
MAX_EMAIL = 254
MAX_REFERENCE = 255
METADATA_MAX_KEYS = 50
METADATA_MAX_KEY = 40
METADATA_MAX_BYTES = 8 * 1024


class Fields:
    """Reads fields from a JSON object, recording errors instead of raising at the first."""

    def __init__(self, body: dict[str, Any], allowed: set[str]) -> None:
        self.body = body
        self.errors: list[FieldError] = []
        for name in sorted(set(body) - allowed):
            self.fail(name, "Unknown field.")

    def fail(self, field: str, message: str) -> None:
        self.errors.append(FieldError(field, message))

    def raise_if_any(self) -> None:
        if self.errors:
            raise ValidationFailed(self.errors)

    def present(self, name: str) -> bool:
        return self.body.get(name) is not None

    def text(self, name: str, *, required: bool, min_len: int = 1, max_len: int) -> str | None:
        value = self.body.get(name)
        if value is None:
            if required:
                self.fail(name, "This field is required.")
            return None
        if not isinstance(value, str):
            self.fail(name, "Must be a string.")
            return None
        if not value.strip():
            self.fail(name, "Must not be blank." if required else "Must not be blank; omit the field instead.")
            return None
        if any(ord(ch) < 32 and ch not in "\t\n\r" for ch in value) or "\x00" in value:
            self.fail(name, "Must not contain control characters.")
            return None
        if not min_len <= len(value) <= max_len:
            self.fail(name, f"Must be {min_len} to {max_len} characters.")
            return None
        return value

    def url(self, name: str, *, required: bool) -> str | None:
        value = self.text(name, required=required, max_len=MAX_URL)
        if value is None:
            return None
        try:
            parse_http_url(value)  # the rules are in urls.py; the URL is kept as written
        except UrlError as error:
            self.fail(name, str(error))
            return None
        return value

    def email(self, name: str) -> str | None:
        value = self.text(name, required=False, max_len=MAX_EMAIL)
        if value is None:
            return None
        try:
            return email_address(value)
        except EmailError as error:
            self.fail(name, f"Must be a valid email address: {error}")
            return None

    def choice(self, name: str, choices: tuple[str, ...], *, required: bool) -> str | None:
        value = self.body.get(name)
        if value is None:
            if required:
                self.fail(name, "This field is required.")
            return None
        if value not in choices:
            self.fail(name, "Must be one of: " + ", ".join(choices) + ".")
            return None
        return str(value)

    def metadata(self, name: str = "metadata") -> dict[str, Any]:
        value = self.body.get(name)
        if value is None:
            return {}
        if not isinstance(value, dict):
            self.fail(name, "Must be a JSON object.")
            return {}
        if len(value) > METADATA_MAX_KEYS:
            self.fail(name, f"Must have at most {METADATA_MAX_KEYS} keys.")
            return {}
        for key in value:
            if not 1 <= len(key) <= METADATA_MAX_KEY:
                self.fail(f"{name}.{key[:METADATA_MAX_KEY]}", f"Keys must be 1 to {METADATA_MAX_KEY} characters.")
                return {}
        if len(canonical_json(value).encode("utf-8")) > METADATA_MAX_BYTES:
            self.fail(name, "Must be at most 8 KiB when serialized.")
            return {}
        return value


class EmailError(ValueError):
    """An address whose syntax is wrong; the message says what."""


# RFC 5322 atext; RFC 6531 adds any non-ASCII character (printable ones, here).
_ATEXT = re.compile(r"[A-Za-z0-9!#$%&'*+\-/=?^_`{|}~]")
MAX_LOCAL_PART = 64


def _printable_non_ascii(ch: str) -> bool:
    return not ch.isascii() and ch.isprintable() and not ch.isspace()


def email_address(value: str) -> str:
    """`value` as a normalized address (local part NFC, domain lowercase), or `EmailError`.

    Syntax only and offline: nothing is resolved, and reserved and special-use names
    (`.test`, `.example`, `.invalid`, `.localhost`, `.local`) are accepted, since test-mode
    merchants and their customers use them. The domain must be a DNS name with at least two
    labels (`a@localhost` is refused, as are IP literals and quoted local parts).
    """
    local, at, domain = value.rpartition("@")
    if not at or not local or not domain:
        raise EmailError("it must be local-part@domain, such as ana@example.com")
    local = unicodedata.normalize("NFC", local)
    if len(local.encode("utf-8")) > MAX_LOCAL_PART:
        raise EmailError(f"the part before the @ must be at most {MAX_LOCAL_PART} bytes")
    for atom in local.split("."):
        if not atom:
            raise EmailError(
                "the part before the @ must not start or end with a dot or have two in a row"
            )
        for ch in atom:
            if not (_ATEXT.fullmatch(ch) or _printable_non_ascii(ch)):
                raise EmailError(f"the part before the @ must not contain {ch!r}")
    domain = unicodedata.normalize("NFC", domain).lower()
    try:
        dns_name(domain)
    except UrlError:
        raise EmailError("the part after the @ must be a DNS name such as example.com") from None
    if "." not in domain:
        raise EmailError("the part after the @ must have a dot, such as example.com")
    return f"{local}@{domain}"


def canonical_json(value: Any) -> str:
    """Sorted keys, no spaces, UTF-8 kept: the form hashed and stored."""
    return json.dumps(value, sort_keys=True, separators=(",", ":"), ensure_ascii=False)
