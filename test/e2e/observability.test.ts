/**
 * Traces and metrics, end to end: with `OTEL_EXPORTER_OTLP_ENDPOINT` pointing at a small OTLP/HTTP
 * receiver in this test, a change prepared and applied through the official MCP client with a
 * `traceparent` in its `_meta` yields one trace holding spans of the gateway, the changes service,
 * its bus consumer and the upstream-proxy; and with `METRICS_PORT` set, each process serves
 * Prometheus metrics: the tool counter and latency histogram, the RPC durations, the bus and the
 * upstream budget.
 */
import assert from 'node:assert/strict';
import { randomBytes } from 'node:crypto';
import { mkdtemp, rm } from 'node:fs/promises';
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, describe, test } from 'node:test';
import { stopTestServer, type TestDatabase, testDatabase } from '@adsmcp/testkit/postgres';
import { type SeedResult, type ServiceName, type Stack, startStack } from '@adsmcp/testkit/stack';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';

interface ReceivedSpan {
  service: string;
  traceId: string;
  spanId: string;
  parentSpanId: string;
  name: string;
}

interface OtlpJson {
  resourceSpans?: {
    resource?: { attributes?: { key: string; value: { stringValue?: string } }[] };
    scopeSpans?: { spans?: { traceId: string; spanId: string; parentSpanId?: string; name: string }[] }[];
  }[];
}

/** OTLP/JSON ids are hex; a base64 id (the protobuf mapping) is turned into hex too. */
const hexId = (id: string | undefined) =>
  id === undefined || id === ''
    ? ''
    : /^[0-9a-f]+$/.test(id)
      ? id
      : Buffer.from(id, 'base64').toString('hex');

/** A minimal OTLP/HTTP JSON receiver: collects every span posted to /v1/traces. */
async function startOtlpReceiver(): Promise<{ url: string; spans: ReceivedSpan[]; close(): Promise<void> }> {
  const spans: ReceivedSpan[] = [];
  const server = http.createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on('data', (c: Buffer) => chunks.push(c));
    req.on('end', () => {
      if (req.method === 'POST' && req.url === '/v1/traces') {
        const body = JSON.parse(Buffer.concat(chunks).toString('utf8')) as OtlpJson;
        for (const rs of body.resourceSpans ?? []) {
          const service =
            rs.resource?.attributes?.find((a) => a.key === 'service.name')?.value.stringValue ?? '';
          for (const ss of rs.scopeSpans ?? [])
            for (const s of ss.spans ?? [])
              spans.push({
                service,
                traceId: hexId(s.traceId),
                spanId: hexId(s.spanId),
                parentSpanId: hexId(s.parentSpanId),
                name: s.name,
              });
        }
      }
      res.writeHead(200, { 'content-type': 'application/json' }).end('{}');
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as AddressInfo;
  return {
    url: `http://127.0.0.1:${port}`,
    spans,
    close: () => new Promise<void>((resolve) => server.close(() => resolve())),
  };
}

let receiver: Awaited<ReturnType<typeof startOtlpReceiver>>;
let db: TestDatabase;
let dataDir: string;
let stack: Stack;
let seed: SeedResult;
let client: Client;
const metricsPorts = new Map<ServiceName, number>();

/** Calls a tool with `_meta` through the official client and returns its structured result. */
async function ok<T>(name: string, args: Record<string, unknown>, meta: Record<string, string>): Promise<T> {
  const res = await client.callTool({ name, arguments: args, _meta: meta });
  assert.notEqual(res.isError, true, `${name} failed: ${JSON.stringify(res.structuredContent)}`);
  return res.structuredContent as T;
}

async function scrape(service: ServiceName): Promise<string> {
  const port = metricsPorts.get(service);
  assert.ok(port !== undefined, `${service} announced its metrics port`);
  const res = await fetch(`http://127.0.0.1:${port}/metrics`);
  assert.equal(res.status, 200);
  return res.text();
}

/** The value of the sample `name{labels}` (labels in any order, all given must match). */
function sample(text: string, name: string, labels: Record<string, string> = {}): number | undefined {
  for (const line of text.split('\n')) {
    if (!line.startsWith(`${name}{`) && !line.startsWith(`${name} `)) continue;
    if (!Object.entries(labels).every(([k, v]) => line.includes(`${k}="${v}"`))) continue;
    return Number(line.slice(line.lastIndexOf(' ') + 1));
  }
  return undefined;
}

before(async () => {
  receiver = await startOtlpReceiver();
  db = await testDatabase();
  dataDir = await mkdtemp(join(tmpdir(), 'adsmcp-e2e-'));
  stack = await startStack({
    databaseUrl: db.url,
    dataDir,
    env: {
      OTEL_EXPORTER_OTLP_ENDPOINT: receiver.url,
      OTEL_EXPORTER_OTLP_PROTOCOL: 'http/json',
      // Export within a fraction of a second, not the default five.
      OTEL_BSP_SCHEDULE_DELAY: '100',
      METRICS_PORT: '0',
      MCP_RATE_BURST: '500',
    },
    onLine(service, line) {
      if (!line.includes('"listening"')) return;
      const j = JSON.parse(line) as { msg?: string; metrics_port?: number };
      if (j.msg === 'listening' && typeof j.metrics_port === 'number')
        metricsPorts.set(service, j.metrics_port);
    },
  });
  seed = await stack.seedDemo();
  client = new Client({ name: 'e2e-observability', version: '1.0.0' });
  await client.connect(
    new StreamableHTTPClientTransport(new URL(stack.mcpUrl), {
      requestInit: { headers: { authorization: `Bearer ${seed.token}` } },
    }),
  );
});

after(async () => {
  await client?.close();
  await stack?.stop();
  await db?.drop();
  await stopTestServer();
  await receiver?.close();
  if (dataDir) await rm(dataDir, { recursive: true, force: true });
});

describe('observability', () => {
  const traceId = randomBytes(16).toString('hex');
  const traceparent = `00-${traceId}-${randomBytes(8).toString('hex')}-01`;

  test('a traceparent in _meta is continued through the gateway, changes, the bus, the upstream-proxy and the platform', async () => {
    const account = seed.accounts.find((a) => a.currency === 'USD') as SeedResult['accounts'][number];
    const meta = { traceparent };
    const { ads } = await ok<{ ads: { id: string; status: string }[] }>(
      'ads_list_ads',
      { account_id: account.account_id, limit: 5 },
      meta,
    );
    const ad = ads.find((a) => a.status !== 'archived');
    assert.ok(ad, 'the seeded account has an ad to change');
    const prepared = await ok<{ change_id: string; digest: string; status: string }>(
      'ads_update_ad',
      { account_id: account.account_id, ad_id: ad.id, body: { name: 'Traced copy' } },
      meta,
    );
    await stack.admin(['approve', prepared.change_id, '--workspace', seed.workspaceId, '--yes']);
    let change = await ok<{ status: string }>(
      'ads_apply_change',
      { change_id: prepared.change_id, digest: prepared.digest },
      meta,
    );
    for (let i = 0; i < 120 && !['applied', 'failed'].includes(change.status); i++) {
      await new Promise((r) => setTimeout(r, 250));
      change = await ok<{ status: string }>('ads_get_change', { change_id: prepared.change_id }, meta);
    }
    assert.equal(change.status, 'applied', JSON.stringify(change));

    const want = (s: ReceivedSpan) => s.traceId === traceId;
    const deadline = Date.now() + 20_000;
    const has = (service: string, name: RegExp) =>
      receiver.spans.some((s) => want(s) && s.service === service && name.test(s.name));
    const expected: [string, RegExp][] = [
      ['gateway', /^tools\/call ads_apply_change$/],
      ['changes', /^changes\.v1\.ChangesService\//],
      ['changes', /^bus consume changes\.apply$/],
      ['upstream-proxy', /^upstream\.v1\.UpstreamService\//],
      ['upstream-proxy', /^upstream (POST|PATCH|PUT|DELETE)$/],
      // The sandbox (Fastify, @fastify/otel) continues the traceparent of the platform request.
      ['ads-sandbox', /.+/],
    ];
    while (Date.now() < deadline && !expected.every(([svc, name]) => has(svc, name)))
      await new Promise((r) => setTimeout(r, 200));
    const seen = receiver.spans.filter(want).map((s) => `${s.service}: ${s.name}`);
    for (const [svc, name] of expected)
      assert.ok(has(svc, name), `a ${svc} span ${name} in ${seen.join(', ')}`);
    const toolSpan = receiver.spans.find((s) => want(s) && s.name === 'tools/call ads_apply_change');
    assert.equal(
      toolSpan?.parentSpanId,
      traceparent.split('-')[2],
      "the tool span's parent is the caller's span",
    );
  });

  test('the gateway, changes and upstream-proxy serve Prometheus metrics with the calls just made', async () => {
    const gateway = await scrape('gateway');
    const calls = sample(gateway, 'adsmcp_tool_calls_total', { tool: 'ads_update_ad', outcome: 'ok' });
    assert.ok(calls !== undefined && calls >= 1, 'the tool counter counted ads_update_ad');
    const count = sample(gateway, 'adsmcp_tool_call_duration_seconds_count', { tool: 'ads_apply_change' });
    assert.ok(count !== undefined && count >= 1, 'the latency histogram observed ads_apply_change');
    const sum = sample(gateway, 'adsmcp_tool_call_duration_seconds_sum', { tool: 'ads_apply_change' });
    assert.ok(sum !== undefined && sum > 0 && sum < 60, `a plausible latency sum (${sum})`);
    assert.match(gateway, /^process_resident_memory_bytes\{service="gateway"\} \d+/m, 'default metrics');

    const changes = await scrape('changes');
    const rpc = sample(changes, 'adsmcp_rpc_server_duration_seconds_count', {
      method: 'changes.v1.ChangesService/ApplyChange',
      code: 'ok',
    });
    assert.ok(rpc !== undefined && rpc >= 1, 'the RPC histogram observed ApplyChange');
    assert.match(changes, /^# TYPE adsmcp_bus_lag_seconds gauge$/m);
    const dead = sample(changes, 'adsmcp_bus_dead_letters');
    assert.equal(dead, 0, 'no dead letters');

    const upstream = await scrape('upstream-proxy');
    const remaining = sample(upstream, 'adsmcp_upstream_budget_remaining');
    assert.ok(
      remaining !== undefined && remaining >= 0 && remaining <= 1000,
      `budget remaining ${remaining}`,
    );
    assert.match(upstream, /^adsmcp_upstream_rate_limited_total\{service="upstream-proxy"\} \d+$/m);
    const answered = sample(upstream, 'adsmcp_upstream_responses_total', { status: '200' });
    assert.ok(answered !== undefined && answered >= 1, 'the platform answers were counted');
  });
});
