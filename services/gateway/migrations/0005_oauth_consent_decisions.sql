-- One decision per authorization request: the consent page's Approve or Decline, keyed by the
-- provider's interaction uid. A repeated or concurrent post finds the first decision instead of
-- making another grant and connection (oauth/consent-routes.ts).
CREATE TABLE oauth_consent_decisions (
  uid text PRIMARY KEY,
  decision text NOT NULL CHECK (decision IN ('approved', 'declined')),
  grant_id text,
  decided_at timestamptz NOT NULL DEFAULT now()
);
