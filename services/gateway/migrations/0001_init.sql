-- Workspaces, their people and the MCP credentials that act for them.
CREATE TABLE workspaces (
  id uuid PRIMARY KEY,
  name text NOT NULL CHECK (length(name) BETWEEN 1 AND 200),
  -- Feature flags switched on for the workspace (e.g. optimizer, performance_imports).
  features text[] NOT NULL DEFAULT '{}',
  created_at timestamptz NOT NULL DEFAULT now()
);

CREATE TABLE users (
  id uuid PRIMARY KEY,
  workspace_id uuid NOT NULL REFERENCES workspaces (id),
  email text NOT NULL UNIQUE CHECK (email = lower(email)),
  -- scrypt$N$r$p$salt$hash, never the password.
  password_hash text NOT NULL,
  role text NOT NULL CHECK (role IN ('admin', 'editor', 'viewer')),
  created_at timestamptz NOT NULL DEFAULT now()
);
CREATE INDEX users_workspace ON users (workspace_id);

-- An MCP credential: an opaque bearer token known only by its SHA-256. It acts for one user
-- (whose current role applies) with the scopes it was granted.
CREATE TABLE credentials (
  id uuid PRIMARY KEY,
  workspace_id uuid NOT NULL REFERENCES workspaces (id),
  user_id uuid NOT NULL REFERENCES users (id),
  name text NOT NULL CHECK (length(name) BETWEEN 1 AND 200),
  kind text NOT NULL CHECK (kind IN ('token', 'oauth')),
  token_hash bytea NOT NULL UNIQUE CHECK (length(token_hash) = 32),
  scopes text[] NOT NULL CHECK (scopes <@ ARRAY['read', 'write']::text[] AND cardinality(scopes) > 0),
  expires_at timestamptz,
  revoked_at timestamptz,
  created_at timestamptz NOT NULL DEFAULT now(),
  last_used_at timestamptz
);
CREATE INDEX credentials_workspace ON credentials (workspace_id);

-- Who did what, for the workspace's audit trail.
CREATE TABLE audit_log (
  id bigserial PRIMARY KEY,
  workspace_id uuid NOT NULL REFERENCES workspaces (id),
  at timestamptz NOT NULL DEFAULT now(),
  actor text NOT NULL,
  action text NOT NULL,
  target text,
  detail jsonb NOT NULL DEFAULT '{}'
);
CREATE INDEX audit_log_workspace_at ON audit_log (workspace_id, at DESC);
