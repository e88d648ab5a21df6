"""The dispatcher's bookkeeping of claimed deliveries: how much a claim may take, which
claimed delivery may be sent now, and which endpoints have a backlog. Plain state, no I/O.

- At most `per_endpoint` attempts at once to one endpoint and `per_merchant` for one
  merchant, `senders` in all: a slow receiver holds its own slots only.
- Claims run ahead of the senders: up to `AHEAD` times the limits are claimed (the limits
  themselves sending, the rest waiting), so a freed slot takes its endpoint's next
  delivery at once, not after a claim's commit, and a backlog is claimed a round at a
  time. Endpoints with deliveries waiting take turns for free senders.
- Order: the events of one resource go to one endpoint one at a time, in the order
  claimed (oldest due first): one waits while an earlier one of the same resource is being
  sent, so an approval's `subscription.activated` arrives before its first
  `subscription.charged` (contract, "Webhooks"). Deliveries of other resources pass it.
"""

from __future__ import annotations

from collections import Counter, deque

import attrs
from fgcpay.domain.deliveries import ATTEMPT_TIMEOUT_SECONDS, SenderLimits
from fgcpay.storage.webhooks import DeliveryJob

AHEAD = 3
START_MARGIN_US = int((ATTEMPT_TIMEOUT_SECONDS + 5) * 1_000_000)
"""A claimed delivery starts only while its lease outlasts an attempt and its recording by
this much; else it is left to lapse and be claimed again (never sent by two at once)."""


@attrs.define
class _Counts:
    """Deliveries in one state: in all, per endpoint and per merchant."""

    total: int = 0
    endpoints: Counter[str] = attrs.field(factory=Counter)
    merchants: Counter[str] = attrs.field(factory=Counter)

    def add(self, job: DeliveryJob) -> None:
        self.total += 1
        self.endpoints[job.endpoint_id] += 1
        self.merchants[job.merchant_id] += 1

    def remove(self, job: DeliveryJob) -> None:
        self.total -= 1
        for counts, key in ((self.endpoints, job.endpoint_id), (self.merchants, job.merchant_id)):
            counts[key] -= 1
            if counts[key] <= 0:
                del counts[key]


@attrs.frozen
class _Claimed:
    job: DeliveryJob
    lease_until: int  # service time, µs


@attrs.define
class Slots:
    senders: int
    per_endpoint: int
    per_merchant: int
    claimed: _Counts = attrs.field(factory=_Counts)  # waiting or sending
    sending: _Counts = attrs.field(factory=_Counts)
    _waiting: dict[str, deque[_Claimed]] = attrs.field(factory=dict)  # per endpoint
    # Endpoints whose last claim took all it had room for: more of theirs is likely due.
    _backlogged: set[str] = attrs.field(factory=set)
    # (endpoint, resource) of each delivery being sent.
    _in_flight: Counter[tuple[str, str]] = attrs.field(factory=Counter)

    def room(self, refill_only: bool) -> int:
        """How many deliveries a claim may take; `refill_only`: no more than the backlogged
        endpoints have room for (so that a claim's window, twice that, holds little else)."""
        room = AHEAD * self.senders - self.claimed.total
        if refill_only:
            full = AHEAD * self.per_endpoint
            room = min(room, sum(full - self.claimed.endpoints[e] for e in self._backlogged))
        return room

    def full(self) -> bool:
        return self.claimed.total >= AHEAD * self.senders

    def limits(self) -> SenderLimits:
        """What a claim may take: the limits, a round ahead, less what is claimed."""
        return SenderLimits(
            AHEAD * self.per_endpoint,
            AHEAD * self.per_merchant,
            dict(self.claimed.endpoints),
            dict(self.claimed.merchants),
        )

    def add(
        self,
        jobs: list[DeliveryJob],
        lease_until: int,
        limits: SenderLimits,
        room: int,
        passed_over: bool,
    ) -> None:
        """A claim's jobs, claimed with `limits` and `room`. An endpoint that got all it
        had room for (or some, from a claim cut short by its room) likely has more due; one
        that got less has none left, and so has every other with room once nothing due was
        left out (not `passed_over`)."""
        for job in jobs:
            self.claimed.add(job)
            self._waiting.setdefault(job.endpoint_id, deque()).append(_Claimed(job, lease_until))
        taken = Counter(job.endpoint_id for job in jobs)
        cut = len(jobs) >= room
        everything = not passed_over and not cut
        for endpoint_id in taken.keys() | self._backlogged:
            had_room = limits.per_endpoint - limits.endpoints.get(endpoint_id, 0)
            if taken[endpoint_id] >= had_room or (cut and taken[endpoint_id]):
                self._backlogged.add(endpoint_id)
            elif taken[endpoint_id] or everything:
                self._backlogged.discard(endpoint_id)

    def ready(self, now_us: int) -> tuple[list[DeliveryJob], list[DeliveryJob]]:
        """The claimed deliveries to send now, counted as sending (a sender free, and
        fewer than the limits at once to the endpoint and the merchant; endpoints take
        turns, one served going to the back; a delivery waits while an earlier one of its
        resource is sent to the endpoint or waits), and those dropped as their lease is
        too near its end (`START_MARGIN_US`)."""
        start: list[DeliveryJob] = []
        dropped: list[DeliveryJob] = []
        for endpoint_id in list(self._waiting):
            if self.sending.total >= self.senders:
                break
            waiting = self._waiting.pop(endpoint_id)
            left: deque[_Claimed] = deque()
            held: set[str] = set()  # resources with an earlier delivery still waiting here
            while waiting and self._may_send(waiting[0].job):
                claimed = waiting.popleft()
                resource = claimed.job.resource_id
                if resource and (resource in held or self._in_flight[endpoint_id, resource]):
                    held.add(resource)
                    left.append(claimed)
                    continue
                if claimed.lease_until - now_us < START_MARGIN_US:
                    self.claimed.remove(claimed.job)
                    dropped.append(claimed.job)
                    continue
                self.sending.add(claimed.job)
                if resource:
                    self._in_flight[endpoint_id, resource] += 1
                start.append(claimed.job)
            left.extend(waiting)
            if left:
                self._waiting[endpoint_id] = left
        return start, dropped

    def _may_send(self, job: DeliveryJob) -> bool:
        return (
            self.sending.total < self.senders
            and self.sending.endpoints[job.endpoint_id] < self.per_endpoint
            and self.sending.merchants[job.merchant_id] < self.per_merchant
        )

    def answered(self, job: DeliveryJob) -> bool:
        """The attempt's sending is over; whether the claims should refill: a backlogged
        endpoint has less than a round waiting (a claim of a round, not one per delivery),
        or the claims had stopped at the senders' limit."""
        self.sending.remove(job)
        self.claimed.remove(job)
        if job.resource_id:
            key = (job.endpoint_id, job.resource_id)
            self._in_flight[key] -= 1
            if self._in_flight[key] <= 0:
                del self._in_flight[key]
        waiting = len(self._waiting.get(job.endpoint_id, ()))
        return (
            job.endpoint_id in self._backlogged and waiting < self.per_endpoint
        ) or self.claimed.total == AHEAD * self.senders - 1
