-- When each connection's platform credential expires, as the platform reported it when the
-- connection was made (GET /me's credential_expires_at); null when the platform did not say.
ALTER TABLE connections ADD COLUMN credential_expires_at timestamptz;
