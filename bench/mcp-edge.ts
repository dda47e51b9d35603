/**
 * Benchmark: `tools/call` of ads_get_connection_context through the real gateway (auth lookup
 * in Postgres, MCP SDK, catalogue dispatch) at 20 concurrent keep-alive connections, each a
 * stateless 2025-11-25 JSON-RPC POST as an MCP client sends it. Prints throughput and
 * p50/p90/p99 latency. Run with `npm run bench`.
 *
 * Options (env): BENCH_SECONDS (default 15), BENCH_CONCURRENCY (default 20).
 */

import { mkdtemp, rm } from 'node:fs/promises';
import { request } from 'node:http';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { stopTestServer, testDatabase } from '@adsmcp/testkit/postgres';
import { startStack } from '@adsmcp/testkit/stack';
import { connectionPerWorker, formatResult, runLoad } from './load.ts';

const seconds = Number(process.env.BENCH_SECONDS ?? 15);
const concurrency = Number(process.env.BENCH_CONCURRENCY ?? 20);

function post(
  url: URL,
  agent: import('node:http').Agent,
  body: string,
  token: string,
): Promise<{ status: number; text: string }> {
  return new Promise((resolve, reject) => {
    const req = request(
      url,
      {
        method: 'POST',
        agent,
        headers: {
          'content-type': 'application/json',
          accept: 'application/json, text/event-stream',
          authorization: `Bearer ${token}`,
          'mcp-protocol-version': '2025-11-25',
          'content-length': Buffer.byteLength(body),
        },
      },
      (res) => {
        let text = '';
        res.setEncoding('utf8');
        res.on('data', (c: string) => (text += c));
        res.on('end', () => resolve({ status: res.statusCode ?? 0, text }));
      },
    );
    req.on('error', reject);
    req.end(body);
  });
}

async function main(): Promise<void> {
  const db = await testDatabase();
  const dataDir = await mkdtemp(join(tmpdir(), 'adsmcp-bench-'));
  const stack = await startStack({
    databaseUrl: db.url,
    dataDir,
    env: { LOG_LEVEL: 'warn', MCP_RATE_PER_SECOND: '100000', MCP_RATE_BURST: '100000' },
  });
  try {
    const seed = await stack.seedDemo();
    const url = new URL(stack.mcpUrl);
    const agents = connectionPerWorker(concurrency);
    const body = JSON.stringify({
      jsonrpc: '2.0',
      id: 1,
      method: 'tools/call',
      params: { name: 'ads_get_connection_context', arguments: {} },
    });
    const call = async (w: number) => {
      const res = await post(url, agents[w] as import('node:http').Agent, body, seed.token);
      return (
        res.status === 200 && res.text.includes('"workspace_id"') && !res.text.includes('"isError":true')
      );
    };
    process.stdout.write(`warming up (3 s)…\n`);
    await runLoad(concurrency, 3000, call);
    process.stdout.write(`measuring ${seconds} s at ${concurrency} connections…\n`);
    const r = await runLoad(concurrency, seconds * 1000, call);
    process.stdout.write(`${formatResult(`ads_get_connection_context @${concurrency} conns`, r)}\n`);
    for (const a of agents) a.destroy();
    if (r.errors > 0) process.exitCode = 1;
  } finally {
    await stack.stop();
    await db.drop();
    await stopTestServer();
    await rm(dataDir, { recursive: true, force: true });
  }
}

main().catch((err: unknown) => {
  process.stderr.write(`bench failed: ${err instanceof Error ? (err.stack ?? err.message) : String(err)}\n`);
  process.exit(1);
});
