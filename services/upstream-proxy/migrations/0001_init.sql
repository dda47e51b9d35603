-- A workspace's connections to ad accounts on the platform, each with its platform credential
-- sealed with AES-256-GCM (nonce || ciphertext || tag) and bound to its workspace and account.

CREATE TABLE connections (
  account_id uuid PRIMARY KEY,
  workspace_id uuid NOT NULL,
  name text NOT NULL CHECK (char_length(name) BETWEEN 1 AND 200),
  currency text NOT NULL CHECK (currency ~ '^[A-Z]{3}$'),
  time_zone text NOT NULL,
  can_write boolean NOT NULL,
  upstream_account_id text NOT NULL,
  -- 12-byte nonce + at least one byte of ciphertext + 16-byte tag.
  credential_ciphertext bytea NOT NULL CHECK (octet_length(credential_ciphertext) > 28),
  created_at timestamptz NOT NULL DEFAULT now(),
  -- One connection per platform account in a workspace; its index also serves lookups by workspace.
  UNIQUE (workspace_id, upstream_account_id)
);
