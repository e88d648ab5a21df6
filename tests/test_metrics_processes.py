"""Two worker processes on PostgreSQL, under `fgcpay serve --workers 2` and under
`hypercorn --worker-class trio --workers 2 fgcpay.asgi:app` (hypercorn's own master):
whichever worker answers `/metrics`, the request counter is the sum of both workers'
requests, through the directory the workers derive from their master or the one the
operator names in `PROMETHEUS_MULTIPROC_DIR`. A counter an earlier run left there adds
nothing; a worker that ended still counts, its gauges no longer; stopping leaves no live
gauge behind."""

from __future__ import annotations

import os
import shutil
import signal
from pathlib import Path

import httpx
import pytest
import trio
from fgcpay.core import metrics_files
from helpers import CLIENT_TLS, TEST_SECRET, Scrape, scrape, valid_body, wait_until
from processes import HypercornProcess, ServiceProcess, ended_within, worker_pids
from prometheus_client.mmap_dict import MmapedDict, mmap_key
from prometheus_client.multiprocess import MultiProcessCollector

CREATE_201 = {"method": "POST", "route": "/api/v1/checkout/sessions", "status": "201"}
CREATE_TIMED = {"method": "POST", "route": "/api/v1/checkout/sessions"}
READERS = 10 - 2  # FGCPAY_DB_POOL_SIZE's default, less the writer and the listener


def _creates_by_process(directory: Path) -> dict[str, float]:
    """Creates answered 201 as each worker's own file counts them, by process id."""
    found: dict[str, float] = {}
    for path in directory.glob("counter_*.db"):
        for family in MultiProcessCollector.merge([str(path)]):
            for sample in family.samples:
                if sample.name == "fgcpay_http_requests_total" and sample.labels == CREATE_201:
                    found[path.stem.rpartition("_")[2]] = sample.value
    return found


def _leave_a_stale_count(path: Path, count: float) -> None:
    """A counter file as a worker of an earlier run leaves it."""
    names, labels = list(CREATE_201), list(CREATE_201.values())
    key = mmap_key("fgcpay_http_requests", "fgcpay_http_requests_total", names, labels, "")
    stale = MmapedDict(str(path))
    stale.write_value(key, count, 0.0)
    stale.close()


def _adds_up(scraped: Scrape, sent: int) -> None:
    assert scraped.value("fgcpay_http_requests_total", **CREATE_201) == sent
    assert scraped.value("fgcpay_http_request_duration_seconds_count", **CREATE_TIMED) == sent
    assert scraped.value("fgcpay_processes") == 2
    assert scraped.value("fgcpay_db_connections_max", role="read") == 2 * READERS
    assert scraped.value("fgcpay_database_up") == 1


@pytest.mark.parametrize("run", ["serve, derived", "serve, operator's", "hypercorn, derived"])
async def test_two_workers_add_up_whichever_answers(
    tmp_path: Path, postgres_url: str, run: str
) -> None:
    environment: dict[str, str] = {}
    stale = tmp_path / "prometheus" / "counter_999999.db"
    if run == "serve, operator's":
        stale.parent.mkdir()
        _leave_a_stale_count(stale, 1000)
        environment[metrics_files.ENV_DIRECTORY] = str(stale.parent)
    service = (HypercornProcess if run.startswith("hypercorn") else ServiceProcess)(
        cwd=tmp_path, database_url=postgres_url, workers=2, environment=environment,
        # The kernel may hand many rounds of connections to one worker before the other
        # answers one (on a loaded machine): the rounds must never reach the key's burst.
        settings={"SECRET_KEY": TEST_SECRET, "RATE_LIMIT_BURST": "1000000"},
    )  # fmt: skip
    if isinstance(service, HypercornProcess):
        service.config = None  # hypercorn's own defaults, as issue 14 runs it
    created = await service.command("merchant", "create", "--name", "M", "--email", "m@m.test")
    headers = {"Authorization": f"Bearer {created['api_key']}"}
    sent = 0

    async def create_one() -> None:
        nonlocal sent
        # A connection of its own: the kernel hands each to whichever worker accepts.
        async with httpx.AsyncClient(timeout=30, verify=CLIENT_TLS) as client:
            answer = await client.post(
                service.url + "/api/v1/checkout/sessions", json=valid_body(), headers=headers
            )
        assert answer.status_code == 201, answer.text
        sent += 1

    async def create_four() -> None:
        async with trio.open_nursery() as nursery:
            for _ in range(4):
                nursery.start_soon(create_one)

    shared: Path | None = None
    try:
        await service.start()
        assert service.process is not None
        master = service.process.pid
        if run.endswith("derived"):
            derived = metrics_files.workers_directory(master)
            assert derived is not None
            shared = Path(derived)
        else:
            shared = stale.parent
            assert not stale.exists(), "the earlier run's file was left to count"
        folder = shared

        async def both_answered() -> bool:
            await create_four()
            return sum(count > 0 for count in _creates_by_process(folder).values()) == 2

        await wait_until(both_answered, within=60, what="creates answered by both workers", every=0)
        assert sum(_creates_by_process(shared).values()) == sent
        for _ in range(6):
            _adds_up(await scrape(service.url), sent)

        if isinstance(service, HypercornProcess):
            # A worker stopped (hypercorn starts another): what it counted still counts.
            first = worker_pids(master)[0]
            os.kill(first, signal.SIGTERM)
            assert ended_within([first], 10)
            await create_four()

            async def replaced() -> bool:
                workers = worker_pids(master)
                return len(workers) == 2 and first not in workers

            await wait_until(replaced, within=30, what="a worker in the stopped one's place")
            await wait_until(
                lambda: _one_scrape_adds_up(service.url, sent),
                within=30,
                what="the new worker counted among the processes",
            )
            for _ in range(4):
                _adds_up(await scrape(service.url), sent)
        assert await service.stop() == 0, service.log.read_text()
    finally:
        service.kill()
        if run.startswith("hypercorn") and shared is not None:
            # Hypercorn's master knows nothing of it: the next workers to start would
            # remove it; a test leaves nothing behind.
            await trio.to_thread.run_sync(lambda: shutil.rmtree(str(shared), True))
    if run == "serve, derived":
        assert not shared.exists(), "the master removes the workers' directory"
    elif run == "serve, operator's":
        assert not list(shared.glob("gauge_live*")), "a stopped worker's live gauges remain"
        assert sum(_creates_by_process(shared).values()) == sent


async def _one_scrape_adds_up(url: str, sent: int) -> bool:
    try:
        _adds_up(await scrape(url), sent)
    except AssertionError:
        return False
    return True
