"""The receiver check's eight deliveries (the contract's "Receiver check" table): what
each one sends, which answer passes it, and the report's wire form and lines. Sending
them is `fgcpay.webhooks.check`'s job; this module only builds and judges.

A check delivery is an event of type `webhook_endpoint.check`: no subscribable type, so
it is in no `enabled_events`, no event list and no delivery log, and a receiver treats
it as any type it does not handle (verify it, answer 2xx).
"""

from __future__ import annotations

import json
from typing import Annotated, Literal

import attrs
from pydantic import ConfigDict, Field, with_config
from typing_extensions import TypedDict

from .events import event_body
from .fields import one_of
from .signing import signed_headers, without_signatures

CHECK_EVENT_TYPE = "webhook_endpoint.check"
SKEW_SECONDS = 600
"""How far the stale and the future timestamps are from now: twice the 300 s a receiver
tolerates, so a receiver whose clock is a little off still refuses them."""
TAMPERED_URL = "https://tampered.invalid/"
"""What the tampered delivery's `data.object.url` says instead of what was signed: the
body stays valid JSON, so only a signature check can tell."""
SUCCESS = "2xx"
REFUSAL = "4xx"


@attrs.frozen
class CheckSpec:
    name: str
    expected: str  # SUCCESS or REFUSAL, as the report shows it


CHECKS = (
    CheckSpec("signed", SUCCESS),
    CheckSpec("redelivery", SUCCESS),
    CheckSpec("rotated_secrets", SUCCESS),
    CheckSpec("bad_signature", REFUSAL),
    CheckSpec("tampered_body", REFUSAL),
    CheckSpec("stale_timestamp", REFUSAL),
    CheckSpec("future_timestamp", REFUSAL),
    CheckSpec("missing_signature", REFUSAL),
)
CHECK_NAMES = tuple(spec.name for spec in CHECKS)


def check_event_body(event_id: str, now_us: int, endpoint_id: str | None, url: str) -> bytes:
    """The body of one check delivery: an event whose `data.object` says which endpoint
    (null for `fgcpay webhook check --url`) and URL are being checked."""
    about = {"object": "webhook_check", "endpoint_id": endpoint_id, "url": url}
    body = event_body(event_id, CHECK_EVENT_TYPE, now_us, 0, about)
    return json.dumps(body, separators=(",", ":"), ensure_ascii=False).encode("utf-8")


def check_request(
    name: str,
    event_id: str,
    body: bytes,
    signing_secrets: list[str],
    wrong_secret: str,
    now_s: int,
) -> tuple[bytes, dict[str, str]]:
    """The body and headers the check `name` sends, signed at `now_s` (unix seconds).

    `signing_secrets` are the endpoint's ([old, new] during a rotation), `wrong_secret` one
    the receiver cannot know. Raises `ValueError` for a name not in `CHECK_NAMES`."""
    right = signing_secrets
    if name in ("signed", "redelivery"):
        return body, signed_headers(event_id, body, now_s, right)
    if name == "rotated_secrets":
        # An unknown secret's signature first: a receiver must try each one offered.
        return body, signed_headers(event_id, body, now_s, [wrong_secret, right[-1]])
    if name == "bad_signature":
        return body, signed_headers(event_id, body, now_s, [wrong_secret])
    if name == "tampered_body":
        changed = json.loads(body)
        about = changed["data"]["object"]
        about["url"] = TAMPERED_URL if about["url"] != TAMPERED_URL else TAMPERED_URL + "x"
        sent = json.dumps(changed, separators=(",", ":"), ensure_ascii=False).encode("utf-8")
        return sent, signed_headers(event_id, body, now_s, right)
    if name == "stale_timestamp":
        return body, signed_headers(event_id, body, now_s - SKEW_SECONDS, right)
    if name == "future_timestamp":
        return body, signed_headers(event_id, body, now_s + SKEW_SECONDS, right)
    if name == "missing_signature":
        return body, without_signatures(signed_headers(event_id, body, now_s, right))
    raise ValueError(f"no receiver check named {name!r}")


def passes(expected: str, status: int | None) -> bool:
    """Whether an answer with `status` (None: no answer came) passes a check expecting
    `expected`. A 3xx passes nothing: redirects are not followed."""
    if status is None:
        return False
    if expected == SUCCESS:
        return 200 <= status < 300
    return 400 <= status < 500


@attrs.frozen
class CheckResult:
    name: str
    passed: bool
    expected: str
    observed: str  # the status, as text, or why no answer came


@attrs.frozen
class CheckReport:
    endpoint_id: str | None
    url: str
    checks: tuple[CheckResult, ...]

    @property
    def passed(self) -> bool:
        return all(check.passed for check in self.checks)

    def failed(self) -> list[str]:
        return [check.name for check in self.checks if not check.passed]


@with_config(ConfigDict(extra="forbid"))
class CheckResultWire(TypedDict):
    name: Annotated[str, one_of(CHECK_NAMES, "The check; the eight come in this order.")]
    passed: bool
    expected: Annotated[
        str, one_of((SUCCESS, REFUSAL), "The class of answer that passes the check.")
    ]
    observed: Annotated[
        str,
        Field(
            description=(
                "The receiver's HTTP status as text (`200`, `401`), or why no answer came "
                "(`timeout after 10 s`, a connection error, `destination refused: ...`)."
            )
        ),
    ]


@with_config(ConfigDict(extra="forbid"))
class WebhookCheckWire(TypedDict):
    """The report of `POST /webhook_endpoints/{id}/check`."""

    object: Literal["webhook_check"]
    endpoint_id: Annotated[str, Field(pattern="^we_[0-9A-Za-z]{24}$")]
    url: str
    passed: Annotated[bool, Field(description="true when every check passed.")]
    checks: Annotated[list[CheckResultWire], Field(min_length=8, max_length=8)]


def report_to_json(report: CheckReport, endpoint_id: str) -> WebhookCheckWire:
    return {
        "object": "webhook_check",
        "endpoint_id": endpoint_id,
        "url": report.url,
        "passed": report.passed,
        "checks": [
            {
                "name": check.name,
                "passed": check.passed,
                "expected": check.expected,
                "observed": check.observed,
            }
            for check in report.checks
        ],
    }


def report_lines(report: CheckReport) -> list[str]:
    """`fgcpay webhook check`'s output: `PASS name`, or `FAIL name: expected ..., observed ...`."""
    return [
        f"PASS {check.name}"
        if check.passed
        else f"FAIL {check.name}: expected {check.expected}, observed {check.observed}"
        for check in report.checks
    ]
