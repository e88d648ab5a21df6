-- Fault injection per webhook endpoint (contract, "Testing tools"). An endpoint's
-- `faults` (JSON, NULL for none), and how many deliveries were created for it since its
-- faults were last set: the outbox transaction that creates a delivery raises it and
-- gives the delivery its ordinal, from which (with the seed) the delivery's faults are
-- decided there and then and kept with it (`fault_plan`: the faults' names and
-- `delay_ms=N`, space-separated; NULL for none). Every process sends it the same way.
ALTER TABLE webhook_endpoints ADD COLUMN faults TEXT;
ALTER TABLE webhook_endpoints ADD COLUMN fault_ordinal BIGINT NOT NULL DEFAULT 0;
ALTER TABLE deliveries ADD COLUMN fault_plan TEXT;
-- The fault an attempt carried (`duplicate`, `reordered`, `delayed`, `bad_signature`,
-- `stale_timestamp`), NULL for none.
ALTER TABLE delivery_attempts ADD COLUMN injected TEXT;
