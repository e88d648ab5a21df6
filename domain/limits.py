"""The bounds on how many of a thing a caller may make, where each one makes later work
grow with it (docs/api.md, "Limits", says each bound, its error and why). The bounds of
one request's own work live with their rules: the body's size and nesting
(`http.body`, `json_depth`), lists' `limit` (`lists`), metadata (`fields`), one advance
(`advance_bounds`), streams per merchant (`event_stream`)."""

from __future__ import annotations

# A test clock's advance, its bounds and its deletion read every subscription on it; a
# merchant's clocks are listed and resumed after a crash. Stripe bounds both too (test
# clocks per account, customers per clock). 100 subscriptions of a clock, each billed up
# to 100 periods, is the 10,000 charges one advance may bill.
MAX_TEST_CLOCKS_PER_MERCHANT = 100
MAX_SUBSCRIPTIONS_PER_TEST_CLOCK = 100

# A test clock's charges over its life: each advance is bounded (`advance_bounds`), but
# advance after advance a clock's subscriptions pile up charges (a daily one, 2.9 million
# by 9999), and deleting the clock deletes them all in one transaction, holding the
# database's writer meanwhile; `GET /transactions?subscription_id=` reads all of one
# subscription's. 100,000 is ten advances at their bound, 273 years of a daily
# subscription; the clock is then deleted and another made.
MAX_CHARGES_PER_TEST_CLOCK = 100_000

# Every refund of a payment is read to know what is left to refund, and listed with it;
# a 1,000,000 FGC payment could otherwise hold 100 million refunds of 0.01.
MAX_REFUNDS_PER_PAYMENT = 100

# Every event is queued for each endpoint subscribed to it: the endpoints multiply the
# outbox's work. Stripe allows 16 endpoints per account.
MAX_WEBHOOK_ENDPOINTS_PER_MERCHANT = 16

# A merchant's active (unrevoked) API keys: each is listed on the dashboard's keys page and
# by `fgcpay key list`, and nothing else stops their number growing (the dashboard's form
# and the operator's command make them at any pace); Stripe, too, bounds an account's
# keys. A test fleet wants a key per service or CI job: 100 leaves room for that, and
# revoking one frees its place.
MAX_ACTIVE_API_KEYS_PER_MERCHANT = 100
# Revoked keys are kept (their rows say when each was used last), so they are not bounded;
# the keys page lists the most recent of them only (`fgcpay key list` prints all).
MOST_REVOKED_API_KEYS_SHOWN = 20

# A merchant's live sandboxes (`POST /sandboxes`): each is a merchant of its own whose rows
# deleting it removes, and a CI run makes one per shard or per test session. 1,000 is far
# past any run's parallelism (Stripe allows five per account) and keeps a parent's list
# and a careless loop bounded; deleting one (or its expiry) frees its place.
MAX_LIVE_SANDBOXES = 1_000

# A hosted page's websockets: each holds a connection, a task and a slot in the status
# hub, and the page's id is in its URL, unauthenticated. A customer has a tab or two open;
# 20 per page and process is a generous ceiling. All pages' sockets of one process are
# bounded too: a merchant may make many sessions (50 a second), each with its 20. Past
# either, the page polls `GET /checkout/<id>/status` instead (hosted_page/static/checkout.js).
MAX_STATUS_SOCKETS_PER_PAGE = 20
MAX_STATUS_SOCKETS_PER_PROCESS = 5_000
