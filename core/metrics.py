"""Prometheus metrics: what each process counts, how the worker processes of one host add
up, and the text `GET /metrics` answers (docs/operations.md lists every metric).

Until a service starts in the process (`activate`, called by `open_service`), values are
kept in memory, whatever the environment says: an operator command records nothing
anyone reads. A service's process then records in memory when it is alone (`fgcpay
serve`, `hypercorn --workers 0`, the tests), or in prometheus-client's multiprocess files
(one file per metric type and process id, added up at scrape time by whichever worker
answers) when it is one of several: when `PROMETHEUS_MULTIPROC_DIR` names a directory, or
when a `multiprocessing` parent started it (`fgcpay serve --workers N`'s supervisor,
hypercorn's master). `fgcpay.core.metrics_files` finds the directory and keeps it clean.

The gauges of a process (live actors, mailboxes, connections in use) are sampled: every
`SAMPLE_SECONDS` in a worker of several, and by the process that answers a scrape just
before it answers. A worker that stops takes its gauges out of the sums
(`deactivate`). The default process and platform collectors are left out: with several
workers they would describe only the one that happened to answer.
"""

from __future__ import annotations

import os
from collections.abc import Iterable, Iterator, Mapping, Sequence

import attrs
import prometheus_client
from fgcpay.core.metrics_files import (
    ENV_DIRECTORY,
    choose_directory,
    forget_dead_processes,
    forget_process,
)
from prometheus_client import values
from prometheus_client.core import GaugeMetricFamily, Metric
from prometheus_client.exposition import CONTENT_TYPE_PLAIN_0_0_4
from prometheus_client.multiprocess import MultiProcessCollector
from prometheus_client.registry import CollectorRegistry

SAMPLE_SECONDS = 5.0
CONTENT_TYPE = CONTENT_TYPE_PLAIN_0_0_4
# An API answering in 1-50 ms; the tail up to the 10 s that a stuck dependency may cost.
REQUEST_BUCKETS = (
    0.001, 0.0025, 0.005, 0.0075, 0.01, 0.015, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0, 10.0,
)  # fmt: skip
# A wait for a connection or for the writer: well under a millisecond when all is well.
WAIT_BUCKETS = (
    0.0001, 0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0,
)  # fmt: skip
# Only these methods are labels as they are: a client's made-up method is "OTHER", so no
# request can add a series.
_METHODS = frozenset({"GET", "HEAD", "POST", "PUT", "PATCH", "DELETE", "OPTIONS"})
UNMATCHED_ROUTE = "(unmatched)"  # no route matched: never the raw path, which may hold an id
UNPARSED_ROUTE = "(unparsed)"  # the request was not valid HTTP (fgcpay.server)

# Counters also get a `_created` series by default: one more series each, for nothing a
# scrape of a long-running service needs (and multiprocess mode has none).
prometheus_client.disable_created_metrics()


class _Instruments:
    """The metrics one process records, in a registry of their own (not the default one,
    which carries the process and platform collectors)."""

    def __init__(self) -> None:
        self.registry = registry = CollectorRegistry()
        self.requests = prometheus_client.Counter(
            "fgcpay_http_requests",
            "HTTP requests answered, by method, route template and status.",
            ["method", "route", "status"],
            registry=registry,
        )
        self.request_seconds = prometheus_client.Histogram(
            "fgcpay_http_request_duration_seconds",
            "Time from a request's arrival to its answer, by method and route template.",
            ["method", "route"],
            buckets=REQUEST_BUCKETS,
            registry=registry,
        )
        self.delivery_attempts = prometheus_client.Counter(
            "fgcpay_webhook_delivery_attempts",
            "Webhook delivery attempts recorded, by outcome: succeeded, retry (failed, another"
            " attempt scheduled) or failed (failed for good).",
            ["outcome"],
            registry=registry,
        )
        self.actors_live = prometheus_client.Gauge(
            "fgcpay_actors_live",
            "Actors active now, by kind.",
            ["kind"],
            multiprocess_mode="livesum",
            registry=registry,
        )
        self.mailbox_messages = prometheus_client.Gauge(
            "fgcpay_actor_mailbox_messages",
            "Messages waiting in the mailboxes of all live actors.",
            multiprocess_mode="livesum",
            registry=registry,
        )
        self.mailbox_depth_max = prometheus_client.Gauge(
            "fgcpay_actor_mailbox_depth_max",
            "Messages waiting in the fullest mailbox of any live actor.",
            multiprocess_mode="livemax",
            registry=registry,
        )
        self.connections_in_use = prometheus_client.Gauge(
            "fgcpay_db_connections_in_use",
            "Database connections running a call now, by role (read, write).",
            ["role"],
            multiprocess_mode="livesum",
            registry=registry,
        )
        self.connections = prometheus_client.Gauge(
            "fgcpay_db_connections_max",
            "Database connections the processes may use, by role (read, write).",
            ["role"],
            multiprocess_mode="livesum",
            registry=registry,
        )
        self.db_wait_seconds = prometheus_client.Histogram(
            "fgcpay_db_wait_seconds",
            "Time a database call waited before it ran: for a pooled connection (PostgreSQL"
            " reads) or for its group to start (writes; SQLite reads), by role.",
            ["role"],
            buckets=WAIT_BUCKETS,
            registry=registry,
        )
        self.escalations = prometheus_client.Counter(
            "fgcpay_supervision_escalations",
            "Escalations: a supervised part (an actor kind, a background loop) that failed"
            " more often than its restart budget allows, by what escalated.",
            ["supervised"],
            registry=registry,
        )
        self.quarantines = prometheus_client.Counter(
            "fgcpay_supervision_quarantines",
            "Quarantines: an actor id that crashed again within its kind's restart period,"
            " answered 503 with Retry-After for a cool-off instead of restarting; by kind.",
            ["supervised"],
            registry=registry,
        )
        self.escalated = prometheus_client.Gauge(
            "fgcpay_supervision_escalated",
            "1 while a supervised part is escalated in any process (then /readyz answers"
            " 503 naming it), else 0; by what escalated.",
            ["supervised"],
            multiprocess_mode="livemax",
            registry=registry,
        )
        self.processes = prometheus_client.Gauge(
            "fgcpay_processes",
            "Service processes whose metrics this answer adds up.",
            multiprocess_mode="livesum",
            registry=registry,
        )
        # Label children by their values: `labels()` validates and locks on every call.
        self._request_series: dict[
            tuple[str, str, int],
            tuple[prometheus_client.Counter, prometheus_client.Histogram],
        ] = {}
        self.db_read_wait = self.db_wait_seconds.labels("read")
        self.db_write_wait = self.db_wait_seconds.labels("write")

    def request_series(
        self, method: str, route: str, status: int
    ) -> tuple[prometheus_client.Counter, prometheus_client.Histogram]:
        # Keyed by the label, not the method sent: made-up methods must not grow the map.
        key = (method if method in _METHODS else "OTHER", route, status)
        series = self._request_series.get(key)
        if series is None:
            series = self._request_series[key] = (
                self.requests.labels(key[0], route, str(status)),
                self.request_seconds.labels(key[0], route),
            )
        return series


# Chosen when a service starts (`activate`); until then values live in memory, whatever
# the environment says (prometheus-client decides from it when it is imported).
values.ValueClass = values.MutexValue
_instruments = _Instruments()
_directory: str | None = None
_activated = False


# -- recording ------------------------------------------------------------------------------


def request_answered(method: str, route: str, status: int, seconds: float | None) -> None:
    """Count one answered request (`route` the URL rule's template, or `UNMATCHED_ROUTE`)
    and its time from arrival to answer, if known."""
    counter, histogram = _instruments.request_series(method, route, status)
    counter.inc()
    if seconds is not None:
        histogram.observe(seconds)


# A recorded attempt by the delivery's status after it: a failed attempt that leaves the
# delivery pending is a retry.
_ATTEMPT_OUTCOMES = {"succeeded": "succeeded", "pending": "retry", "failed": "failed"}


def delivery_attempt(status: str) -> None:
    """Count one recorded webhook attempt by the status it left its delivery in
    (`succeeded`, `pending` or `failed`): outcomes `succeeded`, `retry`, `failed`."""
    _instruments.delivery_attempts.labels(_ATTEMPT_OUTCOMES[status]).inc()


def db_waited(role: str, seconds: float) -> None:
    """A database call of `role` ("read" or "write") waited `seconds` before it ran
    (called from the database threads: prometheus-client's values take a lock)."""
    wait = _instruments.db_read_wait if role == "read" else _instruments.db_write_wait
    wait.observe(seconds)


def supervised(name: str, *, escalated: bool) -> None:
    """Whether the supervised part `name` (a fixed word: an actor kind, a loop) is
    escalated now (a part is declared with 0 when first supervised)."""
    _instruments.escalated.labels(name).set(1 if escalated else 0)


def quarantine(name: str) -> None:
    """An id of the supervised part `name` (an actor kind) was quarantined: counted."""
    _instruments.quarantines.labels(name).inc()


def escalation(name: str) -> None:
    """The supervised part `name` escalated: counted, and marked escalated."""
    _instruments.escalations.labels(name).inc()
    supervised(name, escalated=True)


@attrs.frozen
class ConnectionUse:
    """Connections of one role (read, write) a process has, and how many run a call now."""

    role: str
    in_use: int
    size: int


def sample(
    actors_by_kind: Mapping[str, int],
    mailbox_messages: int,
    mailbox_depth_max: int,
    connections: Sequence[ConnectionUse],
) -> None:
    """Set this process's gauges to what it holds now (every kind of actor it can run,
    zero included, so a kind whose actors all ended reads 0)."""
    instruments = _instruments
    for kind, live in actors_by_kind.items():
        instruments.actors_live.labels(kind).set(live)
    instruments.mailbox_messages.set(mailbox_messages)
    instruments.mailbox_depth_max.set(mailbox_depth_max)
    for use in connections:
        instruments.connections_in_use.labels(use.role).set(use.in_use)
        instruments.connections.labels(use.role).set(use.size)


# -- the scrape -----------------------------------------------------------------------------


@attrs.frozen
class DatabaseFacts:
    """What the database says at scrape time, the same whichever process is asked (a
    scrape that could not read it passes None: then only `fgcpay_database_up 0` is said)."""

    deliveries_pending: int
    oldest_due_delivery_age_seconds: float
    expiry_lag_seconds: float
    renewal_lag_seconds: float


class _Facts:
    def __init__(self, facts: DatabaseFacts | None) -> None:
        self._facts = facts

    def collect(self) -> Iterator[Metric]:
        facts = self._facts
        yield GaugeMetricFamily(
            "fgcpay_database_up",
            "1 when the database answered this scrape's questions (the gauges below), else 0.",
            value=0 if facts is None else 1,
        )
        if facts is None:
            return
        yield GaugeMetricFamily(
            "fgcpay_webhook_deliveries_pending",
            "Webhook deliveries not yet delivered nor failed for good, due or scheduled"
            " (counted up to 100,000).",
            value=facts.deliveries_pending,
        )
        yield GaugeMetricFamily(
            "fgcpay_webhook_oldest_due_delivery_age_seconds",
            "How long the oldest due webhook delivery has waited since it became due (0:"
            " none is due).",
            value=facts.oldest_due_delivery_age_seconds,
        )
        lag = GaugeMetricFamily(
            "fgcpay_timer_lag_seconds",
            "How far the durable timers run behind: the time since the oldest due expiry or"
            " renewal fell due (0: nothing is overdue).",
            labels=["timer"],
        )
        lag.add_metric(["expiry"], facts.expiry_lag_seconds)
        lag.add_metric(["renewal"], facts.renewal_lag_seconds)
        yield lag


class _Scrape:
    """The collector one scrape reads: every process's metrics, then the database's."""

    def __init__(self, facts: DatabaseFacts | None) -> None:
        self._facts = _Facts(facts)

    def collect(self) -> Iterable[Metric]:
        directory = _directory
        if directory is None:
            yield from _instruments.registry.collect()
        else:
            forget_dead_processes(directory)
            yield from MultiProcessCollector(None, path=directory).collect()
        yield from self._facts.collect()


def exposition(facts: DatabaseFacts | None) -> bytes:
    """The Prometheus text (format 0.0.4, `CONTENT_TYPE`) of every metric, summed over the
    host's worker processes, with the database's `facts`. It reads files in multiprocess
    mode: call it on a worker thread."""
    return prometheus_client.generate_latest(_Scrape(facts))


# -- a service's process --------------------------------------------------------------------


def activate() -> str | None:
    """Record for a service from now on: in the workers' shared directory when this
    process is one of several (see the module docstring), else in memory. Decided once
    per process; returns the directory, or None for in memory."""
    global _instruments, _directory, _activated
    if not _activated:
        _activated = True
        directory = choose_directory()
        if directory is not None:
            # prometheus-client creates every value through `values.ValueClass`; its files
            # are named in `ENV_DIRECTORY` when each is opened.
            os.environ[ENV_DIRECTORY] = directory
            values.ValueClass = values.MultiProcessValue()
            _directory = directory
            _instruments = _Instruments()
        _instruments.processes.set(1)
    return _directory


def deactivate() -> None:
    """The service in this process stopped: its live gauges no longer count."""
    if _directory is not None:
        forget_process(os.getpid(), _directory)


def multiprocess_directory() -> str | None:
    """The directory this process's metrics are shared through, or None (in memory)."""
    return _directory
