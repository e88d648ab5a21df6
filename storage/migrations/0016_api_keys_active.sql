-- A merchant's active keys are bounded (domain/limits.py) and counted at each create; its
-- revoked keys are not, and the keys page shows only the most recently revoked. Each read
-- goes by its own partial index, so neither walks the revoked keys.
CREATE INDEX api_keys_active ON api_keys (merchant_id, created_at) WHERE revoked_at IS NULL;

CREATE INDEX api_keys_revoked ON api_keys (merchant_id, revoked_at) WHERE revoked_at IS NOT NULL;
