-- Checkout sessions and the idempotency records of the POST endpoints.
CREATE TABLE checkout_sessions (
    id TEXT PRIMARY KEY,
    merchant_id TEXT NOT NULL REFERENCES merchants (id),
    status TEXT NOT NULL,
    -- grows with every change; the compare-and-set token and the events' `sequence`
    version BIGINT NOT NULL,
    amount_minor BIGINT NOT NULL,
    currency TEXT NOT NULL,
    eur_cents BIGINT NOT NULL,
    description TEXT NOT NULL,
    success_url TEXT NOT NULL,
    cancel_url TEXT NOT NULL,
    customer_email TEXT,
    customer_reference TEXT,
    external_reference TEXT,
    metadata TEXT NOT NULL,
    created_at BIGINT NOT NULL,
    updated_at BIGINT NOT NULL,
    expires_at BIGINT NOT NULL,
    paid_at BIGINT
);

-- Lists: newest first per merchant, optionally by status.
CREATE INDEX checkout_sessions_list ON checkout_sessions (merchant_id, created_at, id);
CREATE INDEX checkout_sessions_list_status ON checkout_sessions (merchant_id, status, created_at, id);
-- The expiry sweep reads only sessions still open.
CREATE INDEX checkout_sessions_due ON checkout_sessions (expires_at) WHERE status = 'created';

CREATE TABLE idempotency_keys (
    merchant_id TEXT NOT NULL,
    method TEXT NOT NULL,
    path TEXT NOT NULL,
    idempotency_key TEXT NOT NULL,
    request_hash TEXT NOT NULL,
    -- 'in_flight' while the first request runs, 'done' once its final answer is stored
    state TEXT NOT NULL,
    -- who holds an in-flight record, and until when (a crashed holder's claim lapses)
    owner TEXT NOT NULL,
    locked_until BIGINT NOT NULL,
    response_status BIGINT,
    response_headers TEXT,
    response_body TEXT,
    created_at BIGINT NOT NULL,
    expires_at BIGINT NOT NULL,
    PRIMARY KEY (merchant_id, method, path, idempotency_key)
);

CREATE INDEX idempotency_keys_expiry ON idempotency_keys (expires_at);
