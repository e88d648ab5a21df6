-- Token buckets for rate limits, shared by every worker process and host (one row per
-- API key or client address). Workers reserve tokens from a row in small batches and
-- spend them locally; a row is refilled by elapsed time in the same statement that
-- reserves from it. A row old enough to have refilled completely carries no
-- information, and housekeeping deletes it.
CREATE TABLE rate_limit_buckets (
    bucket_key TEXT PRIMARY KEY,
    -- tokens left after the last reservation (fractions accrue between reservations)
    tokens DOUBLE PRECISION NOT NULL,
    -- the time of the last reservation, microseconds since the epoch (never moves back)
    stamp_us BIGINT NOT NULL,
    -- tokens handed out by the last reservation, read back with RETURNING
    granted BIGINT NOT NULL
);
