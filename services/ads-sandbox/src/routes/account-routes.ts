/** The platform's account endpoints, authenticated by an account's API credential. */
import type { FastifyInstance, FastifyRequest } from 'fastify';
import { requestAccount } from '../platform.ts';

/** registerAccountRoutes adds `GET /me` (the account the credential belongs to) to `app`. */
export function registerAccountRoutes(
  app: FastifyInstance,
  deps: { guard: (req: FastifyRequest) => Promise<void> },
): void {
  app.get('/me', { onRequest: deps.guard }, async (req) => {
    const account = requestAccount(req);
    return {
      id: account.id,
      name: account.name,
      currency: account.currency,
      time_zone: account.timeZone,
      bulk_access: account.bulkAccess,
    };
  });
}
