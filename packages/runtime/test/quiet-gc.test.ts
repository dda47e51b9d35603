/**
 * The quiet collector in a real Node process with the services' flags: a burst grows the V8 heap,
 * the process falls quiet, and the heap is given back; without `--expose-gc` the collector is off;
 * a process that keeps working is not collected by it.
 */
import assert from 'node:assert/strict';
import { execFile } from 'node:child_process';
import { test } from 'node:test';
import { fileURLToPath } from 'node:url';
import { promisify } from 'node:util';
import { SERVICE_NODE_FLAGS } from '@adsmcp/testkit/stack';

const run = promisify(execFile);
const COLLECTOR = fileURLToPath(new URL('../src/quiet-gc.ts', import.meta.url));

interface Outcome {
  /** The V8 heap committed (MB): the most during the burst, as it ended, after the quiet spell. */
  peak: number;
  atBurstEnd: number;
  afterQuiet: number;
  /** The collector's log lines: their messages. */
  said: string[];
}

/**
 * Runs a process that starts the collector (a 250 ms window), works for `burstMs` building and
 * dropping objects (up to about 40 MB live at once), then, if `quietMs` > 0, is quiet that long.
 */
async function burst(flags: readonly string[], burstMs: number, quietMs: number): Promise<Outcome> {
  const script = `
    import { getHeapStatistics } from 'node:v8';
    import { startQuietCollector } from ${JSON.stringify(COLLECTOR)};
    const said = [];
    const logger = { info: (a, b) => said.push(typeof a === 'string' ? a : b), warn: (a, b) => said.push(typeof a === 'string' ? a : b) };
    const stop = startQuietCollector({ logger, everyMs: 250, grownBytes: 2 * 2 ** 20 });
    const heapMb = () => getHeapStatistics().total_heap_size / 2 ** 20;
    const end = Date.now() + ${burstMs};
    let live = [];
    let peak = 0;
    while (Date.now() < end) {
      for (let i = 0; i < 20000; i++) live.push({ i, text: 'row ' + i, values: [i, i + 1, i + 2] });
      if (live.length > 300000) live = [];
      peak = Math.max(peak, heapMb());
      // Let the collector's timer run between slices of work.
      await new Promise((resolve) => setImmediate(resolve));
    }
    live = [];
    const atBurstEnd = heapMb();
    await new Promise((resolve) => setTimeout(resolve, ${quietMs}));
    const afterQuiet = heapMb();
    await stop();
    process.stdout.write(JSON.stringify({ peak, atBurstEnd, afterQuiet, said }));
  `;
  const { stdout } = await run(process.execPath, [
    ...flags,
    '--input-type=module',
    '--import',
    'tsx',
    '-e',
    script,
  ]);
  return JSON.parse(stdout) as Outcome;
}

const GAVE_BACK = 'quiet after work: a full collection gave back the heap the work grew';

test('a burst grows the heap; once the process falls quiet, one full collection gives it back', async () => {
  const got = await burst(SERVICE_NODE_FLAGS, 2000, 1500);
  assert.deepEqual(got.said, [GAVE_BACK], 'one collection, logged');
  // Against the most the burst grew to (80 to 97 MB in four runs; after the quiet spell 15 to 22):
  // the heap as the burst ended depends on where V8's own collections stood (21 to 56 MB), so a
  // bound against it failed on a loaded CI machine (21.7 MB, then 16.7) though the heap was back.
  assert.ok(
    got.afterQuiet < 0.5 * got.peak,
    `heap at most ${got.peak.toFixed(1)} MB in the burst, ${got.atBurstEnd.toFixed(1)} MB as it ended, ${got.afterQuiet.toFixed(1)} MB after the quiet spell`,
  );
});

test('without --expose-gc the collector is off and says so, and the process runs on', async () => {
  // Whether V8 shrinks the heap on its own meanwhile depends on where its collections stood when
  // the burst ended (a marking begun in the burst may finish in the quiet spell): not asserted.
  const got = await burst(
    SERVICE_NODE_FLAGS.filter((f) => f !== '--expose-gc'),
    2000,
    1500,
  );
  assert.deepEqual(got.said, ['quiet collector off: the process was started without --expose-gc']);
});

test('a process that keeps working is not collected by it', async () => {
  const got = await burst(SERVICE_NODE_FLAGS, 3000, 0);
  assert.deepEqual(got.said, []);
});
