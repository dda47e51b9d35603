import assert from 'node:assert/strict';
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, test } from 'node:test';
import { stopTestServer, type TestDatabase, testDatabase } from '@adsmcp/testkit/postgres';
import { createPool, migrate } from '../src/db.ts';

let db: TestDatabase;
let dir: string;

before(async () => {
  db = await testDatabase();
  dir = await mkdtemp(join(tmpdir(), 'migrations-'));
});

after(async () => {
  await db.drop();
  await stopTestServer();
  await rm(dir, { recursive: true, force: true });
});

test('migrations apply in order once, into the service schema, and are recorded', async () => {
  await writeFile(join(dir, '0002_more.sql'), 'ALTER TABLE things ADD COLUMN size int;');
  await writeFile(join(dir, '0001_init.sql'), 'CREATE TABLE things (id int PRIMARY KEY);');
  await writeFile(join(dir, 'README.md'), 'not a migration');
  const pool = createPool(db.url, 'svc_a');
  try {
    assert.deepEqual((await migrate(pool, 'svc_a', dir)).applied, ['0001_init.sql', '0002_more.sql']);
    assert.deepEqual((await migrate(pool, 'svc_a', dir)).applied, []);
    await pool.query('INSERT INTO things (id, size) VALUES (1, 2)');
    const { rows } = await pool.query(
      "SELECT table_schema FROM information_schema.tables WHERE table_name = 'things'",
    );
    assert.deepEqual(rows, [{ table_schema: 'svc_a' }]);
    const ledger = await pool.query('SELECT version, name FROM svc_a.schema_migrations ORDER BY version');
    assert.deepEqual(ledger.rows, [
      { version: 1, name: '0001_init.sql' },
      { version: 2, name: '0002_more.sql' },
    ]);
  } finally {
    await pool.end();
  }
});

test('concurrent starts of one service apply each migration once', async () => {
  const d = await mkdtemp(join(tmpdir(), 'migrations-'));
  await writeFile(join(d, '0001_init.sql'), 'CREATE TABLE counted (id int); INSERT INTO counted VALUES (1);');
  const pools = Array.from({ length: 4 }, () => createPool(db.url, 'svc_b', 2));
  try {
    const results = await Promise.all(pools.map((p) => migrate(p, 'svc_b', d)));
    assert.equal(results.filter((r) => r.applied.length === 1).length, 1);
    const { rows } = await (pools[0] as (typeof pools)[0]).query('SELECT count(*)::int AS n FROM counted');
    assert.deepEqual(rows, [{ n: 1 }]);
  } finally {
    await Promise.all(pools.map((p) => p.end()));
    await rm(d, { recursive: true, force: true });
  }
});

test('a failing migration is rolled back, named, and not recorded', async () => {
  const d = await mkdtemp(join(tmpdir(), 'migrations-'));
  await writeFile(join(d, '0001_ok.sql'), 'CREATE TABLE ok (id int);');
  await writeFile(join(d, '0002_bad.sql'), 'CREATE TABLE half (id int); SELECT no_such_function();');
  const pool = createPool(db.url, 'svc_c');
  try {
    await assert.rejects(
      migrate(pool, 'svc_c', d),
      /migration svc_c\/0002_bad.sql failed: function no_such_function/,
    );
    const { rows } = await pool.query(
      "SELECT table_name FROM information_schema.tables WHERE table_schema = 'svc_c' ORDER BY table_name",
    );
    assert.deepEqual(
      rows.map((r: { table_name: string }) => r.table_name),
      ['ok', 'schema_migrations'],
    );
  } finally {
    await pool.end();
    await rm(d, { recursive: true, force: true });
  }
});

test('schema names that could inject SQL are refused', () => {
  assert.throws(() => createPool(db.url, 'svc; DROP TABLE x'), /invalid schema name/);
});

test("PostgreSQL's data exceptions and CHECK violations reach callers as invalid arguments, other database errors do not", async () => {
  const { toConnectError } = await import('../src/connect-errors.ts');
  const pool = createPool(db.url, 'svc_d');
  try {
    const nul = await pool.query('SELECT $1::text', ['a\u0000b']).catch((e: unknown) => e);
    assert.equal(toConnectError(nul)?.code, 3); // InvalidArgument
    assert.match(toConnectError(nul)?.rawMessage ?? '', /a value could not be stored/);
    const long = await pool
      .query(
        "CREATE TEMP TABLE named (name text CHECK (char_length(name) <= 3)); INSERT INTO named VALUES ('four')",
      )
      .catch((e: unknown) => e);
    assert.equal(toConnectError(long)?.code, 3);
    assert.match(toConnectError(long)?.rawMessage ?? '', /could not be stored: .*named_name_check/);
    const missing = await pool.query('SELECT * FROM no_such_table').catch((e: unknown) => e);
    assert.equal(toConnectError(missing), undefined);
  } finally {
    await pool.end();
  }
});
