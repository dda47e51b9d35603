import { randomUUID } from 'node:crypto';
import { fileURLToPath } from 'node:url';
import type { Pool } from '@adsmcp/runtime/db';
import type { Logger } from '@adsmcp/runtime/log';
import Fastify, {
  type FastifyBaseLogger,
  type FastifyError,
  type FastifyInstance,
  LogController,
} from 'fastify';
import { errorBody, PlatformHttpError } from './errors.ts';
import { registerAccountRoutes } from './routes/account-routes.ts';
import { registerOperatorRoutes } from './routes/operator-routes.ts';

export const SERVICE_NAME = 'ads-sandbox';
/** The sandbox's Postgres schema. */
export const SCHEMA = 'ads_sandbox';
/** The sandbox's migrations, for main.ts and for tests that run the sandbox in-process. */
export const MIGRATIONS_DIR = fileURLToPath(new URL('../migrations', import.meta.url));

export interface Deps {
  pool: Pool;
  /** The operator token that guards /_sandbox. */
  adminToken: string;
  logger: Logger;
}

/** buildServer returns the simulated ad platform's HTTP server, not yet listening. */
export function buildServer(deps: Deps): FastifyInstance {
  const logger: FastifyBaseLogger = deps.logger;
  const app = Fastify({
    loggerInstance: logger,
    logController: new LogController({ disableRequestLogging: true, requestIdLogLabel: 'request_id' }),
    requestIdHeader: 'x-request-id',
    genReqId: () => randomUUID(),
    // A platform refuses what it does not understand rather than dropping or coercing it.
    ajv: { customOptions: { removeAdditional: false, coerceTypes: false, useDefaults: false } },
  });

  app.addHook('onResponse', async (req, reply) => {
    req.log.debug(
      {
        method: req.method,
        route: req.routeOptions.url,
        status: reply.statusCode,
        ms: Math.round(reply.elapsedTime),
      },
      'request',
    );
  });

  app.setErrorHandler(async (err: FastifyError, req, reply) => {
    if (err instanceof PlatformHttpError) {
      if (err.status === 401) void reply.header('www-authenticate', 'Bearer');
      return reply.status(err.status).send(errorBody(err.code, err.message));
    }
    if (err.validation !== undefined) {
      return reply.status(400).send(errorBody('invalid_request', err.message));
    }
    const status = err.statusCode ?? 500;
    if (status >= 400 && status < 500) {
      return reply.status(status).send(errorBody('invalid_request', err.message));
    }
    req.log.error({ err }, 'request failed');
    return reply.status(500).send(errorBody('internal_error', 'internal error'));
  });

  app.setNotFoundHandler(async (req, reply) => {
    const path = req.url.split('?')[0];
    return reply.status(404).send(errorBody('not_found', `no such endpoint: ${req.method} ${path}`));
  });

  app.get('/healthz', async () => ({ status: 'ok' }));
  registerAccountRoutes(app, deps);
  registerOperatorRoutes(app, deps);
  return app;
}
