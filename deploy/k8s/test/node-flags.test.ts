/**
 * The service processes run with the same V8 heap bounds wherever they run: the stack's (`npm
 * start`, the tests, the benchmarks: SERVICE_NODE_FLAGS) and the images' command, which the
 * Kubernetes manifests leave as the images set it; and the images' bounds take effect.
 */
import assert from 'node:assert/strict';
import { execFile } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { test } from 'node:test';
import { promisify } from 'node:util';
import { REPO_ROOT, SERVICE_NODE_FLAGS } from '@adsmcp/testkit/stack';

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

for (const dockerfile of ['Dockerfile', 'Dockerfile.prebuilt'])
  test(`${dockerfile}'s service runs with the stack's V8 heap bounds`, () => {
    assert.deepEqual(imageNodeFlags(dockerfile), [...SERVICE_NODE_FLAGS]);
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
