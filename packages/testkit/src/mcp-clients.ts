/**
 * The official MCP clients, connected with a bearer token: the v1 SDK client (2025-11-25), the
 * v2 client in its default 2025 mode, and the v2 client pinned to 2026-07-28.
 */
import {
  Client as ClientV2,
  StreamableHTTPClientTransport as TransportV2,
} from '@modelcontextprotocol/client';
import { Client as ClientV1 } from '@modelcontextprotocol/sdk/client/index.js';
import { StreamableHTTPClientTransport as TransportV1 } from '@modelcontextprotocol/sdk/client/streamableHttp.js';

export type ClientKind = 'v1' | 'v2-2025' | 'v2-2026';
export const CLIENT_KINDS: readonly ClientKind[] = ['v1', 'v2-2025', 'v2-2026'];

/** The calls the tests make, common to both client generations. */
export interface McpTestClient {
  kind: ClientKind;
  listTools(): Promise<{
    tools: { name: string; inputSchema: unknown; annotations?: Record<string, unknown> }[];
  }>;
  callTool(
    name: string,
    args?: Record<string, unknown>,
  ): Promise<{
    isError?: boolean;
    structuredContent?: Record<string, unknown>;
    content: unknown[];
  }>;
  close(): Promise<void>;
}

/**
 * connectClient connects an official client and lists the tools once, so that the client checks
 * every tool result it receives against the tool's published output schema (the SDKs validate
 * `structuredContent` only for tools they have listed): a result of the wrong shape fails the test.
 */
export async function connectClient(kind: ClientKind, mcpUrl: string, token: string): Promise<McpTestClient> {
  const client = await connectUnlisted(kind, mcpUrl, token);
  try {
    await client.listTools();
  } catch {
    // A credential that cannot list (revoked, expired, a test of refusals) is the test's business.
  }
  return client;
}

async function connectUnlisted(kind: ClientKind, mcpUrl: string, token: string): Promise<McpTestClient> {
  const url = new URL(mcpUrl);
  if (kind === 'v1') {
    const client = new ClientV1({ name: 'e2e-v1', version: '1.0.0' });
    await client.connect(
      new TransportV1(url, { requestInit: { headers: { authorization: `Bearer ${token}` } } }),
    );
    return {
      kind,
      listTools: () => client.listTools() as ReturnType<McpTestClient['listTools']>,
      callTool: (name, args = {}) =>
        client.callTool({ name, arguments: args }) as ReturnType<McpTestClient['callTool']>,
      close: () => client.close(),
    };
  }
  const client = new ClientV2(
    { name: `e2e-${kind}`, version: '1.0.0' },
    kind === 'v2-2026' ? { versionNegotiation: { mode: { pin: '2026-07-28' } } } : {},
  );
  await client.connect(new TransportV2(url, { authProvider: { token: async () => token } }));
  return {
    kind,
    listTools: () => client.listTools() as ReturnType<McpTestClient['listTools']>,
    callTool: (name, args = {}) =>
      client.callTool({ name, arguments: args }) as ReturnType<McpTestClient['callTool']>,
    close: () => client.close(),
  };
}

/** A raw JSON-RPC POST, for the status rules no client lets you break on purpose. */
export async function rawPost(
  mcpUrl: string,
  body: string | object,
  headers: Record<string, string> = {},
): Promise<{ status: number; headers: Headers; text: string; json?: unknown }> {
  const res = await fetch(mcpUrl, {
    method: 'POST',
    headers: {
      'content-type': 'application/json',
      accept: 'application/json, text/event-stream',
      ...headers,
    },
    body: typeof body === 'string' ? body : JSON.stringify(body),
  });
  const text = await res.text();
  let json: unknown;
  try {
    json = JSON.parse(text);
  } catch {
    // SSE or empty
  }
  return { status: res.status, headers: res.headers, text, json };
}
