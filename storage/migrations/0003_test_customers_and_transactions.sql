-- Test customers who pay on the hosted page, their PIN lockouts, and test transactions.
CREATE TABLE test_customers (
    customer_code TEXT PRIMARY KEY,
    display_name TEXT NOT NULL,
    -- 'succeeds', 'insufficient_funds' or 'blocked'
    outcome TEXT NOT NULL,
    -- HMAC-SHA256 of the PIN keyed with the server's secret, hex; set at start,
    -- so the PIN is never stored in clear and a copy of the database alone cannot test PINs
    pin_hmac TEXT
);

INSERT INTO test_customers (customer_code, display_name, outcome) VALUES
    ('TEST-0001', 'Test customer (succeeds)', 'succeeds'),
    ('TEST-0002', 'Test customer (insufficient funds)', 'insufficient_funds'),
    ('TEST-0003', 'Test customer (blocked)', 'blocked');

-- Wrong PINs per customer code: five within 15 minutes lock the code for 15 minutes.
CREATE TABLE pin_failures (
    customer_code TEXT PRIMARY KEY,
    failures BIGINT NOT NULL,
    window_started_at BIGINT NOT NULL,
    locked_until BIGINT
);

CREATE TABLE transactions (
    id TEXT PRIMARY KEY,
    merchant_id TEXT NOT NULL REFERENCES merchants (id),
    kind TEXT NOT NULL,
    -- one payment per checkout session, enforced here too
    checkout_session_id TEXT UNIQUE REFERENCES checkout_sessions (id),
    customer_code TEXT NOT NULL,
    amount_minor BIGINT NOT NULL,
    currency TEXT NOT NULL,
    mode TEXT NOT NULL,
    created_at BIGINT NOT NULL
);

CREATE INDEX transactions_by_merchant ON transactions (merchant_id, created_at);
