"""Field rules shared by every creation request: text, URLs, emails, metadata.

A `Fields` collects every problem of a request body, so one 400 lists them all.
"""

from __future__ import annotations

import json
from typing import Any
from urllib.parse import urlsplit

from email_validator import EmailNotValidError, validate_email

from .errors import FieldError, ValidationFailed

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
        if any(ch.isspace() for ch in value):
            self.fail(name, "Must be an absolute http or https URL without spaces.")
            return None
        try:
            parts = urlsplit(value)
            port = parts.port  # raises ValueError on a bad port
        except ValueError:
            self.fail(name, "Must be an absolute http or https URL.")
            return None
        del port
        if parts.scheme.lower() not in ("http", "https") or not parts.hostname:
            self.fail(name, "Must be an absolute http or https URL.")
            return None
        return value

    def email(self, name: str) -> str | None:
        value = self.text(name, required=False, max_len=MAX_EMAIL)
        if value is None:
            return None
        try:
            return str(validate_email(value, check_deliverability=False).normalized)
        except EmailNotValidError as error:
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


def canonical_json(value: Any) -> str:
    """Sorted keys, no spaces, UTF-8 kept: the form hashed and stored."""
    return json.dumps(value, sort_keys=True, separators=(",", ":"), ensure_ascii=False)
