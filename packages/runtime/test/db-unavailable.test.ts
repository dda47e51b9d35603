/**
 * A database that cannot be reached, or that drops a connection mid-call, is `unavailable` to a
 * service's caller (retry shortly), never `internal`; a statement the database refuses is not.
 */
import assert from 'node:assert/strict';
import { after, before, test } from 'node:test';
import { freePort } from '@adsmcp/testkit/free-port';
import { stopTestServer, type TestDatabase, testDatabase } from '@adsmcp/testkit/postgres';
import { Code } from '@connectrpc/connect';
import { toConnectError } from '../src/connect-errors.ts';
import { createPool, isDatabaseUnavailable } from '../src/db.ts';

let db: TestDatabase;

before(async () => {
  db = await testDatabase();
});

after(async () => {
  await db.drop();
  await stopTestServer();
});

async function thrownBy(work: () => Promise<unknown>): Promise<unknown> {
  try {
    await work();
  } catch (err) {
    return err;
  }
  assert.fail('expected the call to fail');
}

test('a database nobody listens for is unavailable, and the service says its database is not answering', async () => {
  const url = new URL(db.url);
  url.hostname = '127.0.0.1';
  url.port = String(await freePort());
  const pool = createPool(url.toString(), 'svc');
  try {
    const err = await thrownBy(() => pool.query('SELECT 1'));
    assert.equal(isDatabaseUnavailable(err), true, String(err));
    const mapped = toConnectError(err, 'the changes service');
    assert.equal(mapped?.code, Code.Unavailable);
    assert.equal(
      mapped?.rawMessage,
      'the database of the changes service is not answering (it may be restarting); retry shortly',
    );
  } finally {
    await pool.end();
  }
});

test('a connection the server ends mid-session (an administrator, a restart) is unavailable', async () => {
  const pool = createPool(db.url, 'svc');
  pool.on('error', () => undefined);
  const admin = createPool(db.url, 'svc');
  try {
    const client = await pool.connect();
    client.on('error', () => undefined);
    const { rows } = await client.query<{ pid: number }>('SELECT pg_backend_pid() AS pid');
    await admin.query('SELECT pg_terminate_backend($1)', [rows[0]?.pid]);
    const err = await thrownBy(() => client.query('SELECT 1'));
    client.release(true);
    assert.equal(isDatabaseUnavailable(err), true, String(err));
    assert.equal(toConnectError(err)?.code, Code.Unavailable);
  } finally {
    await pool.end();
    await admin.end();
  }
});

test('a statement the database refuses is not unavailable: it stays internal', async () => {
  const pool = createPool(db.url, 'svc');
  try {
    const err = await thrownBy(() => pool.query('SELECT * FROM no_such_table'));
    assert.equal(isDatabaseUnavailable(err), false);
    assert.equal(toConnectError(err), undefined);
  } finally {
    await pool.end();
  }
});
