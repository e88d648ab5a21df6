"""The receiver check against a real service over HTTP, on both backends (issue 30, item
4): `POST /webhook_endpoints/{id}/check`, the dashboard's "Check receiver" and
`fgcpay webhook check`. A correct receiver (the Standard Webhooks library, or
`fgcpay.webhooks.verify_delivery`) passes the eight checks; receivers that skip a part
of the verification fail exactly the checks that part is for, named in the report."""

from __future__ import annotations

import json
import os
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import attrs
import pytest
import trio
import trio.testing
from fgcpay.core.clock import TrioClock
from fgcpay.core.settings import ConfigError, Settings, load_settings
from fgcpay.domain.signing import verify
from fgcpay.webhooks import WebhookVerificationError, verify_delivery
from helpers import (
    TEST_SECRET,
    MerchantClient,
    Server,
    add_endpoint,
    open_dashboard,
    sign_in,
    start_server,
)
from receiver import Received, Receiver, start_receiver
from standardwebhooks import Webhook
from standardwebhooks.webhooks import WebhookVerificationError as StandardVerificationError

ORDER = [
    "signed",
    "redelivery",
    "rotated_secrets",
    "bad_signature",
    "tampered_body",
    "stale_timestamp",
    "future_timestamp",
    "missing_signature",
]
Judge = Callable[[Received], int]


def answering(receiver: Receiver, judge: Judge) -> None:
    """The receiver answers each delivery with `judge`'s status."""
    receiver.script = lambda n: (judge(receiver.received[n]), {})


# -- receivers, correct and not -----------------------------------------------------------


def standard_library(secret: str) -> Judge:
    """Correct: the Standard Webhooks library verifies (signatures, timestamp both ways)."""
    hook = Webhook(secret)

    def judge(got: Received) -> int:
        try:
            hook.verify(got.body, got.headers)
        except StandardVerificationError:
            return 400
        return 200  # a webhook-id seen before is acknowledged again, not acted on twice

    return judge


def fgcpay_helper(secret: str) -> Judge:
    """Correct: fgcpay's own helper (it reads the Service-* family first)."""

    def judge(got: Received) -> int:
        try:
            verify_delivery(got.body, got.headers, secret)
        except WebhookVerificationError:
            return 401
        return 204

    return judge


def trusts_everything(secret: str) -> Judge:
    return lambda got: 200


def no_timestamp_check(secret: str) -> Judge:
    def judge(got: Received) -> int:
        try:
            verify(got.body, got.headers, secret, now=int(time.time()), tolerance=10**10)
        except WebhookVerificationError:
            return 400
        return 200

    return judge


def past_only(secret: str) -> Judge:
    """Refuses old timestamps but takes any from the future."""

    def judge(got: Received) -> int:
        stamp = got.headers.get("webhook-timestamp", "0")
        now = max(int(time.time()), int(stamp) if stamp.isdigit() else 0)
        try:
            verify(got.body, got.headers, secret, now=now)
        except WebhookVerificationError:
            return 400
        return 200

    return judge


def signature_present_only(secret: str) -> Judge:
    """Looks for a well-formed, fresh signature header, and never computes the HMAC."""

    def judge(got: Received) -> int:
        stamp = got.headers.get("webhook-timestamp", "")
        signed = got.headers.get("webhook-signature", "").startswith("v1,")
        fresh = stamp.isdigit() and abs(time.time() - int(stamp)) <= 300
        return 200 if signed and fresh else 400

    return judge


def first_signature_only(secret: str) -> Judge:
    """Compares the first `v1,` value only: a rotation's second signature is never tried."""

    def judge(got: Received) -> int:
        headers = dict(got.headers)
        headers["webhook-signature"] = headers.get("webhook-signature", "").split(" ")[0]
        try:
            Webhook(secret).verify(got.body, headers)
        except StandardVerificationError:
            return 400
        return 200

    return judge


def verifies_if_signed(secret: str) -> Judge:
    """Verifies a signature when there is one, and lets an unsigned delivery through."""
    correct = standard_library(secret)

    def judge(got: Received) -> int:
        if "webhook-signature" not in got.headers and "service-signature" not in got.headers:
            return 200
        return correct(got)

    return judge


def refuses_redelivery(secret: str) -> Judge:
    """Correct, but a webhook-id it has seen is answered 409 rather than acknowledged."""
    correct = standard_library(secret)
    seen: set[str] = set()

    def judge(got: Received) -> int:
        status = correct(got)
        if status == 200:
            if got.headers["webhook-id"] in seen:
                return 409
            seen.add(got.headers["webhook-id"])
        return status

    return judge


BROKEN: list[tuple[Callable[[str], Judge], list[str]]] = [
    (
        trusts_everything,
        [
            "bad_signature",
            "tampered_body",
            "stale_timestamp",
            "future_timestamp",
            "missing_signature",
        ],
    ),
    (no_timestamp_check, ["stale_timestamp", "future_timestamp"]),
    (past_only, ["future_timestamp"]),
    (signature_present_only, ["bad_signature", "tampered_body"]),
    (first_signature_only, ["rotated_secrets"]),
    (verifies_if_signed, ["missing_signature"]),
    (refuses_redelivery, ["redelivery"]),
]


# -- the API --------------------------------------------------------------------------------


async def _endpoint(merchant: MerchantClient, receiver: Receiver) -> tuple[str, str]:
    created = await add_endpoint(merchant, receiver.url)
    return created["id"], created["secret"]


async def _check(merchant: MerchantClient, endpoint_id: str) -> dict[str, Any]:
    answer = await merchant.post(f"/webhook_endpoints/{endpoint_id}/check")
    assert answer.status_code == 200, answer.text
    report: dict[str, Any] = answer.json()
    return report


def _failed(report: dict[str, Any]) -> list[str]:
    return [check["name"] for check in report["checks"] if not check["passed"]]


async def test_a_correct_receiver_passes_all_eight_checks_in_the_contracts_order(
    server: Server, nursery: trio.Nursery
) -> None:
    receiver = await start_receiver(nursery)
    merchant = await server.merchant()
    endpoint_id, secret = await _endpoint(merchant, receiver)
    answering(receiver, standard_library(secret))

    report = await _check(merchant, endpoint_id)
    assert report == {
        "object": "webhook_check",
        "endpoint_id": endpoint_id,
        "url": receiver.url,
        "passed": True,
        "checks": [
            {"name": name, "passed": True, "expected": expected, "observed": observed}
            for name, expected, observed in zip(
                ORDER, ["2xx"] * 3 + ["4xx"] * 5, ["200"] * 3 + ["400"] * 5, strict=True
            )
        ],
    }
    got = receiver.received
    assert len(got) == 8, "one delivery per check"
    first, again = got[0], got[1]
    assert again.headers["webhook-id"] == first.headers["webhook-id"] and again.body == first.body
    assert len({r.headers["webhook-id"] for r in got}) == 7, (
        "the others are deliveries of their own"
    )
    event = json.loads(first.body)
    assert event["type"] == "webhook_endpoint.check" and event["object"] == "event"
    assert event["data"]["object"] == {
        "object": "webhook_check",
        "endpoint_id": endpoint_id,
        "url": receiver.url,
    }
    # Both header families on the signed one; none on the unsigned one.
    assert first.headers["service-event-id"] == first.headers["webhook-id"]
    verify(first.body, first.headers, secret, now=int(first.headers["service-timestamp"]))
    assert "service-signature" not in got[7].headers and "webhook-signature" not in got[7].headers
    stale, future = (int(r.headers["webhook-timestamp"]) for r in got[5:7])
    assert future - stale >= 1200

    # fgcpay's own helper is a correct receiver too; any 2xx and 4xx will do.
    answering(receiver, fgcpay_helper(secret))
    report = await _check(merchant, endpoint_id)
    assert report["passed"] is True
    assert [c["observed"] for c in report["checks"]] == ["204"] * 3 + ["401"] * 5

    # Not events: in no list, no delivery log; and no type an endpoint may subscribe to.
    assert (await merchant.get("/events")).json()["data"] == []
    assert (await merchant.get("/webhook_deliveries")).json()["data"] == []
    refused = await merchant.post(
        "/webhook_endpoints",
        json={"url": receiver.url, "enabled_events": ["webhook_endpoint.check"]},
    )
    assert refused.status_code == 400 and refused.json()["details"][0]["field"] == "enabled_events"


async def test_receivers_that_skip_a_check_fail_exactly_that_check(
    server: Server, nursery: trio.Nursery
) -> None:
    receiver = await start_receiver(nursery)
    merchant = await server.merchant()
    endpoint_id, secret = await _endpoint(merchant, receiver)
    for make, failing in BROKEN:
        answering(receiver, make(secret))
        report = await _check(merchant, endpoint_id)
        assert report["passed"] is False and _failed(report) == failing, make.__name__
        for check in report["checks"]:
            if check["name"] in failing:
                assert check["observed"] != check["expected"], (make.__name__, check)


async def test_a_rotated_endpoint_is_checked_with_both_secrets(
    server: Server, nursery: trio.Nursery
) -> None:
    receiver = await start_receiver(nursery)
    merchant = await server.merchant()
    endpoint_id, old = await _endpoint(merchant, receiver)
    rotated = await merchant.post(f"/webhook_endpoints/{endpoint_id}/rotate_secret")
    new = rotated.json()["secret"]
    # A receiver that still knows only the old secret passes (deliveries carry both)...
    answering(receiver, standard_library(old))
    report = await _check(merchant, endpoint_id)
    assert _failed(report) == ["rotated_secrets"], "...except where only the new one signs"
    answering(receiver, standard_library(new))
    assert (await _check(merchant, endpoint_id))["passed"] is True


async def test_timeouts_name_what_came_and_the_whole_check_is_bounded(
    settings: Settings, clock: trio.testing.MockClock, nursery: trio.Nursery
) -> None:
    # Service time is MockClock's: a hanging delivery runs its deadline out when all is
    # idle, while the answered ones take no service time however slow the machine is
    # (with real time, one of them taking over 0.2 s under load failed its check).
    server = await start_server(nursery, settings, clock=TrioClock())
    receiver = await start_receiver(nursery)
    merchant = await server.merchant()
    endpoint_id, secret = await _endpoint(merchant, receiver)
    checks = server.running.service.receiver_checks
    correct = standard_library(secret)
    # The signed delivery hangs past its deadline (0.2 s here, 10 s in service).
    checks.timeout = 0.2
    receiver.script = lambda n: "hang" if n == 0 else (correct(receiver.received[n]), {})
    report = await _check(merchant, endpoint_id)
    assert _failed(report) == ["signed"]
    assert report["checks"][0]["observed"] == "timeout after 0.2 s"

    # Every delivery hangs: the check ends at its limit, and says which were not sent.
    checks.timeout, checks.limit = 10.0, 0.5
    receiver.script = lambda n: "hang"
    started = trio.current_time()
    report = await _check(merchant, endpoint_id)
    assert trio.current_time() - started < 5
    assert _failed(report) == ORDER
    observed = [check["observed"] for check in report["checks"]]
    assert (
        observed
        == ["timeout: the check's 0.5 s ran out"] + ["not sent: the check's 0.5 s ran out"] * 7
    )


async def test_the_operator_sets_the_whole_checks_bound(
    settings: Settings, nursery: trio.Nursery
) -> None:
    """FGCPAY_WEBHOOK_CHECK_SECONDS bounds a check the service runs (under the request
    limit of a proxy in front), parsed as an operator writes it."""
    configured = load_settings(
        {"FGCPAY_DATABASE_URL": settings.database_url, "FGCPAY_WEBHOOK_CHECK_SECONDS": "1"}
    )
    assert configured.webhook_check_seconds == 1.0
    with pytest.raises(ConfigError, match="FGCPAY_WEBHOOK_CHECK_SECONDS must be at least 1"):
        load_settings({"FGCPAY_WEBHOOK_CHECK_SECONDS": "0.5"})
    server = await start_server(
        nursery, attrs.evolve(settings, webhook_check_seconds=configured.webhook_check_seconds)
    )
    receiver = await start_receiver(nursery)
    receiver.script = lambda n: "hang"
    merchant = await server.merchant()
    endpoint_id, _ = await _endpoint(merchant, receiver)
    started = trio.current_time()
    report = await _check(merchant, endpoint_id)
    assert trio.current_time() - started < 5
    observed = [check["observed"] for check in report["checks"]]
    assert (
        observed == ["timeout: the check's 1 s ran out"] + ["not sent: the check's 1 s ran out"] * 7
    )
    await server.shutdown()


async def test_one_check_at_a_time_per_endpoint_and_404_for_others_endpoints(
    server: Server, nursery: trio.Nursery
) -> None:
    receiver = await start_receiver(nursery)
    merchant = await server.merchant()
    endpoint_id, _ = await _endpoint(merchant, receiver)
    other_id, _ = await _endpoint(merchant, receiver)
    server.running.service.receiver_checks.limit = 1.0
    receiver.script = lambda n: "hang"
    first: dict[str, Any] = {}

    async def running() -> None:
        first.update(await _check(merchant, endpoint_id))

    async with trio.open_nursery() as inner:
        inner.start_soon(running)
        await receiver.wait_for(1)
        again = await merchant.post(f"/webhook_endpoints/{endpoint_id}/check")
        assert again.status_code == 429, again.text
        assert again.json()["code"] == "rate_limited"
        assert again.json()["details"] == {"retry_after_seconds": 1}
        assert again.headers["retry-after"] == "1"
        assert "one at a time" in again.json()["message"]
        # Another endpoint is not held up by it (its own check, here hanging too).
        other = await merchant.post(f"/webhook_endpoints/{other_id}/check")
        assert other.status_code == 200 and other.json()["endpoint_id"] == other_id
    assert first["passed"] is False

    stranger = await server.merchant("Other Shop")
    for who, path in [
        (stranger, f"/webhook_endpoints/{endpoint_id}/check"),
        (merchant, "/webhook_endpoints/we_000000000000000000000000/check"),
    ]:
        missing = await who.post(path)
        assert missing.status_code == 404 and missing.json()["code"] == "not_found"
    unknown = await merchant.post(f"/webhook_endpoints/{endpoint_id}/check", json={"x": 1})
    assert unknown.status_code == 400


async def test_a_private_target_is_refused_unless_the_operator_allows_it(
    server: Server, nursery: trio.Nursery
) -> None:
    receiver = await start_receiver(nursery)
    merchant = await server.merchant()
    endpoint_id, _ = await _endpoint(merchant, receiver)  # allowed when it was registered
    server.running.service.receiver_checks.allow_private = False
    refused = await merchant.post(f"/webhook_endpoints/{endpoint_id}/check")
    assert refused.status_code == 400, refused.text
    (detail,) = refused.json()["details"]
    assert detail["field"] == "url" and "FGCPAY_WEBHOOK_ALLOW_PRIVATE=1" in detail["message"]
    assert receiver.received == [], "nothing was sent"


# -- the dashboard --------------------------------------------------------------------------


async def test_the_dashboard_button_shows_the_report(server: Server, nursery: trio.Nursery) -> None:
    from fgcpay.admin import create_merchant
    from helpers import PASSWORD, new_email

    receiver = await start_receiver(nursery)
    email = new_email()
    created = await create_merchant(server.db, "Acme Coffee", email, password=PASSWORD)
    merchant = MerchantClient(created, server.client)
    dashboard = open_dashboard(server)
    assert (await sign_in(dashboard, email)).status_code == 303
    endpoint_id, secret = await _endpoint(merchant, receiver)
    page = f"/dashboard/webhooks/{endpoint_id}"
    assert "Check receiver" in (await dashboard.get(page)).text

    answering(receiver, standard_library(secret))
    passed = await dashboard.submit(f"{page}/check", {}, page=page)
    assert passed.status_code == 200
    assert "All 8 checks passed" in passed.text
    for name in ORDER:
        assert f'<tr data-check="{name}">' in passed.text

    answering(receiver, no_timestamp_check(secret))
    failed = await dashboard.submit(f"{page}/check", {}, page=page)
    assert failed.status_code == 200
    assert "2 of 8 checks failed: stale_timestamp, future_timestamp." in failed.text
    assert 'role="alert"' in failed.text and failed.text.count('"status-failed">Failed<') == 2

    server.running.service.receiver_checks.allow_private = False
    refused = await dashboard.submit(f"{page}/check", {}, page=page)
    assert refused.status_code == 400
    assert "The receiver check did not run: Not allowed: private" in refused.text
    assert len(receiver.received) == 16

    csrf_less = await dashboard.client.post(f"{page}/check", data={})
    assert csrf_less.status_code in (400, 403) and len(receiver.received) == 16


# -- the command ----------------------------------------------------------------------------


async def _fgcpay(cwd: Path, env: dict[str, str], *args: str) -> tuple[int, list[str], str]:
    done = await trio.run_process(
        [sys.executable, "-m", "fgcpay.cli", *args],
        cwd=cwd,
        env=env,
        capture_stdout=True,
        capture_stderr=True,
        check=False,
    )
    return done.returncode, done.stdout.decode().splitlines(), done.stderr.decode()


def _env(database_url: str, **extra: str) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("FGCPAY_")}
    env.update(FGCPAY_DATABASE_URL=database_url, FGCPAY_SECRET_KEY=TEST_SECRET, **extra)
    return env


async def test_the_command_exits_0_1_or_2_with_a_line_per_check(
    server: Server, nursery: trio.Nursery, database_url: str, tmp_path: Path
) -> None:
    receiver = await start_receiver(nursery)
    merchant = await server.merchant()
    endpoint_id, secret = await _endpoint(merchant, receiver)
    allowed = _env(database_url, FGCPAY_WEBHOOK_ALLOW_PRIVATE="1")

    # --url and --secret: no database needed.
    answering(receiver, standard_library(secret))
    status, lines, _ = await _fgcpay(
        tmp_path, allowed, "webhook", "check", "--url", receiver.url, "--secret", secret
    )
    assert (status, lines) == (0, [f"PASS {name}" for name in ORDER])

    # --endpoint: the URL and the secret (decrypted) from the database.
    answering(receiver, signature_present_only(secret))
    status, lines, err = await _fgcpay(
        tmp_path, allowed, "webhook", "check", "--endpoint", endpoint_id
    )
    assert status == 1, err
    assert lines == [
        "PASS signed",
        "PASS redelivery",
        "PASS rotated_secrets",
        "FAIL bad_signature: expected 4xx, observed 200",
        "FAIL tampered_body: expected 4xx, observed 200",
        "PASS stale_timestamp",
        "PASS future_timestamp",
        "PASS missing_signature",
    ]
    assert err.splitlines()[-1] == "fgcpay: 2 of 8 checks failed"
    assert len(receiver.received) == 16

    # The private-network rule is the operator's: without it, nothing is sent (exit 2).
    private = _env(database_url)
    status, lines, err = await _fgcpay(
        tmp_path, private, "webhook", "check", "--endpoint", endpoint_id
    )
    assert (status, lines) == (2, [])
    assert "FGCPAY_WEBHOOK_ALLOW_PRIVATE=1" in err.splitlines()[-1]
    assert len(receiver.received) == 16


@pytest.mark.parametrize(
    ("args", "says"),
    [
        (["--url", "http://127.0.0.1:9/hooks"], "--url needs --secret"),
        (["--endpoint", "we_x", "--secret", "whsec_AAAA"], "--secret goes with --url"),
        (["--endpoint", "we_x", "--url", "http://127.0.0.1:9/"], "not allowed with argument"),
        ([], "one of the arguments --endpoint --url is required"),
        (["--url", "http://127.0.0.1:9/", "--secret", "whsec_*"], "--secret: a signing secret"),
        (["--url", "ftp://shop.example/", "--secret", "whsec_AAAA"], "--url: Not allowed"),
    ],
)
async def test_the_command_refuses_a_usage_error_with_exit_2(
    tmp_path: Path, args: list[str], says: str
) -> None:
    env = _env("sqlite:///absent.sqlite3", FGCPAY_WEBHOOK_ALLOW_PRIVATE="1")
    status, lines, err = await _fgcpay(tmp_path, env, "webhook", "check", *args)
    assert (status, lines) == (2, [])
    assert says in err.splitlines()[-1], err


async def test_the_command_names_an_unknown_endpoint(
    server: Server, database_url: str, tmp_path: Path
) -> None:
    status, lines, err = await _fgcpay(
        tmp_path, _env(database_url), "webhook", "check", "--endpoint", "we_nope"
    )
    assert (status, lines) == (2, [])
    assert err.splitlines()[-1] == "fgcpay: no webhook endpoint we_nope"


async def test_a_name_is_judged_by_the_addresses_it_resolves_to() -> None:
    """Without the operator's permission, a name that resolves to a private address is
    refused before anything is sent; one that does not resolve fails every check."""
    from fgcpay.core.clock import SystemClock
    from fgcpay.domain.errors import ValidationFailed
    from fgcpay.domain.signing import new_secret
    from fgcpay.webhooks.check import ReceiverChecks

    async def resolve(host: str, port: int) -> list[str]:
        if host == "inside.test":
            return ["10.1.2.3"]
        raise OSError("no such name")

    checks = ReceiverChecks(SystemClock(), allow_private=False, resolve=resolve)
    with pytest.raises(ValidationFailed) as refused:
        await checks.check("https://inside.test/hooks", [new_secret()])
    assert refused.value.errors[0].field == "url"
    assert "FGCPAY_WEBHOOK_ALLOW_PRIVATE=1" in refused.value.errors[0].message
    report = await checks.check("https://nowhere.test/hooks", [new_secret()])
    assert not report.passed
    assert {check.observed for check in report.checks} == {
        "destination refused: the host name does not resolve"
    }
