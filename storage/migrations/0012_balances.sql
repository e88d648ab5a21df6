-- The balance's running totals, kept in the same transaction as every ledger row and
-- refund that changes them, so `GET /balance` sums a few rows however long the ledger.
-- A merchant's totals are split over shards (0..63): each process adds to the shard of
-- its own, so two processes writing ledger rows side by side (a burst of renewals) never
-- wait on one row; the balance is the sum of the merchant's shards. Amounts are positive
-- minor units: paid (payments and subscription charges), refunded (approved refunds),
-- pending (refunds waiting for review); the count is of ledger rows.
CREATE TABLE balance_shards (
    merchant_id TEXT NOT NULL REFERENCES merchants (id),
    shard BIGINT NOT NULL,
    paid_minor BIGINT NOT NULL,
    refunded_minor BIGINT NOT NULL,
    pending_minor BIGINT NOT NULL,
    transaction_count BIGINT NOT NULL,
    PRIMARY KEY (merchant_id, shard)
);

-- An upgraded database starts from what its ledger and refunds already hold, in shard 0.
INSERT INTO balance_shards (merchant_id, shard, paid_minor, refunded_minor, pending_minor,
    transaction_count)
SELECT merchant_id, 0, SUM(paid), SUM(refunded), SUM(pending), SUM(entries)
FROM (
    SELECT merchant_id,
        CASE WHEN kind = 'refund' THEN 0 ELSE amount_minor END AS paid,
        CASE WHEN kind = 'refund' THEN -amount_minor ELSE 0 END AS refunded,
        0 AS pending,
        1 AS entries
    FROM transactions
    UNION ALL
    SELECT merchant_id, 0, 0, amount_minor, 0 FROM refunds WHERE status = 'pending_review'
) AS ledger
GROUP BY merchant_id;
