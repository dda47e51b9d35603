/**
 * The outbox: `enqueue` writes a message in the caller's transaction, so the state change and
 * the work it causes commit (or roll back) together. Also the dead-letter admin functions and
 * the migration that creates the bus tables in a service's schema, and the pruning of what is
 * done.
 */
import { createHash, randomUUID } from 'node:crypto';
import { type MigrationResult, migrate, type Pool, type Queryable } from '../db.ts';
import { repeatEvery } from '../lifecycle.ts';
import { currentRequestId, type Logger } from '../log.ts';
import { injectTraceContext } from '../telemetry.ts';
import { type Json, type OutgoingMessage, REQUEST_ID_HEADER } from './bus.ts';
import { BUS_MIGRATIONS } from './bus-migrations.ts';

/** migrateBus creates or updates the bus tables (`bus_outbox`, `bus_inbox`) in `schema`. */
export function migrateBus(pool: Pool, schema: string): Promise<MigrationResult> {
  return migrate(pool, schema, BUS_MIGRATIONS, 'bus_migrations');
}

/**
 * liveKeys returns those of `keys` that still have a message of `topic` on its way to `consumer`:
 * one waiting or being handled, or (on Kafka, where the outbox row is done once the brokers hold
 * the message) one relayed but not yet processed whose last sign of life (relayed, or a delivery
 * counted) is younger than `quietMs`. A key not returned has no message that will reach a
 * handler: its work was finished, given up, or lost.
 */
export async function liveKeys(
  db: Queryable,
  o: { topic: string; consumer: string; keys: string[]; quietMs: number },
): Promise<Set<string>> {
  if (o.keys.length === 0) return new Set();
  const { rows } = await db.query<{ key: string }>(
    `SELECT DISTINCT o.key FROM bus_outbox o
      WHERE o.topic = $1 AND o.key = ANY($3::text[])
        AND (o.status IN ('pending', 'running')
          OR (o.status = 'done'
              AND NOT EXISTS (SELECT 1 FROM bus_inbox i WHERE i.consumer = $2 AND i.message_id = o.id)
              AND greatest(o.updated_at,
                    (SELECT d.updated_at FROM bus_deliveries d WHERE d.consumer = $2 AND d.message_id = o.id))
                  > now() - $4 * interval '1 millisecond'))`,
    [o.topic, o.consumer, o.keys, o.quietMs],
  );
  return new Set(rows.map((r) => r.key));
}

/**
 * enqueue writes `message` to the outbox on `client`, which should be the transaction that makes
 * the state change causing the work, and returns the message id. The message becomes visible to
 * consumers when that transaction commits and never exists if it rolls back. When `message.id`
 * is already in the outbox nothing is written and the same id is returned.
 */
export async function enqueue(client: Queryable, message: OutgoingMessage): Promise<string> {
  const id = message.id ?? randomUUID();
  const headers = { ...message.headers };
  const requestId = currentRequestId();
  if (requestId !== undefined && headers[REQUEST_ID_HEADER] === undefined)
    headers[REQUEST_ID_HEADER] = requestId;
  // The consumer continues the producing request's trace.
  injectTraceContext(headers);
  await client.query(
    `INSERT INTO bus_outbox (id, topic, key, payload, headers, run_at)
     VALUES ($1, $2, $3, $4::jsonb, $5::jsonb, now() + $6 * interval '1 millisecond')
     ON CONFLICT (id) DO NOTHING`,
    [
      id,
      message.topic,
      message.key,
      JSON.stringify(message.payload),
      JSON.stringify(headers),
      message.delayMs ?? 0,
    ],
  );
  return id;
}

// A fixed namespace, so the same parts give the same id in every process and release.
const ID_NAMESPACE = Buffer.from('9b3f6c1e2d4a4f0e8c7b5a6d3e2f1c0b', 'hex');

/**
 * deterministicId derives a message id (a version 5 uuid) from `parts`, for producers that must
 * not enqueue the same work twice: `deterministicId('apply', changeId, String(revision))`.
 */
export function deterministicId(...parts: string[]): string {
  const bytes = createHash('sha1').update(ID_NAMESPACE).update(parts.join('\u0000')).digest().subarray(0, 16);
  bytes.writeUInt8((bytes.readUInt8(6) & 0x0f) | 0x50, 6);
  bytes.writeUInt8((bytes.readUInt8(8) & 0x3f) | 0x80, 8);
  const hex = bytes.toString('hex');
  return `${hex.slice(0, 8)}-${hex.slice(8, 12)}-${hex.slice(12, 16)}-${hex.slice(16, 20)}-${hex.slice(20)}`;
}

/** A message parked after failing every attempt. */
export interface DeadMessage {
  id: string;
  topic: string;
  key: string;
  payload: Json;
  headers: Record<string, string>;
  attempts: number;
  lastError: string | null;
  enqueuedAt: Date;
  diedAt: Date;
}

interface DeadRow {
  id: string;
  topic: string;
  key: string;
  payload: Json;
  headers: Record<string, string>;
  attempts: number;
  last_error: string | null;
  created_at: Date;
  updated_at: Date;
}

/**
 * listDead lists dead messages, oldest death first, optionally for one topic. On both transports
 * they are rows of the consuming service's outbox: the Postgres transport's consumers park the
 * row they claimed; Kafka consumers write the message they gave up on into their own outbox.
 */
export async function listDead(
  db: Queryable,
  { topic, limit = 100 }: { topic?: string; limit?: number } = {},
): Promise<DeadMessage[]> {
  const { rows } = await db.query<DeadRow>(
    `SELECT id, topic, key, payload, headers, attempts, last_error, created_at, updated_at
       FROM bus_outbox
      WHERE status = 'dead' AND ($1::text IS NULL OR topic = $1)
      ORDER BY updated_at, seq
      LIMIT $2`,
    [topic ?? null, limit],
  );
  return rows.map((r) => ({
    id: r.id,
    topic: r.topic,
    key: r.key,
    payload: r.payload,
    headers: r.headers,
    attempts: r.attempts,
    lastError: r.last_error,
    enqueuedAt: r.created_at,
    diedAt: r.updated_at,
  }));
}

/**
 * requeue makes a dead message deliverable again now, with its attempts reset (the last error is
 * kept until the next failure or success overwrites it). Returns false when `id` is not dead.
 * On the Postgres transport its consumers claim it again; on Kafka the relay publishes it to its
 * topic again, and the attempts its consumers counted are forgotten with it.
 */
export async function requeue(db: Queryable, id: string): Promise<boolean> {
  const { rows } = await db.query<{ requeued: number }>(
    `WITH requeued AS (
       UPDATE bus_outbox
          SET status = 'pending', attempts = 0, run_at = now(), updated_at = now()
        WHERE id = $1 AND status = 'dead'
       RETURNING id
     ), forgotten AS (
       DELETE FROM bus_deliveries WHERE message_id IN (SELECT id FROM requeued)
     )
     SELECT count(*)::int AS requeued FROM requeued`,
    [id],
  );
  return rows[0]?.requeued === 1;
}

/**
 * pruneDone deletes done messages, inbox records and delivery counts older than `olderThanMs`.
 * Keep it well above the longest redelivery window (a lease, a Kafka rebalance, a topic's
 * retention): an inbox record pruned before a late duplicate arrives no longer stops it.
 */
export async function pruneDone(
  db: Queryable,
  olderThanMs: number,
): Promise<{ messages: number; inbox: number; deliveries: number }> {
  const messages = await db.query(
    `DELETE FROM bus_outbox WHERE status = 'done' AND updated_at < now() - $1 * interval '1 millisecond'`,
    [olderThanMs],
  );
  const inbox = await db.query(
    `DELETE FROM bus_inbox WHERE processed_at < now() - $1 * interval '1 millisecond'`,
    [olderThanMs],
  );
  const deliveries = await db.query(
    `DELETE FROM bus_deliveries WHERE updated_at < now() - $1 * interval '1 millisecond'`,
    [olderThanMs],
  );
  return {
    messages: messages.rowCount ?? 0,
    inbox: inbox.rowCount ?? 0,
    deliveries: deliveries.rowCount ?? 0,
  };
}

export interface PruningOptions {
  /** The service's pool (search_path at the schema holding the bus tables). */
  pool: Queryable;
  logger: Logger;
  /** The wait between the end of one run and the start of the next; the first run is at once. */
  everyMs: number;
  /** Passed to `pruneDone`: done messages and inbox records older than this go. */
  olderThanMs: number;
}

/**
 * startPruning runs `pruneDone` now and then every `everyMs` until the returned function is
 * called, which stops it and resolves once a run under way has finished (so the pool can be ended
 * right after). A failed run is logged and the next one tries again; runs never overlap, and the
 * timer does not keep the process alive.
 */
export function startPruning({ pool, logger, everyMs, olderThanMs }: PruningOptions): () => Promise<void> {
  if (!(everyMs > 0)) throw new RangeError(`bus pruning interval must be positive, got ${everyMs}`);
  return repeatEvery(everyMs, async () => {
    try {
      const pruned = await pruneDone(pool, olderThanMs);
      if (pruned.messages > 0 || pruned.inbox > 0 || pruned.deliveries > 0)
        logger.info({ pruned }, 'bus pruned done messages and inbox records');
    } catch (err) {
      logger.error({ err }, 'bus pruning failed; the next run tries again');
    }
  });
}
