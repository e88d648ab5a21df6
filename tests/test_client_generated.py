"""Issue 32: the client's generated layer (clients/python/fgcpay_client/generated/) is what
openapi-python-client generates from the document the service serves. A change to the
API (a route, a field, a schema) without `clients/python/generate` run and committed
fails here, naming the files that differ."""

from __future__ import annotations

import ast
import json
import sys
from pathlib import Path

import httpx
import trio
from fgcpay.http.api import document
from helpers import CLIENT_TLS, copy_sqlite_database, make_settings, start_server

GENERATE = Path(__file__).parent.parent / "clients" / "python" / "generate"


async def test_the_generated_client_is_what_the_served_document_generates(
    nursery: trio.Nursery, sqlite_template: Path, tmp_path: Path
) -> None:
    # The document does not depend on the backend: one service, on SQLite.
    settings = make_settings(copy_sqlite_database(sqlite_template, tmp_path / "db.sqlite3"))
    server = await start_server(nursery, settings)
    try:
        async with httpx.AsyncClient(verify=CLIENT_TLS) as http:
            served = (await http.get(server.url + "/api/v1/openapi.json")).content
    finally:
        await server.shutdown()
    # What `generate` builds offline, without a service, is the same bytes.
    assert json.dumps(document(), indent=2).encode() == served
    (tmp_path / "openapi.json").write_bytes(served)
    checked = await trio.run_process(
        [sys.executable, str(GENERATE), "--check", "--document", str(tmp_path / "openapi.json")],
        capture_stdout=True, capture_stderr=True, check=False,
    )  # fmt: skip
    diff = checked.stdout.decode()
    assert checked.returncode == 0, checked.stderr.decode() + diff[:3000]


def test_the_client_does_not_import_the_service() -> None:
    """A merchant installs the client alone (`pip install clients/python`): no module of
    it may import `fgcpay`."""
    package = GENERATE.parent / "fgcpay_client"
    for path in package.rglob("*.py"):
        for node in ast.walk(ast.parse(path.read_text())):
            names = (
                [alias.name for alias in node.names]
                if isinstance(node, ast.Import)
                else [node.module or ""]
                if isinstance(node, ast.ImportFrom) and node.level == 0
                else []
            )
            for name in names:
                assert name.split(".")[0] != "fgcpay", f"{path}: imports {name}"
