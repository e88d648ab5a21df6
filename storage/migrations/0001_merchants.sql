-- Merchants and their API keys. Times are BIGINT microseconds since the epoch, UTC.
CREATE TABLE merchants (
    id TEXT PRIMARY KEY,
    name TEXT NOT NULL,
    email TEXT NOT NULL UNIQUE,
    -- scrypt hash for the dashboard sign-in; NULL until a password is set
    password_hash TEXT,
    created_at BIGINT NOT NULL
);

CREATE TABLE api_keys (
    id TEXT PRIMARY KEY,
    merchant_id TEXT NOT NULL REFERENCES merchants (id),
    -- SHA-256 of the raw key, hex; the raw key is shown once and never stored
    key_hash TEXT NOT NULL UNIQUE,
    prefix TEXT NOT NULL,
    last4 TEXT NOT NULL,
    created_at BIGINT NOT NULL,
    last_used_at BIGINT,
    revoked_at BIGINT
);

CREATE INDEX api_keys_by_merchant ON api_keys (merchant_id, created_at);
