/**
 * Benchmark: a 5,000-row performance CSV imported end to end — the official MCP client calls
 * `ads_import_performance` on the real processes (gateway -> marketing service -> outbox -> bus
 * worker parses with csv-parse, checks every row, saves them in one transaction) and the call
 * answers once the import completed — and beside it in the same run a PostgreSQL `COPY ... FROM
 * STDIN (FORMAT csv)` of the same rows into the same table (performance_import_rows, with its
 * checks and indexes; each row given its workspace, import and row number, as the worker gives
 * them). Prints the median of each, every run's figure, and the ratio.
 *
 * `npm run bench:import` runs it. Env: BENCH_RUNS (default 9 timed runs of each, after 3 warm-ups),
 * BENCH_LOG_LEVEL=info (the worker's own time per import), BENCH_CPU_PROF_DIR (CPU profiles).
 */

import { randomUUID } from 'node:crypto';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Readable } from 'node:stream';
import { pipeline } from 'node:stream/promises';
import { connectClient } from '@adsmcp/testkit/mcp-clients';
import { stopTestServer, testDatabase } from '@adsmcp/testkit/postgres';
import { startStack } from '@adsmcp/testkit/stack';
import pg from 'pg';
import { from as copyFrom } from 'pg-copy-streams';
import { median } from './bench-kit.ts';

const runs = Number(process.env.BENCH_RUNS ?? 9);
const WARMUPS = 3;
const ROWS = 5000;

/** A CSV of `rows` ads as a vendor export looks: text columns, whole counts, decimal money. */
function generateCsv(rows: number, seed: number): string {
  const lines = ['ad_id,name,headline,campaign,impressions,clicks,spend,conversions,revenue'];
  for (let i = 0; i < rows; i++) {
    const n = i + seed * rows;
    const impressions = 1000 + ((n * 7919) % 50_000);
    const clicks = (n * 31) % 900;
    const spend = `${(n * 13) % 5000}.${String(n % 100).padStart(2, '0')}`;
    const conversions = i % 10 === 0 ? '' : String(n % 40);
    const revenue = i % 10 === 0 ? '' : `${(n * 17) % 20000}.${String((n * 3) % 100).padStart(2, '0')}`;
    lines.push(
      `ad_${n},"Ad ${n}, spring","Fresh plants, ${n % 50}% off",Campaign ${n % 25},${impressions},${clicks},${spend},${conversions},${revenue}`,
    );
  }
  return `${lines.join('\n')}\n`;
}

async function main(): Promise<void> {
  const db = await testDatabase();
  const dataDir = await mkdtemp(join(tmpdir(), 'adsmcp-bench-'));
  const stack = await startStack({
    databaseUrl: db.url,
    dataDir,
    // BENCH_CPU_PROF_DIR=<dir> writes a CPU profile of every process there (`npm run bench:profile <dir>`).
    nodeArgs: process.env.BENCH_CPU_PROF_DIR
      ? ['--cpu-prof', `--cpu-prof-dir=${process.env.BENCH_CPU_PROF_DIR}`]
      : [],
    env: {
      LOG_LEVEL: process.env.BENCH_LOG_LEVEL ?? 'warn',
      MCP_RATE_PER_SECOND: '100000',
      MCP_RATE_BURST: '100000',
    },
    // BENCH_LOG_LEVEL=info shows where the worker's time goes (read_ms: parse and check, save_ms: the transaction).
    onLine: (service, line) => {
      if (line.includes('performance import finished')) process.stdout.write(`${service}: ${line}\n`);
    },
  });
  const scratch = new pg.Client({ connectionString: db.url });
  try {
    const seed = await stack.seedDemo();
    const client = await connectClient('v2-2026', stack.mcpUrl, seed.token);
    await scratch.connect();

    /** Each import's end-to-end time and, from its record, recorded -> finished (the service's side). */
    const serviceSide: number[] = [];
    const importOnce = async (i: number): Promise<number> => {
      // Each run's content differs (its name), so none is answered as a repeat of another.
      const csv = generateCsv(ROWS, 0);
      const started = performance.now();
      const res = await client.callTool('ads_import_performance', {
        source: 'other',
        name: `Bench ${i}`,
        currency: 'EUR',
        timezone: 'Europe/Berlin',
        attribution: '7-day click',
        since: '2026-10-01',
        until: '2026-10-31',
        csv,
      });
      const ms = performance.now() - started;
      const imp = (
        res.structuredContent as {
          import?: { status: string; rows_saved: number; created_at: string; finished_at: string };
        }
      ).import;
      if (res.isError || imp?.status !== 'completed' || imp.rows_saved !== ROWS)
        throw new Error(
          `import ${i} did not complete: ${JSON.stringify(res.structuredContent).slice(0, 400)}`,
        );
      if (i >= 0) serviceSide.push(Date.parse(imp.finished_at) - Date.parse(imp.created_at));
      return ms;
    };

    // The same rows as the import's, each led by the key columns the worker writes beside them.
    const copyOnce = async (): Promise<number> => {
      const [header, ...lines] = generateCsv(ROWS, 0).trimEnd().split('\n');
      const importId = randomUUID();
      const keyed = lines.map((line, i) => `${seed.workspaceId},${importId},${i + 1},${line}\n`).join('');
      const started = performance.now();
      await pipeline(
        Readable.from([keyed]),
        scratch.query(
          copyFrom(
            `COPY marketing.performance_import_rows (workspace_id, import_id, row_number, ${header}) FROM STDIN (FORMAT csv)`,
          ),
        ),
      );
      const ms = performance.now() - started;
      const { rowCount } = await scratch.query(
        'DELETE FROM marketing.performance_import_rows WHERE workspace_id = $1 AND import_id = $2',
        [seed.workspaceId, importId],
      );
      if (rowCount !== ROWS) throw new Error(`COPY saved ${rowCount} rows`);
      return ms;
    };

    for (let w = 0; w < WARMUPS; w++) {
      await importOnce(-1 - w);
      await copyOnce();
    }
    const imports: number[] = [];
    const copies: number[] = [];
    for (let i = 0; i < runs; i++) {
      imports.push(await importOnce(i));
      copies.push(await copyOnce());
    }
    await client.close();
    const bytes = Buffer.byteLength(generateCsv(ROWS, 0));
    const mi = median(imports);
    const ms = median(serviceSide);
    const mc = median(copies);
    const fmt = (xs: number[]) => xs.map((x) => x.toFixed(0)).join(' ');
    process.stdout.write(
      `${ROWS}-row CSV (${(bytes / 1024).toFixed(0)} KiB), ${runs} runs each after ${WARMUPS} warm-ups, taken in turns; 2 cores shared by every process\n` +
        `ads_import_performance end to end (MCP client -> completed):   median ${mi.toFixed(1)} ms  [${fmt(imports)}]\n` +
        `  of which recorded -> finished (bus hop and worker):          median ${ms.toFixed(1)} ms  [${fmt(serviceSide)}]\n` +
        `COPY FROM STDIN (csv) of the same rows into the same table:     median ${mc.toFixed(1)} ms  [${fmt(copies)}]\n` +
        `ratio import / COPY: ${(mi / mc).toFixed(2)}x end to end (aim: at most 5x); ${(ms / mc).toFixed(2)}x recorded -> finished\n`,
    );
  } finally {
    await scratch.end().catch(() => undefined);
    await stack.stop();
    await db.drop();
    await stopTestServer();
    await rm(dataDir, { recursive: true, force: true });
  }
}

main().catch((err: unknown) => {
  process.stderr.write(`bench failed: ${err instanceof Error ? (err.stack ?? err.message) : String(err)}\n`);
  process.exit(1);
});
