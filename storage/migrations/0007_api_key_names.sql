-- An operator's label for an API key (`fgcpay key create --name`), shown in key lists.
ALTER TABLE api_keys ADD COLUMN name TEXT;
