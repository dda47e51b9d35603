/**
 * `POST /mcp`: the edge's own checks, in order — Origin (403), bearer token (401), Accept
 * (406), credential rate (429), body (400/413, by Fastify), the tool's scope and role (403) —
 * then the MCP SDK serves the JSON-RPC exchange (2026-07-28 and stateless 2025-11-25) with a
 * per-request server whose tools come from the catalogue.
 */
import { randomUUID } from 'node:crypto';
import type { IncomingMessage } from 'node:http';
import type { Queryable } from '@adsmcp/runtime/db';
import type { Logger } from '@adsmcp/runtime/log';
import { toNodeHandler } from '@modelcontextprotocol/node';
import { type AuthInfo, createMcpHandler, Server } from '@modelcontextprotocol/server';
import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import { authenticate } from '../auth/authenticate.ts';
import type { RateLimiter } from '../auth/rate-limiter.ts';
import {
  accessDenied,
  type Caller,
  type Catalogue,
  SERVER_NAME,
  SERVER_VERSION,
} from '../catalogue/catalogue.ts';
import { callTool } from './tool-call.ts';

const INSTRUCTIONS =
  'Tools read and manage advertising accounts. Read tools change nothing. Tools marked "Prepare change" only ' +
  'record a reviewable proposal and return a change_id: nothing reaches the ad account until a person approves ' +
  "it in the dashboard and it is applied. Write tools change only this workspace's own records.";

/** JSON-RPC error codes this edge answers with outside the SDK. */
const JSONRPC_INVALID_REQUEST = -32600;
const JSONRPC_FORBIDDEN = -32003;

export interface McpRouteOptions<D> {
  catalogue: Catalogue<D>;
  deps: D;
  db: Queryable;
  logger: Logger;
  limiter: RateLimiter;
  /** Failed authentications per client address; over budget, the address is refused before any lookup. */
  authFailures: RateLimiter;
  /** The public base URL; its origin is always allowed, and it names the resource metadata. */
  publicUrl: string;
  allowedOrigins: readonly string[];
  maxBodyBytes: number;
  now?: () => Date;
}

declare module 'fastify' {
  interface FastifyRequest {
    caller?: Caller;
    requestId: string;
  }
}

function rpcError(reply: FastifyReply, status: number, code: number, message: string, id: unknown = null) {
  return reply.code(status).type('application/json').send({ jsonrpc: '2.0', error: { code, message }, id });
}

/** Whether an Accept header admits both JSON and SSE, as the transport requires. */
export function acceptsJsonAndSse(accept: string | undefined): boolean {
  if (accept === undefined) return false;
  const types = accept.split(',').map((part) => part.split(';')[0]?.trim().toLowerCase());
  return types.includes('application/json') && types.includes('text/event-stream');
}

/** The tools/call requests in a JSON-RPC body (a single message or a batch). */
function toolCalls(body: unknown): { id: unknown; name: string }[] {
  const messages = Array.isArray(body) ? body : [body];
  const calls: { id: unknown; name: string }[] = [];
  for (const m of messages) {
    if (typeof m !== 'object' || m === null) continue;
    const msg = m as { method?: unknown; id?: unknown; params?: { name?: unknown } };
    if (msg.method === 'tools/call' && typeof msg.params?.name === 'string')
      calls.push({ id: msg.id, name: msg.params.name });
  }
  return calls;
}

export function registerMcpRoutes<D>(app: FastifyInstance, o: McpRouteOptions<D>): void {
  const publicOrigin = new URL(o.publicUrl).origin;
  const allowed = new Set([publicOrigin, ...o.allowedOrigins]);
  const resourceMetadata = new URL('/.well-known/oauth-protected-resource', o.publicUrl).toString();
  const now = o.now ?? (() => new Date());

  const handler = createMcpHandler(
    (ctx) => {
      const caller = (ctx.authInfo?.extra as { caller?: Caller; requestId?: string } | undefined)?.caller;
      const requestId =
        (ctx.authInfo?.extra as { requestId?: string } | undefined)?.requestId ?? randomUUID();
      const server = new Server(
        { name: SERVER_NAME, version: SERVER_VERSION },
        { capabilities: { tools: { listChanged: false } }, instructions: INSTRUCTIONS },
      );
      server.setRequestHandler('tools/list', () => ({ tools: [...o.catalogue.listing] }));
      server.setRequestHandler('tools/call', (req) => {
        // The route authenticated every request before the SDK saw it.
        if (caller === undefined) throw new Error('tools/call reached the MCP server without a caller');
        return callTool(
          { catalogue: o.catalogue, deps: o.deps, logger: o.logger },
          caller,
          requestId,
          req.params.name,
          req.params.arguments,
        );
      });
      return server;
    },
    {
      maxRequestBodySize: o.maxBodyBytes,
      onerror: (err) => o.logger.info({ err: err.message }, 'mcp request rejected'),
    },
  );
  const serve = toNodeHandler(handler, { maxRequestBodySize: o.maxBodyBytes });

  const challenge = (error?: string, description?: string) => {
    const parts = [`resource_metadata="${resourceMetadata}"`];
    if (error) parts.push(`error="${error}"`);
    if (description) parts.push(`error_description="${description}"`);
    return `Bearer ${parts.join(', ')}`;
  };

  // Everything that can be decided from headers is decided before the body is read.
  const guard = async (req: FastifyRequest, reply: FastifyReply) => {
    const origin = req.headers.origin;
    if (origin !== undefined && !allowed.has(origin)) {
      return rpcError(reply, 403, JSONRPC_FORBIDDEN, `origin ${origin} is not allowed`);
    }
    const blocked = o.authFailures.peek(req.ip);
    if (!blocked.allowed) {
      reply.header('retry-after', String(blocked.retryAfterSeconds));
      return rpcError(
        reply,
        429,
        JSONRPC_INVALID_REQUEST,
        `too many failed authentications from this address: retry after ${blocked.retryAfterSeconds} s`,
      );
    }
    const auth = await authenticate(o.db, req.headers.authorization, now());
    if (!auth.ok) {
      o.authFailures.take(req.ip);
      reply.header('www-authenticate', challenge(auth.error, auth.error ? auth.description : undefined));
      return rpcError(reply, 401, JSONRPC_INVALID_REQUEST, `unauthorized: ${auth.description}`);
    }
    req.caller = auth.caller;
    if (!acceptsJsonAndSse(req.headers.accept)) {
      return rpcError(
        reply,
        406,
        JSONRPC_INVALID_REQUEST,
        'Not Acceptable: Accept must include both application/json and text/event-stream',
      );
    }
    const rate = o.limiter.take(auth.caller.principal.credentialId);
    if (!rate.allowed) {
      reply.header('retry-after', String(rate.retryAfterSeconds));
      return rpcError(
        reply,
        429,
        JSONRPC_INVALID_REQUEST,
        `rate limited: retry after ${rate.retryAfterSeconds} s`,
      );
    }
  };

  app.post('/mcp', { onRequest: guard }, async (req, reply) => {
    const caller = req.caller;
    if (caller === undefined) throw new Error('unauthenticated request passed the guard');
    for (const call of toolCalls(req.body)) {
      const tool = o.catalogue.byName.get(call.name);
      const denied = tool && accessDenied(caller.principal, tool);
      if (denied) return rpcError(reply, 403, JSONRPC_FORBIDDEN, `forbidden: ${denied}`, call.id ?? null);
    }
    const authInfo: AuthInfo = {
      token: 'verified-by-gateway',
      clientId: caller.principal.credentialId,
      scopes: caller.principal.scopes,
      expiresAt: caller.credentialExpiresAt
        ? Math.floor(caller.credentialExpiresAt.getTime() / 1000)
        : undefined,
      extra: { caller, requestId: req.requestId },
    };
    reply.hijack();
    reply.raw.setHeader('x-request-id', req.requestId);
    (req.raw as IncomingMessage & { auth?: AuthInfo }).auth = authInfo;
    await serve(req.raw, reply.raw, req.body);
  });

  const methodNotAllowed = async (_req: FastifyRequest, reply: FastifyReply) => {
    reply.header('allow', 'POST');
    return rpcError(
      reply,
      405,
      JSONRPC_INVALID_REQUEST,
      'Method Not Allowed: this endpoint is stateless; use POST',
    );
  };
  app.get('/mcp', methodNotAllowed);
  app.delete('/mcp', methodNotAllowed);
}
