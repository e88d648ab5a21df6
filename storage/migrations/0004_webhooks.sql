-- Webhook endpoints, events, and the transactional outbox of deliveries.
CREATE TABLE webhook_endpoints (
    id TEXT PRIMARY KEY,
    merchant_id TEXT NOT NULL REFERENCES merchants (id),
    url TEXT NOT NULL,
    -- comma-separated event types, or '*' for all
    enabled_events TEXT NOT NULL,
    -- signing secrets, sealed (AES-GCM under a key derived from the server secret)
    secret_sealed TEXT NOT NULL,
    previous_secret_sealed TEXT,
    previous_secret_expires_at BIGINT,
    created_at BIGINT NOT NULL,
    deleted_at BIGINT
);

CREATE INDEX webhook_endpoints_by_merchant ON webhook_endpoints (merchant_id, created_at);

CREATE TABLE events (
    id TEXT PRIMARY KEY,
    merchant_id TEXT NOT NULL REFERENCES merchants (id),
    type TEXT NOT NULL,
    resource_id TEXT NOT NULL,
    sequence BIGINT NOT NULL,
    -- the exact JSON body every delivery of this event sends
    body TEXT NOT NULL,
    created_at BIGINT NOT NULL
);

CREATE INDEX events_list ON events (merchant_id, created_at, id);
CREATE INDEX events_list_type ON events (merchant_id, type, created_at, id);
CREATE UNIQUE INDEX events_one_per_change ON events (resource_id, type, sequence);

CREATE TABLE deliveries (
    id TEXT PRIMARY KEY,
    event_id TEXT NOT NULL REFERENCES events (id),
    endpoint_id TEXT NOT NULL REFERENCES webhook_endpoints (id),
    merchant_id TEXT NOT NULL,
    -- 'pending', 'succeeded' or 'failed'
    status TEXT NOT NULL,
    attempts BIGINT NOT NULL,
    next_attempt_at BIGINT NOT NULL,
    -- the dispatcher holding it, and until when; a crashed holder's lease lapses
    lease_owner TEXT,
    lease_expires_at BIGINT,
    created_at BIGINT NOT NULL,
    updated_at BIGINT NOT NULL
);

CREATE INDEX deliveries_due ON deliveries (next_attempt_at) WHERE status = 'pending';
CREATE INDEX deliveries_by_event ON deliveries (event_id);

CREATE TABLE delivery_attempts (
    id TEXT PRIMARY KEY,
    delivery_id TEXT NOT NULL REFERENCES deliveries (id),
    attempted_at BIGINT NOT NULL,
    response_status BIGINT,
    latency_ms BIGINT NOT NULL,
    error TEXT,
    response_body TEXT
);

CREATE INDEX delivery_attempts_by_delivery ON delivery_attempts (delivery_id, attempted_at);
