/**
 * Benchmark: how much of the platform's per-account request rate the apply of approved changes
 * uses. The whole stack runs from its bundles (as `npm start` runs it) with the sandbox's limit and
 * the upstream-proxy's budget at the same rate, APPLY_BENCH_RATE requests per second per account
 * (default 20; the proxy's burst is that rate, the sandbox's twice it, as the platform's limit
 * allows).
 *
 * Each ad account gets APPLY_BENCH_CHANGES (default 1,000) approved changes that create an ad group
 * each: one is prepared through the MCP tool and approved by the admin command, the rest are copies
 * of it written in the changes table (distinct names, approved as it was), since preparing a
 * thousand through the tools spends the very budget this measures. Then all of them are asked to
 * be applied in one transaction (moved to `applying` and each one's apply message queued with
 * `enqueueApply`, as `ads_apply_change` does), account after account, and the clock runs from its
 * commit until the platform let the last request of the account through.
 *
 * The witness is the sandbox, not our counters: its rate limit's record of each account
 * (`GET /_sandbox/rate_limit`: requests let through and 429s) and its ledger (one mutation per
 * change, under the change's idempotency key).
 *
 * Three scenarios: one account alone; APPLY_BENCH_ACCOUNTS (default 10) other accounts of the same
 * workspace at once; as many accounts each in a workspace of its own, at once. Each figure is
 * printed beside its ideal: N requests at the configured rate take N / rate seconds; many accounts
 * together should take about as long as one alone (that many times the throughput), so their wall
 * time is also printed as a multiple of the single account's, measured in the same run.
 *
 * The ten accounts of one workspace share one audit chain (every outcome appends to it); the ten
 * workspaces have one each. After the runs every workspace's chain is verified (the run fails on a
 * break) and the events still staged, not yet chained, are counted.
 *
 * `npm run bench:apply`. Env: APPLY_BENCH_RATE, APPLY_BENCH_CHANGES, APPLY_BENCH_ACCOUNTS,
 * APPLY_BENCH_STATEMENTS (below), BENCH_CPU_PROF_DIR (a CPU profile of every process there, for `npm run bench:profile <dir>`).
 */
import { mkdtemp, rm } from 'node:fs/promises';
import { availableParallelism, tmpdir } from 'node:os';
import { join } from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import { deterministicId } from '@adsmcp/runtime/bus/outbox';
import { createPool, inTransaction, type Pool } from '@adsmcp/runtime/db';
import { stopTestServer, testDatabase } from '@adsmcp/testkit/postgres';
import { type ServiceName, type Stack, startStack } from '@adsmcp/testkit/stack';
import { verifyAuditChain } from '../services/changes/src/store/audit-store.ts';
import { enqueueApply } from '../services/changes/src/work/apply-message.ts';
import { createCredentialCipher } from '../services/upstream-proxy/src/domain/credential-cipher.ts';
import { insertConnection } from '../services/upstream-proxy/src/store/connection-store.ts';
import { cpuTimes, envInt, toolCaller as postTool, processTree } from './bench-kit.ts';

const RATE = envInt('APPLY_BENCH_RATE', 20, 1, 1000);
const CHANGES = envInt('APPLY_BENCH_CHANGES', 1000, 10, 100_000);
const ACCOUNTS = envInt('APPLY_BENCH_ACCOUNTS', 10, 2, 100);

interface Workspace {
  workspaceId: string;
  /** An MCP token of the workspace's admin. */
  token: string;
}

interface Account extends Workspace {
  accountId: string;
  upstreamAccountId: string;
}

interface RateUsage {
  allowed: number;
  refused: number;
  last_allowed_at: string | null;
}

/** What one account's run came to. */
interface AccountRun {
  account: Account;
  requests: number;
  rateLimited: number;
  /** From the apply request's commit to the platform's last request let through. */
  wallMs: number;
  applied: number;
  failed: number;
  /** Ledger entries, and how many idempotency keys were recorded more than once. */
  mutations: number;
  doubled: number;
}

const fmt = (n: number, digits = 1) => n.toFixed(digits);

/**
 * APPLY_BENCH_STATEMENTS=1: the embedded PostgreSQL runs pg_stat_statements, and each scenario of
 * many accounts prints its costliest statements per applied change.
 */
const STATEMENTS = process.env.APPLY_BENCH_STATEMENTS === '1';

async function main(): Promise<void> {
  if (STATEMENTS)
    process.env.TEST_PG_SETTINGS = 'shared_preload_libraries=pg_stat_statements pg_stat_statements.track=all';
  const db = await testDatabase();
  const dataDir = await mkdtemp(join(tmpdir(), 'adsmcp-bench-apply-'));
  const stack = await startStack({
    databaseUrl: db.url,
    dataDir,
    env: {
      LOG_LEVEL: 'warn',
      MCP_RATE_PER_SECOND: '100000',
      MCP_RATE_BURST: '100000',
      SANDBOX_RATE_PER_SECOND: String(RATE),
      UPSTREAM_RATE_PER_SECOND: String(RATE),
      // The platform lets an account burst to twice its rate; the proxy keeps to one second's
      // worth, so its bursts never press on the platform's edge.
      UPSTREAM_BURST: String(RATE),
    },
    // BENCH_CPU_PROF_DIR=<dir> writes a CPU profile of every process there (`npm run bench:profile <dir>`).
    nodeArgs: process.env.BENCH_CPU_PROF_DIR
      ? ['--cpu-prof', `--cpu-prof-dir=${process.env.BENCH_CPU_PROF_DIR}`]
      : [],
  });
  // Named `bench`, so that their backends' CPU is told from the services' (printCpu).
  const changesDb = benchPool(db.url, 'changes');
  const upstreamDb = benchPool(db.url, 'upstream_proxy');
  let failed = false;
  try {
    const seed = await stack.seedDemo();
    const demo: Workspace = { workspaceId: seed.workspaceId, token: seed.token };
    const cipher = createCredentialCipher(Buffer.from(stack.secrets.upstreamCredentialKey, 'base64'));

    /** A new workspace of its own, with an MCP token of its admin. */
    const newWorkspace = async (n: number): Promise<Workspace> => {
      const created = await stack.admin([
        'create-workspace',
        '--name',
        `Apply bench ${n}`,
        '--admin-email',
        `admin-${n}@apply-bench.example`,
        '--admin-password',
        'apply-bench-password-1',
      ]);
      const { workspace_id: workspaceId } = JSON.parse(created) as { workspace_id: string };
      const issued = await stack.admin(['create-token', '--workspace', workspaceId]);
      return { workspaceId, token: (JSON.parse(issued) as { token: string }).token };
    };

    /** A new sandbox account, connected to `ws`. */
    const newAccount = async (n: number, ws: Workspace): Promise<Account> => {
      const { workspaceId } = ws;
      const res = await sandbox(stack, 'POST', '/_sandbox/accounts', {
        name: `Apply bench ${n}`,
        currency: 'USD',
        time_zone: 'UTC',
      });
      const created = res as { account_id: string; credential: string };
      const accountId = crypto.randomUUID();
      await insertConnection(upstreamDb, {
        accountId,
        workspaceId,
        name: `Apply bench ${n}`,
        currency: 'USD',
        timeZone: 'UTC',
        canWrite: true,
        upstreamAccountId: created.account_id,
        credentialCiphertext: cipher.seal(created.credential, { workspaceId, accountId }),
      });
      return { ...ws, accountId, upstreamAccountId: created.account_id };
    };

    /** CHANGES approved changes of `account`, each creating an ad group; returns their ids. */
    const approvedChanges = async (account: Account): Promise<string[]> => {
      const tool = toolCaller(stack, account.token);
      const { campaigns } = (await tool('ads_list_campaigns', { account_id: account.accountId })) as {
        campaigns: { id: string; status: string }[];
      };
      const campaign = campaigns.find((c) => c.status !== 'archived');
      if (campaign === undefined) throw new Error('the sandbox account has no campaign');
      const prepared = (await tool('ads_create_ad_group', {
        account_id: account.accountId,
        body: {
          campaign_id: campaign.id,
          name: 'Apply bench 1',
          status: 'paused',
          bidding_config: { billing_event_type: 'click' },
        },
      })) as { change_id: string };
      await stack.admin(['approve', prepared.change_id, '--yes', '--workspace', account.workspaceId]);
      return copiesOf(changesDb, prepared.change_id, CHANGES - 1);
    };

    process.stdout.write(
      `apply rate: ${CHANGES} approved changes per account, platform limit ${RATE} requests/s per account (burst ${2 * RATE}), proxy budget ${RATE}/s (burst ${RATE})\n`,
    );
    const single = await newAccount(0, demo);
    const shared: Account[] = [];
    for (let i = 1; i <= ACCOUNTS; i++) shared.push(await newAccount(i, demo));
    const separate: Account[] = [];
    for (let i = 1; i <= ACCOUNTS; i++) separate.push(await newAccount(ACCOUNTS + i, await newWorkspace(i)));
    const work = new Map<string, string[]>();
    for (const account of [single, ...shared, ...separate])
      work.set(account.accountId, await approvedChanges(account));
    process.stdout.write('seeded\n');

    const ideal = CHANGES / RATE;
    const one = await run(stack, changesDb, [single], work);
    printRuns('one account', one, ideal);
    const oneWall = Math.max(...one.map((r) => r.wallMs)) / 1000;
    const oneThroughput = sum(one.map((r) => r.requests)) / oneWall;
    const scenarios: [string, Account[]][] = [
      [`${ACCOUNTS} accounts of one workspace at once`, shared],
      [`${ACCOUNTS} accounts of ${ACCOUNTS} workspaces at once`, separate],
    ];
    const runs = [...one];
    const speedups: string[] = [];
    if (STATEMENTS) await changesDb.query('CREATE EXTENSION IF NOT EXISTS pg_stat_statements SCHEMA public');
    for (const [label, accounts] of scenarios) {
      if (STATEMENTS) await changesDb.query('SELECT public.pg_stat_statements_reset()');
      const all = await run(stack, changesDb, accounts, work);
      printRuns(label, all, ideal);
      if (STATEMENTS) await printStatements(changesDb, accounts.length * CHANGES);
      runs.push(...all);
      const allWall = Math.max(...all.map((r) => r.wallMs)) / 1000;
      const allThroughput = sum(all.map((r) => r.requests)) / allWall;
      process.stdout.write(
        `  ${label}: ${fmt(allWall)} s against one account's ${fmt(oneWall)} s in the same run: ${fmt(allWall / oneWall, 2)}x the time (ideal 1.00x); throughput ${fmt(allThroughput)} requests/s against ${fmt(oneThroughput)}: ${fmt(allThroughput / oneThroughput, 2)}x (ideal ${ACCOUNTS}x)\n`,
      );
      speedups.push(`${label}: ${fmt(allThroughput / oneThroughput, 2)}x`);
    }
    process.stdout.write(
      `\nthroughput against one account (${fmt(oneThroughput)} requests/s), same run: ${speedups.join('; ')}\n`,
    );
    // Every outcome and state change above appended to its workspace's audit chain: it must still
    // verify and hold every event (the readers chain what is staged first).
    const workspaces = [demo.workspaceId, ...separate.map((a) => a.workspaceId)];
    const { rows: left } = await changesDb.query<{ n: number }>(
      'SELECT count(*)::int AS n FROM audit_staged',
    );
    let chained = 0;
    for (const workspaceId of workspaces) {
      const report = await verifyAuditChain(changesDb, workspaceId);
      if (report.broken) {
        failed = true;
        process.stdout.write(
          `audit chain of ${workspaceId} broken at row ${report.broken.seq}: ${report.broken.reason}\n`,
        );
      }
      chained += report.rows;
    }
    process.stdout.write(
      `audit: ${workspaces.length} workspace chains verify, ${chained} rows (${left[0]?.n ?? 0} events still staged before the check)\n`,
    );
    for (const r of runs) {
      if (r.rateLimited > 0 || r.doubled > 0 || r.applied !== CHANGES) failed = true;
    }
    if (failed)
      process.stdout.write('FAILED: a platform 429, a change applied twice, or a change not applied\n');
  } finally {
    await changesDb.end();
    await upstreamDb.end();
    await stack.stop();
    await db.drop();
    await stopTestServer();
    await rm(dataDir, { recursive: true, force: true });
  }
  if (failed) process.exitCode = 1;
}

/**
 * The 25 statements of the whole database that took the most time since the scenario began, per
 * applied change. Time is execution time: a lock waited for is in it, and a statement a trigger
 * or function ran is counted on its own line and again in the statement that ran it. The
 * scenario's one request (every change moved to `applying`, which fires the counts' row triggers
 * once a change) is in it too.
 */
async function printStatements(db: Pool, changes: number): Promise<void> {
  const { rows } = await db.query<{ calls: number; ms: number; query: string }>(
    `SELECT calls::int, total_exec_time AS ms, left(regexp_replace(query, '\\s+', ' ', 'g'), 150) AS query
       FROM public.pg_stat_statements ORDER BY total_exec_time DESC LIMIT 25`,
  );
  process.stdout.write(
    "  statements by execution time per applied change (lock waits in it; a trigger's statements also in the one that fired it):\n",
  );
  for (const r of rows)
    process.stdout.write(
      `    ${fmt(r.ms / changes, 3).padStart(7)} ms  ${fmt(r.calls / changes, 2).padStart(5)} calls  ${r.query}\n`,
    );
}

/** Applies every change of `accounts` at once and measures each account's run on the sandbox. */
async function run(
  stack: Stack,
  changesDb: Pool,
  accounts: Account[],
  work: Map<string, string[]>,
): Promise<AccountRun[]> {
  // Every budget full again: the proxy's refills in one second, the platform's in two.
  await sleep(2500);
  const before = new Map<string, RateUsage>();
  for (const a of accounts) before.set(a.accountId, await usage(stack, a));
  const ids = accounts.flatMap((a) => work.get(a.accountId) ?? []);
  const dbBefore = await dbActivity(changesDb);
  const asked = performance.now();
  await inTransaction(changesDb, async (tx) => {
    // One statement for the status (markApplying's update, without its audit event per change,
    // which is not what this measures and took most of a minute for ten thousand), then each
    // change's apply message as the tool queues it.
    const { rows } = await tx.query<{
      change_id: string;
      workspace_id: string;
      account_id: string;
      target_path: string;
    }>(
      `UPDATE changes SET status = 'applying', apply_requested_by = 'apply bench', apply_requested_at = now(), error = NULL
        WHERE change_id = ANY($1) AND status = 'approved'
        RETURNING change_id, workspace_id, account_id, target_path`,
      [ids],
    );
    if (rows.length !== ids.length)
      throw new Error(`${ids.length - rows.length} changes could not be moved to applying`);
    const byId = new Map(rows.map((r) => [r.change_id, r]));
    // In the order asked, account after account: the bus must not serve them in that order.
    for (const changeId of ids)
      await enqueueApply(tx, byId.get(changeId) as (typeof rows)[number], deterministicId('apply', changeId));
  });
  const t0 = Date.now();
  // From the commit, as the clock: the CPU its statements took is not the applies'.
  const cpuBefore = await cpuTimes(process.pid);
  process.stdout.write(
    `\n${ids.length} applies requested in ${fmt((performance.now() - asked) / 1000)} s (one transaction)\n`,
  );
  // Six times the ideal, and two minutes more: a run that slow has its figure either way.
  const deadline = t0 + (6 * CHANGES * 1000) / RATE + 120_000;
  for (;;) {
    const { rows } = await changesDb.query<{ n: number }>(
      `SELECT count(*)::int AS n FROM changes WHERE change_id = ANY($1) AND status = 'applying'`,
      [ids],
    );
    if ((rows[0]?.n ?? 0) === 0) break;
    if (Date.now() > deadline) {
      process.stdout.write(`gave up waiting: ${rows[0]?.n} changes still applying\n`);
      break;
    }
    await sleep(250);
  }
  await printCpu(stack, changesDb, cpuBefore, ids.length, accounts.length);
  printDbActivity(dbBefore, await dbActivity(changesDb), ids.length);
  const out: AccountRun[] = [];
  for (const a of accounts) {
    const u0 = before.get(a.accountId) as RateUsage;
    const u1 = await usage(stack, a);
    const mine = work.get(a.accountId) ?? [];
    const { rows } = await changesDb.query<{ status: string; n: number }>(
      'SELECT status, count(*)::int AS n FROM changes WHERE change_id = ANY($1) GROUP BY status',
      [mine],
    );
    const count = (s: string) => rows.find((r) => r.status === s)?.n ?? 0;
    const entries = (await sandbox(
      stack,
      'GET',
      `/_sandbox/ledger?account_id=${encodeURIComponent(a.upstreamAccountId)}`,
    )) as { entries: { idempotency_key: string | null }[] };
    const keys = new Map<string, number>();
    for (const e of entries.entries)
      keys.set(e.idempotency_key ?? '', (keys.get(e.idempotency_key ?? '') ?? 0) + 1);
    out.push({
      account: a,
      requests: u1.allowed - u0.allowed,
      rateLimited: u1.refused - u0.refused,
      wallMs: (u1.last_allowed_at === null ? Date.now() : Date.parse(u1.last_allowed_at)) - t0,
      applied: count('applied'),
      failed: count('failed'),
      mutations: entries.entries.length,
      doubled: [...keys.values()].filter((n) => n > 1).length,
    });
  }
  return out;
}

function printRuns(label: string, runs: AccountRun[], idealSeconds: number): void {
  process.stdout.write(`${label}:\n`);
  for (const r of runs) {
    const seconds = r.wallMs / 1000;
    const rate = r.requests / seconds;
    process.stdout.write(
      `  ${r.account.upstreamAccountId}: ${r.requests} platform requests in ${fmt(seconds)} s (ideal ${fmt(idealSeconds)} s for ${CHANGES}: ${fmt(idealSeconds / seconds, 2)}x); ${fmt(rate)} requests/s of ${RATE} allowed: ${fmt((100 * rate) / RATE)}%; platform 429s ${r.rateLimited}; applied ${r.applied}, failed ${r.failed}; ledger ${r.mutations} mutations, ${r.doubled} keys twice\n`,
    );
  }
}

const sum = (xs: number[]) => xs.reduce((a, b) => a + b, 0);

/** The database's committed transactions, and rows written and index scans by table, so far. */
async function dbActivity(db: Pool): Promise<Map<string, number>> {
  // The statistics a backend reports reach these views within a second (stats_fetch_consistency).
  await sleep(1000);
  const { rows } = await db.query<{ key: string; n: string }>(
    `SELECT 'transactions' AS key, xact_commit::text AS n FROM pg_stat_database WHERE datname = current_database()
     UNION ALL
     SELECT schemaname || '.' || relname || ' ' || w.what, w.n::text
       FROM pg_stat_user_tables,
            LATERAL (VALUES ('written', n_tup_ins + n_tup_upd + n_tup_del), ('index scans', coalesce(idx_scan, 0)),
                            ('sequential scans', seq_scan)) AS w(what, n)`,
  );
  return new Map(rows.map((r) => [r.key, Number(r.n)]));
}

/**
 * Per applied change: the transactions, and the tables most written and most scanned, from before
 * the request to apply them (the statistics lag too much to start at its commit).
 */
function printDbActivity(before: Map<string, number>, after: Map<string, number>, changes: number): void {
  const per = [...after]
    .map(([key, n]): [string, number] => [key, (n - (before.get(key) ?? 0)) / changes])
    .filter(([, n]) => n >= 0.05)
    .sort((a, b) => b[1] - a[1]);
  process.stdout.write(
    `  PostgreSQL per applied change: ${per.map(([key, n]) => `${key} ${fmt(n, 2)}`).join(', ')}\n`,
  );
}

const CPU_SERVICES: ServiceName[] = [
  'changes',
  'upstream-proxy',
  'ads-sandbox',
  'gateway',
  'marketing',
  'optimizer',
];

/**
 * What the run cost in CPU time per applied change, by process (each service with what it
 * started, PostgreSQL's backends, the bench itself), and so how many cores all the accounts at the
 * configured rate would keep busy: where that is near the machine's cores, the machine and not the
 * design bounds how much faster many accounts go than one.
 */
async function printCpu(
  stack: Stack,
  db: Pool,
  before: Map<number, { comm: string; ms: number }>,
  changes: number,
  accounts: number,
): Promise<void> {
  const after = await cpuTimes(process.pid);
  const spent = (pids: Iterable<number>) =>
    sum([...pids].map((pid) => (after.get(pid)?.ms ?? 0) - (before.get(pid)?.ms ?? 0)));
  const seen = new Set<number>();
  const parts: [string, number][] = [];
  for (const service of CPU_SERVICES) {
    const pid = stack.process(service).pid;
    const tree = pid === undefined ? [] : await processTree(pid);
    for (const p of tree) seen.add(p);
    parts.push([service, spent(tree)]);
  }
  const postgres = [...after]
    .filter(([pid, p]) => !seen.has(pid) && p.comm === 'postgres')
    .map(([pid]) => pid);
  for (const p of postgres) seen.add(p);
  parts.push(['postgres', spent(postgres)]);
  parts.push(['bench', spent([...after.keys()].filter((pid) => !seen.has(pid)))]);
  const total = sum(parts.map(([, ms]) => ms));
  const perChange = (list: [string, number][]) =>
    list
      .filter(([, ms]) => ms / changes >= 0.05)
      .map(([name, ms]) => `${name} ${fmt(ms / changes, 2)}`)
      .join(', ');
  // PostgreSQL's backends by whose connection they serve (each service's pool is named after its
  // schema); the server's own processes (writer, checkpointer, autovacuum) and backends gone
  // before the end as `server`.
  const { rows: backends } = await db.query<{ pid: number; who: string }>(
    `SELECT pid, CASE WHEN backend_type = 'client backend' AND application_name <> '' THEN application_name
                      ELSE 'server' END AS who
       FROM pg_stat_activity`,
  );
  const whose = new Map(backends.map((b) => [b.pid, b.who]));
  const byWho = new Map<string, number>();
  for (const pid of postgres) {
    const who = whose.get(pid) ?? 'server';
    byWho.set(who, (byWho.get(who) ?? 0) + spent([pid]));
  }
  process.stdout.write(
    `  CPU per applied change: ${fmt(total / changes, 2)} ms (${perChange(parts)}); ${accounts} account${
      accounts === 1 ? '' : 's'
    } at ${RATE}/s each need ${fmt(((total / changes) * accounts * RATE) / 1000, 2)} cores of the machine's ${availableParallelism()}\n` +
      `  PostgreSQL's CPU by the pool its backend serves: ${perChange([...byWho].sort((a, b) => b[1] - a[1]))}\n`,
  );
}

/** A pool of the bench's own, named `bench` in pg_stat_activity (the services' pools are named after their schemas). */
function benchPool(databaseUrl: string, schema: string): Pool {
  const url = new URL(databaseUrl);
  url.searchParams.set('application_name', 'bench');
  return createPool(url.toString(), schema);
}

/**
 * Writes `count` copies of the approved change `templateId` (each its own id and ad group name,
 * approved as the template was) and returns their ids with the template's, oldest first.
 */
async function copiesOf(db: Pool, templateId: string, count: number): Promise<string[]> {
  const { rows: columns } = await db.query<{ column_name: string }>(
    `SELECT column_name FROM information_schema.columns
      WHERE table_schema = 'changes' AND table_name = 'changes' AND is_generated = 'NEVER'
      ORDER BY ordinal_position`,
  );
  const names = columns.map((c) => c.column_name);
  const renamed = (col: string) =>
    `CASE WHEN ${col}::jsonb ? 'name' THEN jsonb_set(${col}::jsonb, '{name}', to_jsonb('Apply bench ' || (i + 1)))::text ELSE ${col} END`;
  const value = (col: string): string => {
    switch (col) {
      case 'change_id':
        return 'gen_random_uuid()';
      case 'body_json':
      case 'reviewed_result_json':
        return renamed(col);
      case 'summary':
        return `replace(summary, 'Apply bench 1', 'Apply bench ' || (i + 1))`;
      case 'digest':
        return `encode(sha256((change_id::text || ' ' || i)::bytea), 'hex')`;
      case 'prepared_at':
      case 'approved_at':
        return `${col} + i * interval '1 microsecond'`;
      default:
        return col;
    }
  };
  const { rows } = await db.query<{ change_id: string }>(
    `INSERT INTO changes (${names.join(', ')})
     SELECT ${names.map(value).join(', ')}
       FROM changes, generate_series(1, $2::int) AS i
      WHERE change_id = $1
     RETURNING change_id`,
    [templateId, count],
  );
  return [templateId, ...rows.map((r) => r.change_id)];
}

/** What the sandbox's rate limit saw of the account. */
async function usage(stack: Stack, a: Account): Promise<RateUsage> {
  return (await sandbox(
    stack,
    'GET',
    `/_sandbox/rate_limit?account_id=${encodeURIComponent(a.upstreamAccountId)}`,
  )) as RateUsage;
}

/** Calls an operator endpoint of the sandbox. */
async function sandbox(stack: Stack, method: string, path: string, body?: unknown): Promise<unknown> {
  const res = await fetch(`${stack.urls['ads-sandbox']}${path}`, {
    method,
    headers: {
      authorization: `Bearer ${stack.secrets.sandboxAdminToken}`,
      ...(body === undefined ? {} : { 'content-type': 'application/json' }),
    },
    ...(body === undefined ? {} : { body: JSON.stringify(body) }),
  });
  const text = await res.text();
  if (!res.ok) throw new Error(`sandbox ${method} ${path} answered ${res.status}: ${text.slice(0, 300)}`);
  return JSON.parse(text);
}

/** A tool call through the gateway, as an MCP client posts it; its structured result. */
function toolCaller(stack: Stack, token: string) {
  const call = postTool(stack.mcpUrl);
  return (name: string, args: object) => call(token, name, args);
}

main().catch((err: unknown) => {
  process.stderr.write(`${err instanceof Error ? (err.stack ?? err.message) : String(err)}\n`);
  process.exit(1);
});
