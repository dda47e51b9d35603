/** The operator endpoints under /_sandbox: set up accounts and inspect the ledger. Not the platform's API. */
import { randomBytes } from 'node:crypto';
import { inTransaction, type Pool } from '@adsmcp/runtime/db';
import type { FastifyInstance } from 'fastify';
import { createAdminGuard, newCredential } from '../auth.ts';
import { PlatformHttpError } from '../errors.ts';
import { insertAccount, insertCredential } from '../store/account-store.ts';
import { listLedgerEntries } from '../store/ledger-store.ts';
import { canonicalTimeZone } from '../time-zone.ts';

export interface OperatorRouteDeps {
  pool: Pool;
  adminToken: string;
}

interface CreateAccountBody {
  name: string;
  currency: string;
  time_zone: string;
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
    },
  },
} as const;

const ledgerSchema = {
  querystring: {
    type: 'object',
    required: ['account_id'],
    additionalProperties: false,
    properties: { account_id: { type: 'string', minLength: 1, maxLength: 100 } },
  },
} as const;

/** registerOperatorRoutes adds the admin-token-guarded /_sandbox endpoints to `app`. */
export function registerOperatorRoutes(app: FastifyInstance, deps: OperatorRouteDeps): void {
  const onRequest = createAdminGuard(deps.adminToken);

  app.post<{ Body: CreateAccountBody }>(
    '/_sandbox/accounts',
    { onRequest, schema: createAccountSchema },
    async (req, reply) => {
      const timeZone = canonicalTimeZone(req.body.time_zone);
      if (timeZone === undefined) {
        throw new PlatformHttpError(
          400,
          'invalid_request',
          `time_zone "${req.body.time_zone}" is not an IANA time zone`,
        );
      }
      const { credential, sha256 } = newCredential();
      const account = await inTransaction(deps.pool, async (client) => {
        const created = await insertAccount(client, {
          id: `act_${randomBytes(8).toString('hex')}`,
          name: req.body.name,
          currency: req.body.currency,
          timeZone,
        });
        await insertCredential(client, created.id, sha256);
        return created;
      });
      return reply.status(201).send({ account_id: account.id, credential });
    },
  );

  app.get<{ Querystring: { account_id: string } }>(
    '/_sandbox/ledger',
    { onRequest, schema: ledgerSchema },
    async (req) => {
      const entries = await listLedgerEntries(deps.pool, req.query.account_id);
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
    },
  );
}
