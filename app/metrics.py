"""Prometheus metrics: what each process counts, how the worker processes of one host add
up, and the text `GET /metrics` answers (docs/operations.md lists every metric).

Until a service starts in the process (`activate`, called by `open_service`), values are
kept in memory: an operator command records nothing anyone reads. A service's process
then records either in memory (one process: `fgcpay serve`, `hypercorn --workers 0`, the
tests) or, when it is one of several workers, in prometheus-client's multiprocess files
(one file per metric type and process id, summed at scrape time by whichever worker
answers). It is one of several workers when:

- `PROMETHEUS_MULTIPROC_DIR` names a directory (the operator's choice), or
- it was started by a `multiprocessing` parent: `fgcpay serve --workers N`'s supervisor
  or hypercorn's master. The workers of one master then share a directory derived from
  the master's pid and start time under the temp dir (`fgcpay-metrics-<uid>-<pid>-<start>`,
  mode 0700), so no master of ours is needed (under hypercorn there is none), and a
  later master, even one that gets the same pid, starts from a new, empty directory.

Stale files never inflate a counter: in the operator's directory, files older than the
master's start (their ctime; Linux) are from an earlier run and are deleted when a worker
starts; directories of masters that are gone are removed then too. A worker that stops
deletes its live gauges' files (`mark_process_dead`), and a scrape deletes those of
workers that died without stopping (SIGKILL), so gauges count live processes only.

The gauges of a process (live actors, mailboxes, connections in use) are sampled: every
`SAMPLE_SECONDS` in a worker of several, and by the process that answers a scrape just
before it answers. The default process and platform collectors are left out: in
multiprocess mode they would describe only the worker that happened to answer.
"""

from __future__ import annotations

import errno
import glob
import logging
import multiprocessing
import os
import re
import shutil
import stat
import tempfile
import time
from collections.abc import Iterable, Iterator, Mapping, Sequence

import attrs
import prometheus_client
from fgcpay.logs import log_event
from prometheus_client import values
from prometheus_client.core import GaugeMetricFamily, Metric
from prometheus_client.exposition import CONTENT_TYPE_PLAIN_0_0_4
from prometheus_client.multiprocess import MultiProcessCollector, mark_process_dead
from prometheus_client.registry import CollectorRegistry

ENV_DIRECTORY = "PROMETHEUS_MULTIPROC_DIR"
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
            _forget_dead_processes(directory)
            yield from MultiProcessCollector(None, path=directory).collect()
        yield from self._facts.collect()


def exposition(facts: DatabaseFacts | None) -> bytes:
    """The Prometheus text (format 0.0.4, `CONTENT_TYPE`) of every metric, summed over the
    host's worker processes, with the database's `facts`. It reads files in multiprocess
    mode: call it on a worker thread."""
    return prometheus_client.generate_latest(_Scrape(facts))


def _forget_dead_processes(directory: str) -> None:
    """Delete the live gauges of worker processes that are gone (killed, so they could not
    say so themselves); their counters and histograms stay, as counters must."""
    for path in glob.glob(os.path.join(directory, "gauge_live*_*.db")):
        pid = _pid_of(path)
        if pid is not None and not _alive(pid):
            mark_process_dead(pid, directory)


def _pid_of(path: str) -> int | None:
    digits = os.path.basename(path)[: -len(".db")].rpartition("_")[2]
    return int(digits) if digits.isdigit() else None


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True  # someone else's process now holds the pid: not ours, but not ours to judge
    return True


# -- a service's process --------------------------------------------------------------------


def activate() -> str | None:
    """Record for a service from now on: in the workers' shared directory when this
    process is one of several (see the module docstring), else in memory. Decided once
    per process; returns the directory, or None for in memory."""
    global _instruments, _directory, _activated
    if not _activated:
        _activated = True
        directory = _choose_directory()
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
        mark_process_dead(os.getpid(), _directory)


def multiprocess_directory() -> str | None:
    """The directory this process's metrics are shared through, or None (in memory)."""
    return _directory


def _choose_directory() -> str | None:
    master = multiprocessing.parent_process()
    master_pid = master.pid if master is not None else None
    given = os.environ.get(ENV_DIRECTORY)
    if given:
        os.makedirs(given, exist_ok=True)
        # The run's first process: the master that started the workers, or this one.
        started = _start_time(master_pid if master_pid is not None else os.getpid())
        if started is not None:
            _delete_stale_files(given, started)
        return given
    if master_pid is None:
        return None
    directory = workers_directory(master_pid)
    if directory is None:
        return None
    _remove_directories_of_gone_masters()
    try:
        try:
            os.mkdir(directory, 0o700)
        except FileExistsError:
            pass
        found = os.lstat(directory)
    except OSError as error:
        problem = error.strerror or type(error).__name__
    else:
        # Under a shared temp dir: use it only if it is ours and no one else's to write.
        private = found.st_uid == os.getuid() and not found.st_mode & 0o077
        if stat.S_ISDIR(found.st_mode) and private:
            return directory
        problem = "not a directory private to this user"
    # Serving matters more than adding up: each worker then answers for itself alone.
    log_event(
        "metrics kept per process: no directory to share them",
        logging.WARNING,
        directory=directory,
        problem=problem,
    )
    return None


_PREFIX = "fgcpay-metrics-"


def workers_directory(master_pid: int) -> str | None:
    """The metrics directory the workers of `master_pid` share (None when the process has
    ended): `fgcpay-metrics-<uid>-<pid>-<start>` under the temp dir."""
    ticks = _start_ticks(master_pid)
    if ticks is None and os.path.isdir("/proc"):
        return None
    name = f"{_PREFIX}{os.getuid()}-{master_pid}" + ("" if ticks is None else f"-{ticks}")
    return os.path.join(tempfile.gettempdir(), name)


def remove_workers_directory() -> None:
    """Remove the directory this process's workers shared (their master calls it once they
    have all ended); the operator's `PROMETHEUS_MULTIPROC_DIR` is left alone."""
    if os.environ.get(ENV_DIRECTORY):
        return
    directory = workers_directory(os.getpid())
    if directory is not None:
        shutil.rmtree(directory, ignore_errors=True)


_DERIVED = re.compile(r"^fgcpay-metrics-(\d+)-(\d+)-(\d+)$")


def _remove_directories_of_gone_masters() -> None:
    """Remove the directories of masters of this user that have ended (or whose pid now
    belongs to another process): nothing will read them again."""
    root = tempfile.gettempdir()
    try:
        entries = list(os.scandir(root))
    except OSError:
        return
    for entry in entries:
        match = _DERIVED.match(entry.name)
        if match is None or int(match.group(1)) != os.getuid():
            continue
        if _start_ticks(int(match.group(2))) != int(match.group(3)):
            shutil.rmtree(entry.path, ignore_errors=True)


def _delete_stale_files(directory: str, started: float) -> None:
    """Delete the files an earlier run left (changed before this run's master started)."""
    for path in glob.glob(os.path.join(directory, "*.db")):
        try:
            if os.stat(path).st_ctime < started:
                os.remove(path)
        except FileNotFoundError:
            pass  # another worker of this run deleted it first


def _start_ticks(pid: int) -> int | None:
    """When process `pid` started, in clock ticks since boot (Linux), or None when it
    does not exist (or there is no /proc to ask)."""
    try:
        with open(f"/proc/{pid}/stat", "rb") as handle:
            text = handle.read().decode("ascii", "replace")
    except OSError as error:
        if error.errno in (errno.ENOENT, errno.ESRCH, errno.ENOTDIR):
            return None
        raise
    # The command name (field 2) may hold spaces and parentheses: count from its end.
    fields = text[text.rfind(")") + 2 :].split()
    return int(fields[19])  # field 22, starttime


def _start_time(pid: int) -> float | None:
    """When process `pid` started, as a Unix time (Linux; None elsewhere)."""
    ticks = _start_ticks(pid)
    if ticks is None:
        return None
    since_boot = time.clock_gettime(time.CLOCK_BOOTTIME)
    return time.time() - since_boot + ticks / os.sysconf("SC_CLK_TCK")
