import { randomUUID } from 'node:crypto';
import { fileURLToPath } from 'node:url';
import type { Pool } from '@adsmcp/runtime/db';
import type { Logger } from '@adsmcp/runtime/log';
import Fastify, {
  type FastifyBaseLogger,
  type FastifyError,
  type FastifyInstance,
  type FastifyReply,
  type FastifyRequest,
  LogController,
} from 'fastify';
import { errorBody, PlatformHttpError } from './errors.ts';
import { createFaultQueue } from './faults.ts';
import { createPlatformGuard, failAfterCommitHook, ignoreFieldHook } from './platform.ts';
import { createRateLimiter } from './rate-limit.ts';
import { registerAccountRoutes } from './routes/account-routes.ts';
import { registerAdGroupRoutes } from './routes/ad-group-routes.ts';
import { registerAdRoutes } from './routes/ad-routes.ts';
import { registerAudienceRoutes } from './routes/audience-routes.ts';
import { registerBulkJobRoutes } from './routes/bulk-job-routes.ts';
import { registerCampaignRoutes } from './routes/campaign-routes.ts';
import { registerConversionRoutes } from './routes/conversion-routes.ts';
import { registerFeedRoutes } from './routes/feed-routes.ts';
import { registerFileRoutes } from './routes/file-routes.ts';
import { registerGeoRoutes } from './routes/geo-routes.ts';
import { registerInsightRoutes } from './routes/insight-routes.ts';
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
  /** Each account's sustained request rate on the platform endpoints; the burst is twice it. */
  ratePerSecond?: number;
  /**
   * The clock (ms since the epoch) the rate limit, the insights' current local day, the custom
   * audience operations' progress, the bulk jobs' progress and the files' creation times read;
   * tests pass a fake one.
   */
  now?: () => number;
  /** Days an account's API credential is valid after it is issued (CREDENTIAL_VALID_DAYS unless set). */
  credentialValidDays?: number;
}

export const DEFAULT_RATE_PER_SECOND = 50;

/** A request validation error's field as a dotted path (`creative.title`), from Ajv's error. */
function validationField(err: FastifyError): string | undefined {
  const first = err.validation?.[0];
  if (first === undefined) return undefined;
  const path = first.instancePath.split('/').filter((p) => p !== '');
  const params = first.params as { missingProperty?: unknown; additionalProperty?: unknown };
  const named = params.missingProperty ?? params.additionalProperty;
  if (typeof named === 'string') path.push(named);
  return path.length === 0 ? undefined : path.join('.');
}

/**
 * A validation error's message, naming a property that is not allowed and the values an enum
 * allows (Ajv's do not), and saying what the non-whitespace pattern means.
 */
function validationMessage(err: FastifyError, field: string | undefined): string {
  const first = err.validation?.[0];
  const params = first?.params as {
    additionalProperty?: unknown;
    allowedValues?: unknown;
    pattern?: unknown;
  };
  const at = `${err.validationContext ?? 'body'}.${field}`;
  if (typeof params?.additionalProperty === 'string' && field !== undefined) {
    return `${at} is not a known property`;
  }
  if (Array.isArray(params?.allowedValues) && field !== undefined) {
    return `${at} must be one of ${params.allowedValues.map((v) => JSON.stringify(v)).join(', ')}`;
  }
  if (params?.pattern === '\\S' && field !== undefined)
    return `${at} must contain a non-whitespace character`;
  return err.message;
}

/** buildServer returns the simulated ad platform's HTTP server, not yet listening. */
export function buildServer(deps: Deps): FastifyInstance {
  const logger: FastifyBaseLogger = deps.logger;
  const app = Fastify({
    loggerInstance: logger,
    logController: new LogController({ disableRequestLogging: true, requestIdLogLabel: 'request_id' }),
    requestIdHeader: 'x-request-id',
    genReqId: () => randomUUID(),
    // A list filter may name 500 ids of up to 255 characters in the query string (about 140 KB),
    // beyond Node's default 16 KiB of headers.
    http: { maxHeaderSize: 256 * 1024 },
    // An id in a path may be as long as the tools accept (255 characters); Fastify's default
    // refuses a path part over 100 with a bare 414.
    routerOptions: { maxParamLength: 512 },
    // A platform refuses what it does not understand rather than dropping or coercing it.
    ajv: { customOptions: { removeAdditional: false, coerceTypes: false, useDefaults: false } },
  });
  addRequestLog(app);
  app.setErrorHandler(handleError);
  app.setNotFoundHandler(async (req, reply) => {
    const path = req.url.split('?')[0];
    return reply.status(404).send(errorBody('not_found', `no such endpoint: ${req.method} ${path}`));
  });
  acceptEmptyJson(app);
  registerRoutes(app, deps);
  return app;
}

/** A debug line per request: its method, route, status and time. */
function addRequestLog(app: FastifyInstance): void {
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
}

/** Every failure as the platform's error body: its own refusals, a request's validation, the rest. */
async function handleError(
  err: FastifyError,
  req: FastifyRequest,
  reply: FastifyReply,
): Promise<FastifyReply> {
  if (err instanceof PlatformHttpError) {
    if (err.status === 401) void reply.header('www-authenticate', 'Bearer');
    void reply.headers(err.headers);
    return reply.status(err.status).send(errorBody(err.code, err.message, err.field));
  }
  if (err.validation !== undefined) {
    const field = validationField(err);
    return reply.status(400).send(errorBody('invalid_request', validationMessage(err, field), field));
  }
  const status = err.statusCode ?? 500;
  if (status >= 400 && status < 500) {
    return reply.status(status).send(errorBody('invalid_request', err.message));
  }
  req.log.error({ err }, 'request failed');
  return reply.status(500).send(errorBody('internal', 'internal error'));
}

/** An empty JSON body is no body (an archive may be sent either way), not a parse error. */
function acceptEmptyJson(app: FastifyInstance): void {
  const parseJson = app.getDefaultJsonParser('error', 'error');
  app.removeContentTypeParser('application/json');
  app.addContentTypeParser('application/json', { parseAs: 'string' }, (req, body, done) => {
    const text = typeof body === 'string' ? body : body.toString('utf8');
    if (text === '') {
      done(null, undefined);
      return;
    }
    void parseJson(req, text, done);
  });
}

/** The platform's endpoints, behind its guard (credential, rate limit, faults), and the operator's. */
function registerRoutes(app: FastifyInstance, deps: Deps): void {
  const ratePerSecond = deps.ratePerSecond ?? DEFAULT_RATE_PER_SECOND;
  // One clock for every reader of time, so a test's fake clock moves them all together.
  const now = deps.now ?? Date.now;
  const faults = createFaultQueue();
  const limiter = createRateLimiter(ratePerSecond, now);
  const guard = createPlatformGuard({
    pool: deps.pool,
    limiter,
    faults,
    ratePerSecond,
  });
  app.addHook('onSend', failAfterCommitHook);
  app.addHook('preHandler', ignoreFieldHook);

  app.get('/healthz', async () => ({ status: 'ok' }));
  registerAccountRoutes(app, { pool: deps.pool, guard, validDays: deps.credentialValidDays });
  registerAdRoutes(app, { pool: deps.pool, guard });
  registerAdGroupRoutes(app, { pool: deps.pool, guard });
  registerCampaignRoutes(app, { pool: deps.pool, guard });
  registerFeedRoutes(app, { pool: deps.pool, guard });
  registerBulkJobRoutes(app, { pool: deps.pool, guard, now });
  registerGeoRoutes(app, { guard });
  registerInsightRoutes(app, { pool: deps.pool, guard, now });
  registerConversionRoutes(app, { pool: deps.pool, guard, now });
  registerAudienceRoutes(app, { pool: deps.pool, guard, now });
  registerFileRoutes(app, { pool: deps.pool, guard, now });
  registerOperatorRoutes(app, { pool: deps.pool, adminToken: deps.adminToken, faults, limiter });
}
