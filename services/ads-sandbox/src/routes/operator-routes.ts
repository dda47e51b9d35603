/**
 * The operator endpoints under /_sandbox: set up accounts, inspect the ledger and inject faults.
 * Not the platform's API.
 */

import { inTransaction, type Pool } from '@adsmcp/runtime/db';
import { ianaTimeZone } from '@adsmcp/runtime/time-zone';
import type { FastifyInstance } from 'fastify';
import { createAdminGuard, newCredential } from '../auth.ts';
import { invalidRequest, notFound } from '../errors.ts';
import { FAULT_KINDS, type Fault, type FaultKind, type FaultQueue } from '../faults.ts';
import { newId } from '../ids.ts';
import type { RateLimiter } from '../rate-limit.ts';
import { seedAccount } from '../seed.ts';
import { accountExists, insertAccount, insertCredential } from '../store/account-store.ts';
import { listLedgerEntries } from '../store/ledger-store.ts';

export interface OperatorRouteDeps {
  pool: Pool;
  adminToken: string;
  faults: FaultQueue;
  limiter: RateLimiter;
}

interface CreateAccountBody {
  name: string;
  currency: string;
  time_zone: string;
  /** Whether the account may submit bulk mutation jobs; true unless said. */
  bulk_access?: boolean;
}

const createAccountSchema = {
  body: {
    type: 'object',
    required: ['name', 'currency', 'time_zone'],
    additionalProperties: false,
    properties: {
      name: { type: 'string', minLength: 1, maxLength: 200, pattern: '\\S' },
      currency: { type: 'string', pattern: '^[A-Z]{3}$' },
      time_zone: { type: 'string', minLength: 1, maxLength: 100 },
      bulk_access: { type: 'boolean' },
    },
  },
} as const;

const rateLimitSchema = {
  querystring: {
    type: 'object',
    required: ['account_id'],
    additionalProperties: false,
    properties: { account_id: { type: 'string', minLength: 1, maxLength: 100 } },
  },
} as const;

const ledgerSchema = {
  querystring: {
    type: 'object',
    required: ['account_id'],
    additionalProperties: false,
    properties: {
      account_id: { type: 'string', minLength: 1, maxLength: 100 },
      path: { type: 'string', minLength: 1, maxLength: 2048 },
    },
  },
} as const;

interface CreateFaultBody {
  account_id: string;
  method?: 'GET' | 'POST';
  path_prefix?: string;
  kind: FaultKind;
  count: number;
  retry_after_seconds?: number;
  delay_ms?: number;
  field?: string;
}

const createFaultSchema = {
  body: {
    type: 'object',
    required: ['account_id', 'kind', 'count'],
    additionalProperties: false,
    properties: {
      account_id: { type: 'string', minLength: 1, maxLength: 100 },
      method: { type: 'string', enum: ['GET', 'POST'] },
      path_prefix: { type: 'string', minLength: 1, maxLength: 2048, pattern: '^/' },
      kind: { type: 'string', enum: FAULT_KINDS },
      count: { type: 'integer', minimum: 1, maximum: 10000 },
      retry_after_seconds: { type: 'integer', minimum: 1, maximum: 3600 },
      delay_ms: { type: 'integer', minimum: 0, maximum: 120000 },
      field: { type: 'string', minLength: 1, maxLength: 100 },
    },
  },
} as const;

const DEFAULT_RETRY_AFTER_SECONDS = 1;
const DEFAULT_DELAY_MS = 1000;

function faultJson(f: Fault) {
  return {
    id: f.id,
    account_id: f.accountId,
    method: f.method ?? null,
    path_prefix: f.pathPrefix ?? null,
    kind: f.kind,
    count: f.count,
    ...(f.kind === 'rate_limit' ? { retry_after_seconds: f.retryAfterSeconds } : {}),
    ...(f.kind === 'delay' ? { delay_ms: f.delayMs } : {}),
    ...(f.kind === 'ignore_field' ? { field: f.field } : {}),
  };
}

/** registerOperatorRoutes adds the admin-token-guarded /_sandbox endpoints to `app`. */
export function registerOperatorRoutes(app: FastifyInstance, deps: OperatorRouteDeps): void {
  const onRequest = createAdminGuard(deps.adminToken);
  app.post<{ Body: CreateAccountBody }>(
    '/_sandbox/accounts',
    { onRequest, schema: createAccountSchema },
    async (req, reply) => reply.status(201).send(await createAccount(deps.pool, req.body)),
  );
  app.get<{ Querystring: { account_id: string; path?: string } }>(
    '/_sandbox/ledger',
    { onRequest, schema: ledgerSchema },
    async (req) => ledgerJson(deps.pool, req.query.account_id, req.query.path),
  );
  app.get<{ Querystring: { account_id: string } }>(
    '/_sandbox/rate_limit',
    { onRequest, schema: rateLimitSchema },
    async (req) => rateLimitJson(deps.limiter, req.query.account_id),
  );
  app.post<{ Body: CreateFaultBody }>(
    '/_sandbox/faults',
    { onRequest, schema: createFaultSchema },
    async (req, reply) => reply.status(201).send(faultJson(await createFault(deps, req.body))),
  );
  app.delete('/_sandbox/faults', { onRequest }, async () => ({ cleared: deps.faults.clear() }));
}

/** POST /_sandbox/accounts: a new account, its credential and its seed data, in one transaction. */
async function createAccount(
  pool: Pool,
  body: CreateAccountBody,
): Promise<{ account_id: string; credential: string }> {
  const timeZone = ianaTimeZone(body.time_zone);
  if (timeZone === undefined) {
    throw invalidRequest('time_zone', `time_zone "${body.time_zone}" is not an IANA time zone`);
  }
  const { credential, sha256 } = newCredential();
  const account = await inTransaction(pool, async (client) => {
    const created = await insertAccount(client, {
      id: newId('act'),
      name: body.name,
      currency: body.currency,
      timeZone,
      bulkAccess: body.bulk_access,
    });
    await insertCredential(client, created.id, sha256);
    await seedAccount(client, created.id);
    return created;
  });
  return { account_id: account.id, credential };
}

/** GET /_sandbox/ledger: the account's ledger entries, of one path if given. */
async function ledgerJson(pool: Pool, accountId: string, path: string | undefined) {
  const entries = await listLedgerEntries(pool, accountId, path);
  return {
    entries: entries.map((e) => ({
      id: e.id,
      account_id: e.accountId,
      method: e.method,
      path: e.path,
      idempotency_key: e.idempotencyKey,
      request_body: e.requestBody,
      response_status: e.responseStatus,
      response_body: e.responseBody,
      created_at: e.createdAt.toISOString(),
    })),
  };
}

/** GET /_sandbox/rate_limit: the account's rate limit and how much of it was used. */
function rateLimitJson(limiter: RateLimiter, accountId: string) {
  const u = limiter.usage(accountId);
  const iso = (ms: number | null) => (ms === null ? null : new Date(ms).toISOString());
  return {
    account_id: accountId,
    rate_per_second: limiter.ratePerSecond,
    burst: limiter.burst,
    allowed: u.allowed,
    refused: u.refused,
    first_allowed_at: iso(u.firstAllowedAt),
    last_allowed_at: iso(u.lastAllowedAt),
  };
}

/** POST /_sandbox/faults: queues a fault for an existing account, each option only with its kind. */
async function createFault(deps: OperatorRouteDeps, body: CreateFaultBody): Promise<Fault> {
  if (body.retry_after_seconds !== undefined && body.kind !== 'rate_limit') {
    throw invalidRequest('retry_after_seconds', 'retry_after_seconds is allowed only with kind "rate_limit"');
  }
  if (body.delay_ms !== undefined && body.kind !== 'delay') {
    throw invalidRequest('delay_ms', 'delay_ms is allowed only with kind "delay"');
  }
  if ((body.field !== undefined) !== (body.kind === 'ignore_field')) {
    throw invalidRequest(
      'field',
      body.kind === 'ignore_field'
        ? 'field is required with kind "ignore_field": the body field to drop'
        : 'field is allowed only with kind "ignore_field"',
    );
  }
  if (!(await accountExists(deps.pool, body.account_id))) {
    throw notFound(`no account ${body.account_id}`);
  }
  return deps.faults.add({
    accountId: body.account_id,
    method: body.method,
    pathPrefix: body.path_prefix,
    kind: body.kind,
    count: body.count,
    retryAfterSeconds: body.retry_after_seconds ?? DEFAULT_RETRY_AFTER_SECONDS,
    delayMs: body.delay_ms ?? DEFAULT_DELAY_MS,
    field: body.field,
  });
}
