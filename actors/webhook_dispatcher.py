"""The supervised delivery nursery: claims due deliveries from the outbox, sends each with
a fresh signature, records the attempt, and schedules retries.

- A bounded pool of senders; the dispatcher never claims more than it has free senders.
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
from email.utils import parsedate_to_datetime

import httpx
import trio
from fgcpay.clock import Clock
from fgcpay.domain import webhooks
from fgcpay.domain.secret_box import SecretBox
from fgcpay.logs import log_event
from fgcpay.storage import Storage
from fgcpay.storage.webhooks import AttemptRecord, DeliveryJob

from . import destinations

LEASE_SECONDS = 60.0  # far beyond one attempt's 10 s timeout
POLL_SECONDS = 2.0
ERROR_BACKOFF_SECONDS = 1.0


class WebhookDispatcher:
    def __init__(
        self,
        storage: Storage,
        clock: Clock,
        box: SecretBox,
        *,
        allow_private: bool,
        senders: int = 32,
        poll_seconds: float = POLL_SECONDS,
        lease_seconds: float = LEASE_SECONDS,
        transport: httpx.AsyncBaseTransport | None = None,
    ) -> None:
        self.storage = storage
        self.clock = clock
        self.box = box
        self.allow_private = allow_private
        self.senders = senders
        self.poll_seconds = poll_seconds
        self.lease_us = int(lease_seconds * 1_000_000)
        self.owner = "dispatcher_" + secrets.token_hex(8)
        self._transport = transport
        self._busy = 0
        self._wake = trio.Event()
        self.attempts = 0  # attempts recorded by this process
        self._attempted = trio.Event()

    async def wait_for_attempts(self, count: int) -> None:
        """Return once this process has recorded `count` attempts (tests, benchmarks)."""
        while self.attempts < count:
            await self._attempted.wait()

    def ring(self) -> None:
        """Something was committed to the outbox: look now."""
        self._wake.set()

    async def run(self, *, task_status: trio.TaskStatus[None] = trio.TASK_STATUS_IGNORED) -> None:
        client = httpx.AsyncClient(
            timeout=webhooks.ATTEMPT_TIMEOUT_SECONDS,
            follow_redirects=False,
            transport=self._transport,
            limits=httpx.Limits(max_connections=self.senders, max_keepalive_connections=self.senders),
        )
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
                        await self.storage.release_delivery_leases(self.owner)
                    except Exception as error:
                        log_event("could not release delivery leases", logging.WARNING, error=type(error).__name__)
                    await client.aclose()

    async def _claim_loop(self, jobs_in: trio.MemorySendChannel[DeliveryJob]) -> None:
        while True:
            self._wake = trio.Event()
            free = self.senders - self._busy
            claimed: list[DeliveryJob] = []
            try:
                if free > 0:
                    claimed = await self.storage.claim_deliveries(
                        self.owner, self.clock.now_us(), self.lease_us, free
                    )
                for job in claimed:
                    self._busy += 1
                    await jobs_in.send(job)
                wait = await self._idle_seconds(full=len(claimed) == free)
            except Exception as error:
                log_event("delivery claim failed", logging.ERROR, error_type=type(error).__name__)
                wait = ERROR_BACKOFF_SECONDS
            with trio.move_on_after(wait):
                await self._wake.wait()

    async def _idle_seconds(self, full: bool) -> float:
        if full:
            return self.poll_seconds  # more may be due: a freed sender rings the bell
        next_due = await self.storage.next_delivery_due()
        if next_due is None:
            return self.poll_seconds
        return min(self.poll_seconds, max(0.0, (next_due - self.clock.now_us()) / 1_000_000))

    async def _sender(self, jobs: trio.MemoryReceiveChannel[DeliveryJob], client: httpx.AsyncClient) -> None:
        async with jobs:
            async for job in jobs:
                try:
                    await self._attempt(job, client)
                except Exception as error:  # a sender never dies of one delivery
                    log_event("delivery attempt crashed", logging.ERROR, error_type=type(error).__name__)
                finally:
                    self._busy -= 1
                    self._wake.set()

    def _signing_secrets(self, job: DeliveryJob, now_us: int) -> list[str]:
        current = self.box.open(job.secret_sealed)
        if (
            job.previous_secret_sealed
            and job.previous_secret_expires_at is not None
            and job.previous_secret_expires_at > now_us
        ):
            return [self.box.open(job.previous_secret_sealed), current]
        return [current]

    async def _attempt(self, job: DeliveryJob, client: httpx.AsyncClient) -> None:
        now = self.clock.now_us()
        body = job.body.encode("utf-8")
        headers = webhooks.signed_headers(job.event_id, body, now // 1_000_000, self._signing_secrets(job, now))
        status: int | None = None
        error: str | None = None
        answer: str | None = None
        retry_after: int | None = None
        started = time.perf_counter()
        refused = await destinations.refusal(job.url, self.allow_private)
        if refused:
            error = f"destination refused: {refused}"
        else:
            try:
                async with client.stream("POST", job.url, content=body, headers=headers) as response:
                    status = response.status_code
                    answer = await _first_bytes(response, webhooks.RESPONSE_KEEP_BYTES)
                    retry_after = _retry_after(response)
            except httpx.TimeoutException:
                error = "timeout after 10 s"
            except httpx.HTTPError as failure:
                error = f"{type(failure).__name__}: {str(failure)[:200]}"
        latency_ms = int((time.perf_counter() - started) * 1000)
        finished = self.clock.now_us()
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
        kept = await self.storage.record_delivery_attempt(
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
        if not kept:
            log_event("delivery lease lapsed during an attempt", logging.WARNING, delivery_id=job.delivery_id)
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


def _retry_after(response: httpx.Response) -> int | None:
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
    return max(0, int(when.timestamp() - time.time()))
