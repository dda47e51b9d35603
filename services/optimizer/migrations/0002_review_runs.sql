-- Review runs and proposals. A run is queued (requested by an agent or by the cadence), claimed by
-- one agent for 30 minutes, then completed with an outcome; a claim that ran out is treated as
-- queued again (claim_expires_at in the past), so no sweep is needed. Each proposal of a completed
-- run carries one variant and moves through dashboard review to publishing as a change.

CREATE TABLE review_runs (
  run_id uuid PRIMARY KEY,
  workspace_id uuid NOT NULL,
  optimizer_id uuid NOT NULL REFERENCES optimizers (optimizer_id),
  account_id uuid NOT NULL,
  status text NOT NULL CHECK (status IN ('queued', 'claimed', 'completed', 'failed', 'cancelled')),
  trigger text NOT NULL CHECK (trigger IN ('request', 'schedule')),
  requested_by text NOT NULL,
  claim_token uuid,
  claimed_by text,
  claimed_at timestamptz,
  claim_expires_at timestamptz,
  snapshot jsonb,
  outcome text CHECK (outcome IN ('proposals', 'no_change', 'insufficient_evidence')),
  summary text,
  -- SHA-256 of the completion as asked (outcome, summary, variants): an identical repeat is recognised.
  completion_digest text,
  completed_at timestamptz,
  cancel_reason text,
  created_at timestamptz NOT NULL,
  updated_at timestamptz NOT NULL,
  CHECK (status <> 'claimed' OR (claim_token IS NOT NULL AND claim_expires_at IS NOT NULL)),
  CHECK ((status = 'completed') = (outcome IS NOT NULL))
);

-- At most one open run per optimizer: a second request reuses it.
CREATE UNIQUE INDEX review_runs_one_open ON review_runs (optimizer_id) WHERE status IN ('queued', 'claimed');
CREATE INDEX review_runs_by_workspace ON review_runs (workspace_id, created_at DESC, run_id DESC);

CREATE TABLE proposals (
  proposal_id uuid PRIMARY KEY,
  workspace_id uuid NOT NULL,
  optimizer_id uuid NOT NULL REFERENCES optimizers (optimizer_id),
  account_id uuid NOT NULL,
  run_id uuid NOT NULL REFERENCES review_runs (run_id),
  -- Position of its variant in the completion, so a run's proposals list in the order proposed.
  position integer NOT NULL,
  status text NOT NULL CHECK (status IN (
    'pending_review', 'changes_requested', 'approved', 'publishing', 'published', 'failed',
    'rejected', 'cancelled', 'expired')),
  revision integer NOT NULL CHECK (revision >= 1),
  variant jsonb NOT NULL CHECK (jsonb_typeof(variant) = 'object'),
  evidence jsonb,
  review_expires_at timestamptz,
  review_note text,
  reviewed_by text,
  approved_by text,
  approved_user_id uuid,
  approved_at timestamptz,
  publish_by timestamptz,
  change_id uuid,
  change_status text,
  change_error text,
  published_at timestamptz,
  cancelled_at timestamptz,
  cancel_reason text,
  created_at timestamptz NOT NULL,
  updated_at timestamptz NOT NULL,
  UNIQUE (run_id, position)
);

CREATE INDEX proposals_by_workspace ON proposals (workspace_id, created_at DESC, position, proposal_id);
