"""What the tests share besides fixtures (those stay in conftest.py): a running service and
its merchants, the requests they make, records built for the storage tests, the OpenAPI
checks, the browser, deadline-bound waits.

Tests import these from here, never from conftest or from another test file. The hosted
page, service processes, webhook receivers and PostgreSQL clusters have modules of their
own beside this package: hosted.py, processes.py, receiver.py, pg_cluster.py.
"""

from ._browser import (
    ARTIFACTS,
    WAIT_MS,
    browser,
    browser_missing,
    fill_and_pay,
    in_browser,
    screenshot,
    shop_site,
)
from ._openapi import assert_documented, component, operation, parameter, schema_validator
from ._page import fill_and_approve, page_url, subscription_to_approve
from ._records import (
    CHARGING,
    CUSTOMER,
    DAY,
    NOW_US,
    SECOND,
    after_transition,
    clock_record,
    subscription_charge,
    subscription_event,
    subscription_record,
)
from ._resources import (
    add_endpoint,
    create,
    create_subscription,
    create_test_clock,
    valid_body,
)
from ._service import (
    BACKENDS,
    TEST_SECRET,
    MerchantClient,
    Server,
    fresh_postgres_database,
    make_settings,
    start_server,
)
from ._subscriptions import (
    StoredEvent,
    add_approved_subscriptions,
    add_subscription,
    add_test_clock,
    advances_held,
    charged_once_each,
    charges_by_subscription,
    charges_of,
    events_by_resource,
    events_of,
    ledger_size,
    stored,
    subscription_body,
    utc_us,
    wait_for_subscription_status,
)
from ._waiting import poll_until, wait_ready, wait_ready_blocking, wait_until

__all__ = [
    "ARTIFACTS",
    "BACKENDS",
    "CHARGING",
    "CUSTOMER",
    "DAY",
    "NOW_US",
    "SECOND",
    "TEST_SECRET",
    "StoredEvent",
    "WAIT_MS",
    "MerchantClient",
    "Server",
    "add_approved_subscriptions",
    "add_endpoint",
    "add_subscription",
    "advances_held",
    "add_test_clock",
    "charged_once_each",
    "charges_by_subscription",
    "charges_of",
    "events_by_resource",
    "events_of",
    "ledger_size",
    "stored",
    "subscription_body",
    "utc_us",
    "wait_for_subscription_status",
    "after_transition",
    "assert_documented",
    "browser",
    "browser_missing",
    "clock_record",
    "component",
    "create",
    "create_subscription",
    "create_test_clock",
    "fill_and_approve",
    "fill_and_pay",
    "page_url",
    "subscription_to_approve",
    "fresh_postgres_database",
    "in_browser",
    "make_settings",
    "operation",
    "parameter",
    "poll_until",
    "schema_validator",
    "screenshot",
    "shop_site",
    "start_server",
    "subscription_charge",
    "subscription_event",
    "subscription_record",
    "valid_body",
    "wait_ready",
    "wait_ready_blocking",
    "wait_until",
]
