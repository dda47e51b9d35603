/**
 * Summarises V8 CPU profiles (`.cpuprofile`, as `--cpu-prof` and BENCH_CPU_PROF_DIR write them):
 * for each file, its top functions by self time, and self time by package or source file, so
 * where a process spends its time can be read without a browser.
 *
 *   node --import tsx bench/profile-summary.ts <dir-or-files...> [--top 20] [--skip 15]
 *
 * `--skip <s>` leaves out each profile's first seconds: a process's start-up (loading and
 * compiling its modules) otherwise weighs as much as the load it served.
 */
import { readdir, readFile, stat } from 'node:fs/promises';
import { basename, join } from 'node:path';

interface ProfileNode {
  id: number;
  callFrame: { functionName: string; url: string; lineNumber: number };
  hitCount?: number;
}
interface Profile {
  nodes: ProfileNode[];
  startTime: number;
  endTime: number;
  samples?: number[];
  timeDeltas?: number[];
}

/** Where a frame's code lives: a package name, a project file, or a V8 pseudo-frame. */
function place(url: string, name: string): string {
  if (url === '') return name.startsWith('(') ? name : '(native)';
  const nm = url.lastIndexOf('node_modules/');
  if (nm >= 0) {
    const rest = url.slice(nm + 'node_modules/'.length).split('/');
    return rest[0]?.startsWith('@') ? `${rest[0]}/${rest[1]}` : (rest[0] ?? url);
  }
  if (url.startsWith('node:')) return url;
  // A bundled process (npm start, the bench): `.bundles/<hash>/<service>/dist/main.js`.
  const bundled = /\/([a-z-]+\/dist\/[a-z-]+\.js)$/.exec(url);
  if (bundled) return bundled[1] as string;
  const src = url.indexOf('/src/');
  return src >= 0 ? url.slice(url.lastIndexOf('/', src - 1) + 1) : basename(url);
}

/**
 * The service a profile is of: the one whose `services/<name>/src/server.ts` it ran, or whose
 * bundle (`.bundles/<hash>/<name>/dist/main.js`).
 */
function serviceOf(p: Profile): string {
  for (const n of p.nodes) {
    const m =
      /services\/([a-z-]+)\/src\/server\.ts$/.exec(n.callFrame.url) ??
      /\.bundles\/[^/]+\/([a-z-]+)\/dist\/main\.js$/.exec(n.callFrame.url);
    if (m) return m[1] as string;
  }
  return '(unknown process or thread)';
}

function summarise(p: Profile, top: number, skipSeconds: number): string {
  const selfUs = new Map<number, number>();
  const samples = p.samples ?? [];
  const deltas = p.timeDeltas ?? [];
  let at = 0;
  for (let i = 0; i < samples.length; i++) {
    at += deltas[i] ?? 0;
    if (at < skipSeconds * 1e6) continue;
    const id = samples[i] as number;
    selfUs.set(id, (selfUs.get(id) ?? 0) + (deltas[i + 1] ?? deltas[i] ?? 0));
  }
  const byFunction = new Map<string, number>();
  const byPlace = new Map<string, number>();
  let total = 0;
  let idle = 0;
  for (const n of p.nodes) {
    const us = selfUs.get(n.id) ?? 0;
    total += us;
    const name = n.callFrame.functionName || '(anonymous)';
    if (name === '(idle)') idle += us;
    const where = place(n.callFrame.url, name);
    const key = `${name}  ${where}${n.callFrame.url ? `:${n.callFrame.lineNumber + 1}` : ''}`;
    byFunction.set(key, (byFunction.get(key) ?? 0) + us);
    byPlace.set(where, (byPlace.get(where) ?? 0) + us);
  }
  const busy = total - idle;
  const pct = (us: number) => `${((100 * us) / Math.max(busy, 1)).toFixed(1).padStart(5)}%`;
  const rows = (m: Map<string, number>) =>
    [...m]
      .filter(([k]) => !k.startsWith('(idle)'))
      .sort((a, b) => b[1] - a[1])
      .slice(0, top)
      .map(([k, us]) => `  ${pct(us)}  ${(us / 1000).toFixed(0).padStart(7)} ms  ${k}`)
      .join('\n');
  return [
    `process: ${serviceOf(p)}`,
    `busy ${(busy / 1e6).toFixed(1)} s of ${(total / 1e6).toFixed(1)} s sampled (percentages of busy time)`,
    'top functions by self time:',
    rows(byFunction),
    'self time by package or file:',
    rows(byPlace),
  ].join('\n');
}

async function files(args: string[]): Promise<string[]> {
  const out: string[] = [];
  for (const a of args) {
    if ((await stat(a)).isDirectory()) {
      for (const f of (await readdir(a)).sort()) if (f.endsWith('.cpuprofile')) out.push(join(a, f));
    } else out.push(a);
  }
  return out;
}

async function main(): Promise<void> {
  const argv = process.argv.slice(2);
  const option = (name: string, fallback: number) => {
    const i = argv.indexOf(name);
    return i >= 0 ? Number(argv[i + 1]) : fallback;
  };
  const top = option('--top', 20);
  const skip = option('--skip', 0);
  const paths = argv.filter(
    (a, i) => !a.startsWith('--') && !['--top', '--skip'].includes(argv[i - 1] ?? ''),
  );
  for (const f of await files(paths)) {
    const profile = JSON.parse(await readFile(f, 'utf8')) as Profile;
    process.stdout.write(`== ${f}\n${summarise(profile, top, skip)}\n\n`);
  }
}

main().catch((err: unknown) => {
  process.stderr.write(`profile-summary failed: ${err instanceof Error ? err.message : String(err)}\n`);
  process.exit(1);
});
