/**
 * At start-up, appends to each workspace's audit log the events its records hold from before the
 * log began (store/audit-store.ts backfillWorkspace), once per workspace, a transaction each. Every
 * replica may run it: the head's lock and the closing row keep it to one.
 */
import { inTransaction, type Pool } from '@adsmcp/runtime/db';
import type { Logger } from '@adsmcp/runtime/log';
import { backfillWorkspace, workspacesToBackfill } from '../store/audit-store.ts';

export function startAuditBackfill(pool: Pool, logger: Pick<Logger, 'info' | 'warn'>): () => Promise<void> {
  let stopped = false;
  const run = (async () => {
    try {
      for (const workspaceId of await workspacesToBackfill(pool)) {
        if (stopped) return;
        const events = await inTransaction(pool, (tx) => backfillWorkspace(tx, workspaceId));
        if (events > 0)
          logger.info({ workspaceId, events }, 'audit log backfilled from the records before it');
      }
    } catch (err) {
      // The next start tries again: nothing is half done, each workspace is one transaction.
      logger.warn({ err }, 'the audit log could not be backfilled; the next start tries again');
    }
  })();
  return async () => {
    stopped = true;
    await run;
  };
}
