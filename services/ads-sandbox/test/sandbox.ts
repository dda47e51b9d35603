/**
 * The ads sandbox in-process on an ephemeral port over a fresh database, with helpers to call it
 * over real HTTP as an account or as the operator. One per test file:
 *
 *   let sb: Sandbox;
 *   before(async () => { sb = await startSandbox(); });
 *   after(() => sb?.stop());
 */
import type { AddressInfo } from 'node:net';
import { createPool, migrate, type Pool } from '@adsmcp/runtime/db';
import { createLogger } from '@adsmcp/runtime/log';
import { stopTestServer, testDatabase } from '@adsmcp/testkit/postgres';
import type { FastifyInstance } from 'fastify';
import type { AdJson } from '../src/ads.ts';
import { buildServer, MIGRATIONS_DIR, SCHEMA, SERVICE_NAME } from '../src/server.ts';

export const ADMIN_TOKEN = 'test-admin-token-0123456789';

/**
 * The rate limit the sandbox runs with unless a test asks for another: high enough that no test
 * trips it by accident.
 */
const TEST_RATE_PER_SECOND = 100_000;

export interface ErrorJson {
  error: { code: string; message: string; field?: string };
}

export interface AdListJson {
  data: AdJson[];
  paging: { after: string | null; before: string | null; has_more: boolean };
}

export interface LedgerEntryJson {
  id: number;
  account_id: string;
  method: string;
  path: string;
  idempotency_key: string | null;
  request_body: unknown;
  response_status: number;
  response_body: unknown;
  created_at: string;
}

export interface Response<T> {
  status: number;
  headers: Headers;
  body: T;
}

export interface CallOptions {
  /** Sent as `Authorization: Bearer <token>`. */
  token?: string;
  /** Sent as JSON. */
  body?: unknown;
  /** Sent as it is, with `content-type: application/json` (for malformed or empty bodies). */
  rawBody?: string;
  /** Sent as they are, with the content-type of `headers` if any (a file upload). */
  bytes?: Uint8Array;
  headers?: Record<string, string>;
  signal?: AbortSignal;
}

export interface SandboxAccount {
  accountId: string;
  credential: string;
}

export interface Sandbox {
  base: string;
  /** The sandbox's pool (search_path is its schema), for checks the API does not offer. */
  pool: Pool;
  app: FastifyInstance;
  /** call sends one request; the body of the answer is parsed as JSON (undefined when empty). */
  call<T = Record<string, unknown>>(method: string, path: string, opts?: CallOptions): Promise<Response<T>>;
  /** admin calls an operator endpoint with the admin token. */
  admin<T = Record<string, unknown>>(method: string, path: string, body?: unknown): Promise<Response<T>>;
  /** newAccount creates a (seeded) account through the operator endpoint. */
  newAccount(account?: { name?: string; currency?: string; time_zone?: string }): Promise<SandboxAccount>;
  /** ledger lists the account's recorded mutations (only those on `path`, when given). */
  ledger(accountId: string, path?: string): Promise<LedgerEntryJson[]>;
  stop(): Promise<void>;
}

/** startSandbox starts the sandbox; stop() closes it and drops its database. */
export async function startSandbox(
  options: { ratePerSecond?: number; now?: () => number } = {},
): Promise<Sandbox> {
  const db = await testDatabase();
  const pool = createPool(db.url, SCHEMA);
  await migrate(pool, SCHEMA, MIGRATIONS_DIR);
  const app = buildServer({
    pool,
    adminToken: ADMIN_TOKEN,
    logger: createLogger(SERVICE_NAME, 'silent'),
    ratePerSecond: options.ratePerSecond ?? TEST_RATE_PER_SECOND,
    ...(options.now === undefined ? {} : { now: options.now }),
  });
  await app.listen({ port: 0, host: '127.0.0.1' });
  const base = `http://127.0.0.1:${(app.server.address() as AddressInfo).port}`;

  async function call<T>(method: string, path: string, opts: CallOptions = {}): Promise<Response<T>> {
    const headers: Record<string, string> = { ...opts.headers };
    if (opts.token !== undefined) headers.authorization = `Bearer ${opts.token}`;
    let body: string | Uint8Array | undefined;
    if (opts.body !== undefined) body = JSON.stringify(opts.body);
    if (opts.rawBody !== undefined) body = opts.rawBody;
    if (body !== undefined) headers['content-type'] = 'application/json';
    if (opts.bytes !== undefined) body = opts.bytes;
    const res = await fetch(`${base}${path}`, {
      method,
      headers,
      body,
      ...(opts.signal === undefined ? {} : { signal: opts.signal }),
    });
    const text = await res.text();
    return {
      status: res.status,
      headers: res.headers,
      body: (text === '' ? undefined : JSON.parse(text)) as T,
    };
  }

  const admin = <T>(method: string, path: string, body?: unknown) =>
    call<T>(method, path, { token: ADMIN_TOKEN, body });

  return {
    base,
    pool,
    app,
    call,
    admin,
    async newAccount(account = {}) {
      const res = await admin<{ account_id: string; credential: string }>('POST', '/_sandbox/accounts', {
        name: 'Sandbox account',
        currency: 'USD',
        time_zone: 'UTC',
        ...account,
      });
      if (res.status !== 201) throw new Error(`the sandbox refused the account: ${res.status}`);
      return { accountId: res.body.account_id, credential: res.body.credential };
    },
    async ledger(accountId, path) {
      const query = new URLSearchParams({ account_id: accountId, ...(path === undefined ? {} : { path }) });
      const res = await admin<{ entries: LedgerEntryJson[] }>('GET', `/_sandbox/ledger?${query}`);
      if (res.status !== 200) throw new Error(`the sandbox refused the ledger: ${res.status}`);
      return res.body.entries;
    },
    async stop() {
      await app.close();
      await pool.end();
      await db.drop();
      await stopTestServer();
    },
  };
}
