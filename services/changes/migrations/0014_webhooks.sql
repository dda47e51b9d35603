-- Webhooks: URLs a workspace admin registered for some events, each delivery signed with the
-- webhook's secret (kept sealed: AES-256-GCM, src/webhooks/secret-cipher.ts).
CREATE TABLE webhooks (
  webhook_id uuid PRIMARY KEY,
  workspace_id uuid NOT NULL,
  url text NOT NULL,
  events text[] NOT NULL CHECK (cardinality(events) >= 1),
  format text NOT NULL CHECK (format IN ('json', 'slack')),
  secret_sealed bytea NOT NULL,
  -- The dashboard's public base URL when it was registered: deliveries link review pages under it.
  review_base_url text NOT NULL,
  created_by text NOT NULL,
  created_at timestamptz NOT NULL DEFAULT now(),
  deleted_by text,
  deleted_at timestamptz
);

CREATE INDEX webhooks_live ON webhooks (workspace_id) WHERE deleted_at IS NULL;

-- Events waiting to be fanned out into one delivery message per matching webhook (the fan-out job,
-- src/webhooks/fan-out.ts). A change's transitions are written here by the trigger below, in the
-- transaction of the transition itself, so no transition is missed or invented whichever code path
-- made it; expiries, which are no transition, by the fan-out job's sweep (once per change).
CREATE TABLE webhook_events (
  event_id bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
  workspace_id uuid NOT NULL,
  event text NOT NULL,
  subject_id text NOT NULL,
  at timestamptz NOT NULL DEFAULT clock_timestamp(),
  fanned_out_at timestamptz
);

CREATE INDEX webhook_events_pending ON webhook_events (event_id) WHERE fanned_out_at IS NULL;
CREATE INDEX webhook_events_subject ON webhook_events (subject_id);
CREATE UNIQUE INDEX webhook_events_expired_once ON webhook_events (subject_id) WHERE event = 'change.expired';

-- Every attempt to deliver an event to a webhook, with its outcome: the dashboard's delivery log.
CREATE TABLE webhook_deliveries (
  delivery_id uuid NOT NULL,
  attempt integer NOT NULL,
  webhook_id uuid NOT NULL,
  workspace_id uuid NOT NULL,
  url text NOT NULL,
  event text NOT NULL,
  subject_id text NOT NULL,
  outcome text NOT NULL CHECK (outcome IN ('delivered', 'failed', 'gave_up')),
  response_status integer,
  error text,
  at timestamptz NOT NULL DEFAULT clock_timestamp(),
  PRIMARY KEY (delivery_id, attempt)
);

CREATE INDEX webhook_deliveries_recent ON webhook_deliveries (workspace_id, at DESC);

CREATE FUNCTION record_change_webhook_event() RETURNS trigger
  LANGUAGE plpgsql
  SET search_path FROM CURRENT
AS $$
DECLARE
  ev text;
BEGIN
  IF TG_OP = 'UPDATE' AND NEW.status IS NOT DISTINCT FROM OLD.status THEN
    RETURN NULL;
  END IF;
  ev := CASE NEW.status
    WHEN 'prepared' THEN 'change.awaiting_approval'
    WHEN 'approved' THEN 'change.approved'
    WHEN 'rejected' THEN 'change.rejected'
    WHEN 'applied' THEN 'change.applied'
    WHEN 'failed' THEN 'change.failed'
  END;
  -- Only workspaces with a webhook keep events: the others would only fill the table.
  IF ev IS NOT NULL AND EXISTS (
    SELECT 1 FROM webhooks w WHERE w.workspace_id = NEW.workspace_id AND w.deleted_at IS NULL
  ) THEN
    INSERT INTO webhook_events (workspace_id, event, subject_id)
    VALUES (NEW.workspace_id, ev, NEW.change_id::text);
  END IF;
  RETURN NULL;
END
$$;

CREATE TRIGGER changes_webhook_events
  AFTER INSERT OR UPDATE OF status ON changes
  FOR EACH ROW EXECUTE FUNCTION record_change_webhook_event();
