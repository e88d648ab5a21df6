"""The `fgcpay` operator command."""

from __future__ import annotations

import argparse
import json
import multiprocessing
import signal
import sys
from collections.abc import Sequence
from multiprocessing.connection import wait
from multiprocessing.synchronize import Event as EventType
from typing import Any

import trio
from fgcpay.logs import configure_logging, log_event
from fgcpay.settings import ConfigError, Settings, load_settings


def _fail(message: str, code: int = 2) -> int:
    print(f"fgcpay: {message}", file=sys.stderr)
    return code


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="fgcpay", description="fgcpay operator commands")
    commands = parser.add_subparsers(dest="command", required=True)

    serve = commands.add_parser("serve", help="run the service (hypercorn, trio worker)")
    serve.add_argument("--host", help="bind address (default FGCPAY_HOST or 127.0.0.1)")
    serve.add_argument("--port", type=int, help="port (default FGCPAY_PORT or 8000)")
    serve.add_argument("--workers", type=int, default=1, help="worker processes (default 1)")

    commands.add_parser("migrate", help="apply database migrations and exit")

    merchant = commands.add_parser("merchant", help="manage merchants")
    merchant_commands = merchant.add_subparsers(dest="action", required=True)
    create = merchant_commands.add_parser("create", help="create a merchant and a test API key")
    create.add_argument("--name", required=True)
    create.add_argument("--email", required=True)
    create.add_argument("--password", help="dashboard password (optional)")

    endpoint = commands.add_parser("webhook-endpoint", help="manage webhook endpoints")
    endpoint_commands = endpoint.add_subparsers(dest="action", required=True)
    add = endpoint_commands.add_parser("create", help="register a webhook endpoint for a merchant")
    add.add_argument("--merchant", required=True, help="merchant id (mer_...)")
    add.add_argument("--url", required=True)
    add.add_argument("--events", help="comma-separated event types (default: all)")

    event = commands.add_parser("event", help="events and their deliveries")
    event_commands = event.add_subparsers(dest="action", required=True)
    again = event_commands.add_parser("redeliver", help="queue a new delivery of an event")
    again.add_argument("--merchant", required=True)
    again.add_argument("--event", required=True, help="event id (evt_...)")

    customer = commands.add_parser("customer", help="test customers on the hosted page")
    customer_commands = customer.add_subparsers(dest="action", required=True)
    unlock = customer_commands.add_parser("unlock", help="lift a customer code's wrong-PIN lock")
    unlock.add_argument("code", help="customer code, e.g. TEST-0001")
    unlock.add_argument("--merchant", help="only this merchant's lock of a test customer")

    args = parser.parse_args(argv)
    try:
        settings = load_settings()
    except ConfigError as error:
        return _fail(str(error))
    configure_logging(settings.log_level)

    if args.command == "serve":
        return _serve(settings, args.host, args.port, args.workers)
    if args.command == "migrate":
        return trio.run(_migrate, settings)
    if args.command == "merchant" and args.action == "create":
        return trio.run(_create_merchant, settings, args.name, args.email, args.password)
    if args.command == "webhook-endpoint" and args.action == "create":
        return trio.run(_create_endpoint, settings, args.merchant, args.url, args.events)
    if args.command == "event" and args.action == "redeliver":
        return trio.run(_redeliver, settings, args.merchant, args.event)
    if args.command == "customer" and args.action == "unlock":
        return trio.run(_unlock_customer, settings, args.code, args.merchant)
    return _fail("unknown command")


async def _migrate(settings: Settings) -> int:
    from fgcpay.storage import open_storage

    async with open_storage(settings.database_url, 2):
        pass
    log_event("migrations applied", database=settings.database_url.split("://", 1)[0])
    return 0


async def _create_merchant(settings: Settings, name: str, email: str, password: str | None) -> int:
    from fgcpay.admin import MerchantInputError, create_merchant
    from fgcpay.storage import open_storage

    async with open_storage(settings.database_url, 2) as storage:
        try:
            created = await create_merchant(storage, name, email, password)
        except MerchantInputError as error:
            return _fail(str(error), 1)
    print(json.dumps({"merchant_id": created.merchant.id, "api_key": created.api_key}))
    return 0


async def _create_endpoint(settings: Settings, merchant_id: str, url: str, events: str | None) -> int:
    from fgcpay.admin import webhook_endpoints
    from fgcpay.domain.errors import ServiceError
    from fgcpay.domain.webhooks import parse_endpoint
    from fgcpay.storage import open_storage

    body: dict[str, Any] = {"url": url}
    if events:
        body["enabled_events"] = [part.strip() for part in events.split(",") if part.strip()]
    async with open_storage(settings.database_url, 2) as storage:
        if await storage.merchant(merchant_id) is None:
            return _fail(f"no merchant {merchant_id}", 1)
        try:
            endpoint, secret = await webhook_endpoints(storage, settings).create(
                merchant_id, parse_endpoint(body)
            )
        except ServiceError as error:
            return _fail(f"{error.message} {json.dumps(error.details_json())}", 1)
    print(json.dumps({"id": endpoint.id, "url": endpoint.url, "secret": secret}))
    return 0


async def _redeliver(settings: Settings, merchant_id: str, event_id: str) -> int:
    from fgcpay.admin import webhook_endpoints
    from fgcpay.domain.errors import ServiceError
    from fgcpay.storage import open_storage

    async with open_storage(settings.database_url, 2) as storage:
        try:
            queued = await webhook_endpoints(storage, settings).redeliver(merchant_id, event_id)
        except ServiceError as error:
            return _fail(error.message, 1)
    print(json.dumps({"event_id": event_id, "deliveries_queued": queued}))
    return 0


async def _unlock_customer(settings: Settings, code: str, merchant_id: str | None) -> int:
    from fgcpay.admin import UnlockInputError, unlock_customer
    from fgcpay.storage import open_storage

    async with open_storage(settings.database_url, 2) as storage:
        try:
            code, lifted = await unlock_customer(storage, code, merchant_id)
        except UnlockInputError as error:
            return _fail(str(error))
    print(json.dumps({"customer_code": code, "merchant_id": merchant_id, "unlocked": lifted}))
    return 0


def _serve(settings: Settings, host: str | None, port: int | None, workers: int) -> int:
    import os

    from fgcpay.service import hypercorn_config

    if workers < 1:
        return _fail("--workers must be at least 1")
    explicit_public = bool(os.environ.get("FGCPAY_PUBLIC_URL"))
    settings = settings.with_bind(host or settings.host, settings.port if port is None else port, explicit_public)
    # Migrate once, before any worker starts, so workers never race on the schema.
    trio.run(_migrate, settings)
    sockets = hypercorn_config(settings, workers).create_sockets()
    if workers == 1:
        for sock in sockets.insecure_sockets:
            sock.listen(1024)
        trio.run(_run_worker, settings, sockets, None)
        return 0
    return _supervise(settings, sockets, workers)


def _worker_entry(settings: Settings, sockets: Any, shutdown: EventType) -> None:
    configure_logging(settings.log_level)
    for sock in sockets.insecure_sockets:
        sock.listen(1024)
    trio.run(_run_worker, settings, sockets, shutdown)


async def _run_worker(settings: Settings, sockets: Any, shutdown: EventType | None) -> None:
    from fgcpay.service import serve, wait_for_signal

    async def trigger() -> None:
        if shutdown is None:
            await wait_for_signal()
            return
        async with trio.open_nursery() as nursery:

            async def on_event() -> None:
                # A multiprocessing.Event set by the parent process: it can only be polled.
                while not shutdown.is_set():  # noqa: ASYNC110
                    await trio.sleep(0.1)
                nursery.cancel_scope.cancel()

            async def on_signal() -> None:
                await wait_for_signal()
                nursery.cancel_scope.cancel()

            nursery.start_soon(on_event)
            nursery.start_soon(on_signal)

    await serve(settings, sockets=sockets, shutdown_trigger=trigger)


def _supervise(settings: Settings, sockets: Any, workers: int) -> int:
    """Run `workers` processes sharing the listening socket; SIGTERM stops them all."""
    ctx = multiprocessing.get_context("spawn")
    shutdown = ctx.Event()
    processes = [
        ctx.Process(target=_worker_entry, args=(settings, sockets, shutdown), name=f"fgcpay-worker-{i}")
        for i in range(workers)
    ]

    def stop(signum: int, frame: Any) -> None:
        shutdown.set()

    for process in processes:
        process.start()
    signal.signal(signal.SIGTERM, stop)
    signal.signal(signal.SIGINT, stop)
    exit_code = 0
    running = list(processes)
    while running:
        # Whichever worker ends first: if it failed, stop the others too.
        for sentinel in wait([p.sentinel for p in running]):
            ended = next(p for p in running if p.sentinel == sentinel)
            ended.join()
            running.remove(ended)
            if ended.exitcode != 0:
                exit_code = 1
                shutdown.set()
    return exit_code


if __name__ == "__main__":
    sys.exit(main())
