/** Starting the whole stack: every process at once, from the bundles, on ports chosen beforehand. */
import assert from 'node:assert/strict';
import { mkdtemp, readdir, readFile, rm } from 'node:fs/promises';
import { createServer, type Server } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, test } from 'node:test';
import { stopTestServer, type TestDatabase, testDatabase } from '../src/postgres.ts';
import { type ServiceName, startStack } from '../src/stack.ts';

let db: TestDatabase;
let dataDir: string;

before(async () => {
  db = await testDatabase();
  dataDir = await mkdtemp(join(tmpdir(), 'adsmcp-stack-'));
});
after(async () => {
  await db.drop();
  await stopTestServer();
  await rm(dataDir, { recursive: true, force: true });
});

/** The processes of this machine whose environment holds `text` (here: this test's database URL). */
async function processesWith(text: string): Promise<number[]> {
  const found: number[] = [];
  for (const entry of await readdir('/proc')) {
    if (!/^\d+$/.test(entry) || Number(entry) === process.pid) continue;
    const env = await readFile(`/proc/${entry}/environ`, 'utf8').catch(() => '');
    if (env.includes(text)) found.push(Number(entry));
  }
  return found;
}

test('every process starts from its bundle with its source maps, and each listens on its own port', async () => {
  const stack = await startStack({ databaseUrl: db.url, dataDir });
  try {
    const services = Object.keys(stack.urls) as ServiceName[];
    assert.equal(services.length, 6);
    for (const service of services) {
      const args = stack.process(service).spawnargs;
      assert.ok(args.includes('--enable-source-maps'), `${service}: ${args.join(' ')}`);
      assert.match(args.at(-1) ?? '', new RegExp(`/\\.bundles/[0-9a-f]{16}/${service}/dist/main\\.js$`));
    }
    assert.equal(new Set(Object.values(stack.urls)).size, 6);
    const health = await fetch(`${stack.gatewayUrl}/mcp`, { method: 'GET' });
    assert.ok(health.status < 500, `the gateway answers (${health.status})`);
  } finally {
    await stack.stop();
  }
});

test('a fixed gateway port that is taken fails the start, naming the port, and leaves no process behind', async () => {
  const taken: Server = createServer();
  await new Promise<void>((resolve) => taken.listen(0, '127.0.0.1', resolve));
  const port = (taken.address() as { port: number }).port;
  try {
    const started = Date.now();
    await assert.rejects(startStack({ databaseUrl: db.url, dataDir, gatewayPort: port }), (err: Error) => {
      assert.match(err.message, /^gateway exited/);
      assert.match(err.message, new RegExp(`EADDRINUSE.*${port}`));
      return true;
    });
    assert.ok(Date.now() - started < 120_000);
    assert.deepEqual(await processesWith(db.url), []);
  } finally {
    taken.close();
  }
});
