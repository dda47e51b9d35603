/**
 * A copy of this working tree for a run of `npm start` of its own (the npm start test, the
 * start-up benchmark): its files, tracked and new, and node_modules whose packages point at this
 * one's, as `npm ci` would have installed them.
 */
import { execFileSync } from 'node:child_process';
import { copyFile, cp, mkdir, readdir, readlink, symlink } from 'node:fs/promises';
import { dirname, join } from 'node:path';
import { REPO_ROOT } from './stack.ts';

/**
 * copyCheckout makes the copy in `<parent>/adsmcp` and returns its path. Workspace links stay
 * inside the copy; the root packages named in `ownPackages` are copied in instead of linked (a
 * package that must run from the copy's own files).
 */
export async function copyCheckout(parent: string, ownPackages: readonly string[] = []): Promise<string> {
  const dir = join(parent, 'adsmcp');
  const files = execFileSync('git', ['ls-files', '-z', '--cached', '--others', '--exclude-standard'], {
    cwd: REPO_ROOT,
    encoding: 'utf8',
  })
    .split('\0')
    .filter((f) => f !== '');
  for (const f of files) {
    await mkdir(dirname(join(dir, f)), { recursive: true });
    // A file deleted in the working tree is still listed; it is not part of the checkout.
    await copyFile(join(REPO_ROOT, f), join(dir, f)).catch(() => undefined);
  }
  const modules = join(dir, 'node_modules');
  await mkdir(join(modules, '@adsmcp'), { recursive: true });
  for (const entry of await readdir(join(REPO_ROOT, 'node_modules'))) {
    const from = join(REPO_ROOT, 'node_modules', entry);
    if (entry === '@adsmcp') continue;
    if (ownPackages.includes(entry))
      await cp(from, join(modules, entry), { recursive: true, verbatimSymlinks: true });
    else await symlink(from, join(modules, entry));
  }
  for (const entry of await readdir(join(REPO_ROOT, 'node_modules', '@adsmcp'))) {
    const target = await readlink(join(REPO_ROOT, 'node_modules', '@adsmcp', entry));
    await symlink(target, join(modules, '@adsmcp', entry));
  }
  // A workspace's own node_modules holds what npm could not hoist (another version than the
  // root's, or a package only it uses): `npm ci` installs it there, so the copy links it there.
  for (const group of ['packages', 'services']) {
    for (const ws of await readdir(join(REPO_ROOT, group))) {
      const own = join(REPO_ROOT, group, ws, 'node_modules');
      const entries = await readdir(own).catch(() => [] as string[]);
      if (entries.length === 0) continue;
      await mkdir(join(dir, group, ws, 'node_modules'), { recursive: true });
      for (const entry of entries)
        await symlink(join(own, entry), join(dir, group, ws, 'node_modules', entry));
    }
  }
  return dir;
}
