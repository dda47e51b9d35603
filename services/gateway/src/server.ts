/** The gateway's HTTP server: the MCP edge, the catalogue, OAuth resource metadata and health. */
import { randomUUID } from 'node:crypto';
import { STATUS_CODES } from 'node:http';
import type { Socket } from 'node:net';
import Fastify, { type FastifyError, type FastifyInstance, type FastifyReply } from 'fastify';
import { createAssetLinks } from './assets/asset-links.ts';
import { loggableUrl, registerAssetRoute } from './assets/asset-route.ts';
import { type IdentityListener, listenForIdentityChanges } from './auth/identity-listener.ts';
import { KnownCredentials } from './auth/known-credentials.ts';
import { RateLimiter } from './auth/rate-limiter.ts';
import type { Catalogue } from './catalogue/catalogue.ts';
import { gatewayCatalogue } from './catalogue/tools/index.ts';
import { registerDashboardRoutes } from './dashboard/dashboard-routes.ts';
import type { GatewayDeps } from './deps.ts';
import { type Drain, drainable } from './drain.ts';
import { BodyError, parseJsonBody } from './json-body.ts';
import {
  edgeErrorBody,
  INTERNAL_ERROR,
  INVALID_REQUEST,
  PARSE_ERROR,
  rawEdgeErrorResponse,
} from './mcp/edge-error.ts';
import { registerMcpRoutes } from './mcp/mcp-route.ts';
import { registerOAuth } from './oauth/oauth-routes.ts';

export interface ServerOptions {
  publicUrl: string;
  allowedOrigins: readonly string[];
  ratePerSecond: number;
  rateBurst: number;
  maxBodyBytes: number;
  /** Failed authentications allowed per client address: a refill rate per second and a burst. */
  authFailuresPerSecond: number;
  authFailuresBurst: number;
  /** How long a credential found valid is admitted from memory before the database is asked again. */
  authCacheMs: number;
  /** Time a client has to send a whole request (headers and body) before it is cut off with 408. */
  requestTimeoutMs: number;
  /** How long the gateway goes on serving after SIGTERM before it stops listening (drain.ts); default 0. */
  shutdownDelayMs?: number;
  /** Take the client address from X-Forwarded-For (behind a trusted proxy). */
  trustProxy: boolean;
  /** Delivery links to asset images: the key material their HMAC key is derived from, and their lifetime. */
  assetLinks: { keyMaterial: string; ttlSeconds: number };
  now?: () => Date;
}

const REQUEST_ID = /^[A-Za-z0-9._-]{1,64}$/;

/** Node's own limit on a request's headers (`--max-http-header-size`), named in the 431 answer. */
const MAX_HEADER_BYTES = 16 * 1024;

/**
 * The answer to a request Node's HTTP parser refused before Fastify saw it (Fastify's default
 * writes its own JSON shape): a request that did not arrive in time, headers over the limit, or
 * bytes that are not HTTP/1.1. Written on the socket, then the connection is closed.
 */
function clientErrorAnswer(err: Error & { code?: string }, requestTimeoutMs: number): string {
  if (err.code === 'ERR_HTTP_REQUEST_TIMEOUT') {
    return rawEdgeErrorResponse(
      408,
      INVALID_REQUEST,
      `Request Timeout: the request's headers and body did not all arrive within ${requestTimeoutMs / 1000} s`,
    );
  }
  if (err.code === 'HPE_HEADER_OVERFLOW') {
    return rawEdgeErrorResponse(
      431,
      INVALID_REQUEST,
      `Request Header Fields Too Large: the request line and headers exceed ${MAX_HEADER_BYTES} bytes`,
    );
  }
  const reason = err.code?.startsWith('HPE_') ? ` (${err.message.replace(/[^\x20-\x7e]/g, '?')})` : '';
  return rawEdgeErrorResponse(
    400,
    INVALID_REQUEST,
    `Bad Request: the request is not valid HTTP/1.1${reason}`,
  );
}

/** buildServer returns the gateway's Fastify app, not yet listening. */
export function buildServer(
  deps: GatewayDeps,
  opts: ServerOptions,
): { app: FastifyInstance; catalogue: Catalogue<GatewayDeps>; drain: Drain } {
  const catalogue = gatewayCatalogue();
  const app = createApp(opts);
  // On SIGTERM: serve a while longer with `Connection: close` (drain.ts), then close.
  const drain = drainable(app, opts.shutdownDelayMs ?? 0);
  refuseWhileClosing(app);
  answerUnsupportedExpect(app);
  const knownCredentials = new KnownCredentials(opts.authCacheMs);
  listenForIdentityWhileRunning(app, deps, knownCredentials);
  // A revocation through this replica (the dashboard, ads_disconnect_client) takes effect at once.
  const assetLinks = createAssetLinks({ ...opts.assetLinks, publicUrl: opts.publicUrl });
  const routeDeps: GatewayDeps = {
    ...deps,
    forgetCredential: (credentialId) => knownCredentials.forgetCredential(credentialId),
    assetLinks,
  };
  const { logger } = deps;

  parseJsonAsBytes(app);
  tagAndLogRequests(app, logger);
  answerErrorsInEdgeShape(app, opts.maxBodyBytes, logger);

  const oauth = registerOAuth(app, routeDeps, {
    publicUrl: opts.publicUrl,
    allowedOrigins: opts.allowedOrigins,
    // The authorization server's keys are derived from the same secret, under their own label.
    keyMaterial: opts.assetLinks.keyMaterial,
    trustProxy: opts.trustProxy,
  });
  registerMcpRoutes(app, {
    catalogue,
    deps: routeDeps,
    db: deps.pool,
    logger,
    limiter: new RateLimiter(opts.ratePerSecond, opts.rateBurst),
    authFailures: new RateLimiter(opts.authFailuresPerSecond, opts.authFailuresBurst),
    knownCredentials,
    publicUrl: opts.publicUrl,
    allowedOrigins: opts.allowedOrigins,
    maxBodyBytes: opts.maxBodyBytes,
    now: opts.now,
    oauth: oauth.accessTokens,
  });

  registerDashboardRoutes(app, routeDeps, {
    publicUrl: opts.publicUrl,
    allowedOrigins: opts.allowedOrigins,
    endOAuthSignIn: oauth.endSignIn,
  });
  registerAssetRoute(app, routeDeps, assetLinks);
  registerMetadataRoutes(app, deps, { catalogue, drain, publicUrl: opts.publicUrl });
  return { app, catalogue, drain };
}

function createApp(opts: ServerOptions): FastifyInstance {
  return Fastify({
    bodyLimit: opts.maxBodyBytes,
    // Node answers 408 to a request whose headers and body have not all arrived in time; it checks
    // every second so that a short limit is kept to within a second.
    requestTimeout: opts.requestTimeoutMs,
    http: { requestTimeout: opts.requestTimeoutMs, connectionsCheckingInterval: 1000 },
    logger: false,
    // Answered by the onRequest hook below, in the edge's error shape, instead of Fastify's own.
    return503OnClosing: false,
    trustProxy: opts.trustProxy,
    clientErrorHandler(err: Error & { code?: string }, socket: Socket) {
      if (err.code === 'ECONNRESET' || socket.destroyed) return;
      // Node's own rule: once an answer to the request under way has begun, another would corrupt it.
      const answering = (socket as Socket & { _httpMessage?: { headersSent?: boolean } })._httpMessage;
      if (socket.writable && answering?.headersSent !== true) {
        socket.write(clientErrorAnswer(err, opts.requestTimeoutMs));
      }
      socket.destroy();
    },
    // A URL that cannot be decoded, a path parameter over its length. Fastify hands these a reply
    // outside any route, which the error handler below does not see.
    frameworkErrors(err: FastifyError, _req, reply: FastifyReply) {
      const status = err.statusCode ?? 400;
      return reply
        .code(status)
        .send(edgeErrorBody(INVALID_REQUEST, `${STATUS_CODES[status] ?? 'Bad Request'}: ${err.message}`));
    },
  });
}

function refuseWhileClosing(app: FastifyInstance): void {
  // Once the app is closing, what still arrives on an open connection is turned away (the
  // balancer sends it elsewhere) before any work is done for it.
  let closing = false;
  app.addHook('preClose', async () => {
    closing = true;
  });
  app.addHook('onRequest', (_req, reply, done) => {
    if (!closing) return done();
    reply
      .code(503)
      .header('connection', 'close')
      .header('retry-after', '1')
      .send(
        edgeErrorBody(INTERNAL_ERROR, 'Service Unavailable: this gateway is stopping; retry the request'),
      );
  });
}

function answerUnsupportedExpect(app: FastifyInstance): void {
  // Expect values other than 100-continue: Node would answer 417 with an empty body.
  app.server.on('checkExpectation', (req, res) => {
    const body = JSON.stringify(
      edgeErrorBody(
        INVALID_REQUEST,
        `Expectation Failed: Expect: ${String(req.headers.expect).slice(0, 100)} is not supported (only 100-continue)`,
      ),
    );
    res.writeHead(417, {
      'content-type': 'application/json; charset=utf-8',
      'content-length': Buffer.byteLength(body),
      connection: 'close',
    });
    res.end(body);
  });
}

function listenForIdentityWhileRunning(
  app: FastifyInstance,
  deps: GatewayDeps,
  knownCredentials: KnownCredentials,
): void {
  // Changes made by any process (the admin command, another replica) are heard while the app runs.
  let identity: IdentityListener | undefined;
  app.addHook('onReady', async () => {
    identity = listenForIdentityChanges(deps.pool, knownCredentials, deps.logger);
  });
  app.addHook('onClose', async () => {
    await identity?.stop();
  });
}

function parseJsonAsBytes(app: FastifyInstance): void {
  app.removeContentTypeParser('application/json');
  // Read as bytes: decoding them as a string would replace bytes that are not UTF-8 with U+FFFD.
  app.addContentTypeParser('application/json', { parseAs: 'buffer' }, (_req, body, done) => {
    try {
      done(null, parseJsonBody(body as Buffer));
    } catch (err) {
      done(err as BodyError);
    }
  });
}

function tagAndLogRequests(app: FastifyInstance, logger: GatewayDeps['logger']): void {
  app.decorateRequest('requestId', '');
  app.addHook('onRequest', async (req) => {
    const given = req.headers['x-request-id'];
    req.requestId = typeof given === 'string' && REQUEST_ID.test(given) ? given : randomUUID();
  });
  app.addHook('onSend', async (req, reply) => {
    reply.header('x-request-id', req.requestId);
  });
  app.addHook('onResponse', async (req, reply) => {
    logger.info(
      {
        request_id: req.requestId,
        method: req.method,
        url: loggableUrl(req.url),
        status: reply.statusCode,
        ms: Math.round(reply.elapsedTime),
      },
      'http',
    );
  });
}

function answerErrorsInEdgeShape(
  app: FastifyInstance,
  maxBodyBytes: number,
  logger: GatewayDeps['logger'],
): void {
  app.setErrorHandler((err: Error & { statusCode?: number; code?: string }, req, reply) => {
    const status = err.statusCode ?? 500;
    if (status === 413) {
      return reply
        .code(413)
        .send(edgeErrorBody(INVALID_REQUEST, `Payload Too Large: the body exceeds ${maxBodyBytes} bytes`));
    }
    if (status === 415) {
      return reply
        .code(415)
        .send(
          edgeErrorBody(INVALID_REQUEST, 'Unsupported Media Type: Content-Type must be application/json'),
        );
    }
    if (err instanceof BodyError) return reply.code(400).send(edgeErrorBody(err.rpcCode, err.message));
    if (status >= 400 && status < 500) {
      // Fastify's refusals keep their status: a body that ended short of its Content-Length is a
      // parse error, a URL that cannot be decoded a bad request.
      const parsing = err.code?.startsWith('FST_ERR_CTP_') === true;
      return reply
        .code(status)
        .send(
          edgeErrorBody(
            parsing ? PARSE_ERROR : INVALID_REQUEST,
            `${parsing ? 'Parse error' : (STATUS_CODES[status] ?? 'Bad Request')}: ${err.message}`,
          ),
        );
    }
    // Something we depend on failed (the database, most likely): say so, and that a retry is safe.
    logger.error({ err, request_id: req.requestId }, 'request failed');
    return reply
      .code(503)
      .header('retry-after', '5')
      .send(edgeErrorBody(INTERNAL_ERROR, `Service Unavailable: retry shortly (request ${req.requestId})`));
  });
  app.setNotFoundHandler((req, reply) =>
    reply
      .code(404)
      .send(
        edgeErrorBody(
          INVALID_REQUEST,
          `Not Found: no route for ${req.method} ${req.url.slice(0, 200)}; the MCP endpoint is POST /mcp`,
        ),
      ),
  );
}

function registerMetadataRoutes(
  app: FastifyInstance,
  deps: GatewayDeps,
  { catalogue, drain, publicUrl }: { catalogue: Catalogue<GatewayDeps>; drain: Drain; publicUrl: string },
): void {
  const resourceMetadata = {
    resource: `${publicUrl}/mcp`,
    resource_name: 'Ad account management (MCP)',
    authorization_servers: [publicUrl],
    bearer_methods_supported: ['header'],
    scopes_supported: ['read', 'write'],
    resource_documentation: `${publicUrl}/catalogue.json`,
  };
  app.get('/.well-known/oauth-protected-resource', async () => resourceMetadata);
  app.get('/.well-known/oauth-protected-resource/mcp', async () => resourceMetadata);
  app.get('/catalogue.json', async (_req, reply) =>
    reply.header('cache-control', 'public, max-age=300').send(catalogue.document),
  );
  app.get('/healthz', async () => ({ status: 'ok' }));
  app.get('/readyz', async (_req, reply) => {
    if (drain.draining) return reply.code(503).send({ status: 'stopping' });
    try {
      await deps.pool.query('SELECT 1');
      return { status: 'ready' };
    } catch {
      return reply.code(503).send({ status: 'database unavailable' });
    }
  });
}
