/**
 * The sweep for changes left `applying` whose apply message will reach no handler: every message
 * past its last attempt runs the apply's give-up path, so this finds only what escaped it (a
 * message lost with a broker, or given up by a process of an older version). Each such change is
 * brought to an end as the give-up path would (endLostApply): tried again while its approval is
 * valid if it was never sent, failed with its outcome unknown if it was.
 */
import { liveKeys } from '@adsmcp/runtime/bus/outbox';
import { inTransaction } from '@adsmcp/runtime/db';
import { repeatEvery } from '@adsmcp/runtime/lifecycle';
import { changesApplyingSince, lockChange } from '../store/change-store.ts';
import { APPLY_TOPIC, type ApplyTarget, applyKeyOf } from './apply-message.ts';
import { APPLY_CONSUMER, type ApplyWorkerDeps, endLostApply } from './apply-worker.ts';

/**
 * The keys a change's apply message may have: its own (applyKeyOf), or its id alone (the key of
 * messages queued before applies were keyed by object, and of a create's before its key named the
 * account). A live message of another change to the same object counts too: the sweep leaves the
 * change to a later sweep, never ends it early.
 */
function keysOf(change: ApplyTarget): string[] {
  return [applyKeyOf(change), change.change_id];
}

/** At most this many changes are looked at per sweep; the next sweep takes the rest. */
const SWEEP_BATCH = 100;

/**
 * sweepLostApplies ends the changes `applying` for longer than `quietMs` that have no apply
 * message on its way (liveKeys, with the same quiet time); it returns how many it ended.
 */
export async function sweepLostApplies(d: ApplyWorkerDeps, quietMs: number): Promise<number> {
  const candidates = await changesApplyingSince(d.pool, quietMs, SWEEP_BATCH);
  if (candidates.length === 0) return 0;
  const live = await liveKeys(d.pool, {
    topic: APPLY_TOPIC,
    consumer: APPLY_CONSUMER,
    keys: candidates.flatMap(keysOf),
    quietMs,
  });
  const sweep = new Date().toISOString();
  let ended = 0;
  for (const candidate of candidates) {
    if (keysOf(candidate).some((k) => live.has(k))) continue;
    // Under the change's row lock, looked at again: another replica's sweep, or an apply request,
    // may have moved it or queued a message meanwhile.
    const done = await inTransaction(d.pool, async (tx) => {
      const change = await lockChange(tx, candidate.workspace_id, candidate.change_id);
      if (change?.status !== 'applying') return false;
      const still = await liveKeys(tx, {
        topic: APPLY_TOPIC,
        consumer: APPLY_CONSUMER,
        keys: keysOf(change),
        quietMs,
      });
      if (still.size > 0) return false;
      await endLostApply(d, tx, change, sweep);
      return true;
    });
    if (done) {
      ended++;
      d.logger.warn(
        { change_id: candidate.change_id, sent: candidate.sent_at !== null },
        'a change left applying without an apply message was brought to an end',
      );
    }
  }
  return ended;
}

/** startApplySweeper sweeps every `everyMs` until the function it returns is called. */
export function startApplySweeper(d: ApplyWorkerDeps, everyMs: number, quietMs: number): () => Promise<void> {
  return repeatEvery(everyMs, async () => {
    try {
      await sweepLostApplies(d, quietMs);
    } catch (err) {
      d.logger.warn({ err }, 'the sweep for lost applies failed; it runs again later');
    }
  });
}
