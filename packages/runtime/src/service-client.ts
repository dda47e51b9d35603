/**
 * Clients for calling a service over gRPC on behalf of a principal: each call carries a freshly
 * signed principal token addressed to that service, and the current request id.
 */
import type { DescService } from '@bufbuild/protobuf';
import { type Client, createClient, createContextKey, type Interceptor } from '@connectrpc/connect';
import { createGrpcTransport } from '@connectrpc/connect-node';
import { REQUEST_ID_HEADER } from './connect-server.ts';
import { currentRequestId } from './log.ts';
import type { Principal, PrincipalSigner } from './principal.ts';

/** The principal a client call is made for; set it in the call options' `contextValues`. */
export const callerKey = createContextKey<Principal | undefined>(undefined, {
  description: 'calling principal',
});

function signingInterceptor(signer: PrincipalSigner, audience: string): Interceptor {
  return (next) => async (req) => {
    const principal = req.contextValues.get(callerKey);
    if (principal === undefined) throw new Error(`call to ${audience} made without a principal`);
    req.header.set('authorization', `Bearer ${await signer.sign(principal, audience)}`);
    const rid = currentRequestId();
    if (rid !== undefined) req.header.set(REQUEST_ID_HEADER, rid);
    return next(req);
  };
}

/** createServiceClient returns a gRPC client of `service` at `baseUrl`, for the service named `audience`. */
export function createServiceClient<T extends DescService>(
  service: T,
  baseUrl: string,
  audience: string,
  signer: PrincipalSigner,
): Client<T> {
  const transport = createGrpcTransport({
    baseUrl,
    interceptors: [signingInterceptor(signer, audience)],
    defaultTimeoutMs: 30_000,
  });
  return createClient(service, transport);
}
