-- The OAuth authorization server's state (oidc-provider's models: clients registered dynamically,
-- grants, authorization codes, access and refresh tokens, interactions, sessions), one row per
-- model instance, kept until it expires.
CREATE TABLE oauth_payloads (
  kind text NOT NULL,
  id text NOT NULL,
  payload jsonb NOT NULL,
  grant_id text,
  uid text,
  user_code text,
  expires_at timestamptz,
  consumed_at timestamptz,
  PRIMARY KEY (kind, id)
);
CREATE INDEX oauth_payloads_grant ON oauth_payloads (grant_id) WHERE grant_id IS NOT NULL;
CREATE INDEX oauth_payloads_uid ON oauth_payloads (uid) WHERE uid IS NOT NULL;
CREATE INDEX oauth_payloads_expires ON oauth_payloads (expires_at) WHERE expires_at IS NOT NULL;

-- Each grant a person approves is also an MCP credential of kind 'oauth' (the connections list
-- shows it with the pasted tokens; revoking it ends the grant).
CREATE TABLE oauth_grant_credentials (
  grant_id text PRIMARY KEY,
  credential_id uuid NOT NULL UNIQUE REFERENCES credentials (id)
);

-- Revoking the credential, by whichever process (the dashboard, ads_disconnect_client, the admin
-- command), ends the grant: its refresh and access tokens are gone with it.
CREATE FUNCTION end_oauth_grant() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
  DELETE FROM oauth_payloads
   WHERE grant_id IN (SELECT grant_id FROM oauth_grant_credentials WHERE credential_id = NEW.id)
      OR (kind = 'Grant' AND id IN (SELECT grant_id FROM oauth_grant_credentials WHERE credential_id = NEW.id));
  RETURN NULL;
END
$$;

CREATE TRIGGER credentials_end_oauth_grant AFTER UPDATE OF revoked_at ON credentials
  FOR EACH ROW WHEN (NEW.revoked_at IS NOT NULL AND NEW.kind = 'oauth')
  EXECUTE FUNCTION end_oauth_grant();
