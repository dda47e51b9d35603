import assert from 'node:assert/strict';
import { type ChildProcess, spawn } from 'node:child_process';
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, describe, it } from 'node:test';
import { fileURLToPath } from 'node:url';
import { stopTestServer, type TestDatabase, testDatabase } from '@adsmcp/testkit/postgres';
import pg from 'pg';
import { enqueue } from '../src/bus/outbox.ts';
import { createPrincipalSigner, generatePrincipalKeys, type Principal } from '../src/principal.ts';
import { CHANGES_ISSUER, OPTIMIZER_ISSUER } from '../src/trust.ts';
import { EDITOR } from './fixtures.ts';

const FIXTURE = fileURLToPath(new URL('./kit-service.ts', import.meta.url));
const SCHEMA = 'kit_service';

interface Run {
  child: ChildProcess;
  /** Every stdout line parsed as JSON, as they come. */
  lines: Record<string, unknown>[];
  stderr: () => string;
  exited: Promise<number | null>;
}

/** Fixture processes still running when a test fails are killed after the file, not left behind. */
const started: ChildProcess[] = [];

function runFixture(env: Record<string, string>): Run {
  const child = spawn(process.execPath, ['--import', 'tsx', FIXTURE], {
    env: { ...process.env, ...env },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  started.push(child);
  const lines: Record<string, unknown>[] = [];
  let pending = '';
  child.stdout?.on('data', (chunk: Buffer) => {
    pending += chunk.toString();
    const parts = pending.split('\n');
    pending = parts.pop() ?? '';
    for (const line of parts)
      if (line.startsWith('{')) lines.push(JSON.parse(line) as Record<string, unknown>);
  });
  let stderr = '';
  child.stderr?.on('data', (chunk: Buffer) => {
    stderr += chunk.toString();
  });
  const exited = new Promise<number | null>((resolve) => child.once('exit', (code) => resolve(code)));
  return { child, lines, stderr: () => stderr, exited };
}

async function until<T>(what: string, run: Run, find: () => T | undefined, timeoutMs = 60_000): Promise<T> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const found = find();
    if (found !== undefined) return found;
    if (run.child.exitCode !== null || Date.now() > deadline)
      throw new Error(`no ${what}; stdout: ${JSON.stringify(run.lines)}; stderr: ${run.stderr()}`);
    await new Promise((r) => setTimeout(r, 50));
  }
}

describe('a service declared with startService, run as a process', () => {
  let db: TestDatabase;
  let migrations: string;
  let gateway: Awaited<ReturnType<typeof generatePrincipalKeys>>;
  let changes: Awaited<ReturnType<typeof generatePrincipalKeys>>;
  let env: Record<string, string>;

  before(async () => {
    db = await testDatabase();
    migrations = await mkdtemp(join(tmpdir(), 'kit-migrations-'));
    await writeFile(join(migrations, '0001_notes.sql'), 'CREATE TABLE notes (id integer PRIMARY KEY);\n');
    [gateway, changes] = await Promise.all([generatePrincipalKeys(), generatePrincipalKeys()]);
    env = {
      DATABASE_URL: db.url,
      PRINCIPAL_PUBLIC_KEY: gateway.publicKeyPem,
      CHANGES_PUBLIC_KEY: changes.publicKeyPem,
      OPTIMIZER_PUBLIC_KEY: '',
      PORT: '0',
      HOST: '127.0.0.1',
      KIT_SCHEMA: SCHEMA,
      KIT_MIGRATIONS: migrations,
      LOG_LEVEL: 'info',
    };
  });
  after(async () => {
    for (const child of started)
      if (child.exitCode === null && child.signalCode === null) child.kill('SIGKILL');
    await rm(migrations, { recursive: true, force: true });
    await db.drop();
    await stopTestServer();
  });

  it('migrates, consumes, verifies by the trust table, and stops the server, then the jobs latest first, then the pool', async () => {
    const run = runFixture(env);
    const listening = await until('listening line', run, () => run.lines.find((l) => l.msg === 'listening'));
    assert.equal(listening.service, 'marketing');
    assert.equal(typeof listening.port, 'number');
    const url = `http://127.0.0.1:${listening.port as number}/`;

    const client = new pg.Client({ connectionString: db.url });
    await client.connect();
    try {
      await client.query(`SET search_path TO ${SCHEMA}`);
      const { rows } = await client.query('SELECT count(*)::int AS n FROM notes');
      assert.deepEqual(rows, [{ n: 0 }], 'the migration made its table in the schema');
      await enqueue(client, { topic: 'kit-test', key: 'k', payload: { n: 7 } });
    } finally {
      await client.end();
    }
    const handled = await until('handled message', run, () => run.lines.find((l) => l.event === 'handled'));
    assert.equal(handled.n, 7);

    const call = async (issuer: string | undefined, pem: string, principal: Principal) => {
      const signer = await createPrincipalSigner(pem, issuer);
      const res = await fetch(url, {
        headers: { authorization: `Bearer ${await signer.sign(principal, 'marketing')}` },
      });
      return { status: res.status, body: await res.text() };
    };
    const worker: Principal = { ...EDITOR, role: 'viewer', scopes: ['read'], via: 'worker' };
    const asAgent = await call(undefined, gateway.privateKeyPem, EDITOR);
    assert.equal(asAgent.status, 200, asAgent.body);
    assert.deepEqual(JSON.parse(asAgent.body), EDITOR);
    assert.equal((await call(CHANGES_ISSUER, changes.privateKeyPem, worker)).status, 200);
    assert.deepEqual(
      await call(CHANGES_ISSUER, changes.privateKeyPem, { ...worker, scopes: ['read', 'write'] }),
      {
        status: 401,
        body: 'principal token from adsmcp-changes may not claim scope write',
      },
    );
    // On a caller's channel the changes service has its own edge (an ad batch prepared on the
    // caller's behalf), limited to three calls: a request naming none of them is refused.
    assert.deepEqual(await call(CHANGES_ISSUER, changes.privateKeyPem, { ...worker, via: 'mcp' }), {
      status: 401,
      body: 'principal token from adsmcp-changes may not call (no call named)',
    });
    assert.deepEqual(await call(OPTIMIZER_ISSUER, changes.privateKeyPem, worker), {
      status: 401,
      body: 'principal token from an untrusted issuer',
    });

    run.child.kill('SIGTERM');
    assert.equal(await run.exited, 0, run.stderr());
    const order = run.lines
      .filter((l) => typeof l.event === 'string' && l.event !== 'handled')
      .map((l) => l.event);
    assert.deepEqual(order, ['server closed', 'job b stopped', 'job a stopped']);
    assert.equal(run.lines.find((l) => l.event === 'job b stopped')?.pool_open, true);
    assert.equal(run.lines.at(-1)?.msg, 'stopped');
  });

  it('does not start when its main.ts and the trust table name different issuers, and says which', async () => {
    const run = runFixture({ ...env, KIT_TRUSTS: 'gateway' });
    assert.equal(await run.exited, 1);
    assert.match(
      run.stderr(),
      /marketing: failed to start: .*marketing declares it trusts \[gateway\] but the trust table \(packages\/runtime\/src\/trust\.ts\) says \[changes, gateway, optimizer\]/,
    );
    assert.equal(
      run.lines.find((l) => l.msg === 'listening'),
      undefined,
    );
  });

  it('does not start without a key the trust table requires, naming the variable', async () => {
    const run = runFixture({ ...env, PRINCIPAL_PUBLIC_KEY: '' });
    assert.equal(await run.exited, 1);
    assert.match(run.stderr(), /marketing: failed to start: .*PRINCIPAL_PUBLIC_KEY is required/);
  });
});
