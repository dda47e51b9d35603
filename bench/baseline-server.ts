/**
 * The baseline: the MCP SDK's stateless serving as its documentation shows it — an McpServer
 * per request from a factory, `createMcpHandler`, the Node adapter on plain node:http — with one
 * trivial tool. It is what our gateway's figures are compared with.
 */
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { toNodeHandler } from '@modelcontextprotocol/node';
import { createMcpHandler, McpServer } from '@modelcontextprotocol/server';
import { z } from 'zod';

export async function startBaselineServer(): Promise<{ url: string; server: Server }> {
  const handler = createMcpHandler(() => {
    const server = new McpServer({ name: 'baseline', version: '1.0.0' });
    server.registerTool(
      'echo',
      { description: 'Returns its text.', inputSchema: z.object({ text: z.string() }) },
      async ({ text }) => ({ content: [{ type: 'text', text }], structuredContent: { text } }),
    );
    return server;
  });
  const node = toNodeHandler(handler);
  const server = createServer((req, res) => {
    void node(req, res);
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  return { url: `http://127.0.0.1:${(server.address() as AddressInfo).port}/mcp`, server };
}
