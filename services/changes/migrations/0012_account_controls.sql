-- Account controls: what a person sets so that an agent cannot spend or write past it.

-- The spend envelope of an ad account: the most its daily budgets may rise in any rolling 24 hours
-- (daily-budget increases plus new daily budgets), in micros of the account currency. Unset with
-- fail_closed: no change that raises a daily budget may be made at all ("no envelope, no write").
-- The row is also what concurrent applies lock, so their reservations are checked one at a time.
CREATE TABLE account_controls (
  workspace_id uuid NOT NULL,
  account_id uuid NOT NULL,
  envelope_micros bigint CHECK (envelope_micros >= 0),
  fail_closed boolean NOT NULL DEFAULT false,
  updated_by text NOT NULL,
  updated_at timestamptz NOT NULL DEFAULT now(),
  PRIMARY KEY (workspace_id, account_id)
);

-- The envelope's ledger: what each change applied (or being applied) raised daily budgets by. An
-- apply reserves its use before it is sent; applied keeps it, a failed apply releases it. Uses
-- reserved or applied in the last 24 hours count against the envelope.
CREATE TABLE envelope_uses (
  workspace_id uuid NOT NULL,
  change_id uuid NOT NULL,
  account_id uuid NOT NULL,
  micros bigint NOT NULL CHECK (micros > 0),
  state text NOT NULL CHECK (state IN ('reserved', 'applied', 'released')),
  reserved_at timestamptz NOT NULL,
  settled_at timestamptz,
  PRIMARY KEY (workspace_id, change_id)
);
CREATE INDEX envelope_uses_window ON envelope_uses (workspace_id, account_id, reserved_at)
  WHERE state <> 'released';

-- Freezes: writes to one ad account (account_id) or to the whole workspace (account_id NULL)
-- stopped by a person, with why. Kept after they are lifted, as the record of who did what.
CREATE TABLE freezes (
  freeze_id uuid PRIMARY KEY,
  workspace_id uuid NOT NULL,
  account_id uuid,
  reason text NOT NULL,
  frozen_by text NOT NULL,
  frozen_at timestamptz NOT NULL DEFAULT now(),
  unfrozen_by text,
  unfrozen_at timestamptz
);
-- At most one freeze in force per account, and one for the workspace.
CREATE UNIQUE INDEX freezes_in_force ON freezes (workspace_id, (COALESCE(account_id::text, '')))
  WHERE unfrozen_at IS NULL;
