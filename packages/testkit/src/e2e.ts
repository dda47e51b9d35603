/** The set-up of an end-to-end test file: a fresh database, the whole stack on it, the demo seeded. */
import { randomUUID } from 'node:crypto';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { stopTestServer, type TestDatabase, testDatabase } from './postgres.ts';
import { type SeedResult, type Stack, type StackOptions, startStack } from './stack.ts';

export interface SeededStack {
  stack: Stack;
  seed: SeedResult;
  db: TestDatabase;
  /** Stops every process and removes the database and the stack's secrets. */
  stop(): Promise<void>;
}

/**
 * How many processes of each service an end-to-end stack runs when its test does not say:
 * `ADSMCP_REPLICAS=2 npm test -- test/e2e` runs the whole suite against two of each.
 */
export function replicasFromEnv(raw = process.env.ADSMCP_REPLICAS): number | undefined {
  if (raw === undefined || raw.trim() === '') return undefined;
  const n = Number(raw);
  if (!Number.isInteger(n) || n < 1 || n > 8) {
    throw new Error(`ADSMCP_REPLICAS must be a whole number from 1 to 8 (got "${raw}")`);
  }
  return n;
}

export async function startSeededStack(
  opts: Pick<StackOptions, 'env' | 'replicas' | 'inProcessMarketing'> = {},
): Promise<SeededStack> {
  const replicas = opts.replicas ?? replicasFromEnv();
  const db = await testDatabase();
  const dataDir = await mkdtemp(join(tmpdir(), 'adsmcp-e2e-'));
  const stack = await startStack({
    databaseUrl: db.url,
    dataDir,
    env: opts.env,
    replicas,
    ...(opts.inProcessMarketing === undefined ? {} : { inProcessMarketing: opts.inProcessMarketing }),
  });
  const seed = await stack.seedDemo();
  return {
    stack,
    seed,
    db,
    async stop() {
      await stack.stop();
      await db.drop();
      await stopTestServer();
      await rm(dataDir, { recursive: true, force: true });
    },
  };
}

/**
 * newWorkspaceToken creates, through the admin command, a workspace of its own (its first admin
 * with a generated email) with `features` on, and returns an MCP token of that admin.
 */
export async function newWorkspaceToken(
  stack: Stack,
  name: string,
  features: readonly string[] = [],
): Promise<{ workspaceId: string; token: string }> {
  const args = ['create-workspace', '--name', name, '--admin-email', `admin@${randomUUID()}.example`];
  args.push('--admin-password', 'workspace-password-1');
  if (features.length > 0) args.push('--features', features.join(','));
  const { workspace_id } = JSON.parse(await stack.admin(args)) as { workspace_id: string };
  const { token } = JSON.parse(await stack.admin(['create-token', '--workspace', workspace_id])) as {
    token: string;
  };
  return { workspaceId: workspace_id, token };
}
