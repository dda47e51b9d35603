/**
 * The baseline: the MCP SDK's stateless serving as its documentation shows it — an McpServer
 * per request from a factory, `createMcpHandler`, the Node adapter on plain node:http — with one
 * trivial tool. It is what our gateway's figures are compared with.
 *
 * It runs in a process of its own, as each of our services does, so that it has an event loop to
 * itself and the load generator does not share its thread: run as a script, it listens on an
 * ephemeral loopback port and prints `LISTENING <url>`; `startBaselineServer` starts it so.
 */
import { type ChildProcess, spawn } from 'node:child_process';
import { once } from 'node:events';
import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import { fileURLToPath } from 'node:url';
import { toNodeHandler } from '@modelcontextprotocol/node';
import { createMcpHandler, McpServer } from '@modelcontextprotocol/server';
import { z } from 'zod';

async function serve(): Promise<void> {
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
  process.stdout.write(`LISTENING http://127.0.0.1:${(server.address() as AddressInfo).port}/mcp\n`);
  process.on('SIGTERM', () => server.close(() => process.exit(0)));
}

export interface BaselineServer {
  url: string;
  process: ChildProcess;
  close(): Promise<void>;
}

/** startBaselineServer starts the baseline in a child process (with `nodeArgs`) and resolves once it listens. */
export async function startBaselineServer(nodeArgs: string[] = []): Promise<BaselineServer> {
  const child = spawn(process.execPath, [...nodeArgs, '--import', 'tsx', fileURLToPath(import.meta.url)], {
    stdio: ['ignore', 'pipe', 'inherit'],
  });
  const url = await new Promise<string>((resolve, reject) => {
    let out = '';
    child.stdout.setEncoding('utf8');
    child.stdout.on('data', (chunk: string) => {
      out += chunk;
      const line = out.split('\n').find((l) => l.startsWith('LISTENING '));
      if (line !== undefined) resolve(line.slice('LISTENING '.length).trim());
    });
    child.once('exit', (code) =>
      reject(new Error(`the baseline server exited (code ${code}) before listening`)),
    );
  });
  return {
    url,
    process: child,
    async close() {
      if (child.exitCode !== null || child.signalCode !== null) return;
      child.kill('SIGTERM');
      await once(child, 'exit');
    },
  };
}

if (process.argv[1] === fileURLToPath(import.meta.url)) await serve();
