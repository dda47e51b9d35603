/**
 * Postgres for one service: a pool whose connections see only the service's schema, and
 * numbered SQL migrations (`migrations/0001_name.sql`) applied in order under an advisory
 * lock, each in its own transaction and recorded in a ledger table (`<schema>.schema_migrations`
 * for the service's own, another name for a shared component's, such as the bus).
 */
import { createHash } from 'node:crypto';
import { readdir, readFile } from 'node:fs/promises';
import { join } from 'node:path';
import pg from 'pg';

export type Pool = pg.Pool;
export type PoolClient = pg.PoolClient;
/** Anything that runs a query: a pool or a client inside a transaction. */
export type Queryable = Pick<pg.Pool, 'query'>;

// int8 (bigint, count(*)) parses as a string by default; ours fit in a JS number when they are
// counters, and money in micros stays a string, read with ::text where it matters.
pg.types.setTypeParser(pg.types.builtins.INT8, (v) => {
  const n = Number(v);
  return Number.isSafeInteger(n) ? n : v;
});

const SCHEMA_NAME = /^[a-z][a-z0-9_]{0,62}$/;

/** Names already given, by statement text (byName). */
const statementNames = new Map<string, string>();

/**
 * A statement to send by name, as a pool with `genericPlans` wants it (createPool): the name is
 * its text's digest, so that one name is always one text, whichever store sends it.
 */
export function byName(text: string, values: unknown[]): pg.QueryConfig {
  let name = statementNames.get(text);
  if (name === undefined) {
    name = `s_${createHash('sha256').update(text).digest('hex').slice(0, 32)}`;
    statementNames.set(text, name);
  }
  return { name, text, values };
}

/**
 * createPool connects to `databaseUrl` with `search_path` set to `schema`. An idle connection
 * that the server drops (a restart, a failover) is reported to `onError` and replaced on the
 * next query; one dropped while checked out fails its query; neither takes the process down.
 *
 * With `genericPlans`, its connections plan a statement once, for any values (PostgreSQL's
 * `plan_cache_mode = force_generic_plan`), and keep the plan: a statement sent to it by name
 * (byName) is planned on a connection's first use only. That is for the few
 * statements whose planning costs more than running them and whose plan does not depend on
 * their values (a deep page's, whose indexes its ORDER BY fixes); every other statement belongs
 * on a pool without it, planned for its values each time. It applies to every statement the
 * connections run, unnamed ones too, so such a pool is kept apart (`generic plans` in its
 * connections' application name).
 */
export function createPool(
  databaseUrl: string,
  schema: string,
  max = 10,
  onError: (err: Error) => void = (err) =>
    process.stderr.write(`postgres pool (${schema}): ${err.message}\n`),
  settings: { genericPlans?: boolean } = {},
): pg.Pool {
  if (!SCHEMA_NAME.test(schema)) throw new Error(`invalid schema name: ${schema}`);
  const pool = new pg.Pool({
    connectionString: databaseUrl,
    max,
    options: `-c search_path=${schema}${settings.genericPlans ? ' -c plan_cache_mode=force_generic_plan' : ''}`,
    application_name: settings.genericPlans ? `${schema} generic plans` : schema,
  });
  pool.on('error', onError);
  // The pool listens for errors only on idle connections. A connection checked out between two
  // queries (inside a transaction) that the server drops emits its error on the client, and an
  // unheard error event would end the process: report it; the pool discards it on release.
  const checkedOut = new WeakSet<pg.PoolClient>();
  pool.on('acquire', (client) => checkedOut.add(client));
  pool.on('release', (_err, client) => checkedOut.delete(client));
  pool.on('connect', (client) =>
    client.on('error', (err) => {
      if (checkedOut.has(client)) onError(err);
    }),
  );
  return pool;
}

/** Work to do once a transaction has committed, on the pool it ran on. */
export type AfterCommit = (pool: pg.Pool) => Promise<void>;

/** The after-commit work registered in each transaction inTransaction is running. */
const afterCommits = new WeakMap<object, AfterCommit[]>();

/**
 * Registers `fn` to run once the transaction `db` is in commits (inTransaction's, which awaits it
 * before returning), never when it rolls back. Returns false when `db` is not a client in one
 * (a pool, or a transaction begun by hand): the caller then does without.
 * `fn` must not throw: the transaction has committed, so its caller is told it succeeded either way.
 */
export function afterCommit(db: Queryable, fn: AfterCommit): boolean {
  const pending = afterCommits.get(db);
  if (pending === undefined) return false;
  pending.push(fn);
  return true;
}

/** Runs `fn` in a transaction on one client; commits when it resolves, rolls back when it throws. */
export async function inTransaction<T>(pool: pg.Pool, fn: (client: pg.PoolClient) => Promise<T>): Promise<T> {
  const client = await pool.connect();
  const pending: AfterCommit[] = [];
  afterCommits.set(client, pending);
  let result: T;
  try {
    await client.query('BEGIN');
    result = await fn(client);
    await client.query('COMMIT');
  } catch (err) {
    await client.query('ROLLBACK').catch(() => undefined);
    throw err;
  } finally {
    afterCommits.delete(client);
    client.release();
  }
  // Committed: a failure here must not read as the transaction's.
  for (const run of pending) await run(pool).catch(() => undefined);
  return result;
}

export interface MigrationResult {
  applied: string[];
}

/** One numbered migration: `file` is its name (`0001_init.sql`), `sql` its statements. */
export interface Migration {
  file: string;
  sql: string;
}

const MIGRATION_FILE = /^\d{4}_[a-z0-9_]+\.sql$/;

async function readMigrations(dir: string): Promise<Migration[]> {
  const files = (await readdir(dir)).filter((f) => MIGRATION_FILE.test(f)).sort();
  return Promise.all(files.map(async (file) => ({ file, sql: await readFile(join(dir, file), 'utf8') })));
}

/**
 * migrate creates `schema` if needed and applies every migration not yet recorded: the files in
 * `source` named `NNNN_name.sql` when it is a directory, or the given list (for migrations that
 * ship inside code, such as the bus's, so that a bundled service carries them). Concurrent
 * starts of the same service wait on one advisory lock.
 */
export async function migrate(
  pool: pg.Pool,
  schema: string,
  source: string | readonly Migration[],
  ledger = 'schema_migrations',
): Promise<MigrationResult> {
  if (!SCHEMA_NAME.test(ledger)) throw new Error(`invalid ledger name: ${ledger}`);
  if (!SCHEMA_NAME.test(schema)) throw new Error(`invalid schema name: ${schema}`);
  const migrations =
    typeof source === 'string'
      ? await readMigrations(source)
      : [...source].sort((a, b) => a.file.localeCompare(b.file));
  for (const m of migrations)
    if (!MIGRATION_FILE.test(m.file)) throw new Error(`invalid migration name: ${m.file}`);
  const client = await pool.connect();
  const applied: string[] = [];
  try {
    await client.query('SELECT pg_advisory_lock(hashtext($1))', [`migrate:${schema}`]);
    try {
      await client.query(`CREATE SCHEMA IF NOT EXISTS ${schema}`);
      await client.query(
        `CREATE TABLE IF NOT EXISTS ${schema}.${ledger} (
           version integer PRIMARY KEY,
           name text NOT NULL,
           applied_at timestamptz NOT NULL DEFAULT now()
         )`,
      );
      const done = new Set(
        (await client.query<{ version: number }>(`SELECT version FROM ${schema}.${ledger}`)).rows.map(
          (r) => r.version,
        ),
      );
      for (const { file, sql } of migrations) {
        const version = Number(file.slice(0, 4));
        if (done.has(version)) continue;
        await client.query('BEGIN');
        try {
          await client.query(`SET LOCAL search_path TO ${schema}`);
          await client.query(sql);
          await client.query(`INSERT INTO ${schema}.${ledger} (version, name) VALUES ($1, $2)`, [
            version,
            file,
          ]);
          await client.query('COMMIT');
        } catch (err) {
          await client.query('ROLLBACK').catch(() => undefined);
          throw new Error(`migration ${schema}/${file} failed: ${(err as Error).message}`);
        }
        applied.push(file);
      }
    } finally {
      await client.query('SELECT pg_advisory_unlock(hashtext($1))', [`migrate:${schema}`]);
    }
  } finally {
    client.release();
  }
  return { applied };
}

/** Node's error codes for a connection that could not be made or broke. */
const CONNECTION_CODES = new Set([
  'ECONNREFUSED',
  'ECONNRESET',
  'EPIPE',
  'ETIMEDOUT',
  'ENOTFOUND',
  'EAI_AGAIN',
  'EHOSTUNREACH',
  'ENETUNREACH',
]);

/**
 * PostgreSQL's own words for "not now": a connection exception (SQLSTATE class 08), the server
 * shutting down or starting up (57P01 to 57P03), too many connections (53300).
 */
const UNAVAILABLE_SQLSTATE = /^(08[0-9A-Z]{3}|57P0[123]|53300)$/;

/** node-postgres's errors for a connection that ended or never came (they carry no code). */
const PG_CONNECTION_MESSAGES = [
  /^Connection terminated/,
  /^timeout exceeded when trying to connect$/,
  /is not queryable$/,
  /^Cannot use a pool after calling end on the pool$/,
];

/**
 * isDatabaseUnavailable says whether `err` means the database could not be reached or went away
 * during the call (a refused or broken connection, a server restarting), as opposed to a
 * statement the database refused. A caller may retry such a call later; it is not a bug.
 */
export function isDatabaseUnavailable(err: unknown): boolean {
  const seen = new Set<unknown>();
  const stack: unknown[] = [err];
  while (stack.length > 0) {
    const e = stack.pop();
    if (e === null || typeof e !== 'object' || seen.has(e)) continue;
    seen.add(e);
    // Another service's failure (its own connection refused, say) is not this database's.
    if ((e as { name?: unknown }).name === 'ConnectError') continue;
    const { code, message, errors, cause } = e as {
      code?: unknown;
      message?: unknown;
      errors?: unknown;
      cause?: unknown;
    };
    if (typeof code === 'string' && (CONNECTION_CODES.has(code) || UNAVAILABLE_SQLSTATE.test(code)))
      return true;
    if (typeof message === 'string' && PG_CONNECTION_MESSAGES.some((m) => m.test(message))) return true;
    // A refused connection to a name with several addresses arrives as an AggregateError.
    if (Array.isArray(errors)) stack.push(...errors);
    stack.push(cause);
  }
  return false;
}

/** A pool error reporter that logs the message and SQLSTATE only (never the client or its URL). */
export function poolErrorsTo(logger: { warn(obj: object, msg: string): void }): (err: Error) => void {
  return (err) =>
    logger.warn({ error: err.message, code: (err as { code?: string }).code }, 'postgres connection lost');
}

/**
 * openServiceDatabase is a service's start-up step for Postgres: a pool on its schema whose lost
 * connections are logged, with the service's migrations applied.
 */
export async function openServiceDatabase(o: {
  url: string;
  schema: string;
  migrationsDir: string;
  logger: { info(obj: object, msg: string): void; warn(obj: object, msg: string): void };
  max?: number;
}): Promise<pg.Pool> {
  const pool = createPool(o.url, o.schema, o.max ?? 10, poolErrorsTo(o.logger));
  try {
    const { applied } = await migrate(pool, o.schema, o.migrationsDir);
    o.logger.info({ applied }, 'migrated');
    return pool;
  } catch (err) {
    await pool.end();
    throw err;
  }
}
