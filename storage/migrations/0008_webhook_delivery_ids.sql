-- The delivery log shows deliveries as `whd_` + 24 base62 (the contract's identifier);
-- deliveries written before it have `dlv_` + the same 24 characters. Each old row is
-- copied under its new id, its attempts repointed, then the old row removed: no foreign
-- key is ever left dangling, on either backend, and pending deliveries keep their state.
INSERT INTO deliveries (id, event_id, endpoint_id, merchant_id, status, attempts,
    next_attempt_at, lease_owner, lease_expires_at, created_at, updated_at)
SELECT 'whd_' || substr(id, 5), event_id, endpoint_id, merchant_id, status, attempts,
    next_attempt_at, lease_owner, lease_expires_at, created_at, updated_at
FROM deliveries WHERE substr(id, 1, 4) = 'dlv_';

UPDATE delivery_attempts SET delivery_id = 'whd_' || substr(delivery_id, 5)
WHERE substr(delivery_id, 1, 4) = 'dlv_';

DELETE FROM deliveries WHERE substr(id, 1, 4) = 'dlv_';

-- The log lists a merchant's deliveries newest first (keyset on created_at, id).
CREATE INDEX deliveries_list ON deliveries (merchant_id, created_at, id);
