/**
 * Benchmark: what a V8 heap setting costs a gateway under load, against the stack's own settings,
 * in the same run. The stack runs two processes of each service (the sandbox one); the second of
 * each runs with HEAP_TRIAL_NODE_ARGS (default `--max-semi-space-size=16`, Node 20's own bound on
 * this machine, as opposed to the stack's SERVICE_NODE_FLAGS). Each gateway is loaded in turn
 * through its own address, `HEAP_ROUNDS` rounds (default 3), the order swapped every round, with
 * `tools/call` at 20 keep-alive connections; the services behind them are the same for both (each
 * gateway spreads its calls over both processes of a service). Printed per round and read: calls
 * a second, the gateway's CPU per call (from /proc) and its collections in the window (from
 * --trace-gc: scavenges, full collections and the ms they took), and trial/current ratios.
 *
 * `npm run bench:heap` runs it. Env: HEAP_TRIAL_NODE_ARGS, HEAP_NODE_ARGS (flags after the stack's for the first process), HEAP_ROUNDS, HEAP_SECONDS (per window,
 * default 8, after HEAP_WARMUP_SECONDS of 3), HEAP_CONCURRENCY (20).
 */
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { stopTestServer, testDatabase } from '@adsmcp/testkit/postgres';
import { SERVICE_NODE_FLAGS, startStack } from '@adsmcp/testkit/stack';
import { envInt, processCpuMs, toolCaller, UNLIMITED_RATES } from './bench-kit.ts';
import { type LoadResult, runLoad } from './load.ts';

const TRIAL = (process.env.HEAP_TRIAL_NODE_ARGS ?? '--max-semi-space-size=16').split(/\s+/).filter(Boolean);
/** Flags for the first process too (after the stack's: a later V8 flag wins), to compare two settings neither of which is the stack's. */
const CURRENT = (process.env.HEAP_NODE_ARGS ?? '').split(/\s+/).filter(Boolean);
const ROUNDS = envInt('HEAP_ROUNDS', 3, 1, 20);
const SECONDS = envInt('HEAP_SECONDS', 8, 1, 600);
const WARMUP_SECONDS = envInt('HEAP_WARMUP_SECONDS', 3, 0, 600);
const CONCURRENCY = envInt('HEAP_CONCURRENCY', 20, 1, 1000);

/** One gateway's collections in a window, from its --trace-gc lines. */
interface Gcs {
  scavenges: number;
  fullGcs: number;
  ms: number;
}

async function main(): Promise<void> {
  const db = await testDatabase();
  const dataDir = await mkdtemp(join(tmpdir(), 'adsmcp-bench-heap-'));
  const gcs: Gcs[] = [
    { scavenges: 0, fullGcs: 0, ms: 0 },
    { scavenges: 0, fullGcs: 0, ms: 0 },
  ];
  const stack = await startStack({
    databaseUrl: db.url,
    dataDir,
    replicas: 2,
    nodeArgs: ['--trace-gc'],
    processOptions: (_service, replica) => ({ nodeArgs: replica === 1 ? TRIAL : CURRENT }),
    onLine: (service, line, replica) => {
      if (service !== 'gateway') return;
      // "Scavenge 40.7 (46.5) -> 37.9 (39.8) MB, 1.19 / 0.00 ms": the pause is the first ms figure.
      const m = /(Scavenge|Mark-Compact)[^,]*, ([\d.]+) \/ [\d.]+ ms/.exec(line);
      const g = gcs[replica];
      if (!m || !g) return;
      if (m[1] === 'Scavenge') g.scavenges++;
      else g.fullGcs++;
      g.ms += Number(m[2]);
    },
    env: {
      LOG_LEVEL: 'warn',
      ...UNLIMITED_RATES,
    },
  });
  let failed = false;
  try {
    const seed = await stack.seedDemo();
    const gateways = stack.replicaUrls.gateway.map((url) => `${url}/mcp`);
    // The reads of the tools-call and scale benches: a small answer, and a page of changes.
    const reads: [string, object][] = [
      ['ads_get_connection_context', {}],
      ['ads_list_changes', { limit: 50 }],
    ];
    for (const [name, args] of reads) await toolCaller(gateways[0] as string)(seed.token, name, args);
    process.stdout.write(
      `gateway under tools/call at ${CONCURRENCY} connections, ${SECONDS} s a window (after ${WARMUP_SECONDS} s warm-up); current: ${[...SERVICE_NODE_FLAGS, ...CURRENT].join(' ') || 'no flags'}; trial: ${TRIAL.join(' ')}\n`,
    );
    const window = async (replica: number, name: string, args: object) => {
      const request = {
        url: gateways[replica] as string,
        headers: {
          'content-type': 'application/json',
          accept: 'application/json, text/event-stream',
          'mcp-protocol-version': '2025-11-25',
          authorization: `Bearer ${seed.token}`,
        },
        body: JSON.stringify({
          jsonrpc: '2.0',
          id: 1,
          method: 'tools/call',
          params: { name, arguments: args },
        }),
        verify: (body: string) => body.includes('structuredContent') && !body.includes('"isError":true'),
      };
      if (WARMUP_SECONDS > 0) await runLoad(CONCURRENCY, WARMUP_SECONDS * 1000, request);
      const pid = stack.process('gateway', replica).pid ?? 0;
      const cpuBefore = await processCpuMs(pid);
      const gcBefore = { ...(gcs[replica] as Gcs) };
      const r: LoadResult = await runLoad(CONCURRENCY, SECONDS * 1000, request);
      const cpu = (await processCpuMs(pid)) - cpuBefore;
      const g = gcs[replica] as Gcs;
      if (r.errors > 0) failed = true;
      return {
        r,
        cpuUsPerCall: (cpu * 1000) / Math.max(1, r.calls),
        scavenges: g.scavenges - gcBefore.scavenges,
        fullGcs: g.fullGcs - gcBefore.fullGcs,
        gcMs: g.ms - gcBefore.ms,
      };
    };
    type Got = Awaited<ReturnType<typeof window>>;
    const line = (label: string, w: Got) =>
      `  ${label.padEnd(8)} ${w.r.perSecond.toFixed(0).padStart(6)} calls/s   p50 ${w.r.p50Ms.toFixed(2)} ms   gateway CPU ${w.cpuUsPerCall.toFixed(0).padStart(4)} µs/call   ${String(w.scavenges).padStart(4)} scavenges, ${w.fullGcs} full, ${w.gcMs.toFixed(0)} ms in GC (${w.r.calls} calls, ${w.r.errors} errors)\n`;
    for (let round = 1; round <= ROUNDS; round++) {
      for (const [name, args] of reads) {
        // Swapped every round: the machine's speed drifts, and neither side should always go first.
        const order = round % 2 === 1 ? [0, 1] : [1, 0];
        const got = new Map<number, Got>();
        for (const replica of order) got.set(replica, await window(replica, name, args));
        const current = got.get(0) as Got;
        const trial = got.get(1) as Got;
        process.stdout.write(`round ${round}, ${name}\n`);
        process.stdout.write(line('current', current));
        process.stdout.write(line('trial', trial));
        process.stdout.write(
          `  trial/current: calls/s ${(trial.r.perSecond / current.r.perSecond).toFixed(2)}x, gateway CPU per call ${(trial.cpuUsPerCall / current.cpuUsPerCall).toFixed(2)}x\n`,
        );
      }
    }
  } finally {
    await stack.stop();
    await db.drop();
    await stopTestServer();
    await rm(dataDir, { recursive: true, force: true });
  }
  if (failed) {
    process.stdout.write('some calls failed\n');
    process.exit(1);
  }
}

main().catch((err: unknown) => {
  process.stderr.write(`bench failed: ${err instanceof Error ? (err.stack ?? err.message) : String(err)}\n`);
  process.exit(1);
});
