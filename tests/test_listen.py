"""`fgcpay listen` as a developer runs it (a real process) against a running service:
each event forwarded to a local receiver, signed in both header families with the secret
it printed; stopped, a payment made, started again: that payment still forwarded, and
nothing twice; its state private and keyless; and each failure one line, exit 2."""

from __future__ import annotations

import json
import stat
import subprocess
from pathlib import Path

import attrs
import pytest
import trio
from fgcpay.core.settings import Settings
from fgcpay.webhooks import verify_delivery
from helpers import MerchantClient, Server, start_server
from hosted import paid_session
from processes import FGCPAY, ListenProcess, free_port
from receiver import Receiver, start_receiver
from standardwebhooks import Webhook


def _listener(server: Server, key: str, receiver: Receiver, home: Path) -> ListenProcess:
    return ListenProcess(
        config_home=home, api_url=server.url + "/api/v1", api_key=key, forward_to=receiver.url
    )


def _assert_signed(body: bytes, headers: dict[str, str], secret: str) -> None:
    """Verifies with `secret` in each header family alone, and with a Standard Webhooks
    library."""
    service_only = {k: v for k, v in headers.items() if not k.startswith("webhook-")}
    standard_only = {k: v for k, v in headers.items() if not k.startswith("service-")}
    verify_delivery(body, service_only, secret)
    verify_delivery(body, standard_only, secret)
    Webhook(secret).verify(body, headers)


async def test_listen_forwards_each_event_signed_with_the_secret_it_printed(
    server: Server, nursery: trio.Nursery, tmp_path: Path
) -> None:
    receiver = await start_receiver(nursery)
    merchant = await server.merchant()
    listener = _listener(server, merchant.key, receiver, tmp_path / "config")
    try:
        secret = await listener.start()
        session = await paid_session(server, merchant)
        (delivery,) = await receiver.wait_for(1)
        line = await listener.line()
        assert await listener.stop() == 0  # Ctrl-C: a clean exit
    finally:
        listener.kill()
    event = json.loads(delivery.body)
    assert (event["type"], event["data"]["object"]["id"]) == (
        "checkout.session.paid",
        session["id"],
    )
    # The body a real delivery sends, with its headers.
    assert delivery.body == (await merchant.get(f"/events/{event['id']}")).content
    assert delivery.headers["service-event-id"] == delivery.headers["webhook-id"] == event["id"]
    assert delivery.headers["content-type"] == "application/json"
    _assert_signed(delivery.body, delivery.headers, secret)
    assert line.split() == [event["created_at"], event["type"], event["id"], "->", "200"]
    assert listener.errors.read_text() == ""


async def test_a_payment_made_while_it_was_stopped_is_forwarded_once_it_is_back(
    server: Server, nursery: trio.Nursery, tmp_path: Path
) -> None:
    receiver = await start_receiver(nursery)
    merchant = await server.merchant()
    home = tmp_path / "config"
    first = _listener(server, merchant.key, receiver, home)
    second = _listener(server, merchant.key, receiver, home)
    earlier = await paid_session(server, merchant)  # before the first run: not forwarded
    try:
        secret = await first.start()
        before = await paid_session(server, merchant)
        await receiver.wait_for(1)
        await first.line()  # forwarded, and remembered
        assert await first.stop() == 0
        missed = await paid_session(server, merchant)  # while nothing listens
        assert await second.start() == secret  # the same secret on this machine
        received = await receiver.wait_for(2)
        await second.line()
        after = await paid_session(server, merchant)
        received = await receiver.wait_for(3)
        await second.line()
        assert await second.stop() == 0
    finally:
        first.kill()
        second.kill()
    forwarded = [json.loads(r.body)["data"]["object"]["id"] for r in received]
    # Each once, in order; the first run began with the events after it started.
    assert forwarded == [before["id"], missed["id"], after["id"]]
    assert earlier["id"] not in forwarded
    for delivery in received:
        _assert_signed(delivery.body, delivery.headers, secret)

    # The state: private to the user, and without the key.
    files = sorted(home.joinpath("fgcpay").iterdir())
    assert [f.name for f in files if not f.name.startswith("listen_secret")] != []
    for path in files:
        assert stat.S_IMODE(path.stat().st_mode) == 0o600, path
        assert merchant.key not in path.read_text(), path
    assert stat.S_IMODE(home.joinpath("fgcpay").stat().st_mode) == 0o700


async def test_it_reconnects_when_the_service_is_back_and_resumes(
    nursery: trio.Nursery, settings: Settings, tmp_path: Path
) -> None:
    """The service restarts (its streams close with 1001, then connections are refused
    for a while): the listener keeps trying, with backoff, and forwards what was paid
    meanwhile."""
    port = free_port()
    settings = attrs.evolve(settings, port=port, public_url=f"http://127.0.0.1:{port}")
    first = await start_server(nursery, settings)
    receiver = await start_receiver(nursery)
    merchant = await first.merchant()
    listener = _listener(first, merchant.key, receiver, tmp_path / "config")
    try:
        secret = await listener.start()
        await first.shutdown()
        second = await start_server(nursery, settings)  # the same port and database
        session = await paid_session(second, MerchantClient(merchant.created, second.client))
        (delivery,) = await receiver.wait_for(1)
        await listener.line()
        assert await listener.stop() == 0
    finally:
        listener.kill()
    assert json.loads(delivery.body)["data"]["object"]["id"] == session["id"]
    _assert_signed(delivery.body, delivery.headers, secret)
    said = listener.errors.read_text()
    assert "connection lost (closed with 1001" in said and "reconnected" in said, said


def _listen_fails(args: list[str], tmp_path: Path, key: str = "fp_test_" + "x" * 32) -> str:
    """Run `fgcpay listen` expecting a failure: its one line of standard error."""
    env = {"PATH": "/usr/bin:/bin", "XDG_CONFIG_HOME": str(tmp_path), "FGCPAY_API_KEY": key}
    done = subprocess.run(
        [*FGCPAY, "listen", *args], env=env, capture_output=True, text=True, timeout=60
    )
    assert done.returncode == 2, (done.stdout, done.stderr)
    assert done.stdout == ""
    lines = done.stderr.splitlines()
    assert len(lines) == 1 and lines[0].startswith("fgcpay: listen: "), done.stderr
    assert "Traceback" not in done.stderr and key not in done.stderr
    return lines[0]


@pytest.mark.parametrize(
    ("api_url", "forward_to", "says"),
    [
        ("http://127.0.0.1:9/api/v1", "http://127.0.0.1:3000/hooks", "cannot reach"),
        # A path that is not the API's base: what to pass instead, before any connection.
        (
            "http://127.0.0.1:9/api",
            "http://127.0.0.1:3000/hooks",
            "--api-url must be the API's base URL, ending in /api/v1"
            " (such as http://127.0.0.1:9/api/v1), not http://127.0.0.1:9/api",
        ),
        ("http://127.0.0.1:9/v1/", "http://127.0.0.1:3000/hooks", "ending in /api/v1"),
        ("http://127.0.0.1:9/api/v1", "localhost:3000/hooks", "--forward-to must be"),
        ("pay.example/api/v1", "http://127.0.0.1:3000/hooks", "--api-url must be"),
    ],
)
def test_what_it_cannot_do_is_one_line_and_exit_2(
    tmp_path: Path, api_url: str, forward_to: str, says: str
) -> None:
    line = _listen_fails(["--api-url", api_url, "--forward-to", forward_to], tmp_path)
    assert says in line


async def test_a_refused_key_is_one_line_and_exit_2(server: Server, tmp_path: Path) -> None:
    args = ["--api-url", server.url + "/api/v1", "--forward-to", "http://127.0.0.1:9/hooks"]
    line = await trio.to_thread.run_sync(_listen_fails, args, tmp_path)
    assert "the API key was refused" in line


async def test_a_bare_origin_is_taken_as_its_api_and_the_lines_are_not_padded(
    server: Server, nursery: trio.Nursery, tmp_path: Path
) -> None:
    """`--api-url http://host:port` (what the browser's address bar shows) means its
    /api/v1; standard output, a pipe here, is plain lines: no padding, no carriage return."""
    receiver = await start_receiver(nursery)
    merchant = await server.merchant()
    listener = ListenProcess(
        config_home=tmp_path / "config",
        api_url=server.url + "/",
        api_key=merchant.key,
        forward_to=receiver.url,
    )
    try:
        secret = await listener.start()
        await paid_session(server, merchant)
        (delivery,) = await receiver.wait_for(1)
        line = await listener.line()
        assert await listener.stop() == 0
        rest = await listener.rest()
    finally:
        listener.kill()
    event = json.loads(delivery.body)
    assert line == f"{event['created_at']}  {event['type']}  {event['id']}  -> 200"
    assert rest == b""
    _assert_signed(delivery.body, delivery.headers, secret)
    assert listener.errors.read_text() == ""
