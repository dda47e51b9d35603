/**
 * The sweep that chains staged audit events (store/audit-store.ts, "Who folds"). A writer's process
 * chains its own events right after they commit; this catches the rest: a fold skipped because the
 * head was held elsewhere (another replica's fold, whose snapshot may have missed the event), a fold
 * that failed, or a process that died between its commit and its fold. Every replica may run it:
 * folds lock the workspace's head, and one busy elsewhere is skipped, not waited for.
 */
import type { Pool } from '@adsmcp/runtime/db';
import { repeatEvery } from '@adsmcp/runtime/lifecycle';
import type { Logger } from '@adsmcp/runtime/log';
import { chainSoon, workspacesWithStagedEvents } from '../store/audit-store.ts';

/** How often the sweep looks for staged events; readers chain before reading, so this bounds only the staging table's lag. */
export const AUDIT_CHAIN_SWEEP_EVERY_MS = 1000;

/** Chains the staged events of every workspace that has some; returns how many workspaces. */
export async function sweepStagedAuditEvents(pool: Pool): Promise<number> {
  const workspaces = await workspacesWithStagedEvents(pool);
  for (const workspaceId of workspaces) await chainSoon(pool, workspaceId);
  return workspaces.length;
}

/** startAuditChainer sweeps every `everyMs` until the function it returns is called. */
export function startAuditChainer(
  pool: Pool,
  logger: Pick<Logger, 'warn'>,
  everyMs = AUDIT_CHAIN_SWEEP_EVERY_MS,
): () => Promise<void> {
  return repeatEvery(everyMs, async () => {
    try {
      await sweepStagedAuditEvents(pool);
    } catch (err) {
      logger.warn({ err }, 'the sweep of staged audit events failed; it runs again later');
    }
  });
}
