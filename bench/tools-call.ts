/**
 * Benchmark: `tools/call` through the real processes at 20 concurrent keep-alive connections,
 * each call a stateless 2025-11-25 JSON-RPC POST as an MCP client sends it, and beside them in
 * the same run a baseline: the MCP SDK's stateless example server answering a trivial tool, in a
 * process of its own as each of our services is (the load generator runs in this one).
 *
 *   baseline echo                    SDK only
 *   ads_get_connection_context       gateway (auth lookup in Postgres, catalogue dispatch)
 *   ads_get_marketing_item           gateway -> marketing -> Postgres
 *   ads_get_ad                       gateway -> upstream-proxy (budget in Postgres) -> sandbox
 *
 * The baseline runs before each scenario and once more after the last; each scenario's ratio is
 * against the mean of the two baseline runs around it.
 *
 * `npm run bench` runs it. Env: BENCH_SECONDS (default 10 per scenario), BENCH_WARMUP_SECONDS (5,
 * before each measurement), BENCH_CONCURRENCY (20),
 * BENCH_CPU_PROF_DIR (write a CPU profile of each process there), BENCH_ONLY (run the scenarios whose
 * label contains it; the baseline runs only when no text is given or the text is part of "baseline").
 */

import { mkdtemp, readdir, readFile, rm } from 'node:fs/promises';
import { request } from 'node:http';
import { availableParallelism, tmpdir } from 'node:os';
import { join } from 'node:path';
import { stopTestServer, testDatabase } from '@adsmcp/testkit/postgres';
import { type ServiceName, type Stack, startStack } from '@adsmcp/testkit/stack';
import pg from 'pg';
import { startBaselineServer } from './baseline-server.ts';
import { UNLIMITED_RATES } from './bench-kit.ts';
import { formatResult, type LoadResult, runLoad } from './load.ts';

const seconds = Number(process.env.BENCH_SECONDS ?? 10);
const concurrency = Number(process.env.BENCH_CONCURRENCY ?? 20);
// Each measurement follows a warm-up of its own. 2 s was too short for the first baseline run: its
// server and this process's load generator were still being compiled, and it spent up to half
// again as much CPU per call as the next run.
const warmupSeconds = Number(process.env.BENCH_WARMUP_SECONDS ?? 5);

/** The headers of a `tools/call` as an MCP client sends them. */
function callHeaders(token: string | undefined): Record<string, string> {
  return {
    'content-type': 'application/json',
    accept: 'application/json, text/event-stream',
    'mcp-protocol-version': '2025-11-25',
    ...(token ? { authorization: `Bearer ${token}` } : {}),
  };
}

/** One POST on a connection of its own. */
function post(url: URL, body: string, token?: string): Promise<{ status: number; text: string }> {
  return new Promise((resolve, reject) => {
    const headers = { ...callHeaders(token), 'content-length': Buffer.byteLength(body) };
    const req = request(url, { method: 'POST', headers }, (res) => {
      let text = '';
      res.setEncoding('utf8');
      res.on('data', (c: string) => (text += c));
      res.on('end', () => resolve({ status: res.statusCode ?? 0, text }));
    });
    req.on('error', reject);
    req.end(body);
  });
}

const SERVICES: ServiceName[] = [
  'gateway',
  'marketing',
  'upstream-proxy',
  'ads-sandbox',
  'changes',
  'optimizer',
];
/** Linux counts process CPU time in ticks of 1/100 s. */
const TICK_MS = 10;

/** The fields of /proc/<pid>/stat after the command name (state, ppid, …), or none if it is gone. */
async function statFields(pid: number | string): Promise<string[]> {
  const stat = await readFile(`/proc/${pid}/stat`, 'utf8').catch(() => '');
  return stat === '' ? [] : stat.slice(stat.lastIndexOf(')') + 2).split(' ');
}

/** CPU ms so far: user + system, and the system (kernel) part of it. */
type Cpu = { total: number; kernel: number };

/** The CPU of a process from its stat fields. */
const cpuOf = (fields: string[]): Cpu =>
  fields.length === 0
    ? { total: 0, kernel: 0 }
    : { total: (Number(fields[11]) + Number(fields[12])) * TICK_MS, kernel: Number(fields[12]) * TICK_MS };

const plus = (a: Cpu, b: Cpu): Cpu => ({ total: a.total + b.total, kernel: a.kernel + b.kernel });

/** The CPU ms the PostgreSQL server `postmaster` and every process it runs have used so far. */
async function postgresCpuMs(postmaster: number): Promise<Cpu> {
  let total = cpuOf(await statFields(postmaster));
  for (const entry of await readdir('/proc')) {
    if (!/^\d+$/.test(entry)) continue;
    const fields = await statFields(entry);
    // Backends that ended during the run took their CPU with them (their parent counts only
    // children it has waited for, in other fields); with pooled connections none end.
    if (Number(fields[1]) === postmaster) total = plus(total, cpuOf(fields));
  }
  return total;
}

type Measured = ServiceName | 'postgres' | 'load generator' | 'baseline server';

/** The CPU ms this process (the load generator) has used so far. */
function ownCpuMs(): Cpu {
  const own = process.cpuUsage();
  return { total: (own.user + own.system) / 1000, kernel: own.system / 1000 };
}

/**
 * CPU time (user + system, ms) each process of the stack has used so far, from /proc, with the
 * PostgreSQL server's processes together and this process (the load generator).
 */
async function cpuMs(stack: Stack, postmaster: number): Promise<Map<Measured, Cpu>> {
  const used = new Map<Measured, Cpu>();
  for (const service of SERVICES) used.set(service, cpuOf(await statFields(stack.process(service).pid ?? 0)));
  used.set('postgres', await postgresCpuMs(postmaster));
  used.set('load generator', ownCpuMs());
  return used;
}

/**
 * The CPU each process spent per call during a run, for the processes that spent any (unlike
 * calls/s, it hardly moves when other work shares the machine), and the share of all of it spent
 * in the kernel (system calls, the network stack, scheduling) rather than in the processes' code,
 * and how busy they kept the machine's cores over the `wallMs` between the two samples.
 */
function cpuPerCall(
  before: Map<Measured, Cpu>,
  after: Map<Measured, Cpu>,
  calls: number,
  wallMs: number,
): string {
  const parts: string[] = [];
  let all = { total: 0, kernel: 0 };
  for (const [service, cpu] of after) {
    const was = before.get(service) ?? cpu;
    const spent = { total: cpu.total - was.total, kernel: cpu.kernel - was.kernel };
    all = plus(all, spent);
    if (spent.total >= 20) parts.push(`${service} ${((1000 * spent.total) / calls).toFixed(0)} µs`);
  }
  if (parts.length === 0) return '';
  const kernel = all.total > 0 ? Math.round((100 * all.kernel) / all.total) : 0;
  const busy = Math.round((100 * all.total) / (wallMs * availableParallelism()));
  return `CPU per call: ${parts.join(', ')}; ${kernel}% of it in the kernel; the cores ${busy}% busy`;
}

const callBody = (name: string, args: object) =>
  JSON.stringify({ jsonrpc: '2.0', id: 1, method: 'tools/call', params: { name, arguments: args } });

/**
 * Measures one tool: a short warm-up, then the timed run. A call counts only if it succeeded.
 * `sample` reads the CPU the processes involved have used so far; the result comes with what
 * they spent per call in the timed run.
 */
async function measure(
  url: string,
  name: string,
  args: object,
  expect: string,
  token: string | undefined,
  sample: () => Promise<Map<Measured, Cpu>>,
): Promise<[LoadResult, string]> {
  const load = {
    url,
    headers: callHeaders(token),
    body: callBody(name, args),
    verify: (text: string) => text.includes(expect) && !text.includes('"isError":true'),
  };
  await runLoad(concurrency, warmupSeconds * 1000, load);
  const before = await sample();
  const started = performance.now();
  const result = await runLoad(concurrency, seconds * 1000, load);
  const after = await sample();
  return [result, cpuPerCall(before, after, result.calls, performance.now() - started)];
}

/** The pid of the PostgreSQL server behind `url` (the parent of a backend). */
async function postmasterPid(url: string): Promise<number> {
  const client = new pg.Client({ connectionString: url });
  await client.connect();
  try {
    const { rows } = await client.query<{ pid: number }>('SELECT pg_backend_pid() AS pid');
    const backend = rows[0]?.pid;
    if (backend === undefined) throw new Error('PostgreSQL named no backend pid');
    return Number((await statFields(backend))[1]);
  } finally {
    await client.end();
  }
}

async function firstResult(
  url: string,
  token: string,
  name: string,
  args: object,
): Promise<Record<string, unknown>> {
  const res = await post(new URL(url), callBody(name, args), token);
  const line = res.text.split('\n').find((l) => l.startsWith('data: '));
  const msg = JSON.parse(line ? line.slice(6) : res.text) as {
    result?: { structuredContent?: Record<string, unknown>; isError?: boolean };
  };
  if (!msg.result?.structuredContent || msg.result.isError)
    throw new Error(`${name} failed: ${res.text.slice(0, 300)}`);
  return msg.result.structuredContent;
}

async function main(): Promise<void> {
  const db = await testDatabase();
  const dataDir = await mkdtemp(join(tmpdir(), 'adsmcp-bench-'));
  const profile = process.env.BENCH_CPU_PROF_DIR
    ? ['--cpu-prof', `--cpu-prof-dir=${process.env.BENCH_CPU_PROF_DIR}`]
    : [];
  const baseline = await startBaselineServer(profile);
  const stack = await startStack({
    databaseUrl: db.url,
    dataDir,
    // BENCH_CPU_PROF_DIR=<dir> writes a CPU profile of every process there.
    nodeArgs: profile,
    env: {
      LOG_LEVEL: 'warn',
      ...UNLIMITED_RATES,
    },
  });
  let failed = false;
  try {
    const seed = await stack.seedDemo();
    const account = seed.accounts[0];
    if (!account) throw new Error('the demo has no account');
    const { ads } = (await firstResult(stack.mcpUrl, seed.token, 'ads_list_ads', {
      account_id: account.account_id,
      limit: 1,
    })) as {
      ads: { id: string }[];
    };
    const adId = ads[0]?.id;
    const saved = (await firstResult(stack.mcpUrl, seed.token, 'ads_save_marketing_item', {
      kind: 'playbook',
      name: 'Benchmark playbook',
      data: { guidance: 'Lead with the offer.', evidence: 'general_guidance' },
    })) as { item: { item_id: string } } | { item_id: string };
    const itemId = 'item' in saved ? saved.item.item_id : saved.item_id;
    const postmaster = await postmasterPid(db.url);
    const measured = () => cpuMs(stack, postmaster);
    const baselineCpu = async () =>
      new Map<Measured, Cpu>([
        ['baseline server', cpuOf(await statFields(baseline.process.pid ?? 0))],
        ['load generator', ownCpuMs()],
      ]);

    process.stdout.write(
      `tools/call at ${concurrency} connections, ${seconds} s each (after ${warmupSeconds} s warm-up); 2 cores shared with the load generator\n`,
    );
    const scenarios: [string, () => Promise<[LoadResult, string]>][] = [
      [
        'ads_get_connection_context',
        () => measure(stack.mcpUrl, 'ads_get_connection_context', {}, '"workspace_id"', seed.token, measured),
      ],
      [
        'ads_get_marketing_item',
        () =>
          measure(stack.mcpUrl, 'ads_get_marketing_item', { item_id: itemId }, itemId, seed.token, measured),
      ],
      [
        'ads_get_ad',
        () =>
          measure(
            stack.mcpUrl,
            'ads_get_ad',
            { account_id: account.account_id, ad_id: adId },
            `"${adId}"`,
            seed.token,
            measured,
          ),
      ],
    ];
    // The baseline runs before each scenario and once after the last, and a scenario is compared
    // with the two baseline runs around it: the machine's speed drifts within a run (by up to a
    // third between one minute and the next), and a baseline measured once at the start would
    // lend every scenario after it whatever the drift did.
    const only = process.env.BENCH_ONLY;
    const withBaseline = !only || 'baseline'.includes(only);
    const chosen = scenarios.filter(([label]) => !only || label.includes(only));
    const report = (label: string, r: LoadResult, spent: string, ratio = '') => {
      process.stdout.write(`${formatResult(label, r)}${ratio}\n`);
      if (spent) process.stdout.write(`${''.padEnd(44)} ${spent}\n`);
      if (r.errors > 0) failed = true;
    };
    const baselineRun = async (n: number) => {
      const [r, spent] = await measure(
        baseline.url,
        'echo',
        { text: 'hi' },
        '"text":"hi"',
        undefined,
        baselineCpu,
      );
      report(`baseline ${n}: SDK example server, trivial tool`, r, spent);
      return r.perSecond;
    };
    let before = withBaseline ? await baselineRun(1) : undefined;
    for (const [i, [label, run]] of chosen.entries()) {
      const [r, spent] = await run();
      const after = withBaseline ? await baselineRun(i + 2) : undefined;
      const around = before === undefined || after === undefined ? undefined : (before + after) / 2;
      const ratio =
        around === undefined
          ? ''
          : `   ${(r.perSecond / around).toFixed(2)}x baseline (runs ${i + 1} and ${i + 2}: ${around.toFixed(0)} calls/s)`;
      report(label, r, spent, ratio);
      before = after;
    }
  } finally {
    await baseline.close();
    await stack.stop();
    await db.drop();
    await stopTestServer();
    await rm(dataDir, { recursive: true, force: true });
  }
  if (failed) {
    process.stdout.write('some calls failed: the figures above are not valid\n');
    process.exitCode = 1;
  }
}

main().catch((err: unknown) => {
  process.stderr.write(`bench failed: ${err instanceof Error ? (err.stack ?? err.message) : String(err)}\n`);
  process.exit(1);
});
