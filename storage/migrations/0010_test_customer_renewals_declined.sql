-- TEST-0004 approves subscriptions (and pays sessions), but every renewal of it is declined.
INSERT INTO test_customers (customer_code, display_name, outcome) VALUES
    ('TEST-0004', 'Test customer (renewals declined)', 'renewals_declined');
