"""The receiver check (`POST /webhook_endpoints/{id}/check`, the dashboard's "Check
receiver", `fgcpay webhook check`): the eight deliveries of `domain/receiver_check.py`,
sent one after another, in the contract's order, through the webhook client deliveries
use (`client.py`: no redirects, the SSRF guard on every connection), each signed when it
is sent, and what the receiver answered to each.

Bounds: each delivery waits at most `timeout` (10 s, a delivery's deadline) for its
answer, and the whole check at most `limit` (25 s, under the 30 s a proxy in front of
the service commonly allows a request): a check not sent by then fails as not sent.
One check at a time per endpoint in a process; another asked meanwhile is refused (429).
Nothing is stored: these deliveries are not events and not in the delivery log.
"""

from __future__ import annotations

import logging
import math
import ssl

import attrs
import trio
from fgcpay.core.clock import Clock
from fgcpay.core.logs import log_event
from fgcpay.domain import errors, ids
from fgcpay.domain.deliveries import ATTEMPT_TIMEOUT_SECONDS
from fgcpay.domain.receiver_check import (
    CHECKS,
    CheckReport,
    CheckResult,
    check_event_body,
    check_request,
    passes,
)
from fgcpay.domain.signing import new_secret

from . import destinations
from .client import SendFailed, WebhookClient

CHECK_LIMIT_SECONDS = 25.0


class CheckRunning(errors.RateLimited):
    """A check of this endpoint is running already: one at a time."""


@attrs.define
class ReceiverChecks:
    """Runs receiver checks; one per process (the service's, or a command's)."""

    clock: Clock  # the timestamps the deliveries are signed with
    allow_private: bool
    resolve: destinations.Resolver = destinations.system_resolve
    tls: ssl.SSLContext | None = None
    timeout: float = ATTEMPT_TIMEOUT_SECONDS
    limit: float = CHECK_LIMIT_SECONDS
    _running: dict[str, float] = attrs.field(factory=dict)  # endpoint id -> its deadline

    async def check_endpoint(
        self, endpoint_id: str, url: str, signing_secrets: list[str]
    ) -> CheckReport:
        """`check`, at most one at a time for `endpoint_id`: raises `CheckRunning` (a 429
        whose `Retry-After` is when the running one ends at the latest)."""
        running = self._running.get(endpoint_id)
        if running is not None:
            wait = max(1, math.ceil(running - trio.current_time()))
            raise CheckRunning(
                wait,
                "A receiver check of this endpoint is running: one at a time."
                f" Retry after {wait} " + ("second." if wait == 1 else "seconds."),
            )
        self._running[endpoint_id] = trio.current_time() + self.limit
        try:
            return await self.check(url, signing_secrets, endpoint_id)
        finally:
            del self._running[endpoint_id]

    async def check(
        self, url: str, signing_secrets: list[str], endpoint_id: str | None = None
    ) -> CheckReport:
        """Send `url` the eight check deliveries, signed with `signing_secrets` ([old, new]
        during a rotation), and report what it answered to each.

        Raises `errors.ValidationFailed` (field `url`), sending nothing, when the private
        network rule refuses the URL (a private or loopback address, or a name that
        resolves to one, without FGCPAY_WEBHOOK_ALLOW_PRIVATE=1) or it is no http(s) URL.
        A name that does not resolve is the receiver's failure: every check observes it.
        """
        deadline = trio.current_time() + self.limit
        refused: str | None = None
        with trio.move_on_at(deadline):  # a name's lookup counts against the bound too
            refused = await destinations.refusal(url, self.allow_private, self.resolve)
        if refused is not None and refused != destinations.NOT_RESOLVED:
            raise errors.ValidationFailed([errors.FieldError("url", f"Not allowed: {refused}.")])
        client = WebhookClient(
            self.allow_private, self.resolve, tls=self.tls, per_destination=1, timeout=self.timeout
        )
        # `signed` and `redelivery` are one delivery sent twice (one webhook-id); every
        # other check is a delivery of its own, so a receiver that drops a webhook-id it
        # has seen is judged on the signature or timestamp alone.
        first = "evt_" + ids.random_base62(24)
        first_body = check_event_body(first, self.clock.now_us(), endpoint_id, url)
        wrong_secret = new_secret()
        results: list[CheckResult] = []
        try:
            for spec in CHECKS:
                if trio.current_time() >= deadline:
                    observed = f"not sent: the check's {self.limit:g} s ran out"
                    results.append(CheckResult(spec.name, False, spec.expected, observed))
                    continue
                now_us = self.clock.now_us()
                if spec.name in ("signed", "redelivery"):
                    event_id, event = first, first_body
                else:
                    event_id = "evt_" + ids.random_base62(24)
                    event = check_event_body(event_id, now_us, endpoint_id, url)
                body, headers = check_request(
                    spec.name, event_id, event, signing_secrets, wrong_secret, now_us // 1_000_000
                )
                status: int | None = None
                observed = f"timeout: the check's {self.limit:g} s ran out"
                with trio.move_on_at(deadline):
                    try:
                        answer = await client.post(url, headers.items(), body)
                    except SendFailed as failure:
                        observed = str(failure)
                    else:
                        status = answer.status
                        observed = str(status)
                results.append(
                    CheckResult(spec.name, passes(spec.expected, status), spec.expected, observed)
                )
        finally:
            client.close_idle()
        report = CheckReport(endpoint_id, url, tuple(results))
        # Never the URL (it may carry a token) or what was sent or answered.
        log_event(
            "receiver check",
            logging.INFO,
            endpoint_id=endpoint_id,
            passed=report.passed,
            failed=",".join(report.failed()) or None,
        )
        return report
