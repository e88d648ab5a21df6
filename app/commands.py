"""The operator commands that read or change what the database holds (`fgcpay merchant`,
`key`, `webhook-endpoint`, `event`, `webhook`, `refund`, `ledger`, `customer`, `trigger`,
`sandbox`): each opens the database (`fgcpay.startup`), does its action through
`fgcpay.admin` (or storage's reads), and prints what it did as JSON, one object a line,
on standard output. A refusal is one line on standard error and exit status 2 (`ledger
verify` exits 1 when it finds a difference; `sandbox` exits 1 when the service refuses
the operation, as the API would). `fgcpay.cli` parses the arguments and calls them.
"""

from __future__ import annotations

import json
import sys
from typing import TYPE_CHECKING, Any

from fgcpay.startup import database

if TYPE_CHECKING:
    from fgcpay.core.settings import Settings
    from fgcpay.domain.errors import ValidationFailed
    from fgcpay.domain.merchants import ApiKey


def fail(message: str, code: int = 2) -> int:
    """Say why the command failed, in one line on standard error; its exit status."""
    print(f"fgcpay: {message}", file=sys.stderr)
    return code


async def merchant_create(settings: Settings, name: str, email: str, password: str | None) -> int:
    """`fgcpay merchant create`: a merchant and its first test API key (shown once)."""
    from fgcpay.admin import MerchantInputError, create_merchant

    async with database(settings) as db:
        try:
            created = await create_merchant(db, name, email, password)
        except MerchantInputError as error:
            return fail(str(error))
    print(json.dumps({"merchant_id": created.merchant.id, "api_key": created.api_key}))
    return 0


async def merchant_set_password(settings: Settings, merchant_id: str, password: str) -> int:
    """`fgcpay merchant set-password`: set or reset the dashboard password (its sessions end)."""
    from fgcpay.admin import MerchantInputError, set_password

    async with database(settings) as db:
        try:
            merchant = await set_password(db, merchant_id, password)
        except MerchantInputError as error:
            return fail(str(error))
    print(json.dumps({"merchant_id": merchant.id, "email": merchant.email, "password_set": True}))
    return 0


async def merchant_list(settings: Settings) -> int:
    """`fgcpay merchant list`: every merchant, one a line."""
    from fgcpay.domain.times import iso_ms
    from fgcpay.storage import merchants as merchant_rows

    async with database(settings) as db:
        merchants = await db.read(merchant_rows.all_merchants)
    for merchant in merchants:
        shown = {"id": merchant.id, "name": merchant.name, "email": merchant.email}
        print(json.dumps({**shown, "created_at": iso_ms(merchant.created_at)}))
    return 0


def _key_json(key: ApiKey) -> dict[str, Any]:
    from fgcpay.domain.times import iso_ms

    def time(us: int | None) -> str | None:
        return None if us is None else iso_ms(us)

    return {
        "id": key.id,
        "name": key.name,
        "redacted_key": key.display,
        "created_at": iso_ms(key.created_at),
        "last_used_at": time(key.last_used_at),
        "revoked_at": time(key.revoked_at),
    }


async def key_create(settings: Settings, merchant_id: str, name: str | None) -> int:
    """`fgcpay key create`: a test API key for the merchant (shown once)."""
    from fgcpay.admin import KeyInputError, create_api_key

    async with database(settings) as db:
        try:
            created = await create_api_key(db, merchant_id, name)
        except KeyInputError as error:
            return fail(str(error))
    print(json.dumps({"id": created.key.id, "api_key": created.api_key}))
    return 0


async def key_list(settings: Settings, merchant_id: str) -> int:
    """`fgcpay key list`: the merchant's keys, never the raw keys."""
    from fgcpay.admin import KeyInputError, api_keys

    async with database(settings) as db:
        try:
            keys = await api_keys(db, merchant_id)
        except KeyInputError as error:
            return fail(str(error))
    for key in keys:
        print(json.dumps(_key_json(key)))
    return 0


async def key_revoke(settings: Settings, merchant_id: str, key_id: str) -> int:
    """`fgcpay key revoke`: requests with the key are 401 from now on."""
    from fgcpay.admin import KeyInputError, revoke_api_key

    async with database(settings) as db:
        try:
            key = await revoke_api_key(db, merchant_id, key_id)
        except KeyInputError as error:
            return fail(str(error))
    print(json.dumps({"id": key.id, "revoked_at": _key_json(key)["revoked_at"]}))
    return 0


async def endpoint_create(
    settings: Settings, merchant_id: str, url: str, events: str | None, faults: str | None = None
) -> int:
    """`fgcpay webhook-endpoint create`: an endpoint and its signing secret (shown once);
    `faults` the endpoint's `faults` as JSON, checked as the API checks it."""
    from fgcpay.admin import webhook_endpoints
    from fgcpay.domain.endpoint_requests import parse_endpoint
    from fgcpay.domain.errors import ServiceError

    body: dict[str, Any] = {"url": url}
    if events:
        body["enabled_events"] = [part.strip() for part in events.split(",") if part.strip()]
    if faults is not None:
        try:
            body["faults"] = json.loads(faults)
        except ValueError:
            return fail('--faults must be a JSON object, such as \'{"duplicate": 1, "seed": 7}\'')
    from fgcpay.storage import merchants as merchant_rows

    async with database(settings) as db:
        if await db.read(merchant_rows.merchant_by_id, merchant_id) is None:
            return fail(f"no merchant {merchant_id}")
        try:
            endpoint, secret = await webhook_endpoints(db, settings).create(
                merchant_id, parse_endpoint(body)
            )
        except ServiceError as error:
            return fail(f"{error.message} {json.dumps(error.details_json())}")
    created: dict[str, Any] = {"id": endpoint.id, "url": endpoint.url, "secret": secret}
    if endpoint.faults is not None:
        from fgcpay.domain import faults as fault_rules

        created["faults"] = fault_rules.to_json(endpoint.faults)
    print(json.dumps(created))
    return 0


async def event_redeliver(settings: Settings, merchant_id: str, event_id: str) -> int:
    """`fgcpay event redeliver`: a new delivery of the event to each endpoint subscribed to it."""
    from fgcpay.admin import webhook_endpoints
    from fgcpay.domain.errors import ServiceError

    async with database(settings) as db:
        try:
            queued = await webhook_endpoints(db, settings).redeliver(merchant_id, event_id)
        except ServiceError as error:
            return fail(error.message)
    print(json.dumps({"event_id": event_id, "deliveries_queued": queued}))
    return 0


async def webhook_deliveries(
    settings: Settings,
    merchant_id: str,
    event_id: str | None,
    endpoint_id: str | None,
    status: str | None,
) -> int:
    """`fgcpay webhook deliveries`: the delivery log, newest first, with the attempts."""
    from fgcpay.admin import DeliveryLogInputError, delivery_log
    from fgcpay.domain.deliveries import delivery_to_json

    async with database(settings) as db:
        try:
            async for delivery in delivery_log(db, merchant_id, event_id, endpoint_id, status):
                print(json.dumps(delivery_to_json(delivery)))
        except DeliveryLogInputError as error:
            return fail(str(error))
    return 0


async def webhook_check(settings: Settings, endpoint_id: str) -> int:
    """`fgcpay webhook check --endpoint`: the receiver check of an endpoint, with its URL
    and its secrets as the dispatcher signs with them (decrypted with the service's key)."""
    from fgcpay.admin import webhook_endpoints
    from fgcpay.storage import webhooks as webhook_rows

    async with database(settings) as db:
        endpoint = await db.read(webhook_rows.endpoint_by_id, endpoint_id[:64])
        if endpoint is None:
            return fail(f"no webhook endpoint {endpoint_id}")
        signing_secrets = webhook_endpoints(db, settings).signing_secrets(endpoint)
    return await _receiver_check(
        settings.webhook_allow_private, endpoint.url, signing_secrets, endpoint.id
    )


async def webhook_check_url(allow_private: bool, url: str, secret: str) -> int:
    """`fgcpay webhook check --url --secret`: the receiver check of any URL."""
    from fgcpay.domain.signing import secret_problem

    problem = secret_problem(secret)
    if problem:
        return fail(f"--secret: {problem}")
    return await _receiver_check(allow_private, url, [secret], None)


async def _receiver_check(
    allow_private: bool, url: str, signing_secrets: list[str], endpoint_id: str | None
) -> int:
    from fgcpay.core.clock import SystemClock
    from fgcpay.domain.errors import ValidationFailed
    from fgcpay.domain.receiver_check import report_lines
    from fgcpay.webhooks.check import ReceiverChecks

    checks = ReceiverChecks(SystemClock(), allow_private)
    try:
        report = await checks.check(url, signing_secrets, endpoint_id)
    except ValidationFailed as refused:  # the private-network rule; nothing was sent
        where = "--url" if endpoint_id is None else "the endpoint's URL"
        return fail(f"{where}: {refused.errors[0].message}")
    for line in report_lines(report):
        print(line, flush=True)
    failed = report.failed()
    if failed:
        # Exit 1, not the usage errors' 2: the check ran, and the receiver failed it.
        print(f"fgcpay: {len(failed)} of {len(report.checks)} checks failed", file=sys.stderr)
        return 1
    return 0


async def customer_unlock(settings: Settings, code: str, merchant_id: str | None) -> int:
    """`fgcpay customer unlock`: lift a customer code's wrong-PIN lock."""
    from fgcpay.admin import UnlockInputError, unlock_customer

    async with database(settings) as db:
        try:
            code, lifted = await unlock_customer(db, code, merchant_id)
        except UnlockInputError as error:
            return fail(str(error))
    print(json.dumps({"customer_code": code, "merchant_id": merchant_id, "unlocked": lifted}))
    return 0


async def refund_review(settings: Settings, merchant_id: str, refund_id: str, decision: str) -> int:
    """`fgcpay refund approve` and `reject`: the decision on a refund under review."""
    from fgcpay.admin import RefundInputError, review_refund
    from fgcpay.domain.errors import ServiceError
    from fgcpay.domain.refunds import to_json

    async with database(settings) as db:
        try:
            refund = await review_refund(db, settings, merchant_id, refund_id, decision)
        except RefundInputError as error:
            return fail(str(error))
        except ServiceError as error:
            return fail(f"{error.code}: {error.message}")
    print(json.dumps(to_json(refund)))
    return 0


async def trigger(
    settings: Settings, merchant_id: str, event_type: str, object_id: str | None
) -> int:
    """`fgcpay trigger`: an event of `event_type` through the real flows, on the merchant's
    `object_id` or on objects it makes; prints the trigger (its object and events)."""
    from fgcpay.domain import test_helpers
    from fgcpay.domain.errors import ServiceError, ValidationFailed
    from fgcpay.testing.offline import TriggerInputError, trigger_offline

    async with database(settings) as db:
        try:
            asked = test_helpers.parse_trigger({"event_type": event_type, "object": object_id})
            done = await trigger_offline(
                db, settings, merchant_id, asked.event_type, asked.object_id
            )
        except TriggerInputError as error:
            return fail(str(error))
        except ValidationFailed as error:
            problems = "; ".join(f"{e.field}: {e.message}" for e in error.errors)
            return fail(f"{error.code}: {problems}")
        except ServiceError as error:
            return fail(f"{error.code}: {error.message}")
    print(json.dumps(done.to_json()))
    return 0


async def ledger_verify(settings: Settings, merchant_id: str | None) -> int:
    """`fgcpay ledger verify`: the balance's totals recomputed from the ledger; exit 1 on
    any difference."""
    from fgcpay.admin import LedgerInputError, verify_ledger
    from fgcpay.domain.balances import FIELDS
    from fgcpay.domain.money import format_fgc

    def shown(field: str, minor: int) -> str | int:
        return minor if field == "transaction_count" else format_fgc(minor)

    async with database(settings) as db:
        try:
            checks = await verify_ledger(db, merchant_id)
        except LedgerInputError as error:
            return fail(str(error))
    for check in checks:
        differences: list[dict[str, Any]] = [
            {"total": field, "running": shown(field, running), "ledger": shown(field, ledger)}
            for field, running, ledger in check.differences
        ]
        differences += [
            {
                "total": "refund_reserved_fgc",
                "transaction_id": off.transaction_id,
                "running": format_fgc(off.reserved_minor),
                "ledger": format_fgc(off.refunds_minor),
            }
            for off in check.reservations
        ]
        totals = {
            shown_as: shown(shown_as, getattr(check.recomputed, name))
            for name, shown_as in FIELDS.items()
        }
        said = {"merchant_id": check.merchant_id, "agrees": check.agrees, **totals}
        print(json.dumps({**said, "differences": differences}))
    disagreeing = sum(not check.agrees for check in checks)
    if disagreeing:
        # Exit 1, not the usage errors' 2: the command ran, and found what it looks for.
        print(f"fgcpay: the ledger disagrees with the totals of {disagreeing} merchant(s)",
              file=sys.stderr)  # fmt: skip
        return 1
    return 0


# -- sandboxes: exit 1 for an operation the service refuses (the API's 403, 404 and 409,
# as `code: message`), 2 for what the operator typed (an unknown merchant, a bad field).


async def sandbox_create(
    settings: Settings, merchant_id: str, name: str | None, ttl_seconds: int | None
) -> int:
    """`fgcpay sandbox create`: a sandbox of the merchant, printed as the API's create
    answers it, its API key included (shown this once)."""
    from fgcpay.admin import SandboxInputError, sandbox_parent, sandboxes
    from fgcpay.domain.errors import ServiceError, ValidationFailed
    from fgcpay.domain.sandboxes import parse_create, to_json

    body: dict[str, Any] = {}
    if name is not None:
        body["name"] = name
    if ttl_seconds is not None:
        body["ttl_seconds"] = ttl_seconds
    try:
        asked = parse_create(body)
    except ValidationFailed as error:
        return fail(_field_problems(error))
    async with database(settings) as db:
        try:
            parent = await sandbox_parent(db, merchant_id)
            sandbox, api_key = await sandboxes(db, settings).create(parent, asked)
        except SandboxInputError as error:
            return fail(str(error))
        except ServiceError as error:
            return fail(f"{error.code}: {error.message}", 1)
    print(json.dumps(to_json(sandbox, api_key)))
    return 0


async def sandbox_list(settings: Settings, merchant_id: str) -> int:
    """`fgcpay sandbox list`: the merchant's sandboxes, newest first (never a key)."""
    from fgcpay.admin import SandboxInputError, all_sandboxes
    from fgcpay.domain.sandboxes import to_json

    async with database(settings) as db:
        try:
            async for sandbox in all_sandboxes(db, settings, merchant_id):
                print(json.dumps(to_json(sandbox)))
        except SandboxInputError as error:
            return fail(str(error))
    return 0


async def sandbox_delete(settings: Settings, merchant_id: str, sandbox_id: str) -> int:
    """`fgcpay sandbox delete`: the sandbox and every row of it; its key is 401 from now on."""
    from fgcpay.admin import SandboxInputError, sandbox_parent, sandboxes
    from fgcpay.domain.errors import ServiceError
    from fgcpay.domain.sandboxes import deleted_to_json

    async with database(settings) as db:
        try:
            await sandbox_parent(db, merchant_id)
            deleted = await sandboxes(db, settings).delete(merchant_id, sandbox_id)
        except SandboxInputError as error:
            return fail(str(error))
        except ServiceError as error:
            return fail(f"{error.code}: {error.message}", 1)
    print(json.dumps(deleted_to_json(deleted.id)))
    return 0


def _field_problems(error: ValidationFailed) -> str:
    """A 400's fields as the operator typed them: `--ttl: Must be ...`."""
    options = {"name": "--name", "ttl_seconds": "--ttl"}
    problems = "; ".join(f"{options.get(e.field, e.field)}: {e.message}" for e in error.errors)
    return f"{error.code}: {problems}"
