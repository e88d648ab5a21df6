"""docs/testing.md's example, a merchant's own test file, run exactly as written there
against a real `fgcpay serve` on each backend (two workers on PostgreSQL): it triggers
every event type with duplicated and reordered deliveries, its receiver handles each
event once, and the receiver check passes it. The guide cannot drift from the service."""

from __future__ import annotations

import os
import sys
from pathlib import Path

import trio
from processes import ServiceProcess

GUIDE = Path(__file__).resolve().parent.parent / "docs" / "testing.md"


def _example() -> str:
    """The guide's one Python block: the merchant's test file."""
    blocks = GUIDE.read_text().split("```python\n")[1:]
    assert len(blocks) == 1, "the guide should hold one Python example"
    return blocks[0].split("```", 1)[0]


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
    (project / "test_fgcpay_webhooks.py").write_text(_example())
    env = {k: v for k, v in os.environ.items() if not k.startswith(("FGCPAY_", "PYTEST_"))}
    env |= {"FGCPAY_API_URL": service.url + "/api/v1", "FGCPAY_API_KEY": made["api_key"]}
    try:
        await service.start()
        with trio.fail_after(120):
            done = await trio.run_process(
                # The merchant's project, not ours: its own root, none of our plugins'
                # options (the timeout is the run's, above).
                [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider",
                 "--rootdir", str(project), "-c", os.devnull, "test_fgcpay_webhooks.py"],
                cwd=project, env=env, capture_stdout=True, capture_stderr=True, check=False,
            )  # fmt: skip
        said = (done.stdout + done.stderr).decode()
        assert done.returncode == 0, said[-4000:]
        assert "2 passed" in said, said[-2000:]
        assert not service.errors_logged()
    finally:
        service.kill()
