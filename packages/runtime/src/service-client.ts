/**
 * Clients for calling a service on behalf of a principal: each call carries a principal token
 * addressed to that service (reused while it has most of its life left, see principal.ts), and
 * the current request id.
 */
import type { DescService } from '@bufbuild/protobuf';
import {
  type CallOptions,
  type Client,
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
  return { contextValues: createContextValues().set(callerKey, reader), signal };
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
