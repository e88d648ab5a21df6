-- merchants.password_hash holds argon2id hashes from now on (scrypt ones still verify and
-- are replaced at the next sign-in).
-- The merchant dashboard's sign-in. A session is a random id in the browser's cookie; only
-- its SHA-256 is stored (a database read gives no usable session). `created_at` is the
-- sign-in (a session is never carried across one); `last_seen_at` ends it after 12 idle
-- hours.
CREATE TABLE dashboard_sessions (
    id_hash TEXT PRIMARY KEY,
    merchant_id TEXT NOT NULL REFERENCES merchants (id),
    created_at BIGINT NOT NULL,
    last_seen_at BIGINT NOT NULL
);

CREATE INDEX dashboard_sessions_by_merchant ON dashboard_sessions (merchant_id);
CREATE INDEX dashboard_sessions_by_last_seen ON dashboard_sessions (last_seen_at);

-- Failed sign-ins, counted per subject: an email or a client address, each as an HMAC
-- under the server's secret (an address or a mistyped email is not kept in clear). As
-- with wrong PINs (0005), an attempt is reserved (`in_flight`) before its password is
-- compared, so concurrent attempts from any process never pass the limit.
CREATE TABLE sign_in_failures (
    subject TEXT PRIMARY KEY,
    failures BIGINT NOT NULL,
    in_flight BIGINT NOT NULL,
    window_started_at BIGINT NOT NULL,
    locked_until BIGINT
);

CREATE INDEX sign_in_failures_by_window ON sign_in_failures (window_started_at);
