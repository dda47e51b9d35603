-- What the gateway's periodic OAuth sweep (src/oauth/sweep.ts) needs.

-- When a grant was first redeemed: its first access or refresh token was issued. A connection
-- approved but never redeemed (the client gave up after consent) is revoked by the sweep once its
-- code can no longer be redeemed; one redeemed is never touched by it, however old, even after its
-- expired tokens have been swept.
ALTER TABLE oauth_grant_credentials ADD COLUMN redeemed_at timestamptz;

-- Set by the database whichever process saves the token, so that no write path can miss it (the
-- function keeps this schema as its search_path: a session on another one may write the row).
CREATE FUNCTION note_oauth_grant_redeemed() RETURNS trigger LANGUAGE plpgsql
  SET search_path FROM CURRENT AS $$
BEGIN
  UPDATE oauth_grant_credentials SET redeemed_at = now()
   WHERE grant_id = NEW.grant_id AND redeemed_at IS NULL;
  RETURN NULL;
END
$$;

CREATE TRIGGER oauth_payloads_grant_redeemed AFTER INSERT OR UPDATE ON oauth_payloads
  FOR EACH ROW WHEN (NEW.kind IN ('AccessToken', 'RefreshToken') AND NEW.grant_id IS NOT NULL)
  EXECUTE FUNCTION note_oauth_grant_redeemed();

-- Grants redeemed before this migration (nothing swept tokens until now, so their rows are all
-- here): any token, a consumed code or a use of the connection counts. The trigger exists already,
-- so a token saved while this runs is noted either way.
UPDATE oauth_grant_credentials g SET redeemed_at = now()
 WHERE EXISTS (
         SELECT 1 FROM oauth_payloads p
          WHERE p.grant_id = g.grant_id
            AND (p.kind IN ('AccessToken', 'RefreshToken') OR (p.kind = 'AuthorizationCode' AND p.consumed_at IS NOT NULL)))
    OR EXISTS (SELECT 1 FROM credentials c WHERE c.id = g.credential_id AND c.last_used_at IS NOT NULL);

CREATE INDEX oauth_grant_credentials_unredeemed ON oauth_grant_credentials (credential_id)
  WHERE redeemed_at IS NULL;
CREATE INDEX oauth_consent_decisions_decided ON oauth_consent_decisions (decided_at);
