/**
 * `npm run build`: typecheck, then bundle each service's entry points into
 * `services/<name>/dist/*.js` for its container. Workspace code (`@adsmcp/*`) is bundled in;
 * npm packages stay external and come from the image's node_modules.
 */
import { spawnSync } from 'node:child_process';
import { existsSync } from 'node:fs';
import { readdir } from 'node:fs/promises';
import { join } from 'node:path';
import { REPO_ROOT } from '@adsmcp/testkit/stack';
import { build, type Plugin } from 'esbuild';

const externalPackages: Plugin = {
  name: 'external-packages',
  setup(b) {
    b.onResolve({ filter: /^[^./]/ }, (args) => {
      if (args.path.startsWith('@adsmcp/') || args.path.startsWith('node:')) return undefined;
      return { path: args.path, external: true };
    });
  },
};

async function main(): Promise<void> {
  const tsc = spawnSync(join(REPO_ROOT, 'node_modules/.bin/tsc'), ['-p', '.'], {
    cwd: REPO_ROOT,
    stdio: 'inherit',
  });
  if (tsc.status !== 0) process.exit(1);
  const services = await readdir(join(REPO_ROOT, 'services'));
  for (const service of services.sort()) {
    const src = join(REPO_ROOT, 'services', service, 'src');
    // A worker thread's file (`*-worker.ts` beside main.ts) is an entry of its own: it is started by path.
    const workers = existsSync(src) ? (await readdir(src)).filter((f) => f.endsWith('-worker.ts')) : [];
    const entries = ['main.ts', 'admin.ts', ...workers].map((f) => join(src, f)).filter((f) => existsSync(f));
    if (entries.length === 0) continue;
    await build({
      entryPoints: entries,
      outdir: join(REPO_ROOT, 'services', service, 'dist'),
      bundle: true,
      platform: 'node',
      target: 'node20',
      format: 'esm',
      sourcemap: true,
      plugins: [externalPackages],
      logLevel: 'warning',
    });
    process.stdout.write(
      `built services/${service}/dist (${entries.map((e) => e.slice(src.length + 1)).join(', ')})\n`,
    );
  }
}

main().catch((err: unknown) => {
  process.stderr.write(`build failed: ${err instanceof Error ? err.message : String(err)}\n`);
  process.exit(1);
});
