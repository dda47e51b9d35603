/**
 * The Connect server every service runs: HTTP/2 cleartext serving the gRPC, gRPC-Web and Connect
 * protocols, the standard `grpc.health.v1.Health` service, an interceptor that verifies the
 * caller's principal token and then applies the method's access and its request's field rules as
 * the proto declares them (access-policy.ts, field-rules.ts), and a graceful drain on shutdown.
 */
import { randomUUID } from 'node:crypto';
import http2 from 'node:http2';
import type { AddressInfo } from 'node:net';
import { Health, HealthCheckResponse_ServingStatus } from '@adsmcp/proto/grpc/health/v1/health_pb';
import type { DescService } from '@bufbuild/protobuf';
import {
  Code,
  ConnectError,
  type ConnectRouter,
  type ContextValues,
  type Interceptor,
} from '@connectrpc/connect';
import { connectNodeAdapter } from '@connectrpc/connect-node';
import { accessTable, checkAccess, type MethodAccess } from './access-policy.ts';
import { toConnectError } from './connect-errors.ts';
import { checkRulesCompile, validateRequest } from './field-rules.ts';
import { isUuid } from './ids.ts';
import { type Logger, withRequestId } from './log.ts';
import { timeRpc } from './metrics.ts';
import { type Principal, type PrincipalVerifier, principalKey } from './principal.ts';
import { serveInSpan } from './telemetry.ts';
import {
  type CallGuard,
  isBinaryConnectUnary,
  MAX_REQUEST_BYTES,
  recordUnaryRoutes,
  serveUnary,
} from './unary-server.ts';

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

/** How a served call reads its request headers, whichever path it came by. */
interface CallHeaders {
  get(name: string): string | null | undefined;
}

/** The declared access of every method served, by service type name and method name. */
type AccessTables = Map<string, Map<string, MethodAccess>>;

/**
 * withDeclaredAccess wraps `router` so that every service registered through it has its methods'
 * access read from the proto (access-policy.ts), and refuses to register one that leaves a method
 * without, or whose request's field rules do not compile (field-rules.ts): the server is then
 * never built, and the service does not start.
 */
function withDeclaredAccess(router: ConnectRouter, tables: AccessTables): ConnectRouter {
  const checked = Object.create(router) as ConnectRouter;
  checked.service = ((service: DescService, impl: unknown, options?: unknown) => {
    tables.set(service.typeName, accessTable(service));
    for (const method of service.methods) checkRulesCompile(method.input);
    return router.service(service, impl as never, options as never);
  }) as ConnectRouter['service'];
  return checked;
}

/**
 * guardCall is what runs around every handler, on both paths a call can take (connect-node's
 * adapter and the unary path below): it adopts the caller's request id for the logs, verifies the
 * principal token (health checks excepted, so probes need no credential) into `values`, applies
 * the method's declared access to it, logs the call, and turns domain errors into Connect codes,
 * hiding everything else as Internal.
 */
function guardCall<T>(
  verifier: PrincipalVerifier,
  access: AccessTables,
  logger: Logger,
  serviceName: string,
  typeName: string,
  methodName: string,
  header: CallHeaders,
  values: ContextValues,
  next: () => Promise<T>,
): Promise<T> {
  const requestId = header.get(REQUEST_ID_HEADER) ?? randomUUID();
  return withRequestId(requestId, async () => {
    const started = performance.now();
    const method = `${typeName}/${methodName}`;
    try {
      if (typeName !== HEALTH_SERVICE) {
        const auth = header.get('authorization') ?? '';
        const token = auth.startsWith('Bearer ') ? auth.slice(7) : '';
        if (token === '') throw new ConnectError('missing principal token', Code.Unauthenticated);
        let principal: Principal;
        try {
          principal = await verifier.verify(token, method);
        } catch {
          throw new ConnectError('invalid principal token', Code.Unauthenticated);
        }
        values.set(principalKey, principal);
        const declared = access.get(typeName)?.get(methodName);
        // Unreachable for a method registered through withDeclaredAccess; refused, never open.
        if (declared === undefined) throw new ConnectError(`${method} declares no access`, Code.Internal);
        checkAccess(declared, principal);
      }
      const res = await next();
      logger.info({ method, ms: Math.round(performance.now() - started) }, 'rpc');
      return res;
    } catch (err) {
      const mapped = toConnectError(err, `the ${serviceName} service`);
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
}

/**
 * serviceGuard is everything around a handler, outermost first: the server span continuing the
 * caller's trace, the call's timing (so it records the code the caller sees), then guardCall.
 */
function serviceGuard(
  verifier: PrincipalVerifier,
  access: AccessTables,
  logger: Logger,
  serviceName: string,
): CallGuard {
  return (typeName, methodName, header, carrier, values, next) =>
    serveInSpan(typeName, methodName, carrier, () =>
      timeRpc(`${typeName}/${methodName}`, () =>
        guardCall(verifier, access, logger, serviceName, typeName, methodName, header, values, next),
      ),
    );
}

/** The interceptor form of serviceGuard, for calls served by connect-node's adapter. */
function serviceInterceptor(guard: CallGuard): Interceptor {
  return (next) => (req) =>
    guard(req.service.typeName, req.method.name, req.header, req.header as never, req.contextValues, () => {
      // A streamed request's messages are not checked: no service method takes a stream.
      if (!req.stream) validateRequest(req.method.input, req.message);
      return next(req);
    });
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
  const unary = new Map<string, Parameters<typeof serveUnary>[0]>();
  const access: AccessTables = new Map();
  const guard = serviceGuard(opts.verifier, access, opts.logger, opts.serviceName);
  const handler = connectNodeAdapter({
    routes: (router) => {
      healthRoutes(router, opts.serviceName, health);
      opts.routes(recordUnaryRoutes(withDeclaredAccess(router, access), unary));
    },
    interceptors: [serviceInterceptor(guard)],
    readMaxBytes: MAX_REQUEST_BYTES,
  });
  // Our own clients' unary calls take the short path (unary-server.ts); everything else, and any
  // path no unary method has, goes to connect-node's adapter.
  const server = http2.createServer((req, res) => {
    const route = isBinaryConnectUnary(req) ? unary.get(req.url) : undefined;
    if (route !== undefined) serveUnary(route, guard, req, res);
    else handler(req, res);
  });
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
