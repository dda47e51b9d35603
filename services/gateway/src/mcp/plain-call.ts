/**
 * The exchange almost every request is — one 2025-era `tools/call`, no batch, no `_meta` (so no
 * progress token and no modern envelope), nothing beyond `name` and `arguments` — answered without
 * the SDK's per-request server, transport, web Request and stream. The answer is the one the SDK
 * gives for it: the same status, headers and single `message` event carrying the same JSON-RPC
 * response. Any other request, however slightly different, goes to the SDK.
 */

import type { ServerResponse } from 'node:http';
import { isRecord } from '@adsmcp/runtime/json';
import { SUPPORTED_PROTOCOL_VERSIONS } from '@modelcontextprotocol/server';
import type { RpcId } from './rpc-messages.ts';

/** The 2025-era revisions the SDK serves statelessly; only these take the plain path. */
const LEGACY_VERSIONS: ReadonlySet<string> = new Set(SUPPORTED_PROTOCOL_VERSIONS);

export interface PlainToolCall {
  id: RpcId;
  name: string;
  args: Record<string, unknown> | undefined;
}

function onlyKeys(value: Record<string, unknown>, allowed: readonly string[]): boolean {
  for (const key in value) if (!allowed.includes(key)) return false;
  return true;
}

const MESSAGE_KEYS = ['jsonrpc', 'id', 'method', 'params'] as const;
const PARAM_KEYS = ['name', 'arguments'] as const;

/** The call when `body` is exactly the common exchange, else undefined (the SDK serves it). */
export function plainToolCall(
  body: unknown,
  versionHeader: string | string[] | undefined,
): PlainToolCall | undefined {
  if (typeof versionHeader !== 'string' || !LEGACY_VERSIONS.has(versionHeader)) return undefined;
  if (!isRecord(body) || !onlyKeys(body, MESSAGE_KEYS)) return undefined;
  if (body.jsonrpc !== '2.0' || body.method !== 'tools/call') return undefined;
  const { id, params } = body;
  if (typeof id !== 'string' && !(typeof id === 'number' && Number.isSafeInteger(id))) return undefined;
  if (!isRecord(params) || !onlyKeys(params, PARAM_KEYS) || typeof params.name !== 'string') return undefined;
  if (params.arguments !== undefined && !isRecord(params.arguments)) return undefined;
  return { id, name: params.name, args: params.arguments };
}

/** The JSON-RPC error the SDK's protocol layer makes of an error thrown by a request handler. */
export function handlerErrorResponse(id: RpcId, err: unknown): Record<string, unknown> {
  const e = (typeof err === 'object' && err !== null ? err : {}) as {
    code?: unknown;
    message?: unknown;
    data?: unknown;
  };
  const thrown = Number.isSafeInteger(e.code) ? (e.code as number) : -32603;
  return {
    jsonrpc: '2.0',
    id,
    error: {
      // The SDK sends a resource-not-found error (-32002) to 2025-era clients as invalid params.
      code: thrown === -32002 ? -32602 : thrown,
      message: typeof e.message === 'string' ? e.message : 'Internal error',
      ...(e.data !== undefined && { data: e.data }),
    },
  };
}

/** The SDK's headers for a request's event stream. */
const STREAM_HEADERS = {
  'content-type': 'text/event-stream',
  'cache-control': 'no-cache, no-transform',
  connection: 'keep-alive',
  'x-accel-buffering': 'no',
} as const;

/** Writes `message` as the SDK does: a 200 event stream holding one `message` event. */
export function sendAsEventStream(res: ServerResponse, message: Record<string, unknown>): void {
  const body = `event: message\ndata: ${JSON.stringify(message)}\n\n`;
  res.writeHead(200, { ...STREAM_HEADERS, 'content-length': Buffer.byteLength(body) });
  res.end(body);
}
