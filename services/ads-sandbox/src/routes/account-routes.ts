/** The platform's account endpoints, authenticated by an account's API credential. */
import type { Pool } from '@adsmcp/runtime/db';
import type { FastifyInstance } from 'fastify';
import { requireAccount } from '../auth.ts';

/** registerAccountRoutes adds `GET /me` (the account the credential belongs to) to `app`. */
export function registerAccountRoutes(app: FastifyInstance, deps: { pool: Pool }): void {
  app.get('/me', async (req) => {
    const account = await requireAccount(deps.pool, req);
    return { id: account.id, name: account.name, currency: account.currency, time_zone: account.timeZone };
  });
}
