/**
 * Clients for calling a service on behalf of a principal: each call carries a principal token
 * addressed to that service (reused while it has most of its life left, see principal.ts), and
 * the current request id.
 */
import type { DescService } from '@bufbuild/protobuf';
import {
  type CallOptions,
  type Client,
  Code,
  ConnectError,
  createClient,
  createContextKey,
  createContextValues,
  type Transport,
} from '@connectrpc/connect';
import { createConnectTransport } from '@connectrpc/connect-node';
import { REQUEST_ID_HEADER } from './connect-server.ts';
import { failoverTransport, parseServiceAddresses } from './failover-transport.ts';
import { GuardedSessionManager } from './http2-sessions.ts';
import { currentRequestId } from './log.ts';
import type { Principal, PrincipalSigner } from './principal.ts';
import { injectTraceContext, traceClientInterceptor } from './telemetry.ts';
import { unaryTransport } from './unary-transport.ts';

/** The principal a client call is made for; set it in the call options' `contextValues`. */
export const callerKey = createContextKey<Principal | undefined>(undefined, {
  description: 'calling principal',
});

/**
 * Call options that make a service call on behalf of `principal` (the client signs it as that
 * principal), with the call's signal and deadline when given.
 */
export function onBehalfOf(
  principal: Principal,
  call: { signal?: AbortSignal | undefined; timeoutMs?: number | undefined } = {},
): CallOptions {
  return {
    contextValues: createContextValues().set(callerKey, principal),
    ...(call.signal === undefined ? {} : { signal: call.signal }),
    ...(call.timeoutMs === undefined ? {} : { timeoutMs: call.timeoutMs }),
  };
}

/**
 * Call options for a read a service makes for a workspace as its own worker (signed with its own
 * key): the worker channel, the only one a peer accepts that key for, with the read scope alone,
 * on behalf of `p`.
 */
export function readingFor(
  p: Pick<Principal, 'workspaceId' | 'credentialId' | 'userId'>,
  signal?: AbortSignal,
): CallOptions {
  const reader: Principal = {
    workspaceId: p.workspaceId,
    credentialId: p.credentialId,
    userId: p.userId,
    role: 'viewer',
    scopes: ['read'],
    via: 'worker',
  };
  return onBehalfOf(reader, { signal });
}

/**
 * The transport of internal calls: the Connect protocol with binary messages over one HTTP/2
 * connection per target, reused by every call, each call carrying its principal token, its request
 * id and its trace context. Unary calls go through `unaryTransport` (unary-transport.ts), which
 * costs a fraction of connect-node's transport per call (measured there); streaming calls through
 * connect-node's. Every service also serves gRPC (health probes and grpc tools use it); for our own
 * calls the Connect protocol costs less per call on both sides than gRPC's framing and trailers
 * (measured with `npm run bench`, see docs/performance.md).
 */
function internalTransport(baseUrl: string, audience: string, signer: PrincipalSigner): Transport {
  const sign = async (principal: Principal | undefined): Promise<string> => {
    if (principal === undefined) throw new Error(`call to ${audience} made without a principal`);
    return `Bearer ${await signer.sign(principal, audience)}`;
  };
  const sessions = new GuardedSessionManager(baseUrl);
  const streams = createConnectTransport({
    baseUrl,
    httpVersion: '2',
    sessionManager: sessions,
    useBinaryFormat: true,
    interceptors: [
      traceClientInterceptor(),
      (next) => async (req) => {
        req.header.set('authorization', await sign(req.contextValues.get(callerKey)));
        const rid = currentRequestId();
        if (rid !== undefined) req.header.set(REQUEST_ID_HEADER, rid);
        return next(req);
      },
    ],
    defaultTimeoutMs: 30_000,
  });
  return unaryTransport({
    baseUrl,
    sessions,
    defaultTimeoutMs: 30_000,
    streams,
    async decorate(headers, values) {
      headers.authorization = await sign(values.get(callerKey));
      const rid = currentRequestId();
      if (rid !== undefined) headers[REQUEST_ID_HEADER] = rid;
      injectTraceContext(headers as Record<string, string>);
    },
  });
}

/**
 * The transport of a service at `baseUrl`, which may list several addresses (its replicas,
 * comma-separated): one internal transport per address, calls spread over them and moved off an
 * address that refused them before any handler ran (failover-transport.ts).
 */
function addressedTransport(baseUrl: string, audience: string, signer: PrincipalSigner): Transport {
  const addresses = parseServiceAddresses(baseUrl);
  return failoverTransport(addresses.map((url) => internalTransport(url, audience, signer)));
}

/** createServiceClient returns a client of `service` at `baseUrl` (one address or a list), for the service named `audience`. */
export function createServiceClient<T extends DescService>(
  service: T,
  baseUrl: string,
  audience: string,
  signer: PrincipalSigner,
): Client<T> {
  return createClient(service, addressedTransport(baseUrl, audience, signer));
}

/** Where the services of one proto package are served: the process's URL and its principal audience. */
export interface ServiceTarget {
  baseUrl: string;
  audience: string;
}

/**
 * serviceDirectory returns a function giving the client of any service by its proto package's
 * first segment (`marketing.v1.MarketingService` -> `targets.marketing`), one transport per target
 * and one client per service, made on first use.
 */
export function serviceDirectory(
  targets: Record<string, ServiceTarget>,
  signer: PrincipalSigner,
): <T extends DescService>(service: T) => Client<T> {
  const transports = new Map<string, Transport>();
  const clients = new Map<string, unknown>();
  return <T extends DescService>(service: T): Client<T> => {
    const known = clients.get(service.typeName);
    if (known !== undefined) return known as Client<T>;
    const pkg = service.typeName.split('.')[0] ?? '';
    const target = targets[pkg];
    if (target === undefined) throw new Error(`no process serves the ${pkg} package (${service.typeName})`);
    let transport = transports.get(pkg);
    if (transport === undefined) {
      transport = addressedTransport(target.baseUrl, target.audience, signer);
      transports.set(pkg, transport);
    }
    const client = createClient(service, transport);
    clients.set(service.typeName, client);
    return client;
  };
}

/** Node's errors for a connection that was never made: nothing was sent. */
const NOT_CONNECTED = new Set(['ECONNREFUSED', 'ENOTFOUND', 'EAI_AGAIN', 'EHOSTUNREACH', 'ENETUNREACH']);

/**
 * connectionFailure says how a call's connection to a service failed, when it did (rather than
 * the service answering with an error): our client raises such errors itself. A refused
 * connection carries the Node error as its cause, so nothing was sent ('not-connected'); a reset
 * connection (which arrives as Aborted, the code a service uses for a stale revision) or a service
 * process that dies mid-call (Canceled: our callers never cancel their own calls) may have lost a
 * call the service had received ('lost').
 */
export function connectionFailure(err: ConnectError): 'not-connected' | 'lost' | undefined {
  for (let c: unknown = err.cause; c !== undefined && c !== null; c = (c as { cause?: unknown }).cause) {
    if (NOT_CONNECTED.has(String((c as { code?: unknown }).code))) return 'not-connected';
    const inner = (c as { errors?: unknown }).errors;
    if (Array.isArray(inner) && inner.some((e) => NOT_CONNECTED.has(String((e as { code?: unknown }).code))))
      return 'not-connected';
  }
  return err.cause !== undefined || err.code === Code.Canceled ? 'lost' : undefined;
}

/**
 * describeCallFailure says which part failed when a call to `service` (a process name, such as
 * "upstream-proxy") did not succeed: the service itself could not be reached or stopped answering,
 * or it answered with its own error (whose words, such as the ad platform being unreachable, are
 * kept).
 */
export function describeCallFailure(err: unknown, service: string): string {
  const e = ConnectError.from(err);
  switch (connectionFailure(e)) {
    case 'not-connected':
      return `the ${service} could not be reached (${e.rawMessage})`;
    case 'lost':
      return `the ${service} stopped answering during the call (${e.rawMessage})`;
    default:
      return e.code === Code.DeadlineExceeded
        ? `the ${service} did not answer in time (${e.rawMessage})`
        : e.rawMessage;
  }
}

/** The metadata key that names the service a failed connection was to (set by the caller, never sent). */
const FAILED_SERVICE = 'adsmcp-unreachable-service';

/**
 * nameUnreachable marks `err`, when it is a failed connection to a service (connectionFailure),
 * with that service's name, so whoever turns it into a message can say which part failed; any
 * other error is left as it is. It returns `err`, to be thrown on.
 */
export function nameUnreachable(err: unknown, service: string): unknown {
  if (
    err instanceof ConnectError &&
    connectionFailure(err) !== undefined &&
    !err.metadata.has(FAILED_SERVICE)
  )
    err.metadata.set(FAILED_SERVICE, service);
  return err;
}

/** The service nameUnreachable named in `err`, if any. */
export function unreachableService(err: ConnectError): string | undefined {
  return err.metadata.get(FAILED_SERVICE) ?? undefined;
}
