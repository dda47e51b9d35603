/**
 * Benchmark: what one serial-by-key claim of the PostgreSQL bus costs as the backlog grows (the
 * apply topic's claim, `serialClaimStatement` in packages/runtime/src/bus/pg-transport.ts). Every
 * claim of a topic waits for the one before it, so its cost bounds how many messages a topic can
 * start a second.
 *
 * The outbox is filled as queued applies leave it: BUS_CLAIM_GROUPS (default 10) ad accounts, each
 * message its own key `<account> <id>` (a create), the backlog spread evenly over the accounts in
 * order of arrival, and 32 of the oldest messages running (a consumer's handler slots). For each
 * backlog (1,000, the baseline, then 10,000 and 100,000; BUS_CLAIM_SIZES to choose) the claim of
 * one message and of eight is timed BUS_CLAIM_CALLS times (default 30, after 5 to warm up), each in
 * a transaction rolled back, so every call sees the same backlog; the median is printed beside the
 * baseline's and the ratio. Then the claim's plan at the largest backlog: it must not read the
 * backlog (no sequential scan of the outbox, no sort of all its rows).
 *
 * `npm run bench:claim`. Env: BUS_CLAIM_GROUPS, BUS_CLAIM_SIZES (comma-separated), BUS_CLAIM_CALLS.
 */
import { migrateBus } from '@adsmcp/runtime/bus/outbox';
import { serialClaimStatement } from '@adsmcp/runtime/bus/pg-transport';
import { createPool } from '@adsmcp/runtime/db';
import { stopTestServer, testDatabase } from '@adsmcp/testkit/postgres';
import pg from 'pg';
import { envInt, median } from './bench-kit.ts';

const GROUPS = envInt('BUS_CLAIM_GROUPS', 10, 1, 10_000);
const CALLS = envInt('BUS_CLAIM_CALLS', 30, 3, 1000);
const SIZES = (process.env.BUS_CLAIM_SIZES ?? '1000,10000,100000').split(',').map((s) => {
  const n = Number(s.trim());
  if (!Number.isInteger(n) || n < 100 || n > 1_000_000)
    throw new Error(`BUS_CLAIM_SIZES must list whole numbers from 100 to 1,000,000 (got "${s}")`);
  return n;
});
const RUNNING = 32;
const TOPIC = 'changes.apply';

async function fill(c: pg.Client, backlog: number): Promise<void> {
  await c.query('TRUNCATE bus_outbox');
  await c.query(
    `INSERT INTO bus_outbox (id, topic, key, payload)
     SELECT gen_random_uuid(), $1, 'account-' || (i % $3) || ' ' || gen_random_uuid(), '{}'
       FROM generate_series(1, $2::int) AS i`,
    [TOPIC, backlog, GROUPS],
  );
  await c.query(
    `UPDATE bus_outbox SET status = 'running', locked_by = gen_random_uuid(),
            locked_until = now() + interval '10 minutes', attempts = 1
      WHERE id IN (SELECT id FROM bus_outbox ORDER BY seq LIMIT $1)`,
    [RUNNING],
  );
  await c.query('VACUUM ANALYZE bus_outbox');
}

async function timeClaim(c: pg.Client, limit: number): Promise<number> {
  const sql = serialClaimStatement();
  const times: number[] = [];
  for (let i = 0; i < CALLS + 5; i++) {
    await c.query('BEGIN');
    const started = performance.now();
    const { rows } = await c.query(sql, [
      TOPIC,
      limit,
      '00000000-0000-4000-8000-000000000001',
      60_000,
      'bench',
    ]);
    const took = performance.now() - started;
    await c.query('ROLLBACK');
    if (rows.length !== limit) throw new Error(`a claim of ${limit} took ${rows.length} messages`);
    if (i >= 5) times.push(took);
  }
  return median(times);
}

async function main(): Promise<void> {
  const db = await testDatabase();
  const pool = createPool(db.url, 'bench');
  const c = new pg.Client({ connectionString: db.url, options: '-c search_path=bench' });
  try {
    await migrateBus(pool, 'bench');
    await c.connect();
    process.stdout.write(
      `serial-by-key claim of the outbox: ${GROUPS} key groups, ${RUNNING} messages running, median of ${CALLS} claims (after 5)\n`,
    );
    const rows: { backlog: number; one: number; eight: number }[] = [];
    for (const backlog of SIZES) {
      await fill(c, backlog);
      rows.push({ backlog, one: await timeClaim(c, 1), eight: await timeClaim(c, 8) });
    }
    const base = rows[0] as (typeof rows)[number];
    process.stdout.write('backlog      claim of 1   ratio     claim of 8   ratio\n');
    for (const r of rows)
      process.stdout.write(
        `${String(r.backlog).padStart(7)}   ${r.one.toFixed(2).padStart(9)} ms   ${(r.one / base.one).toFixed(2)}x   ${r.eight.toFixed(2).padStart(9)} ms   ${(r.eight / base.eight).toFixed(2)}x\n`,
      );
    const { rows: plan } = await c.query<{ 'QUERY PLAN': unknown }>(
      `EXPLAIN (FORMAT JSON) ${serialClaimStatement()}`,
      [TOPIC, 8, '00000000-0000-4000-8000-000000000001', 60_000, 'bench'],
    );
    const nodes: string[] = [];
    const walk = (n: Record<string, unknown>) => {
      nodes.push(`${n['Node Type']}${n['Index Name'] ? ` (${n['Index Name']})` : ''}`);
      for (const child of (n.Plans as Record<string, unknown>[] | undefined) ?? []) walk(child);
    };
    const explained = (plan[0]?.['QUERY PLAN'] ?? []) as { Plan: Record<string, unknown> }[];
    if (explained[0]) walk(explained[0].Plan);
    const sequential = nodes.filter((n) => n.startsWith('Seq Scan'));
    process.stdout.write(`plan at ${SIZES.at(-1)}: ${nodes.join(' > ')}\n`);
    if (sequential.length > 0) {
      process.stdout.write('the claim scans the outbox sequentially\n');
      process.exitCode = 1;
    }
  } finally {
    await c.end().catch(() => undefined);
    await pool.end();
    await db.drop();
    await stopTestServer();
  }
}

await main();
