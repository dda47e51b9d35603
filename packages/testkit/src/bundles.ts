/**
 * The services as esbuild bundles, so that a stack's processes start without compiling
 * TypeScript. `npm run build` writes them into `services/<name>/dist` for the images;
 * `ensureBundles` keeps a copy for this machine under `.bundles/<hash>/<name>/dist`, where the
 * hash covers every input (the sources, the package manifests, the lockfile): a source edit
 * gives a new hash and a new build, so a stack never runs code older than the tree.
 *
 * A build goes to a directory of its own and is renamed into place whole, so that two test
 * files that start stacks at the same moment never see half a build (at worst both build, and
 * the second rename finds the first's result), and a stack still running from an older build
 * keeps its files (its worker threads and restarts load them later).
 */
import { createHash, randomBytes } from 'node:crypto';
import { existsSync, realpathSync } from 'node:fs';
import { mkdir, readdir, readFile, rename, rm, stat, symlink, writeFile } from 'node:fs/promises';
import { join, relative, sep } from 'node:path';
import { fileURLToPath } from 'node:url';
import { build, type Plugin, stop as stopEsbuild } from 'esbuild';

const ROOT = fileURLToPath(new URL('../../..', import.meta.url));

/** Bumped when the way bundles are built changes, so that older ones are not reused. */
const LAYOUT = 'bundles-v1';
/** Builds kept beside the newest: stacks started before an edit may still run from them. */
const KEEP_BUILDS = 4;

/**
 * npm packages stay external (the image installs them; here, node_modules), except one that a
 * workspace package has in its own node_modules because it needs another version than the one
 * at the root: resolved from the bundle's place, it would be the root's, so it is bundled in.
 */
const externalPackages = (root: string): Plugin => ({
  name: 'external-packages',
  setup(b) {
    b.onResolve({ filter: /^[^./]/ }, async (args) => {
      if (args.path.startsWith('@adsmcp/') || args.path.startsWith('node:')) return undefined;
      if (args.pluginData === 'resolving') return undefined;
      if (args.importer.includes(`${sep}node_modules${sep}`)) return undefined; // a bundled-in package's own
      const found = await b.resolve(args.path, {
        kind: args.kind,
        importer: args.importer,
        resolveDir: args.resolveDir,
        pluginData: 'resolving',
      });
      if (found.errors.length > 0 || found.external || hoisted(root, args.path, found.path))
        return { path: args.path, external: true };
      return { path: found.path };
    });
  },
});

/** Whether `file`, which `specifier` resolved to, is the copy of its package at the root's node_modules. */
function hoisted(root: string, specifier: string, file: string): boolean {
  const parts = specifier.split('/');
  const name = specifier.startsWith('@') ? parts.slice(0, 2).join('/') : (parts[0] ?? specifier);
  const atRoot = join(root, 'node_modules', name);
  if (!existsSync(atRoot)) return false;
  // The root's entries may be links (a checkout that shares another's node_modules): compare real paths.
  return file.startsWith(realpathSync(atRoot) + sep);
}

/** A service's entry points: main.ts, admin.ts, and each worker thread's file (started by path). */
export async function serviceEntries(root: string, service: string): Promise<string[]> {
  const src = join(root, 'services', service, 'src');
  if (!existsSync(src)) return [];
  const workers = (await readdir(src)).filter((f) => f.endsWith('-worker.ts'));
  return ['main.ts', 'admin.ts', ...workers].map((f) => join(src, f)).filter((f) => existsSync(f));
}

/** The services that have an entry point, by directory name. */
export async function bundledServices(root: string = ROOT): Promise<string[]> {
  const names = (await readdir(join(root, 'services'))).sort();
  const out: string[] = [];
  for (const name of names) if ((await serviceEntries(root, name)).length > 0) out.push(name);
  return out;
}

/** bundleService bundles one service's entry points into `outdir`; resolves with their file names. */
export async function bundleService(service: string, outdir: string, root: string = ROOT): Promise<string[]> {
  const entries = await serviceEntries(root, service);
  await build({
    entryPoints: entries,
    outdir,
    bundle: true,
    platform: 'node',
    target: 'node20',
    format: 'esm',
    sourcemap: true,
    plugins: [externalPackages(root)],
    logLevel: 'warning',
  });
  return entries.map((e) => relative(join(root, 'services', service, 'src'), e));
}

async function filesUnder(dir: string): Promise<string[]> {
  if (!existsSync(dir)) return [];
  const entries = await readdir(dir, { recursive: true, withFileTypes: true });
  return entries
    .filter((e) => e.isFile() && !e.name.endsWith('.test.ts'))
    .map((e) => join(e.parentPath, e.name));
}

/** The hash of everything a build reads: workspace sources and manifests, the lockfile, tsconfig. */
export async function sourceHash(root: string = ROOT): Promise<string> {
  const files: string[] = ['package.json', 'package-lock.json', 'tsconfig.json'].map((f) => join(root, f));
  for (const group of ['packages', 'services']) {
    for (const name of await readdir(join(root, group)).catch(() => [] as string[])) {
      files.push(join(root, group, name, 'package.json'));
      files.push(...(await filesUnder(join(root, group, name, 'src'))));
    }
  }
  files.push(fileURLToPath(import.meta.url));
  const hash = createHash('sha256').update(`${LAYOUT}\0${root}\0${process.version}\0`);
  for (const file of files.sort()) {
    if (!existsSync(file)) continue;
    hash.update(`${relative(root, file)}\0`);
    hash.update(await readFile(file));
    hash.update('\0');
  }
  return hash.digest('hex').slice(0, 16);
}

export interface Bundles {
  /** `.bundles/<hash>`: `<service>/dist/main.js` (and admin.js, workers) for each service. */
  dir: string;
  /** Whether this call built them (false: they were current). */
  built: boolean;
  /** How long the check (and the build, when there was one) took. */
  ms: number;
}

/** The bundled file of `service`'s entry point `entry` ('main', 'admin') in `bundles`. */
export function bundledEntry(bundles: Bundles, service: string, entry = 'main'): string {
  return join(bundles.dir, service, 'dist', `${entry}.js`);
}

/**
 * Builds every service into `dir`, which must not exist yet: each one's bundles in
 * `<service>/dist`, and beside them a link to its migrations, which main.js reads from
 * `../migrations` as it does in the image.
 */
async function buildInto(dir: string, root: string): Promise<void> {
  await mkdir(dir, { recursive: true });
  await writeFile(join(dir, 'package.json'), '{ "type": "module" }\n');
  await Promise.all(
    (await bundledServices(root)).map(async (service) => {
      await bundleService(service, join(dir, service, 'dist'), root);
      const migrations = join(root, 'services', service, 'migrations');
      if (existsSync(migrations))
        await symlink(relative(join(dir, service), migrations), join(dir, service, 'migrations'));
    }),
  );
}

/** Removes all but the newest builds, and any half-written build left over (older than ten minutes). */
async function prune(bundlesDir: string, keep: string): Promise<void> {
  const entries = await readdir(bundlesDir).catch(() => [] as string[]);
  const dated = await Promise.all(
    entries.map(async (name) => ({ name, mtime: (await stat(join(bundlesDir, name))).mtimeMs })),
  );
  const builds = dated.filter((e) => !e.name.startsWith('.') && e.name !== keep);
  builds.sort((a, b) => b.mtime - a.mtime);
  const stale = builds.slice(KEEP_BUILDS - 1);
  const abandoned = dated.filter((e) => e.name.startsWith('.tmp-') && Date.now() - e.mtime > 600_000);
  for (const e of [...stale, ...abandoned])
    await rm(join(bundlesDir, e.name), { recursive: true, force: true });
}

/** Builds under way in this process: esbuild's helper process is stopped when none is left. */
let building = 0;

/**
 * ensureBundles returns the bundles of the current sources, building them first when no build
 * of exactly these sources exists yet.
 */
export async function ensureBundles(root: string = ROOT): Promise<Bundles> {
  const started = performance.now();
  const hash = await sourceHash(root);
  const bundlesDir = join(root, '.bundles');
  const dir = join(bundlesDir, hash);
  if (existsSync(join(dir, 'package.json'))) return { dir, built: false, ms: performance.now() - started };
  const tmp = join(bundlesDir, `.tmp-${hash}-${randomBytes(4).toString('hex')}`);
  building += 1;
  try {
    await buildInto(tmp, root);
    await rename(tmp, dir).catch((err: NodeJS.ErrnoException) => {
      // Another process finished the same build first: its result is as good as ours.
      if (!existsSync(join(dir, 'package.json'))) throw err;
    });
  } finally {
    building -= 1;
    // Its helper process would otherwise stay for the life of this one (npm start's supervisor).
    if (building === 0) await stopEsbuild();
    await rm(tmp, { recursive: true, force: true });
  }
  await prune(bundlesDir, hash).catch(() => undefined);
  return { dir, built: true, ms: performance.now() - started };
}
