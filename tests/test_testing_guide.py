"""docs/testing.md's examples, a merchant's own test files, run exactly as written there
against a real `fgcpay serve` on each backend (two workers on PostgreSQL): the webhook
test triggers every event type with duplicated and reordered deliveries, its receiver
handles each event once, and the receiver check passes it; the sandbox fixture gives
each pytest-xdist worker a sandbox of its own, whose exact assertions hold in parallel,
and deletes it at the end. The guide cannot drift from the service."""

from __future__ import annotations

import json
import os
import sys
from pathlib import Path

import httpx
import trio
from processes import ServiceProcess

GUIDE = Path(__file__).resolve().parent.parent / "docs" / "testing.md"


WEBHOOKS = "test_fgcpay_webhooks.py"


def _examples() -> dict[str, str]:
    """The guide's Python blocks by the file each is in the merchant's project: a block
    whose first line is a comment naming a file (`# conftest.py: ...`) is that file; the
    one block without is the webhook test file."""
    found: dict[str, str] = {}
    for block in GUIDE.read_text().split("```python\n")[1:]:
        code = block.split("```", 1)[0]
        first = code.split("\n", 1)[0]
        name = first[2:].split(":", 1)[0] if first.startswith("# ") else WEBHOOKS
        assert name.endswith(".py") and name not in found, f"a second {name} in the guide"
        found[name] = code
    assert found.keys() == {WEBHOOKS, "conftest.py", "test_checkout.py"}, found.keys()
    return found


async def _pytest(project: Path, env: dict[str, str], *args: str) -> str:
    """pytest run in the merchant's project as the merchant runs it: its output, and it
    must pass."""
    with trio.fail_after(120):
        done = await trio.run_process(
            # The merchant's project, not ours: its own root, none of our plugins'
            # options (the timeout is the run's, above).
            [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider",
             "--rootdir", str(project), "-c", os.devnull, *args],
            cwd=project, env=env, capture_stdout=True, capture_stderr=True, check=False,
        )  # fmt: skip
    said = (done.stdout + done.stderr).decode()
    assert done.returncode == 0, said[-4000:]
    return said


async def test_the_guides_example_test_passes_against_a_real_service(
    tmp_path: Path, database_url: str
) -> None:
    workers = 1 if database_url.startswith("sqlite") else 2
    service = ServiceProcess(cwd=tmp_path, database_url=database_url, workers=workers)
    made = await service.command(
        "merchant", "create", "--name", "Guide", "--email", "guide@example.com"
    )
    project = tmp_path / "merchant"
    project.mkdir()
    (project / WEBHOOKS).write_text(_examples()[WEBHOOKS])
    env = {k: v for k, v in os.environ.items() if not k.startswith(("FGCPAY_", "PYTEST_"))}
    env |= {"FGCPAY_API_URL": service.url + "/api/v1", "FGCPAY_API_KEY": made["api_key"]}
    try:
        await service.start()
        said = await _pytest(project, env, WEBHOOKS)
        assert "2 passed" in said, said[-2000:]
        assert not service.errors_logged()
    finally:
        service.kill()


async def test_the_guides_sandbox_fixture_gives_each_xdist_worker_its_own_and_deletes_them(
    tmp_path: Path, database_url: str
) -> None:
    workers = 1 if database_url.startswith("sqlite") else 2
    # The request log (INFO) names the merchant of each request: which sandbox did what.
    service = ServiceProcess(
        cwd=tmp_path, database_url=database_url, workers=workers, settings={"LOG_LEVEL": "INFO"}
    )
    made = await service.command(
        "merchant", "create", "--name", "Guide", "--email", "guide@example.com"
    )
    project = tmp_path / "merchant"
    project.mkdir()
    for name in ("conftest.py", "test_checkout.py"):
        (project / name).write_text(_examples()[name])
    env = {k: v for k, v in os.environ.items() if not k.startswith(("FGCPAY_", "PYTEST_"))}
    env |= {"FGCPAY_API_URL": service.url + "/api/v1", "FGCPAY_API_KEY": made["api_key"]}
    try:
        await service.start()
        said = await _pytest(project, env, "-n", "2", "test_checkout.py")
        assert "4 passed" in said, said[-2000:]

        logged = [json.loads(x) for x in service.log.read_text().splitlines() if x[:1] == "{"]
        requests = [line for line in logged if line.get("msg") == "request"]

        def by(method: str, path: str) -> list[dict[str, object]]:
            return [r for r in requests if (r["method"], r["path"]) == (method, path)]

        made_here = by("POST", "/api/v1/sandboxes")
        assert [r["status"] for r in made_here] == [201, 201], "one per worker"
        assert {r["merchant_id"] for r in made_here} == {made["merchant_id"]}
        deleted = [r for r in requests if r["method"] == "DELETE"]
        assert [r["status"] for r in deleted] == [200, 200], "each deleted at the end"
        payers = {r["merchant_id"] for r in by("POST", "/api/v1/checkout/sessions")}
        assert len(payers) == 2 and made["merchant_id"] not in payers, "in the two sandboxes"
        # Nothing is left: the merchant has no sandbox, and paid nothing itself.
        async with httpx.AsyncClient(
            base_url=env["FGCPAY_API_URL"], headers={"Authorization": f"Bearer {made['api_key']}"}
        ) as api:
            assert (await api.get("/sandboxes")).json()["data"] == []
            assert (await api.get("/balance")).json()["transaction_count"] == 0
        assert not service.errors_logged()
    finally:
        service.kill()
