/**
 * A second reporter for node's test runner (scripts/test.ts adds it beside `spec`): once the run
 * ends, the test files that took longest, each with its wall time from the start of its process
 * to its end, and what all the files took together. The spec reporter names tests, not files, and
 * a run on two cores is only as short as its longest files let it be.
 *
 * JavaScript, not TypeScript: the runner loads its reporters before tsx's loader is in place.
 */
import { relative } from 'node:path';

const SHOWN = 15;

/**
 * @param {AsyncIterable<{ type: string, data?: { name?: string, file?: string, details?: { duration_ms?: number } } }>} source
 * @returns {AsyncGenerator<string>}
 */
export default async function* fileTimes(source) {
  /** @type {{ file: string, ms: number }[]} */
  const times = [];
  for await (const event of source) {
    const data = event.data;
    // A file's own test is named by its path; its `test:complete` carries the file's wall time.
    if (event.type !== 'test:complete' || !data?.file || data.name !== data.file) continue;
    times.push({ file: relative(process.cwd(), data.file), ms: data.details?.duration_ms ?? 0 });
  }
  if (times.length === 0) return;
  times.sort((a, b) => b.ms - a.ms);
  const total = times.reduce((sum, t) => sum + t.ms, 0);
  const lines = times.slice(0, SHOWN).map((t) => `  ${(t.ms / 1000).toFixed(1).padStart(6)} s  ${t.file}`);
  yield `\nthe longest test files (of ${times.length}, ${(total / 1000).toFixed(0)} s in all):\n${lines.join('\n')}\n`;
}
