"""Structured logs: one JSON object per line on stderr.

Nothing secret is ever passed to a logger (no Authorization header, key, webhook secret,
dashboard session id, password or PIN); as a second line of defence, anything shaped like
one (a key, a webhook secret, a session id: each has its prefix) is masked on the way out.
"""

from __future__ import annotations

import json
import logging
import re
import sys
import time
from typing import Any

_PREFIXES = ("fp_", "whsec_", "fgcdash_")
_SECRET_SHAPES = re.compile(r"(fp_(?:test|live)_|whsec_|fgcdash_)[A-Za-z0-9+/=_-]+")
# One encoder for every line (json.dumps with options builds a new one per call).
_ENCODER = json.JSONEncoder(default=str, separators=(",", ":"))

logger = logging.getLogger("fgcpay")


def mask_secrets(text: str) -> str:
    # Each shape starts with one of the prefixes: most lines hold none, and three
    # substring searches cost less than the expression's scan.
    if not any(prefix in text for prefix in _PREFIXES):
        return text
    return _SECRET_SHAPES.sub(lambda m: m.group(1) + "[redacted]", text)


class JsonFormatter(logging.Formatter):
    # Every request writes a line: the timestamp's seconds part is formatted once per
    # second, not once per line.
    _second: tuple[int, str] = (-1, "")

    def format(self, record: logging.LogRecord) -> str:
        whole = int(record.created)
        second, stamp = self._second
        if whole != second:
            stamp = time.strftime("%Y-%m-%dT%H:%M:%S", time.gmtime(whole))
            self._second = (whole, stamp)
        entry: dict[str, Any] = {
            "ts": f"{stamp}.{int(record.msecs):03d}Z",
            "level": record.levelname.lower(),
            "logger": record.name,
            "msg": record.getMessage(),
        }
        fields = getattr(record, "fields", None)
        if isinstance(fields, dict):
            entry.update(fields)
        if record.exc_info:
            entry["exc"] = self.formatException(record.exc_info)
        return mask_secrets(_ENCODER.encode(entry))


def configure_logging(level: str = "INFO") -> None:
    """Send fgcpay's and hypercorn's logs to stderr as JSON lines."""
    # No line shows the thread or the process: the logging module need not look them
    # up for every record (its documented switches for that).
    logging.logThreads = False
    logging.logProcesses = False
    logging.logMultiprocessing = False
    handler = logging.StreamHandler(sys.stderr)
    handler.setFormatter(JsonFormatter())
    root = logging.getLogger()
    root.handlers[:] = [handler]
    root.setLevel(level)


def log_event(message: str, level: int = logging.INFO, **fields: Any) -> None:
    # The record is made here rather than by `Logger.log`, which would also walk the
    # stack for the caller's file and line (no line shows them) and check `extra`'s
    # names: every request logs a line.
    if logger.isEnabledFor(level):
        record = logger.makeRecord(logger.name, level, __file__, 0, message, (), None)
        record.fields = fields
        logger.handle(record)
