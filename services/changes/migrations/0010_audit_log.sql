-- The workspace's audit log: one append-only, hash-chained list of events per workspace. Each row's
-- hash is SHA-256 over the canonical JSON (RFC 8785) of its fields and the previous row's hash, so
-- editing, removing or reordering a row breaks the chain from that row on (src/store/audit-store.ts).
CREATE TABLE audit_log (
  workspace_id uuid NOT NULL,
  seq bigint NOT NULL CHECK (seq >= 1),
  at timestamptz NOT NULL,
  actor text NOT NULL,
  kind text NOT NULL,
  subject text NOT NULL,
  details jsonb NOT NULL,
  -- Set for an event another service appends with its own key (the gateway's `g:<row id>`), so
  -- that appending it again returns the row already there.
  source_key text,
  prev_hash text NOT NULL,
  hash text NOT NULL,
  PRIMARY KEY (workspace_id, seq)
);

CREATE UNIQUE INDEX audit_log_source_key ON audit_log (workspace_id, source_key) WHERE source_key IS NOT NULL;

-- The head of each workspace's chain: appends lock this row, so two appends at once never both
-- follow the same row (the chain cannot fork).
CREATE TABLE audit_heads (
  workspace_id uuid PRIMARY KEY,
  seq bigint NOT NULL,
  hash text NOT NULL
);
