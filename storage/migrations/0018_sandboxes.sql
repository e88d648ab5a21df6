-- Sandboxes (contract, "Sandboxes"): a sandbox is a merchant row of its own, marked with
-- the merchant who made it (`sandbox_of`), and a `sandboxes` row naming it. Deleting one
-- first sets `deleted_at` (its keys go in that same transaction: 401 at once, in every
-- process), then removes its rows table by table in batches, the merchant row and this
-- row last; a sandbox marked deleted whose rows are not all gone yet (a process died
-- mid-way) is finished by the durable timer, as are those past `expires_at`.
ALTER TABLE merchants ADD COLUMN sandbox_of TEXT;

CREATE TABLE sandboxes (
    id TEXT PRIMARY KEY,
    parent_id TEXT NOT NULL REFERENCES merchants (id),
    -- the sandbox's own merchant row; no foreign key: that row is deleted before this one
    merchant_id TEXT NOT NULL UNIQUE,
    name TEXT,
    created_at BIGINT NOT NULL,
    expires_at BIGINT,
    deleted_at BIGINT
);

-- The parent's list (newest first) and its count of live sandboxes.
CREATE INDEX sandboxes_list ON sandboxes (parent_id, created_at, id) WHERE deleted_at IS NULL;
-- The timer: live sandboxes by expiry, and those whose deletion is not finished.
CREATE INDEX sandboxes_due ON sandboxes (expires_at)
    WHERE deleted_at IS NULL AND expires_at IS NOT NULL;
CREATE INDEX sandboxes_deleting ON sandboxes (deleted_at) WHERE deleted_at IS NOT NULL;
