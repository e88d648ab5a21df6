-- The event stream (GET /api/v1/events/stream) reads the events table in commit order
-- (docs/architecture.md, "The event stream"). SQLite has one writer at a time, so the
-- order events are inserted in is the order they commit in: `stream_seq` counts them,
-- from a one-row counter the writer raises in the inserting transaction (never reused,
-- even if the newest events were deleted). `stream_xid` is always 0 here: it is there so
-- that one query reads both backends (PostgreSQL's migration explains it).
ALTER TABLE events ADD COLUMN stream_xid BIGINT NOT NULL DEFAULT 0;
ALTER TABLE events ADD COLUMN stream_seq BIGINT;

-- Events already written: in the order they were inserted.
UPDATE events SET stream_seq = rowid;

CREATE TABLE event_stream_counter (last_seq BIGINT NOT NULL);

INSERT INTO event_stream_counter (last_seq) SELECT COALESCE(MAX(stream_seq), 0) FROM events;

CREATE INDEX events_stream ON events (merchant_id, stream_xid, stream_seq);

-- The streams open now, in every process: at most a handful per merchant. A process
-- renews `expires_at` of its own rows while they are open; a dead process's rows lapse.
CREATE TABLE event_streams (
    id TEXT PRIMARY KEY,
    merchant_id TEXT NOT NULL REFERENCES merchants (id),
    owner TEXT NOT NULL,
    opened_at BIGINT NOT NULL,
    expires_at BIGINT NOT NULL
);

CREATE INDEX event_streams_by_merchant ON event_streams (merchant_id, expires_at);
CREATE INDEX event_streams_by_owner ON event_streams (owner);
