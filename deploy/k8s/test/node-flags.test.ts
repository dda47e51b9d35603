/**
 * The service processes run with the same V8 heap bounds and C allocator settings wherever they
 * run: the stack's (`npm start`, the tests, the benchmarks: SERVICE_NODE_FLAGS and SERVICE_ENV)
 * and the images' command and environment, which the Kubernetes manifests leave as the images set
 * them; and the images' settings take effect.
 */
import assert from 'node:assert/strict';
import { execFile } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { test } from 'node:test';
import { promisify } from 'node:util';
import { REPO_ROOT, SERVICE_ENV, SERVICE_NODE_FLAGS } from '@adsmcp/testkit/stack';

const run = promisify(execFile);

/** The Node.js flags a Dockerfile's runtime image starts its service with: those of its CMD before the script. */
function imageNodeFlags(dockerfile: string): string[] {
  const text = readFileSync(join(REPO_ROOT, dockerfile), 'utf8');
  const cmd = /^CMD (\[.*\])$/m.exec(text)?.[1];
  assert.ok(cmd, `${dockerfile} has no CMD in exec form`);
  const argv = JSON.parse(cmd) as string[];
  assert.equal(argv[0], 'node', `${dockerfile}'s CMD runs node`);
  return argv.slice(1).filter((arg) => arg.startsWith('--'));
}

/**
 * The C allocator's settings a Dockerfile's runtime image sets: the MALLOC_ variables of its
 * `ENV` instructions (continuation lines joined) in its last stage, the one that runs.
 */
function imageMallocEnv(dockerfile: string): Record<string, string> {
  const text = readFileSync(join(REPO_ROOT, dockerfile), 'utf8').replace(/\\\n/g, ' ');
  const stage = text.slice(text.lastIndexOf('\nFROM '));
  const env: Record<string, string> = {};
  for (const line of stage.split('\n').filter((l) => l.startsWith('ENV ')))
    for (const [, name, value] of line.matchAll(/(?<=\s)(MALLOC_\w+)=(\S+)/g))
      env[name as string] = value as string;
  return env;
}

for (const dockerfile of ['Dockerfile', 'Dockerfile.prebuilt']) {
  test(`${dockerfile}'s service runs with the stack's V8 heap bounds`, () => {
    assert.deepEqual(imageNodeFlags(dockerfile), [...SERVICE_NODE_FLAGS]);
  });
  test(`${dockerfile}'s service runs with the stack's C allocator settings`, () => {
    assert.deepEqual(imageMallocEnv(dockerfile), { ...SERVICE_ENV });
  });
}

test("a process with the images' allocator settings gives back a burst's buffers", async () => {
  // A burst of large buffers in flight at once with small ones kept between them, as a burst of
  // request bodies leaves: with glibc's adaptive threshold the large ones come from the arena
  // after the first is freed, and what the small ones pin stays resident (about 210 MB here).
  const burst = `const fs = require('node:fs');
    const rss = () => Number(/VmRSS:\\s+(\\d+)/.exec(fs.readFileSync('/proc/self/status', 'utf8'))[1]) / 1024;
    const before = rss();
    const kept = [];
    for (let round = 0; round < 20; round++) {
      let live = [];
      for (let i = 0; i < 400; i++) live.push(Buffer.allocUnsafeSlow(512 * 1024 + (i % 7) * 4096).fill(1));
      for (let i = 0; i < 400; i += 50) kept.push(Buffer.allocUnsafeSlow(2048).fill(1));
      live = [];
      gc();
    }
    setTimeout(() => { gc(); process.stdout.write(String(rss() - before)); }, 200);`;
  const { stdout } = await run(
    process.execPath,
    [...imageNodeFlags('Dockerfile'), '--expose-gc', '-e', burst],
    {
      env: { ...process.env, ...imageMallocEnv('Dockerfile') },
    },
  );
  const grownMb = Number(stdout);
  assert.ok(grownMb >= 0 && grownMb < 32, `RSS grew by ${grownMb} MB after the burst, and stayed`);
});

test("a process started with the images' flags keeps its young generation within two semi-spaces of the bound while it churns", async () => {
  const flags = imageNodeFlags('Dockerfile');
  const semiSpaceMb = Number(flags.map((f) => /^--max-semi-space-size=(\d+)$/.exec(f)?.[1]).find(Boolean));
  assert.ok(semiSpaceMb > 0, `the images' flags (${flags.join(' ')}) bound no semi-space`);
  // Short-lived objects with some survivors, as requests in flight are: without a bound V8 grows
  // the young generation to its default maximum (two semi-spaces of 16 MB on 64-bit Node 20).
  const churn = `let kept = [];
    for (let i = 0; i < 3e6; i++) { kept.push({ i, s: 'x' + i }); if (kept.length > 1e5) kept = []; }
    const space = require('node:v8').getHeapSpaceStatistics().find((s) => s.space_name === 'new_space');
    process.stdout.write(String(space.space_size / 2 ** 20));`;
  const { stdout } = await run(process.execPath, [...flags, '-e', churn]);
  const newSpaceMb = Number(stdout);
  assert.ok(
    newSpaceMb > 0 && newSpaceMb <= 2 * semiSpaceMb,
    `new space ${newSpaceMb} MB, over ${2 * semiSpaceMb} MB (two semi-spaces of ${semiSpaceMb} MB)`,
  );
});
