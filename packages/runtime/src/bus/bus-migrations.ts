/**
 * The bus's own tables, as migrations that ship inside the code: a service bundled into one file
 * carries them with it, and no path has to be resolved at run time.
 */
import type { Migration } from '../db.ts';

export const BUS_MIGRATIONS: readonly Migration[] = [
  {
    file: '0001_outbox.sql',
    sql: `
-- The bus: the outbox (every message a service produced, and, for the Postgres transport, the
-- queue its consumers claim from) and the inbox (which messages each consumer has processed).
-- Applied into the using service's schema by migrateBus; the ledger is bus_migrations.

CREATE TABLE bus_outbox (
  id uuid PRIMARY KEY,
  -- Insertion order: ids may be chosen by the producer, so they say nothing about order.
  seq bigint GENERATED ALWAYS AS IDENTITY,
  topic text NOT NULL,
  key text NOT NULL,
  payload jsonb NOT NULL,
  headers jsonb NOT NULL DEFAULT '{}',
  -- pending: waiting for run_at; running: claimed until locked_until (then claimable again);
  -- done: handled; dead: failed max attempts, kept with last_error until requeued.
  status text NOT NULL DEFAULT 'pending' CHECK (status IN ('pending', 'running', 'done', 'dead')),
  attempts integer NOT NULL DEFAULT 0,
  run_at timestamptz NOT NULL DEFAULT now(),
  locked_by uuid,
  locked_until timestamptz,
  last_error text,
  created_at timestamptz NOT NULL DEFAULT now(),
  updated_at timestamptz NOT NULL DEFAULT now(),
  CHECK ((status = 'running') = (locked_until IS NOT NULL))
);

CREATE INDEX bus_outbox_due ON bus_outbox (topic, seq) WHERE status IN ('pending', 'running');
CREATE INDEX bus_outbox_dead ON bus_outbox (topic, updated_at) WHERE status = 'dead';
CREATE INDEX bus_outbox_done ON bus_outbox (updated_at) WHERE status = 'done';

CREATE TABLE bus_inbox (
  consumer text NOT NULL,
  message_id uuid NOT NULL,
  processed_at timestamptz NOT NULL DEFAULT now(),
  PRIMARY KEY (consumer, message_id)
);

CREATE INDEX bus_inbox_processed_at ON bus_inbox (processed_at);

-- Wakes listening consumers when a message becomes due now (a new one, or a requeued one); a
-- retry scheduled for later is found by polling. Sent at commit, dropped on rollback, and
-- folded by PostgreSQL when one transaction sends the same payload many times.
CREATE FUNCTION bus_outbox_notify() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
  PERFORM pg_notify('bus_outbox', json_build_object('schema', TG_TABLE_SCHEMA, 'topic', NEW.topic)::text);
  RETURN NULL;
END
$$;

CREATE TRIGGER bus_outbox_notify
  AFTER INSERT OR UPDATE OF status ON bus_outbox
  FOR EACH ROW
  WHEN (NEW.status = 'pending' AND NEW.run_at <= now())
  EXECUTE FUNCTION bus_outbox_notify();
`,
  },
  {
    file: '0002_deliveries.sql',
    sql: `
-- Deliveries per consumer, for transports whose broker keeps no attempt count (Kafka): each
-- delivery of a message to a consumer counts one attempt before its handler runs, so a consumer
-- that died mid-handler used one, as a lapsed lease does on the Postgres transport; the last
-- error is kept beside it. Pruned with the inbox; forgotten when a dead message is requeued.

CREATE TABLE bus_deliveries (
  consumer text NOT NULL,
  message_id uuid NOT NULL,
  attempts integer NOT NULL,
  last_error text,
  updated_at timestamptz NOT NULL DEFAULT now(),
  PRIMARY KEY (consumer, message_id)
);

CREATE INDEX bus_deliveries_message ON bus_deliveries (message_id);
CREATE INDEX bus_deliveries_updated_at ON bus_deliveries (updated_at);
`,
  },
  {
    file: '0003_outbox_by_key.sql',
    sql: `
-- A key's messages, found without reading the whole outbox: whether a piece of work (a change
-- being applied) still has a message on its way.
CREATE INDEX bus_outbox_key ON bus_outbox (topic, key);
`,
  },
  {
    file: '0004_outbox_due_by_key_group.sql',
    sql: `
-- A serial-by-key claim's candidates: the key groups (the part of a key before its first space:
-- an ad account) with messages waiting, and each group's first messages, without reading the
-- whole backlog (pg-transport.ts, DUE_ONE_PER_FREE_KEY). "C": the claim compares bytes.
CREATE INDEX bus_outbox_due_by_group ON bus_outbox (topic, (split_part(key, ' ', 1)) COLLATE "C", seq)
  WHERE status IN ('pending', 'running');
-- And the messages running (as many as the consumers' handler slots), without the backlog.
CREATE INDEX bus_outbox_running ON bus_outbox (topic, key) WHERE status = 'running';
`,
  },
];
