/**
 * Benchmark: what a read costs as a workspace's history grows. One workspace is seeded at a small
 * size (SCALE_SMALL, default 1,000 of each record) and measured, then grown to the large size
 * (SCALE_LARGE, default 1,000,000 changes and audit events, a tenth of that in marketing items
 * and performance imports) and measured again, in the same run, through the real stack: the MCP
 * tools as JSON-RPC posts to the gateway, and the dashboard's pages with a signed-in session.
 * Each figure is the median of SCALE_CALLS sequential calls (default 15, after 3 to warm up) of
 * the first page and of a page deep into the history; the ratio large / small is printed beside.
 *
 * The records are written in the stores' own tables by SQL (`generate_series`, and `COPY` for the
 * audit log, whose hash chain is computed here with the changes service's own row hash), not
 * through the tools, which would take hours at the large size.
 *
 * After the timings, each hot list query is run as `EXPLAIN (FORMAT JSON)` (the store's own
 * function, given a connection that explains instead of running) and its plan summarised; a
 * sequential scan of a table with more than SCALE_SMALL rows fails the run.
 *
 * `npm run bench:scale` runs it. Env: SCALE_SMALL, SCALE_LARGE, SCALE_CALLS.
 */
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { pipeline } from 'node:stream/promises';
import type { Queryable } from '@adsmcp/runtime/db';
import { stopTestServer, testDatabase } from '@adsmcp/testkit/postgres';
import { startStack } from '@adsmcp/testkit/stack';
import pg from 'pg';
import { from as copyFrom } from 'pg-copy-streams';
import { GENESIS_HASH, listAuditEvents, rowHash } from '../services/changes/src/store/audit-store.ts';
import { listChanges } from '../services/changes/src/store/change-store.ts';
import { listImports } from '../services/marketing/src/store/import-store.ts';
import { listItems } from '../services/marketing/src/store/item-store.ts';
import { countProposals, listProposals } from '../services/optimizer/src/store/review-store.ts';

const SMALL = Number(process.env.SCALE_SMALL ?? 1000);
const LARGE = Number(process.env.SCALE_LARGE ?? 1_000_000);
const CALLS = Number(process.env.SCALE_CALLS ?? 15);
const WARMUP = 3;
/** After this long on one read, it is timed no more than the 3 times a median needs. */
const SLOW_MS = 60_000;
/** The tools' offset bound (their schema's `offset` maximum). */
const MAX_OFFSET = 100_000;
const DASHBOARD_PAGE = 25;

/** How many of each record a size holds. */
const sizes = (n: number) => ({
  changes: n,
  audit: n,
  items: Math.max(SMALL, Math.round(n / 10)),
  imports: Math.max(SMALL, Math.round(n / 100)),
  proposals: Math.max(SMALL, Math.round(n / 10)),
});

interface Target {
  label: string;
  /** One request; resolves with the response text, rejects on any failure. */
  call(size: number): Promise<string>;
}

function median(values: number[]): number {
  const sorted = [...values].sort((a, b) => a - b);
  return sorted[Math.floor(sorted.length / 2)] ?? Number.NaN;
}

/**
 * The median time of `t` at `size`, printed as it is known. A read that takes seconds is timed
 * fewer times (at least 3, for at most about a minute): its figure is the finding either way.
 */
async function timeTarget(t: Target, size: number): Promise<number> {
  const started = performance.now();
  for (let i = 0; i < WARMUP && performance.now() - started < SLOW_MS; i++) await t.call(size);
  const times: number[] = [];
  while (times.length < CALLS && (times.length < 3 || performance.now() - started < SLOW_MS)) {
    const at = performance.now();
    await t.call(size);
    times.push(performance.now() - at);
  }
  const figure = median(times);
  process.stdout.write(`  ${t.label} at ${size}: ${figure.toFixed(1)} ms (${times.length} calls)\n`);
  return figure;
}

/** Seeds the workspace's changes, from `from` (exclusive) to `to` rows, older than any before. */
async function seedChanges(db: pg.Client, workspaceId: string, accounts: string[], from: number, to: number) {
  // Statuses as a year of use leaves them: most applied, some rejected, failed or left to expire.
  await db.query(
    `INSERT INTO changes.changes (change_id, workspace_id, account_id, tool, status, summary, method, path, body_json,
                                  digest, target_path, target_before_json, prepared_by, prepared_at,
                                  approved_by, approved_at, apply_requested_by, apply_requested_at, applied_at,
                                  upstream_status, rejected_by, rejected_at, reject_reason)
     SELECT gen_random_uuid(), $1, ($2::uuid[])[1 + i % cardinality($2::uuid[])], 'ads_update_ad', st,
            'Benchmark change ' || i, 'POST', '/v1/ads/' || i, '{"headline":"Benchmark"}',
            encode(sha256(i::text::bytea), 'hex'), '/v1/ads/' || i, '{}', 'user:bench via dashboard', at,
            CASE WHEN st IN ('applied', 'failed', 'approved') THEN 'user:bench via dashboard' END,
            CASE WHEN st IN ('applied', 'failed', 'approved') THEN at + interval '1 minute' END,
            CASE WHEN st IN ('applied', 'failed') THEN 'user:bench via dashboard' END,
            CASE WHEN st IN ('applied', 'failed') THEN at + interval '2 minutes' END,
            CASE WHEN st = 'applied' THEN at + interval '3 minutes' END,
            CASE WHEN st = 'applied' THEN 200 WHEN st = 'failed' THEN 400 END,
            CASE WHEN st = 'rejected' THEN 'user:bench via dashboard' END,
            CASE WHEN st = 'rejected' THEN at + interval '1 minute' END,
            CASE WHEN st = 'rejected' THEN 'Not now' END
       FROM generate_series($3::int + 1, $4::int) AS i,
            LATERAL (SELECT now() - interval '1 day' - i * interval '20 seconds' AS at,
                            (ARRAY['applied','applied','applied','applied','applied','applied','rejected','failed','prepared','approved'])[1 + i % 10] AS st) s`,
    [workspaceId, accounts, from, to],
  );
}

/** Appends audit events up to `to` rows in all, continuing the workspace's chain. */
async function seedAudit(db: pg.Client, workspaceId: string, accounts: string[], to: number) {
  await db.query('BEGIN');
  // The head row serialises appends: the services' own appends wait until this chain is in.
  const { rows: heads } = await db.query<{ seq: string; hash: string }>(
    'SELECT seq::text, hash FROM changes.audit_heads WHERE workspace_id = $1 FOR UPDATE',
    [workspaceId],
  );
  let seq = BigInt(heads[0]?.seq ?? '0');
  let prev = heads[0]?.hash ?? GENESIS_HASH;
  const copy = db.query(
    copyFrom(
      'COPY changes.audit_log (workspace_id, seq, at, actor, kind, subject, details, source_key, prev_hash, hash) FROM STDIN',
    ),
  );
  const start = Date.now() - 86_400_000;
  async function* lines() {
    let buffer = '';
    while (seq < BigInt(to)) {
      seq += 1n;
      const n = Number(seq);
      const account = accounts[n % accounts.length] as string;
      const row = {
        workspace_id: workspaceId,
        seq: seq.toString(),
        at: new Date(start + n * 1000),
        actor: 'user:bench via dashboard',
        kind: 'change.approved',
        subject: `bench-change-${n}`,
        details: { account_id: account, summary: `Benchmark change ${n}` },
        source_key: null,
        prev_hash: prev,
      };
      const hash = rowHash(row);
      buffer += `${workspaceId}\t${row.seq}\t${row.at.toISOString()}\t${row.actor}\t${row.kind}\t${row.subject}\t${JSON.stringify(row.details)}\t\\N\t${prev}\t${hash}\n`;
      prev = hash;
      if (buffer.length > 1 << 20) {
        yield buffer;
        buffer = '';
      }
    }
    if (buffer) yield buffer;
  }
  await pipeline(lines, copy);
  await db.query(
    `INSERT INTO changes.audit_heads (workspace_id, seq, hash) VALUES ($1, $2, $3)
     ON CONFLICT (workspace_id) DO UPDATE SET seq = excluded.seq, hash = excluded.hash`,
    [workspaceId, seq.toString(), prev],
  );
  await db.query('COMMIT');
}

async function seedItems(db: pg.Client, workspaceId: string, from: number, to: number) {
  await db.query(
    `INSERT INTO marketing.marketing_items (workspace_id, item_id, kind, name, data, revision, created_at, updated_at)
     SELECT $1, gen_random_uuid(), (ARRAY['playbook','brief','inspiration','creative'])[1 + i % 4],
            'Benchmark item ' || i, jsonb_build_object('guidance', 'Lead with offer ' || i, 'evidence', 'general_guidance'),
            1, now() - interval '1 day' - i * interval '1 minute', now() - interval '1 day' - i * interval '1 minute'
       FROM generate_series($2::int + 1, $3::int) AS i`,
    [workspaceId, from, to],
  );
}

async function seedImports(db: pg.Client, workspaceId: string, from: number, to: number) {
  await db.query(
    `INSERT INTO marketing.performance_imports (workspace_id, import_id, source, name, currency, timezone, attribution,
                                                since, until, format, content_hash, status, row_count, rows_saved,
                                                ad_count, totals, created_by, created_at, started_at, finished_at)
     SELECT $1, gen_random_uuid(), 'other', 'Benchmark import ' || i, 'USD', 'UTC', 'last click', date '2026-01-01',
            date '2026-01-31', 'rows', encode(sha256(('import ' || i)::bytea), 'hex'), 'completed', 5000, 5000, 50,
            '{"impressions":{"sum":"100000","rows":5000}}', 'user:bench via dashboard', at, at, at + interval '5 seconds'
       FROM generate_series($2::int + 1, $3::int) AS i,
            LATERAL (SELECT now() - interval '1 day' - i * interval '1 hour' AS at) s`,
    [workspaceId, from, to],
  );
}

/** One optimizer, one completed review run, and its proposals from `from` (exclusive) to `to`. */
async function seedProposals(db: pg.Client, workspaceId: string, account: string, from: number, to: number) {
  const ids = {
    optimizer: '0e0b7a52-8a4f-4b71-9d0e-3f2a1c5b6d70',
    run: '5c1d2e3f-4a5b-4c6d-8e7f-9a0b1c2d3e4f',
  };
  if (from === 0) {
    await db.query(
      `INSERT INTO optimizer.optimizers (optimizer_id, workspace_id, account_id, name, config, enabled, paused_at,
                                         revision, created_at, updated_at)
       VALUES ($1, $2, $3, 'Benchmark optimizer', '{}', false, now(), 1, now() - interval '2 years', now())`,
      [ids.optimizer, workspaceId, account],
    );
    await db.query(
      `INSERT INTO optimizer.review_runs (run_id, workspace_id, optimizer_id, account_id, status, trigger, requested_by,
                                          outcome, summary, completed_at, created_at, updated_at)
       VALUES ($1, $2, $3, $4, 'completed', 'request', 'user:bench via dashboard', 'proposals', 'Benchmark run',
               now(), now() - interval '2 years', now())`,
      [ids.run, workspaceId, ids.optimizer, account],
    );
  }
  // Most reviewed long ago: rejected, published or expired unreviewed.
  await db.query(
    `INSERT INTO optimizer.proposals (proposal_id, workspace_id, optimizer_id, account_id, run_id, position, status,
                                      revision, variant, review_expires_at, created_at, updated_at)
     SELECT gen_random_uuid(), $1, $2, $3, $4, i, (ARRAY['rejected','published','pending_review'])[1 + i % 3], 1,
            jsonb_build_object('baseAdId', 'ad-' || i, 'name', 'Variant ' || i, 'title', 'Free shipping today',
                               'body', 'Plants at your door in two days.', 'targetUrl', 'https://example.com/plants',
                               'rationale', 'Low CTR with enough evidence.', 'hypothesis', 'Naming the offer raises CTR.'),
            at + interval '7 days', at, at
       FROM generate_series($5::int + 1, $6::int) AS i,
            LATERAL (SELECT now() - interval '1 day' - i * interval '5 minutes' AS at) s`,
    [workspaceId, ids.optimizer, account, ids.run, from, to],
  );
}

/** A connection that explains each query instead of running it, and keeps the plans. */
function explainer(db: pg.Client, schema: string, plans: { sql: string; plan: PlanNode }[]): Queryable {
  return {
    query: (async (text: string, values?: unknown[]) => {
      await db.query(`SET search_path = ${schema}`);
      const { rows } = await db.query<{ 'QUERY PLAN': [{ Plan: PlanNode }] }>(
        `EXPLAIN (FORMAT JSON) ${text}`,
        values,
      );
      const plan = rows[0]?.['QUERY PLAN'][0]?.Plan;
      if (plan) plans.push({ sql: text, plan });
      return { rows: [], rowCount: 0 };
    }) as unknown as Queryable['query'],
  };
}

interface PlanNode {
  'Node Type': string;
  'Relation Name'?: string;
  'Index Name'?: string;
  'Plan Rows'?: number;
  'Total Cost'?: number;
  Plans?: PlanNode[];
}

/** The plan as one line (each node, its table or index), and the tables it scans sequentially. */
function summarise(plan: PlanNode): { text: string; seqScans: string[] } {
  const parts: string[] = [];
  const seqScans: string[] = [];
  const walk = (n: PlanNode, depth: number) => {
    const on = n['Index Name'] ?? n['Relation Name'];
    parts.push(`${'>'.repeat(depth)}${n['Node Type']}${on ? ` (${on})` : ''}`);
    if (n['Node Type'] === 'Seq Scan' && n['Relation Name']) seqScans.push(n['Relation Name']);
    for (const child of n.Plans ?? []) walk(child, depth + 1);
  };
  walk(plan, 0);
  return { text: `${parts.join(' ')}; cost ${plan['Total Cost']}`, seqScans };
}

async function main(): Promise<void> {
  const db = await testDatabase();
  const dataDir = await mkdtemp(join(tmpdir(), 'adsmcp-bench-scale-'));
  const stack = await startStack({
    databaseUrl: db.url,
    dataDir,
    env: {
      LOG_LEVEL: 'warn',
      MCP_RATE_PER_SECOND: '100000',
      MCP_RATE_BURST: '100000',
      UPSTREAM_RATE_PER_SECOND: '100000',
      UPSTREAM_BURST: '100000',
      SANDBOX_RATE_PER_SECOND: '100000',
    },
  });
  const sql = new pg.Client({ connectionString: db.url });
  await sql.connect();
  let failed = false;
  try {
    const seed = await stack.seedDemo();
    const workspaceId = seed.workspaceId;
    const accounts = seed.accounts.map((a) => a.account_id);
    const gateway = new URL(stack.mcpUrl).origin;
    if (!seed.dashboardPassword) throw new Error('the demo has no dashboard password');
    const login = await fetch(`${gateway}/dashboard/login`, {
      method: 'POST',
      redirect: 'manual',
      headers: { origin: gateway, 'content-type': 'application/x-www-form-urlencoded' },
      body: new URLSearchParams({ email: seed.dashboardUser, password: seed.dashboardPassword }).toString(),
    });
    const cookie = login.headers.get('set-cookie')?.split(';')[0];
    if (!cookie) throw new Error(`signing in to the dashboard failed: ${login.status}`);

    let rpcId = 0;
    const tool = async (name: string, args: object): Promise<Record<string, unknown>> => {
      const res = await fetch(stack.mcpUrl, {
        method: 'POST',
        headers: {
          'content-type': 'application/json',
          accept: 'application/json, text/event-stream',
          'mcp-protocol-version': '2025-11-25',
          authorization: `Bearer ${seed.token}`,
        },
        body: JSON.stringify({
          jsonrpc: '2.0',
          id: ++rpcId,
          method: 'tools/call',
          params: { name, arguments: args },
        }),
      });
      const text = await res.text();
      const line = text.split('\n').find((l) => l.startsWith('data: '));
      const msg = JSON.parse(line ? line.slice(6) : text) as {
        result?: { structuredContent?: Record<string, unknown>; isError?: boolean };
      };
      if (!msg.result?.structuredContent || msg.result.isError)
        throw new Error(`${name} failed: ${text.slice(0, 300)}`);
      return msg.result.structuredContent;
    };
    const dashboard = async (path: string): Promise<string> => {
      const res = await fetch(`${gateway}${path}`, { headers: { cookie }, redirect: 'manual' });
      const text = await res.text();
      if (res.status !== 200) throw new Error(`${path} answered ${res.status}: ${text.slice(0, 300)}`);
      return text;
    };
    // The deep page of an offset list: the last page, or the tools' offset bound.
    const deepOffset = (count: number, limit: number) => Math.min(MAX_OFFSET, Math.max(0, count - limit));
    const changeAt = new Map<number, string>();

    const targets: Target[] = [
      {
        label: 'ads_list_changes, first page',
        call: async () => JSON.stringify(await tool('ads_list_changes', {})),
      },
      {
        label: 'ads_list_changes, deep page',
        call: async (n) =>
          JSON.stringify(
            await tool('ads_list_changes', { offset: deepOffset(sizes(n).changes, 20), limit: 20 }),
          ),
      },
      {
        label: 'ads_list_changes, status applied, deep',
        call: async (n) =>
          JSON.stringify(
            await tool('ads_list_changes', {
              status: 'applied',
              offset: deepOffset(Math.floor((sizes(n).changes * 6) / 10), 20),
              limit: 20,
            }),
          ),
      },
      {
        label: 'ads_get_change',
        call: async (n) => JSON.stringify(await tool('ads_get_change', { change_id: changeAt.get(n) })),
      },
      { label: 'dashboard changes, first page', call: () => dashboard('/dashboard/changes') },
      {
        label: 'dashboard changes, deep page',
        call: async (n) =>
          dashboard(
            `/dashboard/changes?page=${Math.floor(deepOffset(sizes(n).changes, 20) / DASHBOARD_PAGE)}`,
          ),
      },
      { label: 'dashboard audit, first page', call: () => dashboard('/dashboard/audit') },
      { label: 'dashboard audit, deep page', call: () => dashboard('/dashboard/audit?before=500') },
      {
        label: 'ads_list_marketing_items, first',
        call: async () => JSON.stringify(await tool('ads_list_marketing_items', {})),
      },
      {
        label: 'ads_list_marketing_items, deep',
        call: async (n) =>
          JSON.stringify(await tool('ads_list_marketing_items', { offset: deepOffset(sizes(n).items, 20) })),
      },
      {
        label: 'ads_list_performance_imports, first',
        call: async () => JSON.stringify(await tool('ads_list_performance_imports', {})),
      },
      {
        label: 'ads_list_performance_imports, deep',
        call: async (n) =>
          JSON.stringify(
            await tool('ads_list_performance_imports', { offset: deepOffset(sizes(n).imports, 20) }),
          ),
      },
      {
        label: 'ads_list_optimization_proposals, first',
        call: async () => JSON.stringify(await tool('ads_list_optimization_proposals', {})),
      },
      {
        label: 'ads_list_optimization_proposals, deep',
        call: async (n) =>
          JSON.stringify(
            await tool('ads_list_optimization_proposals', { offset: deepOffset(sizes(n).proposals, 20) }),
          ),
      },
      { label: 'dashboard proposals, first page', call: () => dashboard('/dashboard/proposals') },
    ];

    const grow = async (from: number, to: number) => {
      const started = performance.now();
      const a = sizes(from);
      const b = sizes(to);
      await seedChanges(sql, workspaceId, accounts, from === 0 ? 0 : a.changes, b.changes);
      await seedAudit(sql, workspaceId, accounts, b.audit);
      await seedItems(sql, workspaceId, from === 0 ? 0 : a.items, b.items);
      await seedImports(sql, workspaceId, from === 0 ? 0 : a.imports, b.imports);
      await seedProposals(sql, workspaceId, accounts[0] as string, from === 0 ? 0 : a.proposals, b.proposals);
      // As autovacuum would have by then: statistics and the visibility map.
      for (const table of [
        'changes.changes',
        'changes.audit_log',
        'marketing.marketing_items',
        'marketing.performance_imports',
      ])
        await sql.query(`VACUUM ANALYZE ${table}`);
      // A change in the middle of the history, for ads_get_change.
      const { rows } = await sql.query<{ change_id: string }>(
        `SELECT change_id FROM changes.changes WHERE workspace_id = $1 AND summary = $2`,
        [workspaceId, `Benchmark change ${Math.floor(b.changes / 2)}`],
      );
      changeAt.set(to, rows[0]?.change_id ?? '');
      process.stdout.write(
        `seeded ${b.changes} changes, ${b.audit} audit events, ${b.items} marketing items, ${b.imports} performance imports, ${b.proposals} proposals in ${((performance.now() - started) / 1000).toFixed(1)} s\n`,
      );
    };

    const figures = new Map<string, [number, number]>();
    await grow(0, SMALL);
    for (const t of targets) figures.set(t.label, [await timeTarget(t, SMALL), Number.NaN]);
    await grow(SMALL, LARGE);
    for (const t of targets) {
      const small = figures.get(t.label)?.[0] ?? Number.NaN;
      figures.set(t.label, [small, await timeTarget(t, LARGE)]);
    }

    process.stdout.write(
      `\nmedian ms of ${CALLS} sequential calls (after ${WARMUP}); sizes are changes and audit events (items and proposals /10, imports /100)\n`,
    );
    process.stdout.write(
      `${'read'.padEnd(40)} ${String(SMALL).padStart(10)} ${String(LARGE).padStart(10)}   ratio\n`,
    );
    for (const [label, [small, large]] of figures) {
      process.stdout.write(
        `${label.padEnd(40)} ${small.toFixed(1).padStart(10)} ${large.toFixed(1).padStart(10)}   ${(large / small).toFixed(2)}x\n`,
      );
    }

    // The hot queries' plans at the large size, from the stores' own functions.
    const plans: { label: string; sql: string; plan: PlanNode }[] = [];
    const explain = async (label: string, schema: string, run: (q: Queryable) => Promise<unknown>) => {
      const got: { sql: string; plan: PlanNode }[] = [];
      await run(explainer(sql, schema, got));
      for (const p of got) plans.push({ label, ...p });
    };
    const expiry = { preparedValidHours: 72, approvalValidHours: 24 };
    const now = new Date();
    await explain('ads_list_changes, first page', 'changes', (q) =>
      listChanges(q, { workspaceId, expiry, now, limit: 20, offset: 0 }),
    );
    await explain('ads_list_changes, deep page', 'changes', (q) =>
      listChanges(q, { workspaceId, expiry, now, limit: 20, offset: MAX_OFFSET }),
    );
    await explain('ads_list_changes, status applied', 'changes', (q) =>
      listChanges(q, { workspaceId, status: 'applied', expiry, now, limit: 20, offset: MAX_OFFSET }),
    );
    await explain('ads_list_changes, one account', 'changes', (q) =>
      listChanges(q, { workspaceId, accountId: accounts[0], expiry, now, limit: 20, offset: 0 }),
    );
    await explain('dashboard audit page', 'changes', (q) =>
      listAuditEvents(q, { workspaceId, beforeSeq: 500n, limit: 50 }),
    );
    await explain('ads_list_marketing_items', 'marketing', (q) =>
      listItems(q, workspaceId, { limit: 20, offset: MAX_OFFSET }),
    );
    await explain('ads_list_performance_imports', 'marketing', (q) =>
      listImports(q, workspaceId, MAX_OFFSET, 20),
    );
    const proposalFilter = { workspaceId, now, limit: 20, offset: MAX_OFFSET };
    await explain('ads_list_optimization_proposals', 'optimizer', (q) => listProposals(q, proposalFilter));
    await explain('ads_list_optimization_proposals, count', 'optimizer', (q) =>
      countProposals(q, proposalFilter),
    );
    process.stdout.write('\nquery plans at the large size\n');
    // A table is large when it holds more rows than the small size: a small one is read whole.
    const { rows: tables } = await sql.query<{ relname: string; rows: number }>(
      `SELECT c.relname, c.reltuples::float8 AS rows FROM pg_class c JOIN pg_namespace n ON n.oid = c.relnamespace
        WHERE n.nspname IN ('changes', 'marketing', 'optimizer') AND c.relkind = 'r'`,
    );
    const large = new Set(tables.filter((t) => t.rows > SMALL).map((t) => t.relname));
    for (const p of plans) {
      const { text, seqScans } = summarise(p.plan);
      const scanned = seqScans.filter((t) => large.has(t));
      const bad = scanned.length > 0 ? `   SEQUENTIAL SCAN of ${scanned.join(', ')}` : '';
      if (bad) failed = true;
      process.stdout.write(`${p.label}: ${text}${bad}\n`);
    }
  } finally {
    await sql.end();
    await stack.stop();
    await db.drop();
    await stopTestServer();
    await rm(dataDir, { recursive: true, force: true });
  }
  if (failed) {
    process.stdout.write('a hot query scans a large table sequentially\n');
    // Not exitCode: a handle the stack leaves behind may end the process with 0 before it is read.
    process.exit(1);
  }
}

main().catch((err: unknown) => {
  process.stderr.write(`bench failed: ${err instanceof Error ? (err.stack ?? err.message) : String(err)}\n`);
  process.exit(1);
});
