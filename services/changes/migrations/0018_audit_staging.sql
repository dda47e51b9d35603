-- Audit events waiting to be chained. A state change writes its event here, in its own
-- transaction, without touching the workspace's head row; the chainer (src/work/audit-chainer.ts)
-- moves committed rows into audit_log in short transactions that hold the head only for the move,
-- so applies of one workspace no longer wait for each other's outcome transactions to commit.
-- A row leaves this table in the transaction that chains it: each event is chained exactly once.
CREATE TABLE audit_staged (
  id bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
  workspace_id uuid NOT NULL,
  at timestamptz NOT NULL,
  actor text NOT NULL,
  kind text NOT NULL,
  subject text NOT NULL,
  details jsonb NOT NULL
);

CREATE INDEX audit_staged_workspace ON audit_staged (workspace_id, id);
