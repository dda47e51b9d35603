/**
 * `npm run bench:machine`: what the machine gives today, in half a minute, to read beside the
 * other benchmarks' absolute figures (CPU per call, seeding time), which follow the machine's
 * speed. It runs nothing of the product's. It prints:
 *
 * - the core's clock, as a dependent chain of integer multiplies and adds (`Math.imul`, compiled
 *   to one multiply of 3 cycles and one add of 1): nanoseconds per link, and the clock that makes
 *   four cycles of it;
 * - memory's latency: a pointer chase through one random cycle over a buffer of each size, so each
 *   load waits for the one before; where a size stops fitting a cache shows as a step;
 * - memory's bandwidth (a fill of 256 MiB already mapped) and what a fresh page costs (256 MiB
 *   newly allocated, each 4 KiB page written once: the kernel's fault and zeroing, and under a
 *   virtual machine the host's);
 * - work like a service's: JSON encoded and decoded, small objects made and dropped (the garbage
 *   collector's share included), per operation.
 *
 * Each figure is the median of `MACHINE_RUNS` (default 5) rounds. On a machine shared with other
 * tenants the core's clock may stay at its usual speed while the other figures slow down: the core
 * is this machine's, its last-level cache and memory are not.
 */
import { envInt, median } from './bench-kit.ts';

const RUNS = envInt('MACHINE_RUNS', 5, 1, 100);

/** Each measured function's last result, kept so that the work it did stays needed. */
let _lastResult = 0;

function timed(fn: () => number): number {
  const t0 = process.hrtime.bigint();
  _lastResult = fn();
  return Number(process.hrtime.bigint() - t0);
}

function chain(links: number): number {
  let x = 1;
  for (let i = 0; i < links; i++) x = (Math.imul(x, 0x2545f491) + i) | 0;
  return x;
}

/** One random cycle through `n` slots (Sattolo's shuffle), so a chase visits every slot once. */
function cycle(n: number): Int32Array {
  const order = new Int32Array(n);
  for (let i = 0; i < n; i++) order[i] = i;
  let seed = 12345;
  for (let i = n - 1; i > 0; i--) {
    seed = (Math.imul(seed, 1103515245) + 12345) >>> 0;
    const j = seed % i;
    const t = order[i] as number;
    order[i] = order[j] as number;
    order[j] = t;
  }
  const next = new Int32Array(n);
  for (let i = 0; i < n; i++) next[order[i] as number] = order[(i + 1) % n] as number;
  return next;
}

function chase(next: Int32Array, loads: number): number {
  let p = 0;
  for (let i = 0; i < loads; i++) p = next[p] as number;
  return p;
}

function serviceLike(ops: number): number {
  let n = 0;
  for (let i = 0; i < ops; i++) {
    const o = JSON.parse(
      JSON.stringify({ id: `ad-${i}`, name: `Ad ${i}`, bid: i * 0.01, tags: ['a', 'b', 'c'] }),
    );
    n += (o as { tags: string[] }).tags.length;
  }
  return n;
}

function measure(label: string, perOp: number, fn: () => number, unit: (ns: number) => string): void {
  fn(); // compiled before it is timed
  const samples: number[] = [];
  for (let r = 0; r < RUNS; r++) {
    samples.push(timed(fn) / perOp);
  }
  const rounds = samples.map((s) => unit(s).split(' ')[0]).join(', ');
  process.stdout.write(`${label.padEnd(36)}${unit(median(samples))}   (rounds: ${rounds})\n`);
}

const LINKS = 200_000_000;
measure(
  'integer chain',
  LINKS,
  () => chain(LINKS),
  (ns) => `${ns.toFixed(2)} ns a link = ${(4 / ns).toFixed(2)} GHz at 4 cycles`,
);

for (const kib of [16, 256, 2048, 8192, 32768, 262144]) {
  const next = cycle((kib * 1024) / 4);
  const loads = 4_000_000;
  measure(
    `memory, chase over ${kib >= 1024 ? `${kib / 1024} MiB` : `${kib} KiB`}`,
    loads,
    () => chase(next, loads),
    (ns) => `${ns.toFixed(1)} ns a load`,
  );
}

const MIB = 256;
const filled = Buffer.allocUnsafeSlow(MIB << 20);
let round = 0;
measure(
  `memory, fill of ${MIB} MiB`,
  MIB << 20,
  () => {
    filled.fill(++round & 0xff);
    return filled[round] as number;
  },
  (ns) => `${(1 / ns).toFixed(2)} GB/s`,
);
measure(
  `memory, first touch of ${MIB} MiB`,
  (MIB << 20) / 4096,
  () => {
    // New pages from the kernel, each faulted in (and zeroed) when first written.
    const fresh = Buffer.allocUnsafeSlow(MIB << 20);
    for (let i = 0; i < fresh.length; i += 4096) fresh[i] = 1;
    return fresh[4096] as number;
  },
  (ns) => `${(ns / 1000).toFixed(2)} µs a 4 KiB page`,
);

const OPS = 200_000;
measure(
  'JSON round trip, a small object',
  OPS,
  () => serviceLike(OPS),
  (ns) => `${(ns / 1000).toFixed(2)} µs an operation`,
);
