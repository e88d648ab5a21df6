"""The supervised delivery nursery: claims due deliveries from the outbox, sends each with
a fresh signature, records the attempt, and schedules retries.

- A bounded pool of senders; the dispatcher never claims more than it has free senders,
  and never more than `per_endpoint` attempts at once to one endpoint or `per_merchant`
  for one merchant, so slow receivers cannot hold every sender.
- Each attempt has one deadline (10 s: resolve, connect, send, read the answer), well
  inside the claim's lease; a receiver that drips its answer is cut off there.
- Targets are resolved once per connection, every address is checked and the connection
  goes to a checked address (`destinations.pinned_transport`).
- Woken at once by a commit (`ring`), with polling as the authority (other processes'
  commits, retries coming due, lapsed leases of crashed processes).
- Claims are leases: on shutdown, attempts in flight are cancelled and their leases are
  released in a shielded cleanup, so the next start resumes them; after a crash the
  leases lapse and any process reclaims them. Delivery is at least once.
"""

from __future__ import annotations

import logging
import secrets
import time
from collections import Counter
from email.utils import parsedate_to_datetime

import httpx
import trio
from fgcpay import metrics
from fgcpay.clock import Clock
from fgcpay.domain import errors, webhooks
from fgcpay.domain.secret_box import SecretBox
from fgcpay.domain.times import iso_ms
from fgcpay.logs import log_event
from fgcpay.storage import Database, DatabaseUnavailable
from fgcpay.storage import webhooks as webhook_rows
from fgcpay.storage.webhooks import AttemptRecord, DeliveryJob

from . import destinations

LEASE_SECONDS = 60.0  # far beyond one attempt's 10 s deadline
POLL_SECONDS = 2.0
ERROR_BACKOFF_SECONDS = 1.0


class WebhookDispatcher:
    def __init__(
        self,
        db: Database,
        clock: Clock,
        box: SecretBox,
        *,
        allow_private: bool,
        senders: int = 32,
        poll_seconds: float = POLL_SECONDS,
        lease_seconds: float = LEASE_SECONDS,
        transport: httpx.AsyncBaseTransport | None = None,
        resolver: destinations.Resolver = destinations.system_resolve,
        per_endpoint: int | None = None,
        per_merchant: int | None = None,
    ) -> None:
        if lease_seconds < webhooks.MIN_LEASE_SECONDS:
            raise ValueError(
                f"the delivery lease ({lease_seconds} s) must be at least"
                f" {webhooks.MIN_LEASE_SECONDS} s, twice an attempt's"
                f" {webhooks.ATTEMPT_TIMEOUT_SECONDS} s deadline"
            )
        self.db = db
        self.clock = clock
        self.box = box
        self.allow_private = allow_private
        self.senders = senders
        self.poll_seconds = poll_seconds
        self.lease_us = int(lease_seconds * 1_000_000)
        self.owner = "dispatcher_" + secrets.token_hex(8)
        self._transport = transport
        # Looked up at every connection, so a test can stand in for DNS.
        self.resolver = resolver
        self.per_endpoint = per_endpoint or max(1, senders // 4)
        self.per_merchant = per_merchant or max(1, senders // 2)
        self._endpoint_busy: Counter[str] = Counter()
        self._merchant_busy: Counter[str] = Counter()
        self._busy = 0
        self._wake = trio.Event()
        self.attempts = 0  # attempts recorded by this process
        self._attempted = trio.Event()
        # The running client, for `send_once` (None while the dispatcher is not running).
        self._client: httpx.AsyncClient | None = None

    async def wait_for_attempts(self, count: int) -> None:
        """Return once this process has recorded `count` attempts (tests, benchmarks)."""
        while self.attempts < count:
            await self._attempted.wait()

    def ring(self) -> None:
        """Something was committed to the outbox: look now."""
        self._wake.set()

    async def run(self, *, task_status: trio.TaskStatus[None] = trio.TASK_STATUS_IGNORED) -> None:
        limits = httpx.Limits(max_connections=self.senders, max_keepalive_connections=self.senders)
        transport = self._transport or destinations.pinned_transport(
            self.allow_private, lambda host, port: self.resolver(host, port), limits
        )
        client = httpx.AsyncClient(
            timeout=webhooks.ATTEMPT_TIMEOUT_SECONDS,
            follow_redirects=False,
            transport=transport,
            trust_env=False,
            limits=limits,
        )
        self._client = client
        try:
            async with trio.open_nursery() as nursery:
                jobs_in, jobs_out = trio.open_memory_channel[DeliveryJob](0)
                for _ in range(self.senders):
                    nursery.start_soon(self._sender, jobs_out.clone(), client)
                task_status.started()
                await self._claim_loop(jobs_in)
        finally:
            with trio.CancelScope(shield=True):
                with trio.move_on_after(5):
                    try:
                        await self.db.write(webhook_rows.release_leases, self.owner)
                    except Exception as error:
                        log_event(
                            "could not release delivery leases",
                            logging.WARNING,
                            error=type(error).__name__,
                        )
                    self._client = None
                    await client.aclose()

    async def _claim_loop(self, jobs_in: trio.MemorySendChannel[DeliveryJob]) -> None:
        while True:
            self._wake = trio.Event()
            free = self.senders - self._busy
            claimed: list[DeliveryJob] = []
            passed_over = False
            try:
                if free > 0:
                    claimed, passed_over = await self.db.write(
                        webhook_rows.claim_due,
                        self.owner,
                        self.clock.now_us(),
                        self.lease_us,
                        free,
                        self._limits(),
                    )
                for job in claimed:
                    self._busy += 1
                    self._endpoint_busy[job.endpoint_id] += 1
                    self._merchant_busy[job.merchant_id] += 1
                    await jobs_in.send(job)
                if passed_over and len(claimed) < free:
                    continue  # the next claim leaves the endpoints now at their limit out
                wait = await self._idle_seconds(full=len(claimed) == free)
            except Exception as error:
                # An outage is expected and passes by itself (a warning); anything else is a bug.
                level = logging.WARNING if isinstance(error, DatabaseUnavailable) else logging.ERROR
                log_event("delivery claim failed", level, error_type=type(error).__name__)
                wait = ERROR_BACKOFF_SECONDS
            with trio.move_on_after(wait):
                await self._wake.wait()

    async def _idle_seconds(self, full: bool) -> float:
        if full:
            return self.poll_seconds  # more may be due: a freed sender rings the bell
        next_due = await self.db.read(webhook_rows.next_due, self._limits())
        if next_due is None:
            return self.poll_seconds
        return min(self.poll_seconds, max(0.0, (next_due - self.clock.now_us()) / 1_000_000))

    def _limits(self) -> webhooks.SenderLimits:
        return webhooks.SenderLimits(
            self.per_endpoint,
            self.per_merchant,
            dict(self._endpoint_busy),
            dict(self._merchant_busy),
        )

    def _done(self, job: DeliveryJob) -> None:
        self._busy -= 1
        for busy, key in (
            (self._endpoint_busy, job.endpoint_id),
            (self._merchant_busy, job.merchant_id),
        ):
            busy[key] -= 1
            if busy[key] <= 0:
                del busy[key]
        self._wake.set()

    async def _sender(
        self, jobs: trio.MemoryReceiveChannel[DeliveryJob], client: httpx.AsyncClient
    ) -> None:
        async with jobs:
            async for job in jobs:
                try:
                    await self._attempt(job, client)
                except Exception as error:  # a sender never dies of one delivery
                    log_event(
                        "delivery attempt crashed", logging.ERROR, error_type=type(error).__name__
                    )
                finally:
                    self._done(job)

    def _signing_secrets(self, job: DeliveryJob, now_us: int) -> list[str]:
        current = self.box.open(job.secret_sealed)
        if (
            job.previous_secret_sealed
            and job.previous_secret_expires_at is not None
            and job.previous_secret_expires_at > now_us
        ):
            return [self.box.open(job.previous_secret_sealed), current]
        return [current]

    async def send_once(
        self, url: str, event_id: str, body: str, signing_secrets: list[str]
    ) -> webhooks.DeliveryAttempt:
        """Sign and post `body` to `url` once, as an attempt of a delivery is sent (the
        same client, SSRF guard and deadline), recording nothing: a test event.

        Raises `errors.Unavailable` while the dispatcher is not running."""
        if self._client is None:
            raise errors.Unavailable("Webhook sending is not running.", retry_after_seconds=5)
        attempt, _ = await self._post(self._client, url, event_id, body, signing_secrets)
        return attempt

    async def _post(
        self,
        client: httpx.AsyncClient,
        url: str,
        event_id: str,
        text: str,
        signing_secrets: list[str],
    ) -> tuple[webhooks.DeliveryAttempt, int | None]:
        """One signed POST under the attempt's deadline: what came of it, and the
        answer's `Retry-After` (as a time) if it had one."""
        now = self.clock.now_us()
        body = text.encode("utf-8")
        headers = webhooks.signed_headers(event_id, body, now // 1_000_000, signing_secrets)
        status: int | None = None
        error: str | None = None
        answer: str | None = None
        retry_after: int | None = None
        started = time.perf_counter()
        timeout = f"timeout after {webhooks.ATTEMPT_TIMEOUT_SECONDS:g} s"
        # One deadline for everything, the answer's body included: httpx's timeout is per
        # read, so a receiver sending a byte a second would otherwise never time out.
        with trio.move_on_after(webhooks.ATTEMPT_TIMEOUT_SECONDS) as deadline:
            try:
                request = client.stream("POST", url, content=body, headers=headers)
                async with request as response:
                    status = response.status_code
                    answer = await _first_bytes(response, webhooks.RESPONSE_KEEP_BYTES)
                    retry_after = _retry_after(response, self.clock.now_us())
            except httpx.TimeoutException:
                status, error = None, timeout
            except httpx.ConnectError as failure:
                if isinstance(failure.__cause__, destinations.DestinationRefused):
                    error = f"destination refused: {failure.__cause__}"
                else:
                    error = f"{type(failure).__name__}: {str(failure)[:200]}"
            except httpx.HTTPError as failure:
                error = f"{type(failure).__name__}: {str(failure)[:200]}"
        if deadline.cancelled_caught:
            status, answer, retry_after, error = None, None, None, timeout
        latency_ms = int((time.perf_counter() - started) * 1000)
        attempt = webhooks.DeliveryAttempt(
            at=self.clock.now_us(),
            status_code=status,
            latency_ms=latency_ms,
            error=error,
            response_body=answer,
        )
        return attempt, retry_after

    async def _attempt(self, job: DeliveryJob, client: httpx.AsyncClient) -> None:
        secrets_now = self._signing_secrets(job, self.clock.now_us())
        sent, retry_after = await self._post(client, job.url, job.event_id, job.body, secrets_now)
        status, error, answer = sent.status_code, sent.error, sent.response_body
        latency_ms = sent.latency_ms
        finished = sent.at
        if status is not None and 200 <= status < 300:
            outcome, next_at = "succeeded", None
        else:
            if status is not None and status not in (429, 503):
                retry_after = None
            delay = webhooks.retry_delay(job.attempts + 1, retry_after)
            if delay is None:
                outcome, next_at = "failed", None
            else:
                outcome, next_at = "pending", finished + int(delay * 1_000_000)
        kept = await self.db.write(
            webhook_rows.record_attempt,
            self.owner,
            AttemptRecord(
                delivery_id=job.delivery_id,
                attempted_at=finished,
                response_status=status,
                latency_ms=latency_ms,
                error=error,
                response_body=answer,
                outcome=outcome,
                next_attempt_at=next_at,
            ),
        )
        if kept:
            metrics.delivery_attempt(outcome)
        if not kept:
            log_event(
                "delivery lease lapsed during an attempt",
                logging.WARNING,
                delivery_id=job.delivery_id,
            )
        elif outcome != "succeeded":
            # What an operator needs to follow a failing receiver; never the body sent or
            # answered, never the URL (it may carry a token) or a secret.
            log_event(
                "webhook delivery attempt failed",
                logging.WARNING,
                event_id=job.event_id,
                endpoint_id=job.endpoint_id,
                delivery_id=job.delivery_id,
                attempt=job.attempts + 1,
                status_code=status,
                error=error,
                next_attempt_at=None if next_at is None else iso_ms(next_at),
            )
        self.attempts += 1
        self._attempted.set()
        self._attempted = trio.Event()


async def _first_bytes(response: httpx.Response, limit: int) -> str:
    kept = b""
    async for chunk in response.aiter_raw():
        kept += chunk[: limit - len(kept)]
        if len(kept) >= limit:
            break
    return kept.decode("utf-8", errors="replace")


def _retry_after(response: httpx.Response, now_us: int) -> int | None:
    """Seconds the receiver asks us to wait: a number, or an HTTP date read against the
    service's clock (`now_us`), never the host's."""
    raw = response.headers.get("Retry-After")
    if not raw:
        return None
    raw = raw.strip()
    if raw.isdigit():
        return int(raw)
    try:
        when = parsedate_to_datetime(raw)
    except (TypeError, ValueError):
        return None
    return max(0, int(when.timestamp() - now_us / 1_000_000))
