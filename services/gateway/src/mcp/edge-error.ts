/**
 * The one shape of every error the gateway's HTTP edge answers outside the MCP SDK: a JSON-RPC
 * error response with `id: null` (RFC: JSON-RPC 2.0 §5, "id ... MUST be Null" when it could not
 * be read). An MCP client reads the same body whether Fastify, Node's HTTP parser or the route
 * refused the request, so it never has to parse an HTML page or a framework's own JSON.
 */
import { STATUS_CODES } from 'node:http';

/** JSON-RPC 2.0 error codes used at the edge. */
export const PARSE_ERROR = -32700;
export const INVALID_REQUEST = -32600;
export const INTERNAL_ERROR = -32603;

export interface EdgeErrorBody {
  jsonrpc: '2.0';
  error: { code: number; message: string };
  id: null;
}

export function edgeErrorBody(code: number, message: string): EdgeErrorBody {
  return { jsonrpc: '2.0', error: { code, message }, id: null };
}

/**
 * A whole HTTP/1.1 response carrying an edge error, for the paths where Node's HTTP parser (not
 * Fastify) refused the request and only the socket is left to answer on: a request that did not
 * arrive in time, headers too large, bytes that are not HTTP. The connection is closed after it,
 * since the rest of what the client sent cannot be read as a next request.
 */
export function rawEdgeErrorResponse(
  status: number,
  code: number,
  message: string,
  headers: Record<string, string> = {},
): string {
  const body = JSON.stringify(edgeErrorBody(code, message));
  const lines = [
    `HTTP/1.1 ${status} ${STATUS_CODES[status] ?? 'Error'}`,
    'Content-Type: application/json; charset=utf-8',
    `Content-Length: ${Buffer.byteLength(body)}`,
    'Connection: close',
    ...Object.entries(headers).map(([name, value]) => `${name}: ${value}`),
  ];
  return `${lines.join('\r\n')}\r\n\r\n${body}`;
}
