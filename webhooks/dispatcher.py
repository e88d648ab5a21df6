"""The supervised delivery nursery: claims due deliveries from the outbox in batches, sends
each with a fresh signature, records the attempts in batches, and schedules retries.

- Claims: one write claims a batch (`claim_due`; on PostgreSQL one statement, with the
  bodies and secrets). Claims run a round ahead of the senders (`_slots.py`), so a
  sender that finishes takes its endpoint's next delivery at once, while the claims
  refill in the background. No claim waits for a batch to fill: a commit rings the
  dispatcher and the claim goes at once.
- Fairness: never more than `per_endpoint` attempts at once to one endpoint or
  `per_merchant` for one merchant (and `AHEAD` times that claimed), so a slow receiver
  holds its own slots only; the senders go to the other endpoints' deliveries, endpoints
  taking turns.
- Senders post through the `WebhookClient` (`client.py`): connections kept alive per
  destination, one deadline per attempt (10 s: resolve, connect, send, read the answer),
  well inside the claim's lease, no redirects, the SSRF guard on every new connection.
- Results: the recorder writes every attempt finished meanwhile in one write
  (`record_attempts`: a row per attempt, one statement per table), so a backlog costs a
  few statements per batch rather than per delivery. A delivery stays leased to this
  process until its attempt is recorded; `_recorded` is the one place an attempt's
  outcome is known.
- Woken at once by a commit (`ring`), with polling as the authority (other processes'
  commits, retries coming due, lapsed leases of crashed processes).
- Supervised (`fgcpay.core.supervision`): a claim or a record that fails is retried after a
  backoff growing to half a minute; past their budget the loops `webhook claims` and
  `webhook records` escalate (one ERROR line, `/readyz` 503, a metric), retry quietly,
  and recover at their first write that goes through.
- Claims are leases: on shutdown, attempts in flight are cancelled, the finished ones
  recorded and the other leases released in a shielded cleanup, so the next start
  resumes them; an attempt that crashed or went unrecorded gives its lease back at once
  (claimed again a second later); after a process's crash its leases lapse and any
  process reclaims them. Delivery is at least once, and a delivery is never sent by two
  processes at once.
- Fault injection (an endpoint's `faults`; `domain/faults.py`): a delivery's faults were
  decided when it was created (`DeliveryJob.plan`) and apply to its first attempt only.
  A delay was already served in the outbox (it fell due later); a reorder is held here
  (`_hold`) without a sender or a slot, until the next delivery to its endpoint has been
  sent or 2 s pass, still leased (a crash or a shutdown leaves it to be sent again); a
  bad signature or a stale timestamp is in how the attempt is signed; a duplicate is a
  second send right after the first, logged as an attempt of its own. A job without a
  plan takes none of these paths.
"""

from __future__ import annotations

import logging
import math
import secrets
import ssl
import time
from email.utils import parsedate_to_datetime

import attrs
import trio
from fgcpay.core import metrics
from fgcpay.core.clock import Clock
from fgcpay.core.logs import log_event
from fgcpay.core.supervision import Supervisor
from fgcpay.domain import errors
from fgcpay.domain.deliveries import (
    ATTEMPT_TIMEOUT_SECONDS,
    MIN_LEASE_SECONDS,
    DeliveryAttempt,
    retry_delay,
)
from fgcpay.domain.faults import REORDER_HOLD_SECONDS, STALE_SECONDS, FaultPlan
from fgcpay.domain.secret_box import SecretBox
from fgcpay.domain.signing import new_secret, signed_headers
from fgcpay.domain.times import iso_ms
from fgcpay.storage import Database
from fgcpay.storage import webhooks as webhook_rows
from fgcpay.storage.webhooks import AttemptRecord, DeliveryJob

from . import destinations
from ._slots import AHEAD, Slots
from .client import SendFailed, WebhookClient

LEASE_SECONDS = 60.0  # far beyond one attempt's 10 s deadline
RELEASED_RETRY_SECONDS = 1.0
"""A delivery whose attempt crashed or went unrecorded is claimed again this much later
(its lease given back), rather than after the lease lapses."""
POLL_SECONDS = 2.0
LOOK_PAST_SECONDS = 0.1
"""While claims pass rows over for a limit (an endpoint with a backlog at its limit), how
often a claim also looks past those rows for other endpoints' (which costs a scan of the
backlog); a commit in this process looks at once."""
BUSY_RETRY_SECONDS = 0.01
"""The wait when deliveries are due but none could be claimed (another process holds
them for the moment)."""


@attrs.frozen
class _Finished:
    job: DeliveryJob
    record: AttemptRecord


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
        resolver: destinations.Resolver = destinations.system_resolve,
        per_endpoint: int | None = None,
        per_merchant: int | None = None,
        per_destination: int | None = None,
        tls: ssl.SSLContext | None = None,
        supervisor: Supervisor | None = None,
    ) -> None:
        if lease_seconds < MIN_LEASE_SECONDS:
            raise ValueError(
                f"the delivery lease ({lease_seconds} s) must be at least"
                f" {MIN_LEASE_SECONDS} s, twice an attempt's"
                f" {ATTEMPT_TIMEOUT_SECONDS} s deadline"
            )
        self.db = db
        self.clock = clock
        self.box = box
        self.allow_private = allow_private
        self.senders = senders
        self.poll_seconds = poll_seconds
        self.lease_us = int(lease_seconds * 1_000_000)
        self.owner = "dispatcher_" + secrets.token_hex(8)
        # Looked up at every new connection, so a test can stand in for DNS.
        self.resolver = resolver
        self.per_endpoint = per_endpoint or max(1, senders // 4)
        self.per_merchant = per_merchant or max(1, senders // 2)
        # Connections (attempts) at once to one origin, whichever endpoints share it.
        self.per_destination = per_destination or self.per_endpoint
        self._tls = tls
        self._slots = Slots(senders, self.per_endpoint, self.per_merchant)
        # Claimed and not yet recorded, at most: finished attempts wait for the recorder.
        self.max_unsettled = (AHEAD + 1) * senders
        self._unsettled = 0
        self._jobs: trio.MemorySendChannel[DeliveryJob] | None = None
        self._nursery: trio.Nursery | None = None
        # Per endpoint, the delivery held back by a `reorder` fault: set once the next
        # delivery to that endpoint has been sent.
        self._held: dict[str, trio.Event] = {}
        self._finished: list[_Finished] = []
        self._finished_ready = trio.Event()
        self._wake = trio.Event()
        self._rung = True
        self._look_at = -math.inf  # trio time of the next full look (see _claim_loop)
        self._retry_at = math.inf  # the soonest retry recorded since the last look read
        self._sleep: trio.CancelScope | None = None
        self.attempts = 0  # attempts recorded by this process
        self._attempted = trio.Event()
        # The running client, for `send_once` (None while the dispatcher is not running).
        self.client: WebhookClient | None = None
        supervisor = supervisor or Supervisor()
        self._claims = supervisor.loop("webhook claims")
        self._records = supervisor.loop("webhook records")

    async def wait_for_attempts(self, count: int) -> None:
        """Return once this process has recorded `count` attempts (tests, benchmarks)."""
        while self.attempts < count:
            await self._attempted.wait()

    def ring(self) -> None:
        """Something was committed to the outbox: look now."""
        self._rung = True
        self._wake.set()

    async def run(self, *, task_status: trio.TaskStatus[None] = trio.TASK_STATUS_IGNORED) -> None:
        client = WebhookClient(
            self.allow_private,
            lambda host, port: self.resolver(host, port),
            tls=self._tls,
            per_destination=self.per_destination,
        )
        self.client = client
        try:
            async with trio.open_nursery() as nursery:
                self._nursery = nursery
                # Holds only deliveries with a sending slot: never more than the senders.
                self._jobs, jobs_out = trio.open_memory_channel[DeliveryJob](self.senders)
                for _ in range(self.senders):
                    nursery.start_soon(self._sender, jobs_out.clone())
                nursery.start_soon(self._recorder)
                task_status.started()
                await self._claim_loop()
        finally:
            self.client = None
            client.close_idle()
            with trio.CancelScope(shield=True):
                with trio.move_on_after(5):
                    # Answered but not yet recorded: recorded now, not sent again later.
                    failure = await self._record_finished()
                    if failure is not None:
                        self._records.failed(failure)
                    try:
                        await self.db.write(webhook_rows.release_leases, self.owner)
                    except Exception as error:
                        log_event(
                            "could not release delivery leases",
                            logging.WARNING,
                            error=type(error).__name__,
                        )

    # -- claims ---------------------------------------------------------------------------

    async def _claim_loop(self) -> None:
        """Claim whenever a sender is free or something was committed. A claim takes the
        oldest due rows its window holds; when rows there were passed over (an endpoint
        or a merchant at its limit), the rows past them may be other endpoints': a *look*
        claims once more (the endpoints now full left out in SQL) and reads when the next
        delivery falls due. A look is made when rung, when that time comes, and at most
        every LOOK_PAST_SECONDS while rows are passed over, since with a large backlog
        of one endpoint it scans the backlog."""
        while True:
            self._wake = trio.Event()
            now = trio.current_time()
            look = self._rung or now >= min(self._look_at, self._retry_at)
            self._rung = False
            try:
                claimed, passed_over = await self._claim(refill_only=not look)
                if look:
                    if passed_over:
                        more, passed_over = await self._claim()
                        claimed += more
                    # What is recorded from here on may come due before what this reads.
                    self._retry_at = math.inf
                    self._look_at = now + await self._idle_seconds(claimed)
                elif passed_over:
                    self._look_at = min(self._look_at, now + LOOK_PAST_SECONDS)
            except Exception as error:  # trio.Cancelled is no Exception: it passes
                await trio.sleep(self._claims.failed(error))
                self._rung = True  # look again in full
                continue
            self._claims.succeeded()
            if self.client is not None:
                self.client.sweep()  # at least every poll: idle connections close in seconds
            with trio.move_on_at(min(self._look_at, self._retry_at)) as self._sleep:
                await self._wake.wait()
            self._sleep = None

    async def _claim(self, refill_only: bool = False) -> tuple[list[DeliveryJob], bool]:
        """Claim what the senders can take in a round ahead (`refill_only`: see
        `Slots.room`); whether rows were passed over with room left (see `claim_due`)."""
        room = min(self._slots.room(refill_only), self.max_unsettled - self._unsettled)
        if room <= 0:
            return [], False
        now_us = self.clock.now_us()
        limits = self._slots.limits()
        claimed, passed_over = await self.db.write(
            webhook_rows.claim_due, self.owner, now_us, self.lease_us, room, limits
        )
        self._unsettled += len(claimed)
        self._slots.add(claimed, now_us + self.lease_us, limits, room, passed_over)
        self._start_ready()
        return claimed, passed_over and len(claimed) < room

    async def _idle_seconds(self, claimed: list[DeliveryJob]) -> float:
        if self._slots.full() or self._unsettled >= self.max_unsettled:
            return self.poll_seconds  # more may be due: a freed sender wakes the loop
        next_due = await self.db.read(webhook_rows.next_due, self._slots.limits(), self.owner)
        if next_due is None:
            return self.poll_seconds
        wait = min(self.poll_seconds, max(0.0, (next_due - self.clock.now_us()) / 1_000_000))
        # Due now, yet nothing to claim: another process holds those rows for a moment.
        return max(wait, BUSY_RETRY_SECONDS) if not claimed else wait

    def _due_at(self, at_us: int) -> None:
        """Look again when a delivery this process recorded falls due at `at_us` (service
        time)."""
        when = trio.current_time() + max(0.0, (at_us - self.clock.now_us()) / 1_000_000)
        self._retry_at = min(self._retry_at, when)
        if self._sleep is not None:
            self._sleep.deadline = min(self._sleep.deadline, when)

    # -- sending --------------------------------------------------------------------------

    def _start_ready(self) -> None:
        """Hand the senders every claimed delivery that has a slot now."""
        assert self._jobs is not None
        start, dropped = self._slots.ready(self.clock.now_us())
        for job in dropped:
            # Waited too long (behind a slow endpoint, under a short lease).
            log_event(
                "delivery left for its lease to lapse", logging.WARNING, delivery_id=job.delivery_id
            )
            self._settle(job)
        for job in start:
            try:
                self._jobs.send_nowait(job)
            except (trio.BrokenResourceError, trio.ClosedResourceError):
                return  # the senders are gone: shutting down, the leases are released

    async def _sender(self, jobs: trio.MemoryReceiveChannel[DeliveryJob]) -> None:
        async with jobs:
            async for job in jobs:
                if (
                    job.plan is not None
                    and job.plan.reorder
                    and job.attempts == 0
                    and job.endpoint_id not in self._held
                ):
                    self._hold(job)
                else:
                    await self._send(job)

    async def _send(self, job: DeliveryJob, *, reordered: bool = False) -> None:
        """Attempt `job` and hand its outcome to the recorder; `reordered`: it was held
        back (its slots were freed when it was)."""
        # Held back before this attempt started: released once it has been sent.
        held = self._held.get(job.endpoint_id) if self._held and not reordered else None
        finished: _Finished | None = None
        try:
            finished = await self._attempt(job, reordered)
        except Exception as error:  # a sender never dies of one delivery
            log_event("delivery attempt crashed", logging.ERROR, error_type=type(error).__name__)
        finally:
            if not reordered:
                self._answered(job)
            if held is not None and self._held.get(job.endpoint_id) is held:
                del self._held[job.endpoint_id]
                held.set()
        if finished is None:
            await self._release([job])  # nothing to record: claimed again shortly
            self._settle(job)
        else:
            self._finished.append(finished)
            self._finished_ready.set()

    def _hold(self, job: DeliveryJob) -> None:
        """A `reorder` fault: hold the delivery back until the next delivery to its
        endpoint has been sent (or REORDER_HOLD_SECONDS pass), its sender and slots free
        meanwhile. One that comes while this one is held is sent at once, and this one
        follows it. The lease stays: a crash or a shutdown meanwhile leaves it pending."""
        assert self._nursery is not None
        release = self._held[job.endpoint_id] = trio.Event()
        self._answered(job)
        self._nursery.start_soon(self._send_held, job, release)

    async def _send_held(self, job: DeliveryJob, release: trio.Event) -> None:
        with trio.move_on_after(REORDER_HOLD_SECONDS):
            await release.wait()
        if self._held.get(job.endpoint_id) is release:
            del self._held[job.endpoint_id]
        await self._send(job, reordered=True)

    def _answered(self, job: DeliveryJob) -> None:
        """The attempt's sending is over: its slots go to the next claimed delivery, and
        the claims refill when `Slots.answered` says so."""
        refill = self._slots.answered(job)
        self._start_ready()
        if refill:
            self._wake.set()

    def _settle(self, job: DeliveryJob) -> None:
        self._unsettled -= 1
        if self._unsettled == self.max_unsettled - 1:
            self._wake.set()  # the claims had stopped for the recorder to catch up

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
    ) -> DeliveryAttempt:
        """Sign and post `body` to `url` once, as an attempt of a delivery is sent (the
        same client, SSRF guard and deadline), recording nothing: a test event.

        Raises `errors.Unavailable` while the dispatcher is not running."""
        if self.client is None:
            raise errors.Unavailable("Webhook sending is not running.", retry_after_seconds=5)
        attempt, _ = await self._post(self.client, url, event_id, body, signing_secrets)
        return attempt

    async def _post(
        self,
        client: WebhookClient,
        url: str,
        event_id: str,
        text: str,
        signing_secrets: list[str],
        plan: FaultPlan | None = None,
    ) -> tuple[DeliveryAttempt, int | None]:
        """One POST signed now, under the attempt's deadline: what came of it, and the
        answer's `Retry-After` (as seconds) if it had one. `plan`: the injected faults
        of its signing (a wrong secret, or a timestamp STALE_SECONDS old)."""
        now = self.clock.now_us()
        body = text.encode("utf-8")
        stamp = now // 1_000_000
        if plan is not None:
            if plan.bad_signature:
                # A secret nobody has, in both header families.
                signing_secrets = [new_secret()]
            elif plan.stale_timestamp:
                stamp -= STALE_SECONDS
        headers = signed_headers(event_id, body, stamp, signing_secrets)
        status: int | None = None
        error: str | None = None
        answer: str | None = None
        retry_after: int | None = None
        started = time.perf_counter()
        try:
            sent = await client.post(url, headers.items(), body)
        except SendFailed as failure:
            error = str(failure)
        else:
            status = sent.status
            answer = sent.body.decode("utf-8", errors="replace")
            retry_after = _retry_after(sent.header(b"retry-after"), self.clock.now_us())
        latency_ms = int((time.perf_counter() - started) * 1000)
        attempt = DeliveryAttempt(
            at=self.clock.now_us(),
            status_code=status,
            latency_ms=latency_ms,
            error=error,
            response_body=answer,
        )
        return attempt, retry_after

    async def _attempt(self, job: DeliveryJob, reordered: bool = False) -> _Finished:
        assert self.client is not None
        client = self.client
        secrets_now = self._signing_secrets(job, self.clock.now_us())
        plan = job.plan if job.attempts == 0 else None  # retries go clean
        sent, retry_after = await self._post(
            client, job.url, job.event_id, job.body, secrets_now, plan
        )
        injected: str | None = None
        also: tuple[DeliveryAttempt, ...] = ()
        if plan is not None:
            injected = plan.injected(reordered)
            if plan.duplicate:
                # The same delivery again, signed afresh; the first attempt's answer
                # alone settles the delivery.
                secrets_now = self._signing_secrets(job, self.clock.now_us())
                again, _ = await self._post(client, job.url, job.event_id, job.body, secrets_now)
                # Logged after the first even when the clock has not moved (oldest first).
                also = (attrs.evolve(again, at=max(again.at, sent.at + 1), injected="duplicate"),)
        status = sent.status_code
        if status is not None and 200 <= status < 300:
            outcome, next_at = "succeeded", None
        else:
            if status is not None and status not in (429, 503):
                retry_after = None
            delay = retry_delay(job.attempts + 1, retry_after)
            if delay is None:
                outcome, next_at = "failed", None
            else:
                outcome, next_at = "pending", sent.at + int(delay * 1_000_000)
        record = AttemptRecord(
            delivery_id=job.delivery_id,
            attempted_at=sent.at,
            response_status=status,
            latency_ms=sent.latency_ms,
            error=sent.error,
            response_body=sent.response_body,
            outcome=outcome,
            next_attempt_at=next_at,
            injected=injected,
            also=also,
        )
        return _Finished(job, record)

    # -- results --------------------------------------------------------------------------

    async def _recorder(self) -> None:
        while True:
            await self._finished_ready.wait()
            self._finished_ready = trio.Event()
            failure = await self._record_finished()
            if failure is not None:
                # The write failed: wait before the next, whatever finishes meanwhile.
                await trio.sleep(self._records.failed(failure))

    async def _record_finished(self) -> Exception | None:
        """Record every attempt finished so far, in one write; why it failed, if it did."""
        batch, self._finished = self._finished, []
        if not batch:
            return None
        failure: Exception | None = None
        kept: list[bool | None]
        try:
            kept = list(
                await self.db.write(
                    webhook_rows.record_attempts, self.owner, [f.record for f in batch]
                )
            )
        except Exception as error:
            # Their leases are given back and the deliveries sent again (at least once).
            failure = error
            kept = [None] * len(batch)
            await self._release([finished.job for finished in batch])
        else:
            self._records.succeeded()
        for finished, recorded in zip(batch, kept, strict=True):
            self._recorded(finished.job, finished.record, recorded)
        return failure

    async def _release(self, jobs: list[DeliveryJob]) -> None:
        """Give back the leases of deliveries whose attempt crashed or went unrecorded, so
        they are claimed again after RELEASED_RETRY_SECONDS rather than after the lease
        (which this process would not even look for). Shielded, so that a cancellation
        meanwhile still releases them; if the database cannot take it, they lapse."""
        retry_at = self.clock.now_us() + int(RELEASED_RETRY_SECONDS * 1_000_000)
        ids = [job.delivery_id for job in jobs]
        with trio.move_on_after(5, shield=True):
            try:
                await self.db.write(webhook_rows.release_deliveries, self.owner, ids, retry_at)
            except Exception as error:
                log_event(
                    "could not release deliveries; their leases lapse",
                    logging.WARNING,
                    error_type=type(error).__name__,
                    deliveries=len(ids),
                )
                return
            self._due_at(retry_at)

    def _recorded(self, job: DeliveryJob, record: AttemptRecord, kept: bool | None) -> None:
        """The one place an attempt's outcome is known, once its write is over: `kept`
        True when recorded, False when the lease had lapsed meanwhile (another process
        may hold the delivery now), None when the write failed."""
        if kept:
            metrics.delivery_attempt(record.outcome)
        if kept is False:
            log_event(
                "delivery lease lapsed during an attempt",
                logging.WARNING,
                delivery_id=job.delivery_id,
            )
        elif kept and record.outcome != "succeeded":
            # What an operator needs to follow a failing receiver; never the body sent or
            # answered, never the URL (it may carry a token) or a secret.
            next_at = record.next_attempt_at
            log_event(
                "webhook delivery attempt failed",
                logging.WARNING,
                event_id=job.event_id,
                endpoint_id=job.endpoint_id,
                delivery_id=job.delivery_id,
                attempt=job.attempts + 1,
                status_code=record.response_status,
                error=record.error,
                next_attempt_at=None if next_at is None else iso_ms(next_at),
            )
            if next_at is not None:
                self._due_at(next_at)
        self._settle(job)
        if kept is not None:
            self.attempts += 1
            self._attempted.set()
            self._attempted = trio.Event()


def _retry_after(raw: str | None, now_us: int) -> int | None:
    """Seconds the receiver asks us to wait: a number, or an HTTP date read against the
    service's clock (`now_us`), never the host's."""
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
