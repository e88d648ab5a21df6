"""Field rules shared by every request: text, URLs, emails, choices, metadata, query values.

Each rule is an `Annotated` marker for a pydantic model field. Its validator raises our own
wording, and its JSON schema (published in the OpenAPI document) is computed from the same
parameters, so what the server checks and what the document promises cannot drift apart.
`validate` runs a model and maps every pydantic error to a `FieldError`, so one 400 lists
every problem of a request.
"""

from __future__ import annotations

import json
import re
import unicodedata
from collections.abc import Callable, Iterable
from typing import Any, TypeVar

import attrs
from pydantic import (
    BaseModel,
    GetCoreSchemaHandler,
    GetJsonSchemaHandler,
    ValidationError,
    WithJsonSchema,
)
from pydantic_core import PydanticCustomError, core_schema

from . import money
from .errors import FieldError, ValidationFailed
from .urls import UrlError, dns_name, parse_http_url

MAX_URL = 2048
MAX_EMAIL = 254
MAX_REFERENCE = 255
METADATA_MAX_KEYS = 50
METADATA_MAX_KEY = 40
METADATA_MAX_BYTES = 8 * 1024

REQUIRED = "This field is required."
UNKNOWN_FIELD = "Unknown field."
# Invisible format characters (Unicode category Cf) of the basic plane, for the published
# pattern (ECMA-262 without the `u` flag cannot name the others; the rule refuses them all,
# by category, and tests/test_field_rules.py checks the two agree on this plane).
_FORMAT_BMP = (
    "\\xad\\u0600-\\u0605\\u061c\\u06dd\\u070f\\u0890\\u0891\\u08e2\\u180e"
    "\\u200b-\\u200f\\u202a-\\u202e\\u2060-\\u2064\\u2066-\\u206f\\ufeff\\ufff9-\\ufffb"
)
# Not blank, no control characters but tab, newline and carriage return (C0, DEL, C1),
# and no invisible format characters (ECMA-262).
NOT_BLANK_PATTERN = (
    f"^[^\\x00-\\x08\\x0b\\x0c\\x0e-\\x1f\\x7f-\\x9f{_FORMAT_BMP}]*"
    "[^\\x00-\\x20\\x7f-\\xa0\\u1680\\u2000-\\u200a\\u2028\\u2029\\u202f\\u205f\\u3000"
    f"{_FORMAT_BMP}]"
    f"[^\\x00-\\x08\\x0b\\x0c\\x0e-\\x1f\\x7f-\\x9f{_FORMAT_BMP}]*$"
)
TEXT_RULES = (
    "Not blank (whitespace only is blank); no control characters other than tab, newline "
    "and carriage return, and no invisible format characters (Unicode category Cf: "
    "zero-width and bidirectional controls such as U+200B, U+202E, U+2066)."
)
URL_PATTERN = "^[Hh][Tt][Tt][Pp][Ss]?://[^\\s/?#]+(?:[/?#]\\S*)?$"
URL_HOST_RULES = (
    "The host must be a DNS name (letters, digits, hyphens; IDNA 2008 names accepted), a "
    f"dotted-quad IPv4 or a bracketed IPv6 address; at most {MAX_URL} characters, no spaces."
)
EMAIL_PATTERN = "^[^\\s@]+@[^\\s@]+\\.[^\\s@]+$"


def fail(message: str, field: str | None = None) -> PydanticCustomError:
    """Our wording for one field's problem; `field` overrides the name (e.g. `metadata.k`).

    The message travels in the context, not the template, so text a caller sent (which
    may hold braces) is never formatted.
    """
    context: dict[str, str] = {"message": message}
    if field is not None:
        context["field"] = field
    return PydanticCustomError("fgcpay", "{message}", context)


COMPONENT = "x-component"


def ref(name: str) -> dict[str, Any]:
    """A reference to the shared schema `name` (Amount, Metadata, EventType); the document
    generator writes it as a `$ref` (pydantic would try to resolve one itself)."""
    return {COMPONENT: name}


def one_of(values: Iterable[str], description: str | None = None) -> WithJsonSchema:
    """The schema of an answer field that is one of `values` (a status, a type), for
    `Annotated[str, one_of(...)]` in a resource's wire form."""
    schema: dict[str, Any] = {"type": "string", "enum": list(values)}
    if description is not None:
        schema["description"] = description
    return WithJsonSchema(schema)


def nullable(schema: dict[str, Any], required: bool) -> dict[str, Any]:
    """An optional field's schema also accepts null (which means absent)."""
    if required:
        return schema
    if "type" in schema:
        widened = {**schema, "type": [schema["type"], "null"]}
        if "enum" in schema:  # an enum refuses what it does not list
            widened["enum"] = [*schema["enum"], None]
        return widened
    return {"oneOf": [schema, {"type": "null"}]}


class Rule:
    """A field rule: `check` turns a present, non-null value into the clean one or raises
    `fail(...)`; null is "absent" for an optional field and a missing value for a required one."""

    required: bool = True

    def check(self, value: Any) -> Any:
        raise NotImplementedError

    def schema(self) -> dict[str, Any]:
        """The JSON schema of a present value, from the rule's own parameters."""
        raise NotImplementedError

    def validate(self, value: Any) -> Any:
        if value is None:
            if self.required:
                raise fail(REQUIRED)
            return None
        return self.check(value)

    def __get_pydantic_core_schema__(
        self, source: Any, handler: GetCoreSchemaHandler
    ) -> core_schema.CoreSchema:
        return core_schema.no_info_plain_validator_function(self.validate)

    def __get_pydantic_json_schema__(
        self, schema: core_schema.CoreSchema, handler: GetJsonSchemaHandler
    ) -> dict[str, Any]:
        return nullable(self.schema(), self.required)


# Control characters other than tab, newline and carriage return: C0, DEL and C1.
_CONTROL = re.compile("[\x00-\x08\x0b\x0c\x0e-\x1f\x7f-\x9f]")
CONTROL_CHARACTERS = "control characters"
INVISIBLE_CHARACTERS = "invisible format characters (zero-width or bidirectional controls)"


def unreadable(value: str) -> str | None:
    """What makes `value` unfit as text a person reads (`CONTROL_CHARACTERS` or
    `INVISIBLE_CHARACTERS`, for "must not contain ..."), or None: a control character
    (tab, newline and carriage return aside) or an invisible format character (Unicode
    category Cf: U+200B, U+202E, U+2066, ...), which could hide or reorder what the
    customer or merchant sees. The one check of names, descriptions, references and
    metadata, in the API, the dashboard and the operator commands alike."""
    if _CONTROL.search(value):
        return CONTROL_CHARACTERS
    # Every Cf character is outside ASCII: most text is checked by `isascii` alone.
    if not value.isascii() and any(unicodedata.category(ch) == "Cf" for ch in value):
        return INVISIBLE_CHARACTERS
    return None


def text(value: Any, required: bool, min_len: int, max_len: int) -> str:
    """The text rule, shared by `Text`, `Url` and `Email` (a plain function: it runs for
    most fields of every create)."""
    if not isinstance(value, str):
        raise fail("Must be a string.")
    if not value.strip():
        raise fail(
            "Must not be blank." if required else "Must not be blank; omit the field instead."
        )
    found = unreadable(value)
    if found is not None:
        raise fail(f"Must not contain {found}.")
    if not min_len <= len(value) <= max_len:
        raise fail(f"Must be {min_len} to {max_len} characters.")
    return value


@attrs.frozen
class Text(Rule):
    max_len: int
    required: bool = True
    min_len: int = 1

    def check(self, value: Any) -> str:
        return text(value, self.required, self.min_len, self.max_len)

    def schema(self) -> dict[str, Any]:
        size = (
            f"{self.min_len} to {self.max_len} characters."
            if self.required
            else f"At most {self.max_len} characters."
        )
        return {
            "type": "string",
            "minLength": self.min_len,
            "maxLength": self.max_len,
            "pattern": NOT_BLANK_PATTERN,
            "description": f"{size} {TEXT_RULES}",
        }


@attrs.frozen
class Url(Rule):
    """An absolute http(s) URL (rules in urls.py), kept as written."""

    about: str
    required: bool = True

    def check(self, value: Any) -> str:
        checked = text(value, self.required, 1, MAX_URL)
        try:
            parse_http_url(checked)
        except UrlError as error:
            raise fail(str(error)) from None
        return checked

    def schema(self) -> dict[str, Any]:
        return {
            "type": "string",
            "format": "uri",
            "maxLength": MAX_URL,
            "pattern": URL_PATTERN,
            "description": f"{self.about} {URL_HOST_RULES}",
        }


@attrs.frozen
class Email(Rule):
    required: bool = False

    def check(self, value: Any) -> str:
        checked = text(value, self.required, 1, MAX_EMAIL)
        try:
            return email_address(checked)
        except EmailError as error:
            raise fail(f"Must be a valid email address: {error}") from None

    def schema(self) -> dict[str, Any]:
        return {
            "type": "string",
            "format": "email",
            "maxLength": MAX_EMAIL,
            "pattern": EMAIL_PATTERN,
            "description": (
                "An address checked for syntax only, offline (never resolved): a dot-atom "
                "local part and a domain of at least two DNS labels. Reserved names such as "
                "`.test`, `.example` and `.localhost` are accepted."
            ),
        }


@attrs.frozen
class Choice(Rule):
    choices: tuple[str, ...]
    required: bool = True
    description: str | None = None

    def check(self, value: Any) -> str:
        if value not in self.choices:
            raise fail("Must be one of: " + ", ".join(self.choices) + ".")
        return str(value)

    def schema(self) -> dict[str, Any]:
        schema: dict[str, Any] = {"type": "string", "enum": list(self.choices)}
        if self.description:
            schema["description"] = self.description
        return schema


@attrs.frozen
class Metadata(Rule):
    """Any JSON object within the size limits; null or absent is `{}`."""

    required: bool = False

    def validate(self, value: Any) -> dict[str, Any]:
        return {} if value is None else self.check(value)

    def check(self, value: Any) -> dict[str, Any]:
        if not isinstance(value, dict):
            raise fail("Must be a JSON object.")
        if len(value) > METADATA_MAX_KEYS:
            raise fail(f"Must have at most {METADATA_MAX_KEYS} keys.")
        for key in value:
            if not 1 <= len(key) <= METADATA_MAX_KEY:
                raise fail(
                    f"Keys must be 1 to {METADATA_MAX_KEY} characters.",
                    f"metadata.{key[:METADATA_MAX_KEY]}",
                )
        if len(canonical_json(value).encode("utf-8")) > METADATA_MAX_BYTES:
            raise fail("Must be at most 8 KiB when serialized.")
        for key, item in value.items():
            found = _unreadable_within(key, item)
            if found is not None:
                raise fail(f"Must not contain {found}.", f"metadata.{key[:METADATA_MAX_KEY]}")
        return value

    def schema(self) -> dict[str, Any]:
        return ref("Metadata")

    @staticmethod
    def component() -> dict[str, Any]:
        return {
            "type": "object",
            "maxProperties": METADATA_MAX_KEYS,
            "propertyNames": {"minLength": 1, "maxLength": METADATA_MAX_KEY},
            "description": (
                f"Any JSON object: at most {METADATA_MAX_KEYS} keys, keys at most "
                f"{METADATA_MAX_KEY} characters, at most 8 KiB serialized. No key or text "
                "within it may hold a control character (tab, newline and carriage return "
                "aside) or an invisible format character (Unicode category Cf)."
            ),
        }


def _unreadable_within(key: str, item: Any) -> str | None:
    """What is unreadable (`unreadable`) in a metadata key, or in any text or key within
    its value, however nested (walked without recursion: the depth is the caller's)."""
    pending: list[Any] = [key, item]
    while pending:
        found = pending.pop()
        if isinstance(found, str):
            what = unreadable(found)
            if what is not None:
                return what
        elif isinstance(found, dict):
            pending.extend(found.keys())
            pending.extend(found.values())
        elif isinstance(found, list):
            pending.extend(found)
    return None


@attrs.frozen
class Custom(Rule):
    """A rule given as a parse function raising `ValueError` (the message is prefixed)."""

    parse: Callable[[Any], Any]
    json_schema: dict[str, Any]
    required: bool = True
    prefix: str = ""
    suffix: str = ""

    def check(self, value: Any) -> Any:
        try:
            return self.parse(value)
        except ValueError as error:
            raise fail(f"{self.prefix}{error}{self.suffix}") from None

    def schema(self) -> dict[str, Any]:
        return self.json_schema


def amount(*, required: bool = True) -> Custom:
    """The rule of an `amount_fgc`-like field (`max_total_amount_fgc` too): the contract's
    money rules (`money.parse_fgc`), into minor units; its schema is the shared `Amount`."""
    return Custom(
        money.parse_fgc,
        ref("Amount"),
        required=required,
        prefix="Must be a valid amount: ",
        suffix=".",
    )


Model = TypeVar("Model", bound=BaseModel)


def validate(
    model: type[Model],
    data: dict[str, Any],
    *,
    unknown: str = UNKNOWN_FIELD,
    message: str | None = None,
) -> Model:
    """`data` through `model`, or `ValidationFailed` naming every problem: unknown fields
    first (sorted), then the model's fields in declaration order."""
    try:
        return model.model_validate(data)
    except ValidationError as failed:
        raise ValidationFailed(field_errors(failed, unknown), message) from None


def field_errors(failed: ValidationError, unknown: str = UNKNOWN_FIELD) -> list[FieldError]:
    extra: list[FieldError] = []
    rest: list[FieldError] = []
    for error in failed.errors(include_url=False, include_input=False):
        name = ".".join(str(part) for part in error["loc"])
        kind = error["type"]
        context = error.get("ctx") or {}
        if kind == "extra_forbidden":
            extra.append(FieldError(name, unknown))
        elif kind == "missing":
            rest.append(FieldError(name, REQUIRED))
        elif "message" in context:
            rest.append(FieldError(context.get("field", name), context["message"]))
        else:  # a rule always speaks for itself; this is only a safety net
            rest.append(FieldError(name, "Must be a valid value."))
    return sorted(extra, key=lambda error: error.field) + rest


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
    if isinstance(value, dict) and not value:
        return "{}"  # most resources' metadata, on every create: no encoder needed
    return json.dumps(value, sort_keys=True, separators=(",", ":"), ensure_ascii=False)


def stored_metadata(text: str) -> dict[str, Any]:
    """The metadata object stored as `canonical_json` (a new object each time)."""
    found: dict[str, Any] = {} if text == "{}" else json.loads(text)
    return found


def once(values: Any) -> str:
    """A query parameter's one value (the query model gets a list for a repeated one)."""
    if isinstance(values, list):
        raise fail("Give this parameter once.")
    return str(values)
