/**
 * `npm run build`: typecheck, then bundle each service's entry points into
 * `services/<name>/dist/*.js` for its container. Workspace code (`@adsmcp/*`) is bundled in;
 * npm packages stay external and come from the image's node_modules (see
 * packages/testkit/src/bundles.ts, which the stack's own bundles are built with too).
 */
import { spawnSync } from 'node:child_process';
import { join } from 'node:path';
import { bundledServices, bundleService } from '@adsmcp/testkit/bundles';
import { REPO_ROOT } from '@adsmcp/testkit/stack';

async function main(): Promise<void> {
  const tsc = spawnSync(join(REPO_ROOT, 'node_modules/.bin/tsc'), ['-p', '.'], {
    cwd: REPO_ROOT,
    stdio: 'inherit',
  });
  if (tsc.status !== 0) process.exit(1);
  for (const service of await bundledServices(REPO_ROOT)) {
    const entries = await bundleService(service, join(REPO_ROOT, 'services', service, 'dist'), REPO_ROOT);
    process.stdout.write(`built services/${service}/dist (${entries.join(', ')})\n`);
  }
}

main().catch((err: unknown) => {
  process.stderr.write(`build failed: ${err instanceof Error ? err.message : String(err)}\n`);
  process.exit(1);
});
