/** The set-up of an end-to-end test file: a fresh database, the whole stack on it, the demo seeded. */
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

export async function startSeededStack(opts: Pick<StackOptions, 'env'> = {}): Promise<SeededStack> {
  const db = await testDatabase();
  const dataDir = await mkdtemp(join(tmpdir(), 'adsmcp-e2e-'));
  const stack = await startStack({ databaseUrl: db.url, dataDir, env: opts.env });
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
