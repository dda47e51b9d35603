-- The simulated ad platform: accounts, their API credentials (hashes only) and the ledger of
-- mutations the platform applied, which tests read to prove nothing was lost or doubled.

CREATE TABLE accounts (
  id text PRIMARY KEY,
  name text NOT NULL CHECK (char_length(name) BETWEEN 1 AND 200),
  currency text NOT NULL CHECK (currency ~ '^[A-Z]{3}$'),
  time_zone text NOT NULL,
  created_at timestamptz NOT NULL DEFAULT now()
);

-- Only the SHA-256 of a credential is kept; the credential itself is shown once, at creation.
CREATE TABLE credentials (
  token_sha256 bytea PRIMARY KEY CHECK (octet_length(token_sha256) = 32),
  account_id text NOT NULL REFERENCES accounts (id),
  created_at timestamptz NOT NULL DEFAULT now()
);

CREATE INDEX credentials_account_id ON credentials (account_id);

CREATE TABLE ledger (
  id bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
  account_id text NOT NULL REFERENCES accounts (id),
  method text NOT NULL,
  path text NOT NULL,
  idempotency_key text,
  request_body jsonb,
  response_status integer NOT NULL,
  response_body jsonb,
  created_at timestamptz NOT NULL DEFAULT now()
);

-- A key names one mutation per account: a retry with the same key finds the first one.
CREATE UNIQUE INDEX ledger_account_idempotency_key ON ledger (account_id, idempotency_key)
  WHERE idempotency_key IS NOT NULL;

CREATE INDEX ledger_account_id ON ledger (account_id, id);
