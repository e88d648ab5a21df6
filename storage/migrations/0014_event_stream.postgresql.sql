-- The event stream (GET /api/v1/events/stream) reads the events table in the order their
-- transactions became visible, so that "resume after the last event seen" misses none
-- (docs/architecture.md, "The event stream"). Each event carries the id of the
-- transaction that inserted it (`stream_xid`: pg_current_xact_id(), the 64-bit form, so
-- it never wraps) and a sequence number within it (`stream_seq`). A reader takes only the
-- rows of transactions below its snapshot's xmin, all of which have ended, ordered by
-- (stream_xid, stream_seq): a transaction still running has an id at or above xmin, and
-- so does every later one, so whatever commits later sorts after everything read.
-- The columns are filled by their defaults, so every insert (a batch through unnest too)
-- gets them without naming them.
CREATE SEQUENCE events_stream_seq;

ALTER TABLE events ADD COLUMN stream_xid BIGINT NOT NULL DEFAULT 0;
ALTER TABLE events ADD COLUMN stream_seq BIGINT;

-- Events already written have all committed: transaction 0, in the order they were made.
UPDATE events SET stream_seq = ordered.n
FROM (SELECT id, row_number() OVER (ORDER BY created_at, id) AS n FROM events) AS ordered
WHERE events.id = ordered.id;

SELECT setval('events_stream_seq', COALESCE((SELECT MAX(stream_seq) FROM events), 0) + 1, false);

ALTER TABLE events
    ALTER COLUMN stream_xid SET DEFAULT (pg_current_xact_id()::text::bigint),
    ALTER COLUMN stream_seq SET DEFAULT nextval('events_stream_seq'),
    ALTER COLUMN stream_seq SET NOT NULL;

ALTER SEQUENCE events_stream_seq OWNED BY events.stream_seq;

CREATE INDEX events_stream ON events (merchant_id, stream_xid, stream_seq);

-- The streams open now, in every process: at most a handful per merchant, and on
-- PostgreSQL a transaction that writes events NOTIFYs only the merchants listed here (a
-- NOTIFY serializes the commits of every transaction that sends one). A process renews
-- `expires_at` of its own rows while they are open; a dead process's rows lapse.
CREATE TABLE event_streams (
    id TEXT PRIMARY KEY,
    merchant_id TEXT NOT NULL REFERENCES merchants (id),
    owner TEXT NOT NULL,
    opened_at BIGINT NOT NULL,
    expires_at BIGINT NOT NULL
);

CREATE INDEX event_streams_by_merchant ON event_streams (merchant_id, expires_at);
CREATE INDEX event_streams_by_owner ON event_streams (owner);
