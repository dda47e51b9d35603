/** The platform's account endpoints, authenticated by an account's API credential. */
import type { Queryable } from '@adsmcp/runtime/db';
import type { FastifyInstance, FastifyRequest } from 'fastify';
import { credentialExpiresAt } from '../auth.ts';
import { requestAccount } from '../platform.ts';

/**
 * registerAccountRoutes adds `GET /me` (the account the credential belongs to, and when that
 * credential expires) to `app`.
 */
export function registerAccountRoutes(
  app: FastifyInstance,
  deps: { pool: Queryable; guard: (req: FastifyRequest) => Promise<void>; validDays?: number },
): void {
  app.get('/me', { onRequest: deps.guard }, async (req) => {
    const account = requestAccount(req);
    return {
      id: account.id,
      name: account.name,
      currency: account.currency,
      time_zone: account.timeZone,
      bulk_access: account.bulkAccess,
      credential_expires_at: (await credentialExpiresAt(deps.pool, req, deps.validDays)) ?? null,
    };
  });
}
