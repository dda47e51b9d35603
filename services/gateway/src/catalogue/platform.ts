/**
 * What tools need to talk to the ad platform through the upstream-proxy: the caller's account,
 * and a read whose answer is mapped to a tool result or error once, here.
 */
import type { Account } from '@adsmcp/proto/upstream/v1/upstream_pb';
import { isRecord } from '@adsmcp/runtime/json';
import { platformError } from '@adsmcp/runtime/platform-error';
import type { Principal } from '@adsmcp/runtime/principal';
import { type GatewayDeps, onBehalfOf } from '../deps.ts';
import { ToolFailure } from '../mcp/tool-failure.ts';
import type { Caller } from './catalogue.ts';

export { isRecord };

/**
 * workspaceAccount is the ad account `accountId` of the principal's workspace. For any other id
 * the upstream-proxy, which owns the connections, answers NotFound in its own words, and
 * callTool turns that into the tool error as it is.
 */
export async function workspaceAccount(
  deps: GatewayDeps,
  principal: Principal,
  accountId: string,
): Promise<Account> {
  const { account } = await deps.upstream.getAccount({ accountId }, onBehalfOf(principal));
  if (account === undefined) throw new Error('the upstream-proxy answered GetAccount without an account');
  return account;
}

/** One read of the ad platform for an account of the caller's workspace: a GET, or a read-only POST. */
export interface PlatformRead {
  accountId: string;
  /** GET unless said; a POST read (a report) carries `body`. */
  method?: 'GET' | 'POST';
  path: string;
  query: Record<string, string | number | readonly string[]>;
  /** The JSON text of a POST read's body. */
  body?: string;
  /** What a 404 means for this read, said to the agent. */
  notFound: string;
  /**
   * `get`: the answer is one object; `list`: a page, `data` and `paging`; `report`: `data` rows
   * beside other fields.
   */
  shape: 'get' | 'list' | 'report';
}

/**
 * A platform answer: the object (get), the page's objects and its paging (list), or the rows and
 * the answer's other fields (report).
 */
export interface PlatformAnswer {
  data: unknown;
  paging?: unknown;
  rest?: Record<string, unknown>;
}

/** A path segment for an id the agent gave; one that would change the path is refused. */
export function segment(argument: string, value: string): string {
  if (value === '.' || value === '..' || value.includes('/') || value.includes('\\')) {
    throw new ToolFailure(
      'invalid_argument',
      `\`${argument}\` must be an id as the platform gives it: not "." or "..", and without "/" or "\\"`,
    );
  }
  return encodeURIComponent(value);
}

/**
 * readPlatform makes one read (a GET, or a read-only POST) of the ad platform through the upstream-proxy on behalf of the
 * caller and returns the parsed JSON of a 2xx answer. A 4xx answer becomes a tool error: 404
 * `not_found` with `read.notFound`, 400 `invalid_argument` with the platform's message, any
 * other with the platform's own code. The proxy's own refusals (an account outside the
 * workspace, rate limits, an unavailable platform) arrive as Connect errors, which callTool maps.
 */
export async function readPlatform(
  caller: Caller,
  deps: GatewayDeps,
  read: PlatformRead,
): Promise<PlatformAnswer> {
  const query: { name: string; value: string }[] = [];
  for (const [name, value] of Object.entries(read.query)) {
    if (value === undefined) continue;
    for (const v of Array.isArray(value) ? value : [value]) query.push({ name, value: String(v) });
  }
  const res = await deps.upstream.call(
    {
      accountId: read.accountId,
      method: read.method ?? 'GET',
      path: read.path,
      query,
      bodyJson: read.body ?? '',
      idempotencyKey: '',
    },
    onBehalfOf(caller.principal),
  );
  if (res.status >= 200 && res.status <= 299) return answerOf(res.bodyJson, read);
  const error = platformError(res.bodyJson);
  const said = error.message === undefined ? '' : `: ${error.message}`;
  if (res.status === 404) throw new ToolFailure('not_found', read.notFound);
  if (res.status === 400) {
    const field = error.field === undefined ? '' : ` (field ${error.field})`;
    throw new ToolFailure('invalid_argument', `the ad platform refused the request${field}${said}`);
  }
  throw new ToolFailure(
    error.code ?? `upstream_http_${res.status}`,
    `the ad platform refused the request (HTTP ${res.status}${error.code === undefined ? '' : ` ${error.code}`})${said}`,
  );
}

/** Rows or list items: objects, as every published result shape says they are. */
const isObjects = (v: unknown): v is Record<string, unknown>[] => Array.isArray(v) && v.every(isRecord);

const isCursor = (v: unknown) => v === undefined || v === null || typeof v === 'string';

/** A page's `paging` as the result shapes publish it: has_more, and the cursors or null. */
const isPaging = (v: unknown) =>
  isRecord(v) && typeof v.has_more === 'boolean' && isCursor(v.after) && isCursor(v.before);

/**
 * The answer's JSON in the shape the read expects; anything else is the platform's fault. The
 * shape is checked as far as the tool's published output schema goes, since an MCP client checks
 * the result against it and would refuse the whole answer rather than see a tool error.
 */
function answerOf(bodyJson: string, read: PlatformRead): PlatformAnswer {
  let body: unknown;
  try {
    body = JSON.parse(bodyJson) as unknown;
  } catch {
    throw new ToolFailure(
      'upstream_error',
      'the ad platform sent a response that is not JSON; try again later',
    );
  }
  if (read.shape === 'get' && isRecord(body)) return { data: body };
  if (read.shape === 'list' && isRecord(body) && isObjects(body.data) && isPaging(body.paging)) {
    return { data: body.data, paging: body.paging };
  }
  if (
    read.shape === 'report' &&
    isRecord(body) &&
    isObjects(body.data) &&
    (body.paging === undefined || isPaging(body.paging))
  ) {
    const { data, ...rest } = body;
    return { data, rest };
  }
  throw new ToolFailure(
    'upstream_error',
    `the ad platform answered ${read.method ?? 'GET'} ${read.path} with an unexpected shape; try again later`,
  );
}
