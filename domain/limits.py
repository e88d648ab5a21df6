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

# Every refund of a payment is read to know what is left to refund, and listed with it;
# a 1,000,000 FGC payment could otherwise hold 100 million refunds of 0.01.
MAX_REFUNDS_PER_PAYMENT = 100

# Every event is queued for each endpoint subscribed to it: the endpoints multiply the
# outbox's work. Stripe allows 16 endpoints per account.
MAX_WEBHOOK_ENDPOINTS_PER_MERCHANT = 16
