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

_SECRET_SHAPES = re.compile(r"(fp_(?:test|live)_|whsec_|fgcdash_)[A-Za-z0-9+/=_-]+")

logger = logging.getLogger("fgcpay")


def mask_secrets(text: str) -> str:
    return _SECRET_SHAPES.sub(lambda m: m.group(1) + "[redacted]", text)


class JsonFormatter(logging.Formatter):
    def format(self, record: logging.LogRecord) -> str:
        entry: dict[str, Any] = {
            "ts": time.strftime("%Y-%m-%dT%H:%M:%S", time.gmtime(record.created))
            + f".{int(record.msecs):03d}Z",
            "level": record.levelname.lower(),
            "logger": record.name,
            "msg": record.getMessage(),
        }
        fields = getattr(record, "fields", None)
        if isinstance(fields, dict):
            entry.update(fields)
        if record.exc_info:
            entry["exc"] = self.formatException(record.exc_info)
        return mask_secrets(json.dumps(entry, default=str, separators=(",", ":")))


def configure_logging(level: str = "INFO") -> None:
    """Send fgcpay's and hypercorn's logs to stderr as JSON lines."""
    handler = logging.StreamHandler(sys.stderr)
    handler.setFormatter(JsonFormatter())
    root = logging.getLogger()
    root.handlers[:] = [handler]
    root.setLevel(level)


def log_event(message: str, level: int = logging.INFO, **fields: Any) -> None:
    logger.log(level, message, extra={"fields": fields})
