"""Hypercorn's config for serving `fgcpay.asgi:app` as `fgcpay serve` serves the service:

    hypercorn --config python:fgcpay.hypercorn_config.ServeDefaults ... fgcpay.asgi:app

as the Procfile's web line runs it (options given on the command line still win). An
operator's own config file takes `ServeDefaults`' values over (README, "Running behind
your own hypercorn config").

Hypercorn's main process loads this module and never the service (each worker imports
`fgcpay.asgi`), so it stays light. Loading it also keeps a worker's failure in the main
process's exit status, which hypercorn 0.18 loses (`_keep_worker_failure`).
"""

from __future__ import annotations

from multiprocessing.process import BaseProcess

import hypercorn.run
from fgcpay.web.limits import KEEP_ALIVE_SECONDS, MAX_HEADER_BYTES


class ServeDefaults:
    """What `fgcpay serve` sets on hypercorn beyond hypercorn's own defaults (see
    `fgcpay.service.hypercorn_config`), as a config object hypercorn reads."""

    worker_class = "trio"
    # The request line and headers: 64 KiB (hypercorn's default is 16), answered 431 above.
    h11_max_incomplete_size = MAX_HEADER_BYTES
    keep_alive_timeout = KEEP_ALIVE_SECONDS
    backlog = 1024


def _keep_worker_failure() -> None:
    """Hypercorn 0.18's main process exits 0 even after a worker failed (one that could
    not start, say): its last `_join_exited`, over the workers left, overwrites the
    failure's status (pgjones/hypercorn#269). Here the first failure's status is kept;
    hypercorn stops every worker once one has failed, so it is the last one it sees."""
    join_exited = hypercorn.run._join_exited
    failed: list[int] = []

    def keeping_failure(processes: list[BaseProcess]) -> int:
        status = join_exited(processes)
        if status != 0 and not failed:
            failed.append(status)
        return status or (failed[0] if failed else 0)

    hypercorn.run._join_exited = keeping_failure


_keep_worker_failure()
