/**
 * A fresh database for one test file. PostgreSQL comes from `DATABASE_URL` (an admin URL on a
 * server where databases may be created), else from a Docker engine through Testcontainers
 * when one answers, else from an embedded PostgreSQL started for this process.
 */
import { randomBytes } from 'node:crypto';
import { existsSync } from 'node:fs';
import { mkdtemp } from 'node:fs/promises';
import { request } from 'node:http';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import pg from 'pg';
import { startEmbeddedPostgres } from './embedded-postgres.ts';
import { envPairs } from './env-pairs.ts';

export interface TestDatabase {
  /** URL of the new, empty database. */
  url: string;
  /** Drops the database (and stops any server started for it when it was the last). */
  drop(): Promise<void>;
}

let server: Promise<{ adminUrl: string; stop(): Promise<void> }> | undefined;

/** Whether a Docker engine answers its ping on the local socket. */
function dockerAnswers(): Promise<boolean> {
  const socketPath = process.env.DOCKER_HOST?.startsWith('unix://')
    ? process.env.DOCKER_HOST.slice(7)
    : '/var/run/docker.sock';
  if (!existsSync(socketPath)) return Promise.resolve(false);
  return new Promise((resolve) => {
    const req = request({ socketPath, path: '/_ping', timeout: 1000 }, (res) => {
      res.resume();
      resolve(res.statusCode === 200);
    });
    req.on('error', () => resolve(false));
    req.on('timeout', () => req.destroy());
    req.end();
  });
}

async function startServer(): Promise<{ adminUrl: string; stop(): Promise<void> }> {
  const fromEnv = process.env.DATABASE_URL;
  if (fromEnv) return { adminUrl: fromEnv, stop: async () => undefined };
  if (await dockerAnswers()) {
    // Testcontainers is not a dependency of this repo (no Docker engine on our machines); where
    // an engine answers and the package is installed, it is used, and otherwise we say so.
    try {
      const { PostgreSqlContainer } = (await import('@testcontainers/postgresql' as string)) as {
        PostgreSqlContainer: new (
          image: string,
        ) => {
          start(): Promise<{ getConnectionUri(): string; stop(): Promise<unknown> }>;
        };
      };
      const c = await new PostgreSqlContainer('postgres:18').start();
      return { adminUrl: c.getConnectionUri(), stop: async () => void (await c.stop()) };
    } catch (err) {
      process.stderr.write(
        `docker answers but Testcontainers is unavailable (${String(err)}); using embedded-postgres\n`,
      );
    }
  }
  const dataDir = await mkdtemp(join(tmpdir(), 'adsmcp-pg-'));
  return startEmbeddedPostgres({
    dataDir,
    persistent: false,
    fsync: false,
    // TEST_PG_SETTINGS: more server settings (a benchmark turns on pg_stat_statements so).
    settings: envPairs('TEST_PG_SETTINGS'),
  });
}

/** Where test PostgreSQL comes from, for the test runner's report. */
export function databaseSource(): string {
  return process.env.DATABASE_URL ? 'DATABASE_URL' : 'embedded-postgres (started for this process)';
}

/** testDatabase creates an empty database for the calling test file. */
export async function testDatabase(): Promise<TestDatabase> {
  server ??= startServer();
  const { adminUrl } = await server;
  const name = `t_${randomBytes(6).toString('hex')}`;
  const admin = new pg.Client({ connectionString: adminUrl });
  await admin.connect();
  try {
    await admin.query(`CREATE DATABASE ${name}`);
  } finally {
    await admin.end();
  }
  const url = new URL(adminUrl);
  url.pathname = `/${name}`;
  return {
    url: url.toString(),
    async drop() {
      // Bounded: a test file's database goes with the run's server anyway, and a drop that waits
      // (for a lock, or a server too busy to answer) must not hold the file's process open.
      const c = new pg.Client({
        connectionString: adminUrl,
        connectionTimeoutMillis: 10_000,
        statement_timeout: 30_000,
        lock_timeout: 20_000,
      });
      c.on('error', () => undefined);
      try {
        await c.connect();
        await c.query(`DROP DATABASE IF EXISTS ${name} WITH (FORCE)`);
      } catch (err) {
        console.warn(
          `test database ${name} was not dropped: ${err instanceof Error ? err.message : String(err)}`,
        );
      } finally {
        const ended = c.end().then(
          () => true,
          () => true,
        );
        const settled = await Promise.race([ended, sleep(5000).then(() => false)]);
        // A connection whose server never answered the goodbye is closed from this side.
        if (!settled)
          (c as unknown as { connection?: { stream?: { destroy(): void } } }).connection?.stream?.destroy();
      }
    },
  };
}

/** Stops a server this process started (call from a test file's `after`). */
export async function stopTestServer(): Promise<void> {
  if (server === undefined) return;
  const s = await server;
  server = undefined;
  await s.stop();
}
