-- MCP tasks (the io.modelcontextprotocol/tasks extension): a tool call a client asked to run as a
-- task, kept here so that any gateway replica answers tasks/get, and a restart loses none. A task
-- belongs to the credential that created it: another one is told it does not exist.
CREATE TABLE mcp_tasks (
  task_id uuid PRIMARY KEY,
  workspace_id uuid NOT NULL REFERENCES workspaces (id),
  credential_id text NOT NULL,
  tool text NOT NULL,
  arguments jsonb NOT NULL,
  status text NOT NULL CHECK (status IN ('working', 'completed', 'failed', 'cancelled')),
  status_message text NOT NULL DEFAULT '',
  -- The tool's result (completed), or the JSON-RPC error that ended it (failed).
  result jsonb,
  error jsonb,
  -- ads_apply_change: the apply was requested by this task, so the change's outcome is its result.
  apply_requested boolean NOT NULL DEFAULT false,
  -- A tool run in a gateway process: until when that process holds it. A task whose holder is past
  -- it was lost with its process (a restart) and is taken up again by the next tasks/get.
  held_until timestamptz,
  created_at timestamptz NOT NULL DEFAULT now(),
  last_updated_at timestamptz NOT NULL DEFAULT now(),
  ttl_ms integer NOT NULL CHECK (ttl_ms > 0),
  expires_at timestamptz NOT NULL,
  CHECK ((status = 'completed') = (result IS NOT NULL)),
  CHECK ((status = 'failed') = (error IS NOT NULL))
);
CREATE INDEX mcp_tasks_owner ON mcp_tasks (credential_id, created_at);
CREATE INDEX mcp_tasks_expiry ON mcp_tasks (expires_at);

-- What a 2025-era client declared in its last initialize with a credential: those revisions are
-- served statelessly, so a later tools/call can learn the client's capabilities only from here.
CREATE TABLE mcp_client_declarations (
  credential_id text PRIMARY KEY,
  url_elicitation boolean NOT NULL,
  declared_at timestamptz NOT NULL DEFAULT now()
);
