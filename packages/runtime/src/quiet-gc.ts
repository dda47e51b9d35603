/**
 * A full collection when a service falls quiet after a burst of work, so that the burst's heap is
 * given back to the machine instead of staying resident until the next burst.
 *
 * V8 sizes its heap at collections: a collection under a low allocation rate shrinks the young
 * generation back towards its first size and leaves the old space at its live objects plus the
 * growth `--heap-growing-percent` allows. A service that has stopped working allocates nothing, so
 * no collection comes, and the young generation and old space a burst grew stay committed (in
 * `bench:scale`, the optimizer's heap went from 24.5 MB committed idle to 38.2 MB after the seeded
 * runs and stayed there, with about 21 MB live). V8's own memory reducer acts only after a full
 * collection, which a quiet process does not make either.
 *
 * So, every `everyMs`, the collector looks at that window: when it was quiet (the event loop busy
 * under 2% of the time, and the process's CPU time under 2% of a core: a process short of CPU shows
 * little CPU time, but its loop is busy) and the V8 heap is `grownBytes` or more above the least
 * it has been since the collector's last collection (or since it started), it asks V8 for a full
 * collection, as a task of its own, of the kind that also compacts the old space's half-empty pages
 * (`gc({ type: 'major', execution: 'async', flavor: 'last-resort' })`: V8's "all available
 * garbage", what its memory reducer does; a plain full collection left the old space a fifth to a
 * half larger in a trial), and logs what it gave back. A busy process is never collected by it,
 * and a quiet one again only once its heap has grown that much again.
 *
 * V8 offers the call only to a process started with `--expose-gc`, which every service process is
 * (the stack's SERVICE_NODE_FLAGS and the images' command); without it the collector stays off and
 * says so once. Written here because no maintained library does this: what there is either
 * collects on a fixed interval whatever the load, or needs a native add-on.
 */
import { getHeapStatistics } from 'node:v8';
import type { Logger } from './log.ts';

export interface QuietCollectorOptions {
  logger: Logger;
  /** The window whose event loop and CPU time are looked at (default 10 s). */
  everyMs?: number;
  /** How far above its least since the last collection the V8 heap must be to collect (default 4 MiB). */
  grownBytes?: number;
}

/** V8's `gc`, as `--expose-gc` defines it. */
type ExposedGc = (options: { type: 'major'; execution: 'async'; flavor: 'last-resort' }) => Promise<void>;

/**
 * Under this share of a window's time busy, and of one core's, the process is quiet: an idle
 * service's polling takes 0.1% to 0.8% of a core on a slow day; a service at work, tens of percent.
 */
const QUIET_SHARE = 0.02;

/** startQuietCollector starts the collector; the function it returns stops it. */
export function startQuietCollector(opts: QuietCollectorOptions): () => Promise<void> {
  const gc = (globalThis as { gc?: ExposedGc }).gc;
  if (typeof gc !== 'function') {
    opts.logger.info('quiet collector off: the process was started without --expose-gc');
    return async () => undefined;
  }
  const everyMs = opts.everyMs ?? 10_000;
  const grownBytes = opts.grownBytes ?? 4 * 2 ** 20;
  let least = getHeapStatistics().total_heap_size;
  let cpu = process.cpuUsage();
  let loop = performance.eventLoopUtilization();
  let collecting: Promise<void> | undefined;
  const timer = setInterval(() => {
    const now = process.cpuUsage();
    const usedMs = (now.user - cpu.user + now.system - cpu.system) / 1000;
    const { utilization } = performance.eventLoopUtilization(loop);
    cpu = now;
    loop = performance.eventLoopUtilization();
    if (collecting !== undefined) return;
    const before = getHeapStatistics().total_heap_size;
    // The least since the last collection: its sweeping may still be giving pages back as it ends.
    least = Math.min(least, before);
    if (utilization >= QUIET_SHARE || usedMs >= QUIET_SHARE * everyMs || before - least < grownBytes) return;
    const started = performance.now();
    collecting = gc({ type: 'major', execution: 'async', flavor: 'last-resort' })
      .then(() => {
        least = getHeapStatistics().total_heap_size;
        opts.logger.info(
          {
            heap_before_mb: round(before / 2 ** 20),
            heap_after_mb: round(least / 2 ** 20),
            ms: round(performance.now() - started),
          },
          'quiet after work: a full collection gave back the heap the work grew',
        );
      })
      .catch((err: unknown) => opts.logger.warn({ err }, 'quiet collector: the collection failed'))
      .finally(() => {
        collecting = undefined;
        // Its own time is not work.
        cpu = process.cpuUsage();
        loop = performance.eventLoopUtilization();
      });
  }, everyMs);
  timer.unref();
  return async () => {
    clearInterval(timer);
    await collecting;
  };
}

function round(n: number): number {
  return Math.round(n * 10) / 10;
}
