/**
 * `POST /mcp`: the edge's own checks, in order — Origin (403), bearer token (401, or 429 for an
 * address over its failed-authentication budget), Content-Encoding (415), body (400/413/415, by
 * Fastify; bytes that are not UTF-8 are a 400), Accept (406), credential rate (429), protocol
 * version, batches and a lone request's params (400), the tool's scope and role (403), a batch's
 * tool calls against the rate (429); every answer after the body is read carries the request's id —
 * then the MCP SDK serves the JSON-RPC exchange (2026-07-28, and the 2025-era revisions
 * statelessly) with a per-request server whose tools, resources, prompts and completions come from
 * the catalogue and the workspace's records; the common exchange, one plain 2025-era tools/call, is
 * answered the same way without it (plain-call.ts).
 */
import type { IncomingMessage } from 'node:http';
import type { Queryable } from '@adsmcp/runtime/db';
import { isRecord } from '@adsmcp/runtime/json';
import type { Logger } from '@adsmcp/runtime/log';
import { toNodeHandler } from '@modelcontextprotocol/node';
import {
  type AuthInfo,
  type CallToolRequest,
  type CallToolResult,
  createMcpHandler,
  type HandlerResultTypeMap,
  ProtocolError,
  ProtocolErrorCode,
  Server,
  type ServerContext,
  SUPPORTED_PROTOCOL_VERSIONS,
  UnsupportedProtocolVersionError,
} from '@modelcontextprotocol/server';
import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import { createAuthGuard, type OAuthAccessTokens } from '../auth/authenticate.ts';
import type { KnownCredentials } from '../auth/known-credentials.ts';
import { createOriginPolicy } from '../auth/origin.ts';
import type { RateLimiter } from '../auth/rate-limiter.ts';
import {
  accessDenied,
  type Caller,
  type Catalogue,
  type ProgressUpdate,
  requiredAccess,
  SERVER_NAME,
  SERVER_VERSION,
} from '../catalogue/catalogue.ts';
import type { GatewayDeps } from '../deps.ts';
import { observeToolCall } from '../tool-telemetry.ts';
import { initializeDeclaration, recordDeclaration } from './client-declarations.ts';
import { complete } from './completion.ts';
import { CACHE, discoverEveryVersion } from './discovery.ts';
import { modernAnswer } from './person-in-the-loop.ts';
import { handlerErrorResponse, type PlainToolCall, plainToolCall, sendAsEventStream } from './plain-call.ts';
import { getPrompt, listPrompts } from './prompts.ts';
import {
  listResources,
  type ResourceContext,
  readResource,
  resourceTemplates,
  withResourceLinks,
} from './resources.ts';
import {
  batchRefusal,
  batchRequestIds,
  countToolCalls,
  malformedSingleRequest,
  namedToolCalls,
  namedVersion,
  type RpcId,
  SUPPORTED_VERSIONS,
  takeMalformedRequests,
} from './rpc-messages.ts';
import { invalidParam, surfaceError } from './surface-access.ts';
import { answerTasksRequest, legacyAnswer, taskRequestMethod } from './task-route.ts';
import { createTask, runsAsTask, TASKS_EXTENSION, type TaskDeps } from './tasks.ts';
import { callTool } from './tool-call.ts';
import { requireSelected, selectedTools, type ToolSelection, toolSelection } from './tool-groups.ts';

const INSTRUCTIONS =
  'Tools read and manage advertising accounts. Read tools change nothing. Tools marked "Prepare change" only ' +
  'record a reviewable proposal and return a change_id: nothing reaches the ad account until a person approves ' +
  "it in the dashboard and it is applied. Write tools change only this workspace's own records.";

/** The revisions served by the SDK's modern (per-request `_meta`) path: all but the 2025-era ones. */
const MODERN_VERSIONS: ReadonlySet<string> = new Set(
  SUPPORTED_VERSIONS.filter((v) => !SUPPORTED_PROTOCOL_VERSIONS.includes(v)),
);

/** Requests 2026-07-28 removed: on that revision they are unknown methods, not malformed ones. */
const REMOVED_IN_MODERN_ERA = new Set(['initialize', 'ping', 'logging/setLevel']);

function removedInModernEra(version: string | undefined, body: unknown): boolean {
  return (
    version !== undefined &&
    MODERN_VERSIONS.has(version) &&
    isRecord(body) &&
    typeof body.method === 'string' &&
    REMOVED_IN_MODERN_ERA.has(body.method)
  );
}

/** Every list this server answers is one page: a cursor can only be one it never gave. */
function noCursor(cursor: string | undefined): void {
  if (cursor !== undefined)
    throw invalidParam('cursor', 'is not a cursor this server gave: its lists are one page');
}

/** JSON-RPC error codes this edge answers with outside the SDK. */
const JSONRPC_INVALID_REQUEST = -32600;
const JSONRPC_INVALID_PARAMS = -32602;
const JSONRPC_FORBIDDEN = -32003;

export interface McpRouteOptions<D> {
  catalogue: Catalogue<D>;
  deps: D;
  db: Queryable;
  logger: Logger;
  limiter: RateLimiter;
  /** Failed authentications per client address; over budget, lookups wait in a bounded queue. */
  authFailures: RateLimiter;
  /** Credentials recently found valid, admitted without a lookup. */
  knownCredentials: KnownCredentials;
  /** The public base URL; its origin is always allowed, and it names the resource metadata. */
  publicUrl: string;
  allowedOrigins: readonly string[];
  maxBodyBytes: number;
  now?: () => Date;
  /** OAuth access tokens accepted besides the pasted ones. */
  oauth?: OAuthAccessTokens;
}

declare module 'fastify' {
  interface FastifyRequest {
    caller?: Caller;
    requestId: string;
  }
}

/**
 * The id an error answer carries when the request's own could not be read (the body was never
 * parsed, or it is a batch): JSON-RPC 2.0's null, except for a 2026-07-28 request, whose schema
 * leaves the id out instead (it allows no null id).
 */
export function unknownRequestId(versionHeader: string | string[] | undefined): { id?: null } {
  return typeof versionHeader === 'string' && MODERN_VERSIONS.has(versionHeader.trim()) ? {} : { id: null };
}

/** The request's own id, when the body is one request that has one. */
function bodyRequestId(body: unknown): RpcId | undefined {
  if (!isRecord(body)) return undefined;
  const { id } = body;
  return typeof id === 'string' || (typeof id === 'number' && Number.isSafeInteger(id)) ? id : undefined;
}

function rpcError(
  reply: FastifyReply,
  status: number,
  code: number,
  message: string,
  id: RpcId | { id?: null },
  data?: unknown,
) {
  const error = data === undefined ? { code, message } : { code, message, data };
  const idField = typeof id === 'object' ? id : { id };
  return reply
    .code(status)
    .type('application/json')
    .send({ jsonrpc: '2.0', error, ...idField });
}

/** The id of the answer to `req`: its body's, or the stand-in for one that cannot be read. */
function answerId(req: FastifyRequest): RpcId | { id?: null } {
  return bodyRequestId(req.body) ?? unknownRequestId(req.headers['mcp-protocol-version']);
}

/**
 * The content codings of a Content-Encoding header that this endpoint does not take: every one but
 * `identity` (RFC 9110 §8.4.1, case-insensitive). A compressed body is refused rather than
 * inflated: what it inflates to is not bounded by the body limit, which counts the bytes sent.
 */
export function unacceptedContentCodings(header: string | undefined): string[] {
  if (header === undefined) return [];
  return header
    .split(',')
    .map((c) => c.trim())
    .filter((c) => c !== '' && c.toLowerCase() !== 'identity');
}

/** Whether an Accept header admits both JSON and SSE, as the transport requires. */
export function acceptsJsonAndSse(accept: string | undefined): boolean {
  if (accept === undefined) return false;
  // Media types are case-insensitive (RFC 9110 §8.3.1); a quality of 0 means "not acceptable".
  const types = accept.split(',').flatMap((part) => {
    const [type = '', ...params] = part.split(';').map((p) => p.trim().toLowerCase());
    const q = params.find((p) => /^q\s*=/.test(p))?.replace(/^q\s*=\s*/, '');
    return q !== undefined && Number(q) === 0 ? [] : [type];
  });
  return types.includes('application/json') && types.includes('text/event-stream');
}

/** What the route hands the per-request MCP server besides the caller. */
interface ExchangeInfo {
  caller: Caller;
  requestId: string;
  /** In a batch, each request's own request id. */
  messageRequestIds: Map<RpcId, string>;
  /** Malformed requests (made tools/call stand-ins) and the one-line reason each is refused. */
  malformedRequests: Map<RpcId, string>;
  /** The tool groups the connection selected in the MCP URL (tool-groups.ts). */
  selection: ToolSelection;
  /**
   * The protocol version the request names (its header, or a 2026-07-28 envelope): a stateless
   * 2025-era server never negotiated one, as no initialize reached it.
   */
  protocolVersion: string | undefined;
}

/**
 * The SDK's unsupported-version error, listing every version this endpoint serves (both eras, as
 * server/discover does), answered to the request's own id.
 */
function unsupportedVersion(reply: FastifyReply, requested: string, id: RpcId | { id?: null }) {
  const err = new UnsupportedProtocolVersionError(
    { supported: [...SUPPORTED_VERSIONS], requested },
    `Unsupported protocol version: ${requested || 'the MCP-Protocol-Version header is empty'} (supported versions: ${SUPPORTED_VERSIONS.join(', ')})`,
  );
  return rpcError(reply, 400, err.code, err.message, id, err.data);
}

/** A `WWW-Authenticate` parameter value as an RFC 9110 quoted-string. */
function quoted(value: string): string {
  return `"${value.replace(/["\\]/g, '\\$&')}"`;
}

/** What every request's checks and answers share: made once, when the routes are registered. */
interface McpEdge {
  o: McpRouteOptions<GatewayDeps>;
  origins: ReturnType<typeof createOriginPolicy>;
  authenticate: ReturnType<typeof createAuthGuard>;
  /** Names the protected resource's metadata in every bearer challenge. */
  resourceMetadata: string;
  taskDeps: TaskDeps;
  /** The MCP SDK's handler for the exchanges the route does not answer itself. */
  serve: ReturnType<typeof toNodeHandler>;
}

export function registerMcpRoutes(app: FastifyInstance, o: McpRouteOptions<GatewayDeps>): void {
  const taskDeps: TaskDeps = { db: o.db, catalogue: o.catalogue, deps: o.deps, logger: o.logger };
  const handler = createMcpHandler(
    (ctx) => exchangeServer(o, taskDeps, ctx.authInfo?.extra as ExchangeInfo | undefined),
    {
      maxRequestBodySize: o.maxBodyBytes,
      onerror: (err) => o.logger.info({ err: err.message }, 'mcp request rejected'),
    },
  );
  const edge: McpEdge = {
    o,
    origins: createOriginPolicy(o.publicUrl, o.allowedOrigins),
    authenticate: createAuthGuard({
      db: o.db,
      failures: o.authFailures,
      known: o.knownCredentials,
      now: o.now ?? (() => new Date()),
      oauth: o.oauth,
    }),
    resourceMetadata: new URL('/.well-known/oauth-protected-resource', o.publicUrl).toString(),
    taskDeps,
    serve: toNodeHandler(handler, { maxRequestBodySize: o.maxBodyBytes }),
  };
  app.post('/mcp', { onRequest: (req, reply) => guard(edge, req, reply) }, (req, reply) =>
    answerMcpPost(edge, req, reply),
  );
  app.route({
    method: ['GET', 'DELETE', 'PUT', 'PATCH'],
    url: '/mcp',
    onRequest: methodNotAllowed,
    handler: methodNotAllowed,
  });
  // What the endpoint takes (RFC 9110 §9.3.7); no cross-origin access is offered, so no CORS.
  app.options('/mcp', async (_req, reply) => reply.code(204).header('allow', 'POST').send());
}

/** The per-request MCP server: the catalogue's tools and the workspace's resources, prompts and completions. */
function exchangeServer(
  o: McpRouteOptions<GatewayDeps>,
  taskDeps: TaskDeps,
  info: ExchangeInfo | undefined,
): Server {
  const server = new Server(
    { name: SERVER_NAME, version: SERVER_VERSION },
    {
      capabilities: {
        tools: { listChanged: false },
        resources: { subscribe: false, listChanged: false },
        prompts: { listChanged: false },
        completions: {},
        extensions: { [TASKS_EXTENSION]: {} },
      },
      instructions: INSTRUCTIONS,
    },
  );
  discoverEveryVersion(server, INSTRUCTIONS);
  server.setRequestHandler('tools/list', () => ({
    tools: selectedTools(o.catalogue, info?.selection),
    ...CACHE.toolList,
  }));
  registerSurfaceHandlers(server, o, info);
  server.setRequestHandler('tools/call', (req, reqCtx) =>
    answerToolCall(o, taskDeps, server, info, req, reqCtx),
  );
  return server;
}

/** Resources, resource templates, prompts and completion. */
function registerSurfaceHandlers(
  server: Server,
  o: McpRouteOptions<GatewayDeps>,
  info: ExchangeInfo | undefined,
): void {
  // The route authenticated every request before the SDK saw it.
  const surface = (): ResourceContext => {
    if (info === undefined) throw new Error('a request reached the MCP server without a caller');
    return { caller: info.caller, deps: o.deps, catalogue: o.catalogue };
  };
  // A failing service is the client's to retry, said without the service's internals.
  const answered = <T>(method: string, answer: () => Promise<T>): Promise<T> =>
    answer().catch((err: unknown) => {
      const refusal = surfaceError(err, method);
      if (refusal !== err) o.logger.warn({ err, method, request_id: info?.requestId }, 'MCP request failed');
      throw refusal;
    });
  server.setRequestHandler('resources/list', (req) =>
    answered('resources/list', () => listResources(surface(), req.params?.cursor)),
  );
  server.setRequestHandler('resources/templates/list', (req) => {
    noCursor(req.params?.cursor);
    return resourceTemplates();
  });
  server.setRequestHandler('resources/read', (req) => readResource(surface(), req.params.uri));
  server.setRequestHandler('prompts/list', (req) => {
    noCursor(req.params?.cursor);
    return listPrompts();
  });
  server.setRequestHandler('prompts/get', (req) =>
    answered('prompts/get', () => getPrompt(surface(), req.params.name, req.params.arguments)),
  );
  server.setRequestHandler('completion/complete', (req) =>
    answered('completion/complete', () => complete(surface(), req.params)),
  );
}

/** A tools/call the SDK serves: a task on 2026-07-28 when the tool runs as one, else the tool's answer. */
function answerToolCall(
  o: McpRouteOptions<GatewayDeps>,
  taskDeps: TaskDeps,
  server: Server,
  info: ExchangeInfo | undefined,
  req: CallToolRequest,
  reqCtx: ServerContext,
): Promise<HandlerResultTypeMap['tools/call']> {
  // The route authenticated every request before the SDK saw it.
  if (info === undefined) throw new Error('tools/call reached the MCP server without a caller');
  const id = reqCtx.mcpReq.id;
  const malformed = info.malformedRequests.get(id);
  if (malformed !== undefined) throw new ProtocolError(ProtocolErrorCode.InvalidParams, malformed);
  requireSelected(o.catalogue, info.selection, req.params.name, info.caller.toolGroups);
  // The client asked for progress with a token: the tool may report it on this request's stream.
  const token = reqCtx.mcpReq._meta?.progressToken;
  const progress =
    token === undefined
      ? undefined
      : (update: ProgressUpdate) =>
          reqCtx.mcpReq
            .notify({ method: 'notifications/progress', params: { progressToken: token, ...update } })
            .catch((err: unknown) => o.logger.info({ err }, 'progress notification not sent'));
  const known = o.catalogue.byName.has(req.params.name);
  const requestId = info.messageRequestIds.get(id) ?? info.requestId;
  // On 2026-07-28 the client's capabilities come with each request, in its envelope.
  const envelope = reqCtx.mcpReq.envelope;
  const modern = MODERN_VERSIONS.has(server.getNegotiatedProtocolVersion() ?? '');
  if (modern && runsAsTask(taskDeps, info.caller, req.params.name, req.params.arguments, envelope)) {
    // The extension's CreateTaskResult answers a tools/call; the SDK's result types do not name it.
    return createTask(
      taskDeps,
      info.caller,
      requestId,
      req.params.name,
      req.params.arguments ?? {},
    ) as unknown as Promise<CallToolResult>;
  }
  return observeToolCall(req.params.name, known, reqCtx.mcpReq._meta, () =>
    callTool(
      { catalogue: o.catalogue, deps: o.deps, logger: o.logger },
      info.caller,
      requestId,
      req.params.name,
      req.params.arguments,
      progress,
    ),
  )
    .then((result) =>
      withResourceLinks(result, server.getNegotiatedProtocolVersion() ?? info.protocolVersion),
    )
    .then((result) =>
      modern
        ? modernAnswer(req.params.name, result, envelope, reqCtx.mcpReq.inputResponses)
        : legacyAnswer(o.db, info.caller, req.params.name, result),
    );
}

/** The `WWW-Authenticate` challenge of a bearer refusal. */
function challenge(
  resourceMetadata: string,
  error?: string,
  description?: string,
  scope = 'read write',
): string {
  // The scopes a client should ask for (RFC 6750 §3): read and write cover every tool.
  const parts = [`resource_metadata=${quoted(resourceMetadata)}`, `scope=${quoted(scope)}`];
  if (error) parts.push(`error=${quoted(error)}`);
  if (description) parts.push(`error_description=${quoted(description)}`);
  return `Bearer ${parts.join(', ')}`;
}

/**
 * Everything that can be decided from headers is decided before the body is read: the Origin, the
 * bearer token, the Content-Encoding. Before the body is read the request's id is unknown; an
 * unauthenticated body is never read.
 */
async function guard(edge: McpEdge, req: FastifyRequest, reply: FastifyReply) {
  const unread = unknownRequestId(req.headers['mcp-protocol-version']);
  const origin = req.headers.origin;
  if (origin !== undefined && !edge.origins.allows(origin)) {
    return rpcError(reply, 403, JSONRPC_FORBIDDEN, `origin ${origin} is not allowed`, unread);
  }
  const auth = await edge.authenticate(req.headers.authorization, req.ip, () => req.raw.socket.destroyed);
  if (!auth.ok && 'overBudget' in auth) {
    reply.header('retry-after', String(auth.retryAfterSeconds));
    return rpcError(
      reply,
      429,
      JSONRPC_INVALID_REQUEST,
      `too many failed authentications from this address: retry after ${auth.retryAfterSeconds} s`,
      unread,
    );
  }
  if (!auth.ok) {
    reply.header(
      'www-authenticate',
      challenge(edge.resourceMetadata, auth.error, auth.error ? auth.description : undefined),
    );
    return rpcError(reply, 401, JSONRPC_INVALID_REQUEST, `unauthorized: ${auth.description}`, unread);
  }
  req.caller = auth.caller;
  return refuseContentEncoding(req, reply, unread);
}

/** A compressed body is refused from the headers (415), before it is read. */
function refuseContentEncoding(req: FastifyRequest, reply: FastifyReply, unread: { id?: null }) {
  const codings = unacceptedContentCodings(req.headers['content-encoding']);
  if (codings.length === 0) return undefined;
  // RFC 9110 §15.5.16: Accept-Encoding says which codings a request may use.
  reply.header('accept-encoding', 'identity');
  return rpcError(
    reply,
    415,
    JSONRPC_INVALID_REQUEST,
    `Unsupported Media Type: Content-Encoding ${codings.map((c) => JSON.stringify(c.slice(0, 40))).join(', ')} is not accepted; send the body uncompressed, with no Content-Encoding header or Content-Encoding: identity`,
    unread,
  );
}

/**
 * Accept (406) and the credential's rate (429): decided once the body is parsed, so that the
 * answer carries the request's id (the body is bounded by the body limit either way).
 */
function refuseAuthenticated(
  o: McpRouteOptions<GatewayDeps>,
  req: FastifyRequest,
  reply: FastifyReply,
  caller: Caller,
) {
  if (!acceptsJsonAndSse(req.headers.accept)) {
    return rpcError(
      reply,
      406,
      JSONRPC_INVALID_REQUEST,
      'Not Acceptable: Accept must include both application/json and text/event-stream',
      answerId(req),
    );
  }
  // Accepted as written; the SDK reads it again, matching the media types by their exact case.
  req.raw.headers.accept = 'application/json, text/event-stream';
  const rate = o.limiter.take(caller.principal.credentialId);
  if (!rate.allowed) return rateLimited(req, reply, rate.retryAfterSeconds);
  return undefined;
}

function rateLimited(req: FastifyRequest, reply: FastifyReply, retryAfterSeconds: number, what = '') {
  reply.header('retry-after', String(retryAfterSeconds));
  return rpcError(
    reply,
    429,
    JSONRPC_INVALID_REQUEST,
    `rate limited${what}: retry after ${retryAfterSeconds} s`,
    answerId(req),
  );
}

/** The guard took one request from the credential's rate; each further tool call of a batch takes one more. */
function takeBatchRate(
  o: McpRouteOptions<GatewayDeps>,
  req: FastifyRequest,
  reply: FastifyReply,
  caller: Caller,
) {
  const calls = countToolCalls(req.body);
  if (calls <= 1) return undefined;
  if (calls > o.limiter.burst) {
    return rpcError(
      reply,
      400,
      JSONRPC_INVALID_REQUEST,
      `Invalid Request: a batch may hold at most ${o.limiter.burst} tool calls (this credential's burst)`,
      answerId(req),
    );
  }
  const rate = o.limiter.take(caller.principal.credentialId, calls - 1);
  if (rate.allowed) return undefined;
  return rateLimited(req, reply, rate.retryAfterSeconds, ` (each of the batch's ${calls} tool calls counts)`);
}

/** The checks that need the body; an answer when the request is refused. */
function refuseBody(edge: McpEdge, req: FastifyRequest, reply: FastifyReply, caller: Caller) {
  const header = req.headers['mcp-protocol-version'];
  const version = namedVersion(header, req.body);
  if (version !== undefined && !SUPPORTED_VERSIONS.includes(version)) {
    return unsupportedVersion(reply, version, answerId(req));
  }
  const batch = batchRefusal(req.body, typeof header === 'string' ? header : undefined);
  if (batch !== undefined) return rpcError(reply, 400, JSONRPC_INVALID_REQUEST, batch, answerId(req));
  // Bad parameters are a bad request (400); in a batch, the call is answered in its place. A
  // method 2026-07-28 removed (initialize, ping) is the SDK's to refuse as not found (404).
  const malformed = removedInModernEra(version, req.body) ? undefined : malformedSingleRequest(req.body);
  if (malformed !== undefined) {
    return rpcError(reply, 400, JSONRPC_INVALID_PARAMS, malformed.problem, malformed.id);
  }
  return refuseToolAccess(edge, req, reply, caller) ?? takeBatchRate(edge.o, req, reply, caller);
}

/** The first named tool call the caller's scopes or role do not allow (403). */
function refuseToolAccess(edge: McpEdge, req: FastifyRequest, reply: FastifyReply, caller: Caller) {
  for (const call of namedToolCalls(req.body)) {
    const tool = edge.o.catalogue.byName.get(call.name);
    const denied = tool && accessDenied(caller.principal, tool);
    if (!denied) continue;
    const need = tool.access === 'any-credential' ? undefined : requiredAccess(tool.behavior).scope;
    if (need !== undefined && !caller.principal.scopes.includes(need)) {
      // Step-up (RFC 6750 §3.1): the scopes to ask for are the token's own plus the one missing,
      // since a client that replaces its scopes with the challenge's must not lose what it had.
      const scopes = [...new Set([...caller.principal.scopes, need])].join(' ');
      const why = `${call.name} needs the ${need} scope; this token has ${caller.principal.scopes.join(' ') || 'none'}`;
      reply.header('www-authenticate', challenge(edge.resourceMetadata, 'insufficient_scope', why, scopes));
    }
    return rpcError(
      reply,
      403,
      JSONRPC_FORBIDDEN,
      `forbidden: ${denied}`,
      bodyRequestId(call) ?? answerId(req),
    );
  }
  return undefined;
}

/** `POST /mcp` once the guard admitted it: the body's checks, then the exchange. */
async function answerMcpPost(edge: McpEdge, req: FastifyRequest, reply: FastifyReply) {
  const { o } = edge;
  const caller = req.caller;
  if (caller === undefined) throw new Error('unauthenticated request passed the guard');
  const refused = refuseAuthenticated(o, req, reply, caller) ?? refuseBody(edge, req, reply, caller);
  if (refused !== undefined) return refused;
  const version = namedVersion(req.headers['mcp-protocol-version'], req.body);
  const modern = version !== undefined && MODERN_VERSIONS.has(version);
  if (modern && taskRequestMethod(req.body) !== undefined) {
    const answer = await answerTasksRequest(edge.taskDeps, caller, req.requestId, req.headers, req.body);
    reply.header('x-request-id', req.requestId);
    if (answer.body === undefined) return reply.code(answer.status).send();
    return reply.code(answer.status).type('application/json').send(answer.body);
  }
  // A 2025-era exchange is stateless: what its client declared is kept for its later calls.
  const declared = modern ? undefined : initializeDeclaration(req.body);
  if (declared !== undefined) {
    await recordDeclaration(o.db, caller.principal.credentialId, declared).catch((err: unknown) =>
      o.logger.warn({ err }, 'the client capabilities an initialize declared were not recorded'),
    );
  }
  const selection = toolSelection(req.url, caller.toolGroups);
  if (!selection.ok) return rpcError(reply, 400, JSONRPC_INVALID_PARAMS, selection.problem, answerId(req));
  // Decided on the body as it came: exchangeInfo's takeMalformedRequests gives a malformed call a
  // well-formed stand-in, which must not then pass for the plain exchange.
  const plain = plainToolCall(req.body, req.headers['mcp-protocol-version']);
  const info = exchangeInfo(o, req, caller, selection.groups);
  reply.hijack();
  reply.raw.setHeader('x-request-id', req.requestId);
  if (plain !== undefined) {
    sendAsEventStream(
      reply.raw,
      await answerPlainCall(
        o,
        plain,
        caller,
        req.requestId,
        String(req.headers['mcp-protocol-version']),
        selection.groups,
      ),
    );
    return;
  }
  (req.raw as IncomingMessage & { auth?: AuthInfo }).auth = authInfo(caller, info);
  await edge.serve(req.raw, reply.raw, req.body);
}

/** What the per-request server is handed; each message of a batch is logged with its own request id. */
function exchangeInfo(
  o: McpRouteOptions<GatewayDeps>,
  req: FastifyRequest,
  caller: Caller,
  selection: ToolSelection,
): ExchangeInfo {
  const messageRequestIds = batchRequestIds(req.body, req.requestId);
  for (const [, id] of messageRequestIds) {
    o.logger.info({ request_id: id, batch_request_id: req.requestId }, 'batch message');
  }
  const protocolVersion = namedVersion(req.headers['mcp-protocol-version'], req.body);
  return {
    caller,
    requestId: req.requestId,
    messageRequestIds,
    selection,
    protocolVersion,
    malformedRequests: removedInModernEra(protocolVersion, req.body)
      ? new Map()
      : takeMalformedRequests(req.body),
  };
}

/** The SDK's AuthInfo for a caller the route authenticated, carrying the exchange's info. */
function authInfo(caller: Caller, info: ExchangeInfo): AuthInfo {
  return {
    token: 'verified-by-gateway',
    clientId: caller.principal.credentialId,
    scopes: caller.principal.scopes,
    expiresAt: caller.credentialExpiresAt
      ? Math.floor(caller.credentialExpiresAt.getTime() / 1000)
      : undefined,
    extra: info as unknown as Record<string, unknown>,
  };
}

/** The JSON-RPC response to a plain tools/call, as the per-request server would give it. */
async function answerPlainCall(
  o: McpRouteOptions<GatewayDeps>,
  plain: PlainToolCall,
  caller: Caller,
  requestId: string,
  version: string,
  selection: ToolSelection,
) {
  try {
    requireSelected(o.catalogue, selection, plain.name, caller.toolGroups);
    const known = o.catalogue.byName.has(plain.name);
    const result = await observeToolCall(plain.name, known, undefined, () =>
      callTool(
        { catalogue: o.catalogue, deps: o.deps, logger: o.logger },
        caller,
        requestId,
        plain.name,
        plain.args,
      ),
    );
    const answer = await legacyAnswer(o.db, caller, plain.name, withResourceLinks(result, version));
    return { result: answer, jsonrpc: '2.0', id: plain.id };
  } catch (err) {
    return handlerErrorResponse(plain.id, err);
  }
}

// Answered from the headers, before any body is read.
async function methodNotAllowed(req: FastifyRequest, reply: FastifyReply) {
  reply.header('allow', 'POST');
  return rpcError(
    reply,
    405,
    JSONRPC_INVALID_REQUEST,
    'Method Not Allowed: this endpoint is stateless; use POST',
    unknownRequestId(req.headers['mcp-protocol-version']),
  );
}
