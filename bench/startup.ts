/**
 * Start-up benchmark: `npm start` in a fresh checkout of this working tree, timed from launch to
 * its "Ready." line three times — cold (no .data and no bundles: the services bundled while
 * PostgreSQL is initialised, migrations, demo seeded; the bundling time is shown on its own),
 * warm (the same data and bundles again), and with the bundles but a fresh .data — and the idle
 * memory of all its processes together (the supervisor, every service, PostgreSQL) a few
 * seconds after the cold start is ready: the sum of their RSS, and of their PSS, which counts
 * the pages processes share (PostgreSQL's) once.
 *
 *   npm run bench:startup      (env: STARTUP_IDLE_SECONDS, default 5)
 */
import { type ChildProcess, spawn } from 'node:child_process';
import { mkdtemp, readFile, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { copyCheckout } from '@adsmcp/testkit/checkout-copy';
import { freePort } from '@adsmcp/testkit/free-port';
import { processTree } from './bench-kit.ts';

const idleSeconds = Number(process.env.STARTUP_IDLE_SECONDS ?? 5);

interface Started {
  child: ChildProcess;
  ready: Promise<number>;
  exited: Promise<void>;
  /** The seconds `npm start` said bundling took, when it bundled. */
  bundledSeconds(): number | undefined;
  /** Where `npm start` said PostgreSQL keeps its data, when not in .data/pg (as root: elsewhere). */
  pgDataDir(): string | undefined;
}

/** Runs `npm start`'s command in `dir`; `ready` resolves with the ms until its "Ready." line. */
function npmStart(dir: string, port: number): Started {
  const env: NodeJS.ProcessEnv = { ...process.env, PORT: String(port) };
  delete env.DATABASE_URL;
  const started = performance.now();
  const child = spawn(process.execPath, ['--import', 'tsx', 'scripts/start.ts'], {
    cwd: dir,
    env,
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  const tail: string[] = [];
  let bundled: number | undefined;
  let pgData: string | undefined;
  const exited = new Promise<void>((resolve) => child.on('exit', () => resolve()));
  const ready = new Promise<number>((resolve, reject) => {
    let rest = '';
    child.stdout?.on('data', (chunk: Buffer) => {
      const lines = (rest + chunk.toString('utf8')).split('\n');
      rest = lines.pop() ?? '';
      for (const line of lines) {
        tail.push(line);
        if (tail.length > 20) tail.shift();
        if (line === 'Ready.') resolve(performance.now() - started);
        const m = /^bundled the services in ([\d.]+) s$/.exec(line);
        if (m) bundled = Number(m[1]);
        const d = /^embedded PostgreSQL: data in (\/\S+)/.exec(line);
        if (d) pgData = d[1];
      }
    });
    child.stderr?.on('data', (chunk: Buffer) => tail.push(chunk.toString('utf8')));
    void exited.then(() => reject(new Error(`npm start exited before it was ready:\n${tail.join('\n')}`)));
  });
  return { child, ready, exited, bundledSeconds: () => bundled, pgDataDir: () => pgData };
}

/** The kB of a field (VmRSS, Pss) of a process's status or smaps_rollup, 0 when it is gone. */
async function kilobytes(file: string, field: string): Promise<number> {
  const text = await readFile(file, 'utf8').catch(() => '');
  const m = new RegExp(`^${field}:\\s+(\\d+) kB`, 'm').exec(text);
  return m ? Number(m[1]) : 0;
}

async function memory(root: number): Promise<{ processes: number; rssMb: number; pssMb: number }> {
  const pids = await processTree(root);
  let rss = 0;
  let pss = 0;
  for (const pid of pids) {
    rss += await kilobytes(`/proc/${pid}/status`, 'VmRSS');
    pss += await kilobytes(`/proc/${pid}/smaps_rollup`, 'Pss');
  }
  return { processes: pids.length, rssMb: rss / 1024, pssMb: pss / 1024 };
}

async function stop(s: Started): Promise<void> {
  s.child.kill('SIGINT');
  await s.exited;
}

async function main(): Promise<void> {
  const parent = await mkdtemp(join(tmpdir(), 'adsmcp-startup-'));
  let pgData: string | undefined;
  try {
    const dir = await copyCheckout(parent);
    const port = await freePort();
    const cold = npmStart(dir, port);
    const coldMs = await cold.ready;
    pgData = cold.pgDataDir();
    await new Promise((resolve) => setTimeout(resolve, idleSeconds * 1000));
    const idle = await memory(cold.child.pid as number);
    await stop(cold);
    const warm = npmStart(dir, port);
    const warmMs = await warm.ready;
    await stop(warm);
    await rm(join(dir, '.data'), { recursive: true, force: true });
    if (pgData) await rm(pgData, { recursive: true, force: true });
    const fresh = npmStart(dir, port);
    const freshMs = await fresh.ready;
    await stop(fresh);
    const bundled = cold.bundledSeconds();
    process.stdout.write(
      [
        `npm start, cold (empty .data, no bundles): ready in ${(coldMs / 1000).toFixed(1)} s` +
          (bundled === undefined
            ? ''
            : ` (bundling ${bundled.toFixed(1)} s of it, beside PostgreSQL's start)`),
        `npm start, warm (same .data, bundles):     ready in ${(warmMs / 1000).toFixed(1)} s`,
        `npm start, empty .data, bundles built:     ready in ${(freshMs / 1000).toFixed(1)} s`,
        `idle memory ${idleSeconds} s after ready, ${idle.processes} processes: RSS ${idle.rssMb.toFixed(0)} MB in all, PSS ${idle.pssMb.toFixed(0)} MB`,
        '',
      ].join('\n'),
    );
  } finally {
    await rm(parent, { recursive: true, force: true });
    if (pgData) await rm(pgData, { recursive: true, force: true });
  }
}

main().catch((err: unknown) => {
  process.stderr.write(
    `startup bench failed: ${err instanceof Error ? (err.stack ?? err.message) : String(err)}\n`,
  );
  process.exit(1);
});
