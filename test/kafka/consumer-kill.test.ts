/**
 * A consumer replica killed mid-batch on a real Kafka broker: two processes of one bus consumer
 * share a topic's partitions; one is killed with SIGKILL while its handlers run. The group hands
 * its partitions to the other once its session lapses, and every message has its effect exactly
 * once: those the killed replica had done stay done, those it was in the middle of are done by
 * the other replica on their second delivery, and the rest are done by the other replica.
 */
import assert from 'node:assert/strict';
import { type ChildProcess, spawn } from 'node:child_process';
import { after, before, test } from 'node:test';
import { setTimeout as sleep } from 'node:timers/promises';
import { enqueue, migrateBus } from '@adsmcp/runtime/bus/index';
import { createPool, inTransaction, type Pool } from '@adsmcp/runtime/db';
import { type KafkaBrokerCluster, startKafkaBroker } from '@adsmcp/testkit/kafka-broker';
import { stopTestServer, type TestDatabase, testDatabase } from '@adsmcp/testkit/postgres';
import { REPO_ROOT } from '@adsmcp/testkit/stack';

const SCHEMA = 'replicas_test';
const MESSAGES = 60;

let broker: KafkaBrokerCluster;
let db: TestDatabase;
let pool: Pool;
const children = new Set<ChildProcess>();

async function waitFor(what: string, check: () => Promise<boolean>, timeoutMs: number): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while (!(await check())) {
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`);
    await sleep(20);
  }
}

/** Starts a replica process; resolves with it once it joined the group. */
function startReplica(name: string): Promise<ChildProcess> {
  const child = spawn(process.execPath, ['--import', 'tsx', 'test/kafka/consumer-replica.ts'], {
    cwd: REPO_ROOT,
    env: {
      ...process.env,
      DATABASE_URL: db.url,
      BUS_SCHEMA: SCHEMA,
      KAFKA_BROKERS: broker.brokers,
      REPLICA: name,
      HANDLER_MS: '300',
    },
    stdio: ['ignore', 'pipe', 'inherit'],
  });
  children.add(child);
  return new Promise((resolve, reject) => {
    let out = '';
    child.stdout?.on('data', (chunk: Buffer) => {
      out += chunk.toString('utf8');
      if (out.includes('joined\n')) resolve(child);
    });
    child.once('exit', (code, signal) =>
      reject(new Error(`replica ${name} exited (${signal ?? code}) before it joined`)),
    );
  });
}

before(async () => {
  broker = await startKafkaBroker();
  db = await testDatabase();
  pool = createPool(db.url, SCHEMA);
  await migrateBus(pool, SCHEMA);
  await pool.query('CREATE TABLE starts (message_id uuid NOT NULL, replica text NOT NULL)');
  // No key: an effect made twice would show as two rows.
  await pool.query('CREATE TABLE effects (message_id uuid NOT NULL, replica text NOT NULL)');
});

after(async () => {
  for (const child of children) child.kill('SIGKILL');
  await pool?.end();
  await db?.drop();
  await stopTestServer();
  await broker?.stop();
});

test('a consumer replica killed mid-batch: its partitions move to the other replica and each message has its effect exactly once', async () => {
  const a = await startReplica('a');
  await startReplica('b');
  const ids = await inTransaction(pool, async (c) => {
    const out: string[] = [];
    for (let i = 0; i < MESSAGES; i++)
      out.push(await enqueue(c, { topic: 'replicated', key: `k${i}`, payload: { i } }));
    return out;
  });

  // Killed once it has done a few and is in the middle of others.
  const inFlightOfA = async () =>
    (
      await pool.query<{ message_id: string }>(
        `SELECT s.message_id FROM starts s
          WHERE s.replica = 'a' AND NOT EXISTS (SELECT 1 FROM effects e WHERE e.message_id = s.message_id)`,
      )
    ).rows.map((r) => r.message_id);
  const doneBy = async (replica: string) =>
    (await pool.query<{ n: number }>('SELECT count(*)::int AS n FROM effects WHERE replica = $1', [replica]))
      .rows[0]?.n ?? 0;
  await waitFor(
    'replica a to be mid-batch',
    async () => (await doneBy('a')) >= 4 && (await inFlightOfA()).length > 0,
    60_000,
  );
  a.kill('SIGKILL');
  await new Promise((resolve) => a.once('exit', resolve));
  const cutShort = await inFlightOfA();
  const doneByA = await doneBy('a');
  assert.ok(cutShort.length > 0, 'replica a was killed with handlers running');

  const effects = async () =>
    (
      await pool.query<{ message_id: string; n: number; by: string[] }>(
        'SELECT message_id, count(*)::int AS n, array_agg(replica) AS by FROM effects WHERE message_id = ANY($1) GROUP BY message_id',
        [ids],
      )
    ).rows;
  await waitFor(
    `all ${MESSAGES} messages to have their effect`,
    async () => (await effects()).length === MESSAGES,
    90_000,
  );
  // Anything delivered again after it was done would show up here.
  await sleep(1000);

  const all = await effects();
  assert.deepEqual(
    all.filter((r) => r.n !== 1),
    [],
    'each message had its effect exactly once',
  );
  const by = new Map(all.map((r) => [r.message_id, r.by[0]]));
  assert.deepEqual(
    cutShort.map((id) => by.get(id)),
    cutShort.map(() => 'b'),
    'the messages replica a was in the middle of were done by replica b',
  );
  const { rows: attempts } = await pool.query<{ attempts: number }>(
    `SELECT attempts FROM bus_deliveries WHERE consumer = 'replicas' AND message_id = ANY($1)`,
    [cutShort],
  );
  assert.deepEqual(
    attempts.map((r) => r.attempts),
    cutShort.map(() => 2),
    'each was delivered twice: to replica a, which died, then to replica b',
  );
  assert.equal(await doneBy('a'), doneByA, 'nothing more was done by the killed replica');
  assert.equal(
    await doneBy('b'),
    MESSAGES - doneByA,
    'replica b did the rest, its partitions and those it took over',
  );
});
