"""`fgcpay sandbox create|list|delete`, run as the operator runs them, on both backends:
one JSON line per sandbox (the API's wire form; the key only in the create's answer),
a refusal in one line on standard error, exit 1 for what the service refuses (the API's
403, 404 and 409 as `code: message`) and 2 for what was typed (an unknown merchant, a
bad field, a usage error). What the command makes and deletes is what a running service
serves: the key works at once, and is 401 at once after the delete."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from datetime import datetime, timedelta
from pathlib import Path

import trio
from fgcpay.admin import create_merchant
from fgcpay.storage import open_database
from helpers import TEST_SECRET, Server

FGCPAY = [sys.executable, "-m", "fgcpay.cli"]
SANDBOX_FIELDS = {"id", "object", "name", "created_at", "expires_at"}


def _run(cwd: Path, database_url: str, *args: str) -> subprocess.CompletedProcess[str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("FGCPAY_")}
    env.update(
        {
            "FGCPAY_LOG_LEVEL": "INFO",
            "FGCPAY_SECRET_KEY": TEST_SECRET,
            "FGCPAY_DATABASE_URL": database_url,
        }
    )
    return subprocess.run(
        [*FGCPAY, *args], cwd=cwd, env=env, capture_output=True, text=True, timeout=90
    )


def _ok(cwd: Path, database_url: str, *args: str) -> list[dict[str, object]]:
    result = _run(cwd, database_url, *args)
    assert result.returncode == 0, result.stderr
    return [json.loads(line) for line in result.stdout.splitlines()]


def _refused(cwd: Path, database_url: str, code: int, *args: str) -> str:
    """The one line the command says (after the one naming the database), exit `code`."""
    result = _run(cwd, database_url, *args)
    assert result.returncode == code, (args, result.stderr)
    assert result.stdout == "" and "Traceback" not in result.stderr
    lines = result.stderr.splitlines()
    said = [line for line in lines if not line.startswith(("fgcpay: database ", "{"))]
    assert len(said) == 1, result.stderr
    return said[0]


def _at(shown: object) -> datetime:
    return datetime.fromisoformat(str(shown))


def _merchant(database_url: str, email: str) -> str:
    """A merchant, made in this process (what is tested is the sandbox commands)."""

    async def made() -> str:
        async with open_database(database_url, 3) as db:
            return (await create_merchant(db, "Acme", email)).merchant.id

    return trio.run(made)


def test_create_list_delete_print_one_json_line_each(tmp_path: Path, database_url: str) -> None:
    merchant_id = _merchant(database_url, "owner@acme.test")
    sandbox = ["sandbox", "create", "--merchant", merchant_id]
    (named,) = _ok(tmp_path, database_url, *sandbox, "--name", "ci shard", "--ttl", "3600")
    assert set(named) == SANDBOX_FIELDS | {"api_key"}
    assert str(named["id"]).startswith("sbx_test_") and named["object"] == "sandbox"
    assert named["name"] == "ci shard" and str(named["api_key"]).startswith("fp_test_")
    lived = _at(named["expires_at"]) - _at(named["created_at"])
    assert str(named["expires_at"]).endswith("Z") and lived == timedelta(seconds=3600)
    (plain,) = _ok(tmp_path, database_url, *sandbox)
    assert plain["name"] is None and plain["expires_at"] is None

    listing = _run(tmp_path, database_url, "sandbox", "list", "--merchant", merchant_id)
    assert listing.returncode == 0, listing.stderr
    assert "fp_test_" not in listing.stdout, "a key is shown only by create"
    listed = [json.loads(line) for line in listing.stdout.splitlines()]
    assert [s["id"] for s in listed] == [plain["id"], named["id"]]  # newest first
    assert all(set(s) == SANDBOX_FIELDS for s in listed)
    assert listed[1] == {k: v for k, v in named.items() if k != "api_key"}

    delete = ["sandbox", "delete", "--merchant", merchant_id, "--sandbox", str(named["id"])]
    (deleted,) = _ok(tmp_path, database_url, *delete)
    assert deleted == {"id": named["id"], "object": "sandbox", "deleted": True}
    (left,) = _ok(tmp_path, database_url, "sandbox", "list", "--merchant", merchant_id)
    assert left["id"] == plain["id"]
    # Deleted: not found now, as the API answers (exit 1: the service refuses it).
    line = _refused(tmp_path, database_url, 1, *delete)
    assert line.startswith("fgcpay: not_found: "), line


def test_refusals_are_one_line_exit_1_from_the_service_2_for_what_was_typed(
    tmp_path: Path, database_url: str
) -> None:
    merchant_id = _merchant(database_url, "owner@acme.test")
    other_id = _merchant(database_url, "other@acme.test")
    (theirs,) = _ok(tmp_path, database_url, "sandbox", "create", "--merchant", other_id)
    for args in (
        ["sandbox", "list", "--merchant", "mer_nope"],
        ["sandbox", "delete", "--merchant", "mer_nope", "--sandbox", str(theirs["id"])],
    ):
        assert _refused(tmp_path, database_url, 2, *args) == "fgcpay: no merchant mer_nope"
    create = ["sandbox", "create", "--merchant", merchant_id]
    line = _refused(tmp_path, database_url, 2, *create, "--ttl", "59")
    assert line.startswith("fgcpay: validation_error: --ttl: "), line
    line = _refused(tmp_path, database_url, 2, *create, "--name", "x" * 101)
    assert line.startswith("fgcpay: validation_error: --name: "), line
    # Usage errors are argparse's one line.
    assert "--ttl" in _refused(tmp_path, database_url, 2, *create, "--ttl", "an hour")
    # Another merchant's sandbox is not this one's to delete: not found, and it stays.
    delete = ["sandbox", "delete", "--merchant", merchant_id, "--sandbox", str(theirs["id"])]
    assert _refused(tmp_path, database_url, 1, *delete).startswith("fgcpay: not_found: ")
    (listed,) = _ok(tmp_path, database_url, "sandbox", "list", "--merchant", other_id)
    assert listed["id"] == theirs["id"]
    assert _ok(tmp_path, database_url, "sandbox", "list", "--merchant", merchant_id) == []


async def test_a_sandboxs_merchant_is_refused_and_the_key_works_until_deleted(
    tmp_path: Path, database_url: str, server: Server
) -> None:
    """With the service running on the same database: the key the command printed works
    at once, and is 401 at once after `sandbox delete`; a sandbox's merchant is 403."""

    async def run(*args: str) -> subprocess.CompletedProcess[str]:
        return await trio.to_thread.run_sync(lambda: _run(tmp_path, database_url, *args))

    merchant = await server.merchant()
    made = await run("sandbox", "create", "--merchant", merchant.id, "--name", "live")
    assert made.returncode == 0, made.stderr
    created = json.loads(made.stdout)
    key = {"Authorization": f"Bearer {created['api_key']}"}
    assert (await server.client.get("/checkout/sessions", headers=key)).status_code == 200
    (listed,) = (await merchant.get("/sandboxes")).json()["data"]
    assert listed["id"] == created["id"]

    sandbox = await server.running.service.sandboxes.get(merchant.id, created["id"])
    inner = await run("sandbox", "create", "--merchant", sandbox.merchant_id)
    assert inner.returncode == 1 and inner.stdout == "", inner.stderr
    assert "fgcpay: sandboxes_not_allowed: " in inner.stderr

    gone = await run("sandbox", "delete", "--merchant", merchant.id, "--sandbox", created["id"])
    assert gone.returncode == 0, gone.stderr
    assert (await server.client.get("/checkout/sessions", headers=key)).status_code == 401
    assert (await merchant.get("/sandboxes")).json()["data"] == []


def test_each_refuses_a_missing_sqlite_database(tmp_path: Path) -> None:
    """They only read or change what a database holds: none creates one."""
    for args in (["create"], ["list"], ["delete", "--sandbox", "sbx_test_" + "0" * 24]):
        result = _run(
            tmp_path, "sqlite:///var/fgcpay.sqlite3", "sandbox", *args, "--merchant", "mer_x"
        )
        assert result.returncode == 2, result.stderr
        path = tmp_path.resolve() / "var" / "fgcpay.sqlite3"
        assert f"fgcpay: no SQLite database at {path}" in result.stderr
    assert list(tmp_path.iterdir()) == []
