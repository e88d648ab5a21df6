"""Where the worker processes of one host keep their metrics: prometheus-client's
multiprocess files, in one directory they all write to (`fgcpay.core.metrics` explains when a
process is one of several).

The directory is `PROMETHEUS_MULTIPROC_DIR` when the operator sets it; otherwise the
workers derive it from their master process (`fgcpay serve --workers N`'s supervisor, or
hypercorn's master, which knows nothing of it): `fgcpay-metrics-<uid>-<pid>-<start>` under
the temp dir, mode 0700, named by the master's pid and start time, so a later master, even
one that gets the same pid, starts from a new, empty directory.

Nothing stale adds to a sum: in the operator's directory, files changed before the run's
master started (their ctime; Linux) are an earlier run's and are deleted when a worker
starts; directories of masters that have ended are removed then too; the live gauges of
workers that died without saying so (SIGKILL) are deleted when a scrape finds them.
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

from fgcpay.core.logs import log_event
from prometheus_client.multiprocess import mark_process_dead

ENV_DIRECTORY = "PROMETHEUS_MULTIPROC_DIR"


def choose_directory() -> str | None:
    """The directory this process shares its metrics through, made ready (created; an
    earlier run's files deleted), or None when it is a process alone or no directory can
    be had (each worker then answers for itself, with a warning)."""
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


def forget_process(pid: int, directory: str) -> None:
    """Delete the live gauges of process `pid`: they no longer count. Its counters and
    histograms stay, as counters must."""
    try:
        mark_process_dead(pid, directory)
    except FileNotFoundError:
        pass  # another worker's scrape deleted them first


def forget_dead_processes(directory: str) -> None:
    """Forget the worker processes that are gone without saying so (killed)."""
    for path in glob.glob(os.path.join(directory, "gauge_live*_*.db")):
        pid = _pid_of(path)
        if pid is not None and not _alive(pid):
            forget_process(pid, directory)


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
