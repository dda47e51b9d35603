/**
 * The authorization server's periodic sweep: provider rows long expired, consent decisions no
 * request can still need, and connections approved but never redeemed (the client gave up after
 * consent), which would otherwise stay listed for the 30 days of their grant though nothing can use
 * them. Every replica runs it; each step is idempotent and safe when several run at once.
 */
import type { Queryable } from '@adsmcp/runtime/db';
import { repeatEvery } from '@adsmcp/runtime/lifecycle';
import type { Logger } from '@adsmcp/runtime/log';
import {
  deleteExpiredPayloads,
  deleteOldConsentDecisions,
  revokeUnredeemedConnections,
  type UnredeemedConnection,
} from './oauth-store.ts';
import { AUTHORIZATION_CODE_TTL_SECONDS, INTERACTION_TTL_SECONDS } from './provider.ts';

const MINUTE = 60;
const HOUR = 60 * MINUTE;
const DAY = 24 * HOUR;

/** How often each replica sweeps (the first run is at start-up). */
export const SWEEP_EVERY_MS = 5 * 60 * 1000;

/**
 * A provider row is deleted this long after it expired. Reads ignore it from its expiry already;
 * the hour keeps it from vanishing under a request that found it just before, and covers any skew
 * between the clocks the rows were written and are swept by.
 */
export const PAYLOAD_GRACE_SECONDS = HOUR;

/** Rows deleted per statement, so that a large backlog is cleared in short statements. */
const PAYLOAD_BATCH = 5000;

/**
 * A consent decision is kept this long: it only has to outlive its authorization request (15
 * minutes), after which a repeated post finds the request expired anyway; a day is a wide margin.
 */
export const DECISION_KEEP_SECONDS = INTERACTION_TTL_SECONDS + DAY;

/**
 * A connection still unredeemed this long after consent is revoked. Its code can be issued until
 * the authorization request expires (15 minutes after it started: approving does not extend it)
 * and redeemed for 60 seconds after that; 15 minutes more cover clock skew and a slow client.
 */
export const UNREDEEMED_AFTER_SECONDS =
  INTERACTION_TTL_SECONDS + AUTHORIZATION_CODE_TTL_SECONDS + 15 * MINUTE;

export interface SweepResult {
  /** Expired provider rows deleted. */
  payloads: number;
  /** Old consent decisions deleted. */
  decisions: number;
  /** Connections revoked because their client never redeemed its code. */
  connections: UnredeemedConnection[];
}

/** The connections step: revokes those never redeemed, with their audit entries. */
export function sweepUnredeemedConnections(db: Queryable, now?: Date): Promise<UnredeemedConnection[]> {
  return revokeUnredeemedConnections(db, { now, afterSeconds: UNREDEEMED_AFTER_SECONDS });
}

/** The provider rows step: deletes every row expired past the grace, a batch at a time. */
export async function sweepExpiredPayloads(db: Queryable, now?: Date): Promise<number> {
  let deleted = 0;
  for (;;) {
    const n = await deleteExpiredPayloads(db, {
      now,
      graceSeconds: PAYLOAD_GRACE_SECONDS,
      limit: PAYLOAD_BATCH,
    });
    deleted += n;
    if (n < PAYLOAD_BATCH) return deleted;
  }
}

/** The consent decisions step. */
export function sweepConsentDecisions(db: Queryable, now?: Date): Promise<number> {
  return deleteOldConsentDecisions(db, { now, keepSeconds: DECISION_KEEP_SECONDS });
}

/**
 * One sweep: connections first (they look for their grant's tokens, which the next step may
 * delete), then provider rows, then decisions. `now` defaults to the database's clock; tests pass
 * a later one. A failed step is reported through `onError` and does not stop the others.
 */
export async function sweepOAuth(
  db: Queryable,
  o: { now?: Date; onError?: (step: string, err: unknown) => void } = {},
): Promise<SweepResult> {
  const result: SweepResult = { payloads: 0, decisions: 0, connections: [] };
  const step = async (name: string, fn: () => Promise<void>) => {
    try {
      await fn();
    } catch (err) {
      if (o.onError === undefined) throw err;
      o.onError(name, err);
    }
  };
  await step('connections', async () => {
    result.connections = await sweepUnredeemedConnections(db, o.now);
  });
  await step('payloads', async () => {
    result.payloads = await sweepExpiredPayloads(db, o.now);
  });
  await step('decisions', async () => {
    result.decisions = await sweepConsentDecisions(db, o.now);
  });
  return result;
}

export interface OAuthSweepOptions {
  /** The gateway's pool (search_path at its schema). */
  pool: Queryable;
  logger: Pick<Logger, 'info' | 'error'>;
  /** The wait between the end of one run and the start of the next (default SWEEP_EVERY_MS). */
  everyMs?: number;
}

/**
 * startOAuthSweep sweeps now and then every `everyMs` until the returned function is called, which
 * stops it and resolves once a run under way has finished (so the pool can be ended right after).
 * A run logs what it removed when it removed anything; a failure is logged, never thrown, and the
 * next run tries again. Runs never overlap, and the timer does not keep the process alive.
 */
export function startOAuthSweep({
  pool,
  logger,
  everyMs = SWEEP_EVERY_MS,
}: OAuthSweepOptions): () => Promise<void> {
  if (!(everyMs > 0)) throw new RangeError(`OAuth sweep interval must be positive, got ${everyMs}`);
  return repeatEvery(everyMs, async () => {
    try {
      const r = await sweepOAuth(pool, {
        onError: (step, err) =>
          logger.error({ err, step }, 'OAuth sweep step failed; the next run tries again'),
      });
      if (r.payloads > 0 || r.decisions > 0 || r.connections.length > 0)
        logger.info(
          {
            expired_payloads: r.payloads,
            consent_decisions: r.decisions,
            unredeemed_connections: r.connections.length,
            revoked_credentials: r.connections.map((c) => c.credential_id),
          },
          'OAuth sweep removed rows',
        );
    } catch (err) {
      logger.error({ err }, 'OAuth sweep failed; the next run tries again');
    }
  });
}
