/**
 * Writes docs/dashboard/<page>-<width>.png: every dashboard page at 1280 and 390 pixels, as the
 * browser test test/e2e/dashboard-layout.test.ts visits them against the whole stack with the
 * demo seeded (it saves them when DASHBOARD_SCREENSHOTS names a directory). Each image is then
 * stored as a palette PNG (sharp), a fraction of the browser's size, to keep the repository small.
 *
 *   node --import tsx scripts/dashboard-screenshots.ts
 */
import { spawnSync } from 'node:child_process';
import { mkdir, mkdtemp, readdir, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import sharp from 'sharp';

const root = fileURLToPath(new URL('..', import.meta.url));
const out = join(root, 'docs', 'dashboard');
const raw = await mkdtemp(join(tmpdir(), 'adsmcp-dashboard-screenshots-'));
try {
  const run = spawnSync(
    process.execPath,
    ['--import', 'tsx', 'scripts/test.ts', 'test/e2e/dashboard-layout.test.ts'],
    { cwd: root, stdio: 'inherit', env: { ...process.env, DASHBOARD_SCREENSHOTS: raw } },
  );
  if (run.status !== 0)
    throw new Error(`the dashboard layout test failed (exit ${run.status}); no screenshots written`);
  await mkdir(out, { recursive: true });
  const shots = (await readdir(raw)).filter((f) => f.endsWith('.png')).sort();
  for (const name of shots) {
    await sharp(join(raw, name))
      .png({ palette: true, quality: 80, compressionLevel: 9 })
      .toFile(join(out, name));
  }
  process.stdout.write(`wrote ${shots.length} screenshots to ${out}\n`);
} finally {
  await rm(raw, { recursive: true, force: true });
}
