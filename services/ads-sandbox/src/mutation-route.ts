/**
 * How a platform route answers a mutation: through the idempotency ledger (see idempotency.ts),
 * with the request's account, `Idempotency-Key`, method and path, and a replay marked as one.
 */
import type { Pool, PoolClient } from '@adsmcp/runtime/db';
import type { FastifyReply, FastifyRequest } from 'fastify';
import { invalidRequest } from './errors.ts';
import {
  applyMutation,
  IDEMPOTENCY_KEY_HEADER,
  type MutationResponse,
  REPLAYED_HEADER,
} from './idempotency.ts';
import { requestAccount, requestPath } from './platform.ts';

/** The request's `Idempotency-Key`, if it sent one. */
function idempotencyKey(req: FastifyRequest): string | undefined {
  const value = req.headers[IDEMPOTENCY_KEY_HEADER];
  if (Array.isArray(value)) throw invalidRequest('Idempotency-Key', 'Idempotency-Key must be sent once');
  return value;
}

/**
 * answerMutation runs `execute` at most once per idempotency key (recording `body` as the
 * request in the ledger) and sends its response, or the stored one of an earlier request.
 */
export async function answerMutation(
  pool: Pool,
  req: FastifyRequest,
  reply: FastifyReply,
  body: unknown,
  execute: (client: PoolClient) => Promise<MutationResponse>,
): Promise<FastifyReply> {
  const outcome = await applyMutation(
    pool,
    {
      accountId: requestAccount(req).id,
      idempotencyKey: idempotencyKey(req),
      method: req.method,
      path: requestPath(req),
      body,
    },
    execute,
  );
  if (outcome.replayed) void reply.header(REPLAYED_HEADER, 'true');
  return reply.status(outcome.status).send(outcome.body);
}
