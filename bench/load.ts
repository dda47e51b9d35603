/** A bounded closed-loop load: `concurrency` workers each issue calls back to back for `durationMs`. */
import { Agent } from 'node:http';

export interface LoadResult {
  calls: number;
  errors: number;
  seconds: number;
  perSecond: number;
  p50Ms: number;
  p90Ms: number;
  p99Ms: number;
  maxMs: number;
}

function percentile(sorted: number[], p: number): number {
  if (sorted.length === 0) return Number.NaN;
  const i = Math.min(sorted.length - 1, Math.ceil((p / 100) * sorted.length) - 1);
  return sorted[Math.max(0, i)] as number;
}

/** runLoad calls `call` from `concurrency` workers; a call that throws or returns false is an error. */
export async function runLoad(
  concurrency: number,
  durationMs: number,
  call: (worker: number) => Promise<boolean>,
): Promise<LoadResult> {
  const latencies: number[] = [];
  let errors = 0;
  const started = performance.now();
  const deadline = started + durationMs;
  await Promise.all(
    Array.from({ length: concurrency }, async (_, w) => {
      while (performance.now() < deadline) {
        const t = performance.now();
        let ok = false;
        try {
          ok = await call(w);
        } catch {
          ok = false;
        }
        latencies.push(performance.now() - t);
        if (!ok) errors++;
      }
    }),
  );
  const seconds = (performance.now() - started) / 1000;
  latencies.sort((a, b) => a - b);
  return {
    calls: latencies.length,
    errors,
    seconds,
    perSecond: latencies.length / seconds,
    p50Ms: percentile(latencies, 50),
    p90Ms: percentile(latencies, 90),
    p99Ms: percentile(latencies, 99),
    maxMs: latencies.at(-1) ?? Number.NaN,
  };
}

/** One keep-alive HTTP connection per worker, so "20 connections" means 20 sockets. */
export function connectionPerWorker(concurrency: number): Agent[] {
  return Array.from({ length: concurrency }, () => new Agent({ keepAlive: true, maxSockets: 1 }));
}

export function formatResult(label: string, r: LoadResult): string {
  const f = (n: number) => n.toFixed(2);
  return `${label.padEnd(44)} ${r.perSecond.toFixed(0).padStart(6)} calls/s   p50 ${f(r.p50Ms)} ms   p90 ${f(r.p90Ms)} ms   p99 ${f(r.p99Ms)} ms   max ${f(r.maxMs)} ms   (${r.calls} calls, ${r.errors} errors, ${r.seconds.toFixed(1)} s)`;
}
