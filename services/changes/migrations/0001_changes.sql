-- Prepared changes to ad accounts: the exact upstream operation, its digest, who prepared,
-- approved and applied it, and what the platform answered.
CREATE TABLE changes (
  change_id uuid PRIMARY KEY,
  workspace_id uuid NOT NULL,
  account_id uuid NOT NULL,
  tool text NOT NULL,
  status text NOT NULL CHECK (status IN ('prepared', 'approved', 'rejected', 'applying', 'applied', 'failed')),
  summary text NOT NULL,
  method text NOT NULL CHECK (method = 'POST'),
  path text NOT NULL,
  body_json text NOT NULL,
  digest text NOT NULL CHECK (digest ~ '^[0-9a-f]{64}$'),
  target_path text NOT NULL,
  target_before_json text NOT NULL,
  prepared_by text NOT NULL,
  prepared_at timestamptz NOT NULL DEFAULT now(),
  approved_by text,
  approved_at timestamptz,
  rejected_by text,
  rejected_at timestamptz,
  reject_reason text,
  apply_requested_by text,
  apply_requested_at timestamptz,
  applied_at timestamptz,
  upstream_status integer,
  upstream_response_json text,
  error text,
  -- Who approved, as a user id, for the worker's principal.
  approver_user_id uuid,
  -- When the operation was first sent upstream: after this the outcome may be unknown, and a
  -- retry resends with the same idempotency key instead of re-checking the target.
  sent_at timestamptz
);
CREATE INDEX changes_workspace_status ON changes (workspace_id, status, prepared_at DESC);
CREATE INDEX changes_workspace_prepared ON changes (workspace_id, prepared_at DESC);
