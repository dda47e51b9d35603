/** The gateway's HTTP server: the MCP edge, the catalogue, OAuth resource metadata and health. */
import { randomUUID } from 'node:crypto';
import Fastify, { type FastifyInstance } from 'fastify';
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

/** buildServer returns the gateway's Fastify app, not yet listening. */
export function buildServer(
  deps: GatewayDeps,
  opts: ServerOptions,
): { app: FastifyInstance; catalogue: Catalogue<GatewayDeps>; drain: Drain } {
  const catalogue = gatewayCatalogue();
  const app = Fastify({
    bodyLimit: opts.maxBodyBytes,
    // Node answers 408 to a request whose headers and body have not all arrived in time; it checks
    // every second so that a short limit is kept to within a second.
    requestTimeout: opts.requestTimeoutMs,
    http: { requestTimeout: opts.requestTimeoutMs, connectionsCheckingInterval: 1000 },
    logger: false,
    return503OnClosing: true,
    trustProxy: opts.trustProxy,
  });
  // On SIGTERM: serve a while longer with `Connection: close` (drain.ts), then close.
  const drain = drainable(app, opts.shutdownDelayMs ?? 0);
  const knownCredentials = new KnownCredentials(opts.authCacheMs);
  // Changes made by any process (the admin command, another replica) are heard while the app runs.
  let identity: IdentityListener | undefined;
  app.addHook('onReady', async () => {
    identity = listenForIdentityChanges(deps.pool, knownCredentials, deps.logger);
  });
  app.addHook('onClose', async () => {
    await identity?.stop();
  });
  // A revocation through this replica (the dashboard, ads_disconnect_client) takes effect at once.
  const assetLinks = createAssetLinks({ ...opts.assetLinks, publicUrl: opts.publicUrl });
  const routeDeps: GatewayDeps = {
    ...deps,
    forgetCredential: (credentialId) => knownCredentials.forgetCredential(credentialId),
    assetLinks,
  };
  const { logger } = deps;

  app.removeContentTypeParser('application/json');
  app.addContentTypeParser('application/json', { parseAs: 'string' }, (_req, body, done) => {
    try {
      done(null, parseJsonBody(String(body)));
    } catch (err) {
      done(err as BodyError);
    }
  });

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

  app.setErrorHandler((err: Error & { statusCode?: number; code?: string }, req, reply) => {
    const status = err.statusCode ?? 500;
    if (status === 413) {
      return reply.code(413).send({
        jsonrpc: '2.0',
        error: { code: -32600, message: `Payload Too Large: the body exceeds ${opts.maxBodyBytes} bytes` },
        id: null,
      });
    }
    if (status === 415) {
      return reply.code(415).send({
        jsonrpc: '2.0',
        error: { code: -32600, message: 'Unsupported Media Type: Content-Type must be application/json' },
        id: null,
      });
    }
    if (err instanceof BodyError) {
      return reply
        .code(400)
        .send({ jsonrpc: '2.0', error: { code: err.rpcCode, message: err.message }, id: null });
    }
    if (status >= 400 && status < 500) {
      return reply
        .code(400)
        .send({ jsonrpc: '2.0', error: { code: -32700, message: `Parse error: ${err.message}` }, id: null });
    }
    // Something we depend on failed (the database, most likely): say so, and that a retry is safe.
    logger.error({ err, request_id: req.requestId }, 'request failed');
    return reply
      .code(503)
      .header('retry-after', '5')
      .send({
        jsonrpc: '2.0',
        error: { code: -32603, message: `Service Unavailable: retry shortly (request ${req.requestId})` },
        id: null,
      });
  });
  app.setNotFoundHandler((req, reply) =>
    reply.code(404).send({ error: 'not_found', message: `no route for ${req.method} ${req.url}` }),
  );

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

  const resourceMetadata = {
    resource: `${opts.publicUrl}/mcp`,
    resource_name: 'Ad account management (MCP)',
    authorization_servers: [opts.publicUrl],
    bearer_methods_supported: ['header'],
    scopes_supported: ['read', 'write'],
    resource_documentation: `${opts.publicUrl}/catalogue.json`,
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
  return { app, catalogue, drain };
}
