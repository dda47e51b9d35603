/**
 * The Connect server every service runs: HTTP/2 cleartext serving the gRPC, gRPC-Web and Connect
 * protocols, the standard `grpc.health.v1.Health` service, an interceptor that verifies the
 * caller's principal token, and a graceful drain on shutdown.
 */
import { randomUUID } from 'node:crypto';
import http2 from 'node:http2';
import type { AddressInfo } from 'node:net';
import { Health, HealthCheckResponse_ServingStatus } from '@adsmcp/proto/grpc/health/v1/health_pb';
import { Code, ConnectError, type ConnectRouter, type Interceptor } from '@connectrpc/connect';
import { connectNodeAdapter } from '@connectrpc/connect-node';
import { toConnectError } from './connect-errors.ts';
import { isUuid } from './ids.ts';
import { type Logger, withRequestId } from './log.ts';
import { rpcMetricsInterceptor } from './metrics.ts';
import { type Principal, type PrincipalVerifier, principalKey } from './principal.ts';
import { traceServerInterceptor } from './telemetry.ts';

export const REQUEST_ID_HEADER = 'x-request-id';

/**
 * principalOf is the verified caller of a handler: the interceptor verified its token before any
 * handler runs and refused calls without one, so a missing principal is a wiring fault.
 */
export function principalOf(ctx: {
  values: { get(key: typeof principalKey): Principal | undefined };
}): Principal {
  const principal = ctx.values.get(principalKey);
  if (principal === undefined) throw new ConnectError('missing principal', Code.Unauthenticated);
  if (!isUuid(principal.workspaceId)) {
    throw new ConnectError('the principal names no valid workspace', Code.Unauthenticated);
  }
  return principal;
}
const HEALTH_SERVICE = Health.typeName;

/** The serving state reported by the health service. */
export class HealthState {
  #serving = false;
  #listeners = new Set<() => void>();
  get serving(): boolean {
    return this.#serving;
  }
  set(serving: boolean): void {
    if (serving === this.#serving) return;
    this.#serving = serving;
    for (const l of this.#listeners) l();
  }
  /** Calls `fn` on every change until the returned function is called. */
  onChange(fn: () => void): () => void {
    this.#listeners.add(fn);
    return () => this.#listeners.delete(fn);
  }
}

function healthRoutes(router: ConnectRouter, serviceName: string, state: HealthState): void {
  const statusFor = (service: string) => {
    if (service !== '' && service !== serviceName) return HealthCheckResponse_ServingStatus.SERVICE_UNKNOWN;
    return state.serving
      ? HealthCheckResponse_ServingStatus.SERVING
      : HealthCheckResponse_ServingStatus.NOT_SERVING;
  };
  router.service(Health, {
    check(req) {
      const status = statusFor(req.service);
      if (status === HealthCheckResponse_ServingStatus.SERVICE_UNKNOWN) {
        throw new ConnectError(`unknown service ${req.service}`, Code.NotFound);
      }
      return { status };
    },
    async *watch(req, ctx) {
      let wake: (() => void) | undefined;
      const off = state.onChange(() => wake?.());
      const aborted = new Promise<void>((resolve) => ctx.signal.addEventListener('abort', () => resolve()));
      try {
        while (!ctx.signal.aborted) {
          yield { status: statusFor(req.service) };
          await Promise.race([new Promise<void>((resolve) => (wake = resolve)), aborted]);
        }
      } finally {
        off();
      }
    },
  });
}

/**
 * The interceptor that runs before every handler: it adopts the caller's request id for the
 * logs, verifies the principal token (health checks excepted, so probes need no credential),
 * logs the call, and turns domain errors into Connect codes, hiding everything else as Internal.
 */
export function serviceInterceptor(verifier: PrincipalVerifier, logger: Logger): Interceptor {
  return (next) => async (req) => {
    const requestId = req.header.get(REQUEST_ID_HEADER) ?? randomUUID();
    return withRequestId(requestId, async () => {
      const started = performance.now();
      const method = `${req.service.typeName}/${req.method.name}`;
      try {
        if (req.service.typeName !== HEALTH_SERVICE) {
          const auth = req.header.get('authorization') ?? '';
          const token = auth.startsWith('Bearer ') ? auth.slice(7) : '';
          if (token === '') throw new ConnectError('missing principal token', Code.Unauthenticated);
          try {
            req.contextValues.set(principalKey, await verifier.verify(token));
          } catch {
            throw new ConnectError('invalid principal token', Code.Unauthenticated);
          }
        }
        const res = await next(req);
        logger.info({ method, ms: Math.round(performance.now() - started) }, 'rpc');
        return res;
      } catch (err) {
        const mapped = toConnectError(err);
        if (mapped === undefined) {
          logger.error({ method, err }, 'rpc failed');
          throw new ConnectError('internal error', Code.Internal);
        }
        logger.info(
          { method, code: Code[mapped.code], ms: Math.round(performance.now() - started) },
          'rpc error',
        );
        throw mapped;
      }
    });
  };
}

export interface ConnectServerOptions {
  /** The service name reported by health and used as the principal token audience. */
  serviceName: string;
  routes: (router: ConnectRouter) => void;
  verifier: PrincipalVerifier;
  logger: Logger;
}

export interface ConnectServer {
  readonly health: HealthState;
  readonly server: http2.Http2Server;
  /** Starts listening; resolves with the bound port (pass 0 for an ephemeral one). */
  listen(port: number, host?: string): Promise<number>;
  /** Stops accepting calls, lets in-flight calls finish for up to `graceMs`, then closes. */
  close(graceMs?: number): Promise<void>;
}

/** buildConnectServer returns a server that is not listening yet. */
export function buildConnectServer(opts: ConnectServerOptions): ConnectServer {
  const health = new HealthState();
  const handler = connectNodeAdapter({
    routes: (router) => {
      healthRoutes(router, opts.serviceName, health);
      opts.routes(router);
    },
    // Tracing and timing first, so they cover the auth check and see the code the caller gets.
    interceptors: [
      traceServerInterceptor(),
      rpcMetricsInterceptor(),
      serviceInterceptor(opts.verifier, opts.logger),
    ],
  });
  const server = http2.createServer(handler);
  const sessions = new Set<http2.ServerHttp2Session>();
  server.on('session', (s) => {
    sessions.add(s);
    s.on('close', () => sessions.delete(s));
  });
  return {
    health,
    server,
    listen(port, host = '127.0.0.1') {
      return new Promise((resolve, reject) => {
        server.once('error', reject);
        server.listen(port, host, () => {
          server.off('error', reject);
          health.set(true);
          resolve((server.address() as AddressInfo).port);
        });
      });
    },
    async close(graceMs = 10_000) {
      health.set(false);
      const closed = new Promise<void>((resolve) => server.close(() => resolve()));
      // GOAWAY: clients open no new streams on these sessions; open streams run to completion.
      for (const s of sessions) s.close();
      const timer = setTimeout(() => {
        for (const s of sessions) s.destroy();
      }, graceMs);
      await closed;
      clearTimeout(timer);
    },
  };
}
