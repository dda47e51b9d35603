/** The platform's bulk mutation jobs: create one from a list of operations, and follow it. */
import type { Pool } from '@adsmcp/runtime/db';
import type { FastifyInstance, FastifyRequest } from 'fastify';
import { refuseQuery } from '../ad-requests.ts';
import { type BulkJob, bulkJobJson, parseBulkRequest, validationJson } from '../bulk-jobs.ts';
import { runOperations } from '../bulk-operations.ts';
import { notFound, PlatformHttpError } from '../errors.ts';
import { newId } from '../ids.ts';
import { answerMutation } from '../mutation-route.ts';
import type { RawQuery } from '../paging.ts';
import { requestAccount } from '../platform.ts';
import { findBulkJob, insertBulkJob } from '../store/bulk-job-store.ts';

export interface BulkJobRouteDeps {
  pool: Pool;
  /** The platform guard (authentication, rate limit, faults). */
  guard: (req: FastifyRequest) => Promise<void>;
  /** The clock (ms since the epoch) jobs are created at and progress by. */
  now: () => number;
}

/** registerBulkJobRoutes adds `POST /bulk_mutation_jobs` and `GET /bulk_mutation_jobs/{job_id}`. */
export function registerBulkJobRoutes(app: FastifyInstance, deps: BulkJobRouteDeps): void {
  const { pool, guard, now } = deps;

  app.post<{ Querystring: RawQuery }>('/bulk_mutation_jobs', { onRequest: guard }, async (req, reply) => {
    refuseQuery(req.query);
    const account = requestAccount(req);
    if (!account.bulkAccess) {
      throw new PlatformHttpError(
        403,
        'bulk_access_denied',
        `the account ${account.id} has no bulk access: bulk mutation jobs are not enabled for it`,
      );
    }
    const request = parseBulkRequest(req.body);
    const accountId = account.id;
    return answerMutation(pool, req, reply, req.body, async (client) => {
      const results = await runOperations(client, accountId, request.operations, request);
      if (request.validateOnly) return { status: 200, body: validationJson(request.operations, results) };
      const job: BulkJob = {
        id: newId('job'),
        accountId,
        partialFailure: request.partialFailure,
        operations: request.operations,
        results,
        createdAt: new Date(now()),
      };
      await insertBulkJob(client, job);
      return { status: 201, body: bulkJobJson(job, job.createdAt.getTime()) };
    });
  });

  app.get<{ Params: { job_id: string }; Querystring: RawQuery }>(
    '/bulk_mutation_jobs/:job_id',
    { onRequest: guard },
    async (req) => {
      refuseQuery(req.query);
      const job = await findBulkJob(pool, requestAccount(req).id, req.params.job_id);
      if (job === undefined) throw notFound(`no bulk mutation job ${req.params.job_id} in this account`);
      return bulkJobJson(job, now());
    },
  );
}
