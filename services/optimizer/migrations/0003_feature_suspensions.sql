-- Workspaces whose optimizer feature has ended (the operator's `disable-feature optimizer`): no
-- review is scheduled for their optimizers while their row is here. A workspace without a row has
-- the feature: its optimizers were made through the tools, which need it.

CREATE TABLE feature_suspensions (
  workspace_id uuid PRIMARY KEY,
  since timestamptz NOT NULL
);
