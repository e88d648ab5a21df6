-- The dashboard's create-key form carries a one-use token. The key a form made keeps the
-- SHA-256 of that token; the unique index makes a second send of the same form (a refresh
-- of the "key created" page, a double click, on any process) insert nothing, in the same
-- statement as the key's insert. Keys made otherwise (the operator's) have none.
ALTER TABLE api_keys ADD COLUMN form_token_hash TEXT;

CREATE UNIQUE INDEX api_keys_by_form ON api_keys (merchant_id, form_token_hash);
