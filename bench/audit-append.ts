/**
 * Benchmark: how many state changes per second one workspace records when they run at once, each
 * appending its audit event in its own transaction (store/audit-store.ts). The apply's outcome
 * transaction is modelled: it appends its event, then spends AUDIT_BENCH_HOLD_MS (default 5) on the
 * rest of its statements and round trips before it commits.
 *
 * Two ways to append, measured in the same run on the same database:
 * - `staged` (appendAuditEvent, what state changes use): the event is staged, and chained by a
 *   fold after the commit;
 * - `head held` (appendChainedAuditEvents in the writer's transaction): the workspace's head is
 *   locked from the append to the commit, as every append did before staging.
 *
 * For each: one writer alone, AUDIT_BENCH_WRITERS (default 10) writers in one workspace, and as
 * many writers each in its own workspace. Each figure is printed beside the single writer's
 * throughput of the same way in the same run (the ratio is what counts on a shared machine), and
 * every chain is verified at the end.
 *
 * `npm run bench:audit`. Env: AUDIT_BENCH_WRITERS, AUDIT_BENCH_EVENTS (per writer, default 100),
 * AUDIT_BENCH_HOLD_MS.
 */
import { randomUUID } from 'node:crypto';
import { setTimeout as sleep } from 'node:timers/promises';
import { fileURLToPath } from 'node:url';
import { createPool, inTransaction, migrate, type Pool } from '@adsmcp/runtime/db';
import { stopTestServer, testDatabase } from '@adsmcp/testkit/postgres';
import {
  appendAuditEvent,
  appendChainedAuditEvents,
  verifyAuditChain,
} from '../services/changes/src/store/audit-store.ts';
import { envInt } from './bench-kit.ts';

const WRITERS = envInt('AUDIT_BENCH_WRITERS', 10, 2, 50);
const EVENTS = envInt('AUDIT_BENCH_EVENTS', 100, 10, 10_000);
const HOLD_MS = envInt('AUDIT_BENCH_HOLD_MS', 5, 0, 1000);

type Way = 'staged' | 'head held';

/** One outcome transaction: its event, then the rest of its work, then the commit. */
async function outcome(pool: Pool, way: Way, workspaceId: string, n: number): Promise<void> {
  const event = {
    actor: 'worker:apply',
    kind: 'change.applied',
    subject: randomUUID(),
    details: { n, status: 'applied', account_id: randomUUID() },
  };
  await inTransaction(pool, async (tx) => {
    if (way === 'staged') await appendAuditEvent(tx, { workspaceId, ...event });
    else await appendChainedAuditEvents(tx, workspaceId, [event]);
    await sleep(HOLD_MS);
  });
}

/** Runs each writer's EVENTS outcomes one after another, the writers at once; events per second. */
async function run(pool: Pool, way: Way, workspaces: string[]): Promise<number> {
  const t0 = performance.now();
  await Promise.all(
    workspaces.map(async (ws) => {
      for (let n = 0; n < EVENTS; n++) await outcome(pool, way, ws, n);
    }),
  );
  return (workspaces.length * EVENTS) / ((performance.now() - t0) / 1000);
}

const fmt = (n: number, digits = 1) => n.toFixed(digits);

async function main(): Promise<void> {
  const db = await testDatabase();
  const pool = createPool(db.url, 'changes', WRITERS + 4);
  const all: string[] = [];
  let failed = false;
  try {
    await migrate(pool, 'changes', fileURLToPath(new URL('../services/changes/migrations', import.meta.url)));
    process.stdout.write(
      `audit append: ${EVENTS} outcome transactions per writer, each holding ${HOLD_MS} ms after its event\n`,
    );
    for (const way of ['head held', 'staged'] as const) {
      const fresh = (k: number) => Array.from({ length: k }, () => randomUUID());
      const one = fresh(1);
      const shared = Array.from({ length: WRITERS }, () => fresh(1)[0] as string);
      shared.fill(shared[0] as string);
      const separate = fresh(WRITERS);
      all.push(...one, shared[0] as string, ...separate);
      const alone = await run(pool, way, one);
      const oneWorkspace = await run(pool, way, shared);
      const tenWorkspaces = await run(pool, way, separate);
      process.stdout.write(
        `${way}: one writer ${fmt(alone)} events/s; ${WRITERS} writers of one workspace ${fmt(oneWorkspace)} events/s (${fmt(oneWorkspace / alone, 2)}x one writer); ${WRITERS} writers of ${WRITERS} workspaces ${fmt(tenWorkspaces)} events/s (${fmt(tenWorkspaces / alone, 2)}x); one workspace against ${WRITERS}: ${fmt(oneWorkspace / tenWorkspaces, 2)}\n`,
      );
    }
    let rows = 0;
    for (const ws of new Set(all)) {
      const report = await verifyAuditChain(pool, ws);
      if (report.broken) failed = true;
      rows += report.rows;
    }
    process.stdout.write(
      `audit chains: ${new Set(all).size} workspaces, ${rows} rows, ${failed ? 'BROKEN' : 'every chain verifies'}\n`,
    );
  } finally {
    await pool.end();
    await db.drop();
    await stopTestServer();
  }
  if (failed) process.exitCode = 1;
}

main().catch((err: unknown) => {
  process.stderr.write(`${err instanceof Error ? (err.stack ?? err.message) : String(err)}\n`);
  process.exit(1);
});
