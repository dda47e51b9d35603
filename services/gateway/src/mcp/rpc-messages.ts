/**
 * What the edge reads from a JSON-RPC body before the MCP SDK serves it: the protocol version it
 * names, whether that version still allows batches, and request params (`tools/call`, and those
 * of the other methods served) the SDK would refuse with a dump of its schema validation.
 */
import { isRecord } from '@adsmcp/runtime/json';
import {
  DEFAULT_NEGOTIATED_PROTOCOL_VERSION,
  PROTOCOL_VERSION_META_KEY,
  SUPPORTED_PROTOCOL_VERSIONS,
  specTypeSchemas,
} from '@modelcontextprotocol/server';

/**
 * The revisions `createMcpHandler` serves on its modern path (the SDK does not export the list);
 * the 2025-era revisions are served by its stateless fallback.
 */
const MODERN_PROTOCOL_VERSIONS = ['2026-07-28'] as const;

/** Every protocol version this endpoint serves, newest first. */
export const SUPPORTED_VERSIONS: readonly string[] = [
  ...MODERN_PROTOCOL_VERSIONS,
  ...SUPPORTED_PROTOCOL_VERSIONS,
];

/** JSON-RPC batching was removed from MCP in this revision. */
export const BATCHES_REMOVED_IN = '2025-06-18';

export type RpcId = string | number;

interface RpcMessage {
  method?: unknown;
  id?: unknown;
  params?: unknown;
}

/** The messages of a body: its elements when it is a batch, else itself. */
export function messagesOf(body: unknown): RpcMessage[] {
  return (Array.isArray(body) ? body : [body]).filter(isRecord);
}

/**
 * The protocol version a request names: the MCP-Protocol-Version header (an empty one names the
 * empty version, which no revision is), else its `_meta` claim.
 */
export function namedVersion(header: string | string[] | undefined, body: unknown): string | undefined {
  if (typeof header === 'string') return header.trim();
  if (Array.isArray(body) || !isRecord(body) || !isRecord(body.params)) return undefined;
  const meta = body.params._meta;
  const claim = isRecord(meta) ? meta[PROTOCOL_VERSION_META_KEY] : undefined;
  return typeof claim === 'string' ? claim : undefined;
}

/**
 * Why a batch is refused, or undefined when its version allows batches. Without a version header
 * the transport assumes 2025-03-26, as MCP says, and that revision allows them.
 */
export function batchRefusal(body: unknown, header: string | undefined): string | undefined {
  if (!Array.isArray(body)) return undefined;
  const version = header?.trim() || DEFAULT_NEGOTIATED_PROTOCOL_VERSION;
  if (version >= BATCHES_REMOVED_IN) {
    return `Invalid Request: JSON-RPC batches are not allowed in protocol version ${version} (MCP removed them in ${BATCHES_REMOVED_IN}); send one message per request`;
  }
  const ids = messagesOf(body)
    .map((m) => m.id)
    .filter((id) => id !== undefined);
  if (new Set(ids).size !== ids.length)
    return 'Invalid Request: each request in a batch needs an id of its own';
  return undefined;
}

function kindOf(value: unknown): string {
  if (value === null) return 'null';
  if (Array.isArray(value)) return 'an array';
  return typeof value === 'object' ? 'an object' : `a ${typeof value}`;
}

/** The one-line reason a tools/call's params are malformed, or undefined when they are not. */
function toolCallParamsProblem(params: unknown): string | undefined {
  if (!isRecord(params))
    return `Invalid params: \`params\` must be an object with \`name\` and \`arguments\` (got ${kindOf(params)})`;
  if (params.name === undefined) return 'Invalid params: `name` is required: the name of the tool to call';
  if (typeof params.name !== 'string')
    return `Invalid params: \`name\` must be a string naming a tool (got ${kindOf(params.name)})`;
  if (params.arguments !== undefined && !isRecord(params.arguments))
    return `Invalid params: \`arguments\` must be an object holding the tool's arguments (got ${kindOf(params.arguments)})`;
  return undefined;
}

/**
 * The malformed requests of a body, by request id: tools/call requests, and initialize, ping or
 * tools/list requests whose params do not fit the SDK's schema of their method. Each one is made a
 * well-formed tools/call stand-in, so the SDK hands it to our handler, which answers with the
 * one-line reason as the JSON-RPC invalid-params error MCP prescribes (in its place in a batch,
 * like any other answer: an answer carries the request's id, not its method).
 */
export function takeMalformedRequests(body: unknown): Map<RpcId, string> {
  const problems = new Map<RpcId, string>();
  for (const m of messagesOf(body)) {
    if (typeof m.method !== 'string' || (typeof m.id !== 'string' && typeof m.id !== 'number')) continue;
    const problem =
      m.method === 'tools/call' ? toolCallParamsProblem(m.params) : requestParamsProblem(m.method, m.params);
    if (problem === undefined) continue;
    problems.set(m.id, problem);
    const meta = isRecord(m.params) ? m.params._meta : undefined;
    m.method = 'tools/call';
    m.params = { name: '', arguments: {}, ...(isRecord(meta) ? { _meta: meta } : {}) };
  }
  return problems;
}

/**
 * The other requests this server answers, by method, with the SDK's own schema of each (the MCP
 * specification's types): their params are checked here as the SDK would check them, so a bad one
 * is a bad request naming the field, not an internal error carrying a dump of the validation.
 */
type IssuePath = readonly (PropertyKey | { key: PropertyKey })[];
interface SchemaIssue {
  message: string;
  path?: IssuePath;
  /** A union's issues, one list per alternative (zod's `invalid_union`). */
  errors?: readonly (readonly SchemaIssue[])[];
}
interface RequestSchema {
  '~standard': {
    validate(value: unknown): { issues?: readonly SchemaIssue[] } | Promise<unknown>;
  };
}
const REQUEST_SCHEMAS = new Map<string, RequestSchema>([
  ['initialize', specTypeSchemas.InitializeRequest],
  ['ping', specTypeSchemas.PingRequest],
  ['tools/list', specTypeSchemas.ListToolsRequest],
  ['resources/list', specTypeSchemas.ListResourcesRequest],
  ['resources/templates/list', specTypeSchemas.ListResourceTemplatesRequest],
  ['resources/read', specTypeSchemas.ReadResourceRequest],
  ['prompts/list', specTypeSchemas.ListPromptsRequest],
  ['prompts/get', specTypeSchemas.GetPromptRequest],
  ['completion/complete', specTypeSchemas.CompleteRequest],
]);

/**
 * The issue to name: a union's own message says only that no alternative fits, so the first
 * alternative's first issue is named instead, its path under the union's.
 */
function namedIssue(issue: SchemaIssue | undefined): { path: IssuePath; message: string } | undefined {
  if (issue === undefined) return undefined;
  const inner = issue.errors?.[0]?.[0];
  if (inner === undefined) return { path: issue.path ?? [], message: issue.message };
  const named = namedIssue(inner);
  return named && { path: [...(issue.path ?? []), ...named.path], message: named.message };
}

/** The one-line reason a request's params do not fit its method's schema, or undefined. */
function requestParamsProblem(method: string, params: unknown): string | undefined {
  const schema = REQUEST_SCHEMAS.get(method);
  if (schema === undefined) return undefined;
  const result = schema['~standard'].validate(params === undefined ? { method } : { method, params });
  if (result instanceof Promise || result.issues === undefined || result.issues.length === 0)
    return undefined;
  const first = namedIssue(result.issues[0]);
  const path = (first?.path ?? []).map((p) => (typeof p === 'object' ? String(p.key) : String(p)));
  const where = path.length === 0 ? 'the request' : `\`${path.join('.')}\``;
  const more = result.issues.length > 1 ? ` (and ${result.issues.length - 1} more)` : '';
  return `Invalid params for ${method}: ${where}: ${first?.message.replace(/^Invalid input: /, '') ?? 'invalid'}${more}`;
}

/**
 * A body that is one request (not a batch) with malformed params: its id and the one-line reason,
 * answered as a bad request (HTTP 400) before the SDK sees it. tools/call has reasons of its own;
 * the other methods this server answers are held to the SDK's schemas.
 */
export function malformedSingleRequest(body: unknown): { id: RpcId; problem: string } | undefined {
  if (!isRecord(body) || typeof body.method !== 'string') return undefined;
  const { id } = body;
  if (typeof id !== 'string' && typeof id !== 'number') return undefined;
  const problem =
    body.method === 'tools/call'
      ? toolCallParamsProblem(body.params)
      : requestParamsProblem(body.method, body.params);
  return problem === undefined ? undefined : { id, problem };
}

/** The number of tools/call requests in a body: each one counts against the credential's rate. */
export function countToolCalls(body: unknown): number {
  return messagesOf(body).filter((m) => m.method === 'tools/call').length;
}

/** The tools/call requests naming a tool, for the access check. */
export function namedToolCalls(body: unknown): { id: unknown; name: string }[] {
  return messagesOf(body).flatMap((m) =>
    m.method === 'tools/call' && isRecord(m.params) && typeof m.params.name === 'string'
      ? [{ id: m.id, name: m.params.name }]
      : [],
  );
}

/**
 * A request id of its own for each request of a batch: the HTTP request's id and the message's
 * position (`<id>.2` for the second), so each call's log lines can be told apart.
 */
export function batchRequestIds(body: unknown, requestId: string): Map<RpcId, string> {
  const ids = new Map<RpcId, string>();
  if (!Array.isArray(body)) return ids;
  body.forEach((m: unknown, i) => {
    const id = isRecord(m) ? m.id : undefined;
    if (typeof id === 'string' || typeof id === 'number') ids.set(id, `${requestId}.${i + 1}`);
  });
  return ids;
}
