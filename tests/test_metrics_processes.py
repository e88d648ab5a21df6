"""`fgcpay serve --workers 2` on PostgreSQL: whichever worker answers `/metrics`, the
request counter is the sum of both workers' requests, through the directory the workers
derive from their master or the one the operator names in `PROMETHEUS_MULTIPROC_DIR`;
a counter an earlier run left there adds nothing; stopping leaves no live gauge behind."""

from __future__ import annotations

from pathlib import Path

import httpx
import pytest
import trio
from fgcpay import metrics_files
from helpers import CLIENT_TLS, scrape, valid_body, wait_until
from processes import ServiceProcess
from prometheus_client.mmap_dict import MmapedDict, mmap_key
from prometheus_client.multiprocess import MultiProcessCollector

CREATE_201 = {"method": "POST", "route": "/api/v1/checkout/sessions", "status": "201"}
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


@pytest.mark.parametrize("directory", ["derived", "operator's"])
async def test_two_workers_add_up_whichever_answers(
    tmp_path: Path, postgres_url: str, directory: str
) -> None:
    environment: dict[str, str] = {}
    stale = tmp_path / "prometheus" / "counter_999999.db"
    if directory == "operator's":
        stale.parent.mkdir()
        _leave_a_stale_count(stale, 1000)
        environment[metrics_files.ENV_DIRECTORY] = str(stale.parent)
    service = ServiceProcess(
        cwd=tmp_path, database_url=postgres_url, workers=2, environment=environment
    )
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

    try:
        await service.start()
        assert service.process is not None
        if directory == "derived":
            derived = metrics_files.workers_directory(service.process.pid)
            assert derived is not None
            shared = Path(derived)
        else:
            shared = stale.parent
            assert not stale.exists(), "the earlier run's file was left to count"

        async def both_answered() -> bool:
            async with trio.open_nursery() as nursery:
                for _ in range(4):
                    nursery.start_soon(create_one)
            return sum(count > 0 for count in _creates_by_process(shared).values()) == 2

        await wait_until(both_answered, within=60, what="creates answered by both workers", every=0)
        assert sum(_creates_by_process(shared).values()) == sent
        for _ in range(6):
            scraped = await scrape(service.url)
            assert scraped.value("fgcpay_http_requests_total", **CREATE_201) == sent
            assert scraped.value("fgcpay_http_request_duration_seconds_count", **{
                k: v for k, v in CREATE_201.items() if k != "status"
            }) == sent  # fmt: skip
            assert scraped.value("fgcpay_processes") == 2
            assert scraped.value("fgcpay_db_connections_max", role="read") == 2 * READERS
            assert scraped.value("fgcpay_database_up") == 1
        assert await service.stop() == 0, service.log.read_text()
    finally:
        service.kill()
    if directory == "derived":
        assert not shared.exists(), "the master removes the workers' directory"
    else:
        assert not list(shared.glob("gauge_live*")), "a stopped worker's live gauges remain"
        assert sum(_creates_by_process(shared).values()) == sent
