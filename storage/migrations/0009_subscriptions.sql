-- Test clocks, subscriptions, and the ledger's subscription charges (one per period).
CREATE TABLE test_clocks (
    id TEXT PRIMARY KEY,
    merchant_id TEXT NOT NULL REFERENCES merchants (id),
    name TEXT,
    frozen_time BIGINT NOT NULL,
    -- 'ready' or 'advancing'
    status TEXT NOT NULL,
    version BIGINT NOT NULL,
    created_at BIGINT NOT NULL,
    updated_at BIGINT NOT NULL,
    -- the target of subscriptions' (test_clock_id, merchant_id) key: a subscription can
    -- only live on a clock of its own merchant
    UNIQUE (id, merchant_id)
);

CREATE INDEX test_clocks_list ON test_clocks (merchant_id, created_at, id);
-- Clocks a process left advancing (it died mid-advance): resumed by the next one.
CREATE INDEX test_clocks_advancing ON test_clocks (updated_at) WHERE status = 'advancing';

CREATE TABLE subscriptions (
    id TEXT PRIMARY KEY,
    merchant_id TEXT NOT NULL REFERENCES merchants (id),
    status TEXT NOT NULL,
    -- grows with every change; the compare-and-set token and the events' `sequence`
    version BIGINT NOT NULL,
    -- 'daily', 'weekly', 'monthly' or 'yearly'
    interval TEXT NOT NULL,
    amount_minor BIGINT NOT NULL,
    currency TEXT NOT NULL,
    eur_cents BIGINT NOT NULL,
    description TEXT NOT NULL,
    merchant_customer_reference TEXT NOT NULL,
    customer_email TEXT,
    success_url TEXT NOT NULL,
    cancel_url TEXT NOT NULL,
    external_reference TEXT,
    metadata TEXT NOT NULL,
    max_total_minor BIGINT,
    end_date BIGINT,
    test_clock_id TEXT,
    created_at BIGINT NOT NULL,
    updated_at BIGINT NOT NULL,
    approved_at BIGINT,
    customer_code TEXT,
    charge_count BIGINT NOT NULL,
    charged_total_minor BIGINT NOT NULL,
    current_period_start BIGINT,
    current_period_end BIGINT,
    -- the durable timer: when the sweep (or the clock's advance) next hands this
    -- subscription to its actor; NULL once nothing is due
    next_action_at BIGINT,
    failed_attempts BIGINT NOT NULL,
    cancelled_at BIGINT,
    ended_at BIGINT,
    ended_reason TEXT,
    FOREIGN KEY (test_clock_id, merchant_id) REFERENCES test_clocks (id, merchant_id)
);

-- Lists: newest first per merchant, optionally by status.
CREATE INDEX subscriptions_list ON subscriptions (merchant_id, created_at, id);
CREATE INDEX subscriptions_list_status ON subscriptions (merchant_id, status, created_at, id);
-- The renewal sweep reads what is due on the real clock, in due order.
CREATE INDEX subscriptions_due ON subscriptions (next_action_at, id)
    WHERE test_clock_id IS NULL AND next_action_at IS NOT NULL;
-- A clock's advance reads what is due on that clock up to its frozen time; deleting a
-- clock finds its subscriptions here too (so the rows without a due time stay in).
CREATE INDEX subscriptions_on_clock ON subscriptions (test_clock_id, next_action_at, id)
    WHERE test_clock_id IS NOT NULL;

-- A subscription charge names its subscription and period (0: the approval's charge, n:
-- the renewal of period n); every other transaction has neither.
ALTER TABLE transactions ADD COLUMN subscription_id TEXT REFERENCES subscriptions (id);
ALTER TABLE transactions ADD COLUMN period BIGINT
    CHECK ((subscription_id IS NULL) = (period IS NULL) AND (period IS NULL OR period >= 0));
-- A period is charged once, whatever two processes do: the second insert fails.
CREATE UNIQUE INDEX transactions_one_per_period ON transactions (subscription_id, period);
