"""The `fgcpay` operator command: its arguments, and which module runs each command
(`fgcpay.commands` the ones on the database, `fgcpay.workers` serve, `fgcpay.listen`
listen, `fgcpay.startup` migrate).

What the operator sees on standard error: first the database in use, then, if the
command fails, one line naming the problem (exit status 2); `--debug` adds the traceback.
"""

from __future__ import annotations

import argparse
import os
import sys
import traceback
from collections.abc import Sequence
from typing import NoReturn

import trio
from fgcpay import commands
from fgcpay.core.logs import configure_logging
from fgcpay.core.settings import database_shown, load_settings
from fgcpay.startup import migrate, one_line, root


class _Parser(argparse.ArgumentParser):
    """argparse, with a usage error in one line (subcommand parsers are of this class too)."""

    def error(self, message: str) -> NoReturn:
        self.exit(2, f"{self.prog}: {message} (see {self.prog} --help)\n")


def main(argv: Sequence[str] | None = None) -> int:
    parser = _Parser(prog="fgcpay", description="fgcpay operator subcommands")
    parser.add_argument("--debug", action="store_true", help="show the traceback of a failure")
    subcommands = parser.add_subparsers(dest="command", required=True)

    serve = subcommands.add_parser("serve", help="run the service (hypercorn, trio worker)")
    serve.add_argument("--host", help="bind address (default FGCPAY_HOST or 127.0.0.1)")
    serve.add_argument("--port", type=int, help="port (default FGCPAY_PORT or 8000)")
    serve.add_argument("--workers", type=int, default=1, help="worker processes (default 1)")

    subcommands.add_parser("migrate", help="apply database migrations and exit")

    merchant = subcommands.add_parser("merchant", help="manage merchants")
    merchant_commands = merchant.add_subparsers(dest="action", required=True)
    create = merchant_commands.add_parser("create", help="create a merchant and a test API key")
    create.add_argument("--name", required=True)
    create.add_argument("--email", required=True)
    create.add_argument("--password", help="dashboard password (optional)")
    merchant_commands.add_parser("list", help="list merchants, one JSON object per line")
    set_password = merchant_commands.add_parser(
        "set-password", help="set or reset a merchant's dashboard password (its sessions end)"
    )
    set_password.add_argument("--merchant", required=True, help="merchant id (mer_...)")
    set_password.add_argument(
        "--password", help="the new password (default: read one line from standard input)"
    )

    key = subcommands.add_parser("key", help="manage a merchant's API keys")
    key_commands = key.add_subparsers(dest="action", required=True)
    new_key = key_commands.add_parser("create", help="create a test API key (shown once)")
    new_key.add_argument("--merchant", required=True, help="merchant id (mer_...)")
    new_key.add_argument("--name", help="a label for the key, shown in key lists")
    keys = key_commands.add_parser("list", help="list a merchant's keys (never the raw keys)")
    keys.add_argument("--merchant", required=True, help="merchant id (mer_...)")
    revoke = key_commands.add_parser("revoke", help="revoke a key: requests with it are 401")
    revoke.add_argument("--merchant", required=True, help="merchant id (mer_...)")
    revoke.add_argument("--key", required=True, help="key id (key_...)")

    endpoint = subcommands.add_parser("webhook-endpoint", help="manage webhook endpoints")
    endpoint_commands = endpoint.add_subparsers(dest="action", required=True)
    add = endpoint_commands.add_parser("create", help="register a webhook endpoint for a merchant")
    add.add_argument("--merchant", required=True, help="merchant id (mer_...)")
    add.add_argument("--url", required=True)
    add.add_argument("--events", help="comma-separated event types (default: all)")
    add.add_argument(
        "--faults",
        metavar="JSON",
        help='faults to inject (test mode), as the API\'s `faults`: \'{"duplicate": 0.5, "seed": 7}\'',
    )

    webhook = subcommands.add_parser("webhook", help="the webhook delivery log")
    webhook_commands = webhook.add_subparsers(dest="action", required=True)
    log = webhook_commands.add_parser(
        "deliveries", help="print deliveries with their attempts, newest first, one JSON per line"
    )
    log.add_argument("--merchant", required=True, help="merchant id (mer_...)")
    log.add_argument("--event", help="only deliveries of this event (evt_...)")
    log.add_argument("--endpoint", help="only deliveries to this endpoint (we_...)")
    log.add_argument("--status", help="pending, succeeded or failed")
    check = webhook_commands.add_parser(
        "check",
        help="check a receiver: 8 deliveries it must accept or refuse; exit 1 if any fails",
        description=(
            "Send a receiver eight deliveries of a `webhook_endpoint.check` event, one after"
            " another (at most 10 s each, 25 s in all): `signed`, `redelivery` and"
            " `rotated_secrets` must be answered 2xx; `bad_signature`, `tampered_body`,"
            " `stale_timestamp`, `future_timestamp` and `missing_signature` 4xx. Prints"
            " `PASS name` or `FAIL name: expected ..., observed ...` per check; exit 0 when"
            " all pass, 1 when any fails, 2 on a usage error or a URL the private-network"
            " rule refuses (FGCPAY_WEBHOOK_ALLOW_PRIVATE=1 allows private targets)."
        ),
    )
    checked = check.add_mutually_exclusive_group(required=True)
    checked.add_argument(
        "--endpoint", help="an endpoint's id (we_...): its URL and secret from the database"
    )
    checked.add_argument("--url", help="a receiver's URL, with --secret (no database needed)")
    check.add_argument("--secret", help="with --url: the secret it verifies with (whsec_...)")

    event = subcommands.add_parser("event", help="events and their deliveries")
    event_commands = event.add_subparsers(dest="action", required=True)
    again = event_commands.add_parser("redeliver", help="queue a new delivery of an event")
    again.add_argument("--merchant", required=True)
    again.add_argument("--event", required=True, help="event id (evt_...)")

    refund = subcommands.add_parser("refund", help="review refunds (approve or reject)")
    refund_commands = refund.add_subparsers(dest="action", required=True)
    for decision, says in (
        ("approve", "approve a refund: a negative entry joins the ledger"),
        ("reject", "reject a refund: its amount is refundable again"),
    ):
        review = refund_commands.add_parser(decision, help=says)
        review.add_argument("--merchant", required=True, help="merchant id (mer_...)")
        review.add_argument("--refund", required=True, help="refund id (re_test_...)")

    fire = subcommands.add_parser(
        "trigger",
        help="test mode: make an event of any type through the real flows (delivered by the"
        " running service)",
    )
    fire.add_argument("event_type", help="an event type, e.g. checkout.session.paid")
    fire.add_argument("--merchant", required=True, help="merchant id (mer_...)")
    fire.add_argument(
        "--object", help="one of its sessions, subscriptions or refunds (else new ones)"
    )

    sandbox = subcommands.add_parser(
        "sandbox", help="a merchant's sandboxes: isolated, disposable merchants for test runs"
    )
    sandbox_commands = sandbox.add_subparsers(dest="action", required=True)
    make = sandbox_commands.add_parser(
        "create", help="create a sandbox; prints it with its API key (shown once)"
    )
    make.add_argument("--merchant", required=True, help="the parent merchant's id (mer_...)")
    make.add_argument("--name", help="a label for the sandbox (at most 100 characters)")
    make.add_argument(
        "--ttl",
        type=int,
        metavar="SECONDS",
        help="delete it, with all its data, this long after it is made (60 to 604800)",
    )
    sandboxes = sandbox_commands.add_parser(
        "list", help="list a merchant's sandboxes, newest first, one JSON object per line"
    )
    sandboxes.add_argument("--merchant", required=True, help="the parent merchant's id (mer_...)")
    remove = sandbox_commands.add_parser(
        "delete", help="delete a sandbox and every row of it: its key is 401 from now on"
    )
    remove.add_argument("--merchant", required=True, help="the parent merchant's id (mer_...)")
    remove.add_argument("--sandbox", required=True, help="sandbox id (sbx_test_...)")

    ledger = subcommands.add_parser("ledger", help="the transaction ledger")
    ledger_commands = ledger.add_subparsers(dest="action", required=True)
    verify = ledger_commands.add_parser(
        "verify",
        help="recompute the balance's totals from the ledger; exit 1 on any difference",
    )
    verify.add_argument("--merchant", help="only this merchant (mer_...)")

    customer = subcommands.add_parser("customer", help="test customers on the hosted page")
    customer_commands = customer.add_subparsers(dest="action", required=True)
    unlock = customer_commands.add_parser("unlock", help="lift a customer code's wrong-PIN lock")
    unlock.add_argument("code", help="customer code, e.g. TEST-0001")
    unlock.add_argument("--merchant", help="only this merchant's lock of a test customer")

    listen = subcommands.add_parser(
        "listen",
        help="forward your events to a local server, signed as webhooks (as stripe listen)",
        description=(
            "Receive the merchant's events live over the API's event stream and POST each to"
            " --forward-to with the body and headers of a real webhook delivery, signed in"
            " both header families (Service-Signature and Standard Webhooks) with a local"
            " signing secret. The secret is printed first; it stays the same on this machine"
            " ($XDG_CONFIG_HOME/fgcpay, by default ~/.config/fgcpay, mode 0600). Each event is"
            " posted once with a 10 s deadline, no retries; a line per event shows the local"
            " answer. The last event seen is remembered there too, so a restart (or a"
            " reconnect after sleep) resumes after it, within 30 days; the first run forwards"
            " new events only. Ctrl-C stops it (exit 0)."
        ),
    )
    listen.add_argument(
        "--api-url",
        help=(
            "the API's base URL, e.g. https://pay.example/api/v1; a bare origin"
            " (https://pay.example) means its /api/v1 (default: $FGCPAY_API_URL)"
        ),
    )
    listen.add_argument(
        "--api-key",
        help=(
            "a test API key, fp_test_... (default: $FGCPAY_API_KEY; prefer the variable,"
            " which keeps the key out of the process list and your shell history)"
        ),
    )
    listen.add_argument(
        "--forward-to",
        required=True,
        help="your local webhook URL, e.g. http://localhost:3000/webhooks",
    )
    listen.add_argument("--events", help="only these event types, comma-separated (default: all)")

    args = parser.parse_args(argv)
    if args.command == "listen":
        # A client of the API: no database, no service settings.
        return _listen(args)
    if args.command == "webhook" and args.action == "check":
        if args.url is not None and not args.secret:
            check.error("--url needs --secret")
        if args.endpoint is not None and args.secret is not None:
            check.error("--secret goes with --url (an endpoint's secret is read from the database)")
        if args.url is not None:
            return _check_url(args)
    try:
        return _run(args)
    except Exception as error:  # every failure ends here, as one line
        if args.debug:
            traceback.print_exception(error)
        return commands.fail(one_line(error))


def _listen(args: argparse.Namespace) -> int:
    from fgcpay.listen import ListenError, listen_until_stopped, make_listener

    try:
        listener = make_listener(args.api_url, args.api_key, args.forward_to, args.events)
        trio.run(listen_until_stopped, listener)
    except KeyboardInterrupt:  # Ctrl-C before the listener took the signal over
        return 0
    except ListenError as error:
        if args.debug:
            traceback.print_exception(error)
        return commands.fail(f"listen: {error}")
    except Exception as error:
        if args.debug:
            traceback.print_exception(error)
        found = root(error)
        if isinstance(found, ListenError):
            return commands.fail(f"listen: {found}")
        return commands.fail(f"listen: {one_line(error)}")
    return 0


def _check_url(args: argparse.Namespace) -> int:
    """`fgcpay webhook check --url`: no database; only the private-network setting."""
    try:
        allow_private = load_settings(keep_secret=False).webhook_allow_private
        return trio.run(commands.webhook_check_url, allow_private, args.url, args.secret)
    except Exception as error:
        if args.debug:
            traceback.print_exception(error)
        return commands.fail(one_line(error))


# The commands that create what they need: a database (and the development secret).
# Every other one only reads or changes what a database already holds, and refuses a
# SQLite file that does not exist rather than leave a new empty one (and a secret) behind.
_CREATING = {("serve", None), ("migrate", None), ("merchant", "create")}


def _missing_sqlite_file(database_url: str) -> str | None:
    """The absolute path of the SQLite database `database_url` names if there is no such
    file; None when there is one (or the database is PostgreSQL, or in memory)."""
    if not database_url.startswith("sqlite:///"):
        return None
    path = database_url[len("sqlite:///") :]
    if path == ":memory:" or os.path.exists(path):
        return None
    return os.path.abspath(path)


def _run(args: argparse.Namespace) -> int:
    creating = (args.command, getattr(args, "action", None)) in _CREATING
    settings = load_settings(keep_secret=creating)
    # First, whatever follows: run from another directory, the relative default SQLite
    # URL is another file, and this line shows which.
    print(f"fgcpay: database {database_shown(settings.database_url)}", file=sys.stderr, flush=True)
    if not creating:
        if missing := _missing_sqlite_file(settings.database_url):
            return commands.fail(f"no SQLite database at {missing} (fgcpay migrate creates one)")
        if not settings.secret_key:
            settings = load_settings()  # the database is there: its secret may be made now
    configure_logging(settings.log_level)

    if args.command == "merchant" and args.action == "list":
        return trio.run(commands.merchant_list, settings)
    if args.command == "merchant" and args.action == "set-password":
        password = args.password
        if password is None:
            # From standard input, so the password is in no process list or shell history.
            password = sys.stdin.readline().rstrip("\r\n")
        return trio.run(commands.merchant_set_password, settings, args.merchant, password)
    if args.command == "key" and args.action == "create":
        return trio.run(commands.key_create, settings, args.merchant, args.name)
    if args.command == "key" and args.action == "list":
        return trio.run(commands.key_list, settings, args.merchant)
    if args.command == "key" and args.action == "revoke":
        return trio.run(commands.key_revoke, settings, args.merchant, args.key)
    if args.command == "serve":
        from fgcpay.workers import serve_workers

        if args.workers < 1:
            return commands.fail("--workers must be at least 1")
        return serve_workers(settings, args.host, args.port, args.workers)
    if args.command == "migrate":
        return trio.run(migrate, settings)
    if args.command == "merchant" and args.action == "create":
        return trio.run(commands.merchant_create, settings, args.name, args.email, args.password)
    if args.command == "webhook-endpoint" and args.action == "create":
        return trio.run(
            commands.endpoint_create, settings, args.merchant, args.url, args.events, args.faults
        )
    if args.command == "event" and args.action == "redeliver":
        return trio.run(commands.event_redeliver, settings, args.merchant, args.event)
    if args.command == "webhook" and args.action == "deliveries":
        filters = (args.event, args.endpoint, args.status)
        return trio.run(commands.webhook_deliveries, settings, args.merchant, *filters)
    if args.command == "webhook" and args.action == "check":
        return trio.run(commands.webhook_check, settings, args.endpoint)
    if args.command == "refund":
        return trio.run(commands.refund_review, settings, args.merchant, args.refund, args.action)
    if args.command == "trigger":
        return trio.run(commands.trigger, settings, args.merchant, args.event_type, args.object)
    if args.command == "sandbox" and args.action == "create":
        return trio.run(commands.sandbox_create, settings, args.merchant, args.name, args.ttl)
    if args.command == "sandbox" and args.action == "list":
        return trio.run(commands.sandbox_list, settings, args.merchant)
    if args.command == "sandbox" and args.action == "delete":
        return trio.run(commands.sandbox_delete, settings, args.merchant, args.sandbox)
    if args.command == "ledger" and args.action == "verify":
        return trio.run(commands.ledger_verify, settings, args.merchant)
    if args.command == "customer" and args.action == "unlock":
        return trio.run(commands.customer_unlock, settings, args.code, args.merchant)
    return commands.fail("unknown command")


if __name__ == "__main__":
    sys.exit(main())
