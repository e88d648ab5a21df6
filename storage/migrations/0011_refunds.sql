-- Refunds for review, the refund entries of the ledger, and what guards against refunding
-- more than was paid.
CREATE TABLE refunds (
    id TEXT PRIMARY KEY,
    merchant_id TEXT NOT NULL REFERENCES merchants (id),
    -- 'pending_review', 'approved' or 'rejected'
    status TEXT NOT NULL,
    -- grows with every change; the compare-and-set token and the events' `sequence`
    version BIGINT NOT NULL,
    amount_minor BIGINT NOT NULL CHECK (amount_minor > 0),
    currency TEXT NOT NULL,
    -- the ledger row refunded (a payment or a subscription charge), and what it paid
    transaction_id TEXT NOT NULL REFERENCES transactions (id),
    checkout_session_id TEXT,
    subscription_id TEXT,
    reason TEXT,
    metadata TEXT NOT NULL,
    created_at BIGINT NOT NULL,
    updated_at BIGINT NOT NULL,
    reviewed_at BIGINT
);

-- Lists: newest first per merchant, optionally by status.
CREATE INDEX refunds_list ON refunds (merchant_id, created_at, id);
CREATE INDEX refunds_list_status ON refunds (merchant_id, status, created_at, id);
-- A payment's refunds (`fgcpay ledger verify`; deleting a test clock's charges).
CREATE INDEX refunds_of_transaction ON refunds (transaction_id);

-- An approved refund's negative entry names its refund: one entry per refund, ever.
ALTER TABLE transactions ADD COLUMN refund_id TEXT REFERENCES refunds (id);
CREATE UNIQUE INDEX transactions_one_per_refund ON transactions (refund_id);

-- Of a payment or a charge: the part held by refunds not rejected (pending review or
-- approved). A refund is created only by raising it with a conditional write
-- (`amount_minor - refund_reserved_minor >= amount`), in the refund's own transaction, so
-- refunds racing in any number of processes never together pass what was paid; the check
-- says the same once more. A refund entry (negative) holds nothing.
ALTER TABLE transactions ADD COLUMN refund_reserved_minor BIGINT NOT NULL DEFAULT 0
    CHECK (refund_reserved_minor >= 0
        AND (refund_reserved_minor = 0 OR refund_reserved_minor <= amount_minor));

-- The ledger's lists: newest first per merchant, optionally by type; the (created_at, id)
-- keyset replaces the index on (merchant_id, created_at).
DROP INDEX transactions_by_merchant;
CREATE INDEX transactions_list ON transactions (merchant_id, created_at, id);
CREATE INDEX transactions_list_kind ON transactions (merchant_id, kind, created_at, id);
