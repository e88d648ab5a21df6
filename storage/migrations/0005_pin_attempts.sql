-- Wrong PINs are counted per (scope, customer code): scope is the merchant's id for the
-- documented test customers (one merchant's test run never locks another's) and '' for
-- every other code (counted across all merchants). `in_flight` counts attempts whose PIN
-- is being compared right now: an attempt is reserved before its PIN is compared, so
-- failures + in_flight never passes five, across sessions and processes.
CREATE TABLE pin_failures_by_scope (
    scope TEXT NOT NULL,
    customer_code TEXT NOT NULL,
    failures BIGINT NOT NULL,
    in_flight BIGINT NOT NULL,
    window_started_at BIGINT NOT NULL,
    locked_until BIGINT,
    PRIMARY KEY (scope, customer_code)
);

-- Existing counts and locks stay, as global ones; the test customers' shared ones are
-- dropped (from now on they are kept per merchant).
INSERT INTO pin_failures_by_scope
    (scope, customer_code, failures, in_flight, window_started_at, locked_until)
SELECT '', customer_code, failures, 0, window_started_at, locked_until
FROM pin_failures
WHERE customer_code NOT IN (SELECT customer_code FROM test_customers);

DROP TABLE pin_failures;

ALTER TABLE pin_failures_by_scope RENAME TO pin_failures;
