/**
 * Benchmark of one internal hop, in a pair of processes: the client here, the server in a child.
 * Each mode makes the same unary call (`GetMarketingItem`, answered with a fixed item like the
 * one `npm run bench` reads) `HOP_CALLS` times from `HOP_CONCURRENCY` concurrent callers, and
 * prints calls/s and the CPU the client and the server spent per call:
 *
 *   http2          node:http2 client and server exchanging the same bytes: the floor
 *   http1          the same over HTTP/1.1: undici's pool (one connection per caller) and node:http
 *   connect-node   connect-node's Connect transport and adapter, binary, nothing around them
 *   ours           the services' client (createServiceClient: principal token, request id,
 *                  failover) and server (buildConnectServer: the short unary path, the
 *                  principal check, logs, metrics, the trace span), as in production
 *
 * `npm run bench:hop` runs every mode in one run, each beside the others, as in
 * docs/performance.md. Env: HOP_CALLS (default 20000), HOP_CONCURRENCY (20), HOP_ONLY (a mode),
 * HOP_CPU_PROF_DIR (a CPU profile of each server).
 */
import { spawn } from 'node:child_process';
import http from 'node:http';
import http2 from 'node:http2';
import type { AddressInfo } from 'node:net';
import { createInterface } from 'node:readline';
import { fileURLToPath } from 'node:url';
import {
  GetMarketingItemRequestSchema,
  GetMarketingItemResponseSchema,
  MarketingItemSchema,
  MarketingService,
} from '@adsmcp/proto/marketing/v1/marketing_pb';
import { buildConnectServer } from '@adsmcp/runtime/connect-server';
import { createLogger } from '@adsmcp/runtime/log';
import {
  createPrincipalSigner,
  createPrincipalVerifier,
  generatePrincipalKeys,
  type Principal,
} from '@adsmcp/runtime/principal';
import { callerKey, createServiceClient } from '@adsmcp/runtime/service-client';
import { create, toBinary } from '@bufbuild/protobuf';
import { type Client, createClient, createContextValues } from '@connectrpc/connect';
import { connectNodeAdapter, createConnectTransport } from '@connectrpc/connect-node';
import { Pool } from 'undici';

const MODES = ['http2', 'http1', 'connect-node', 'ours'] as const;
type Mode = (typeof MODES)[number];
const PATH = `/${MarketingService.typeName}/${MarketingService.method.getMarketingItem.name}`;
const WORKSPACE = '7d5e4e53-26c9-4b1e-bb1a-0b8e7f1d2c3a';

const item = create(MarketingItemSchema, {
  itemId: '0b0e4b6a-6a0e-4d8e-9c61-3c1f0f7b8a11',
  kind: 'playbook',
  name: 'Benchmark playbook',
  revision: 1,
  data: { guidance: 'Lead with the offer.', evidence: 'general_guidance' },
  createdAt: '2026-11-23T12:00:00.000Z',
  updatedAt: '2026-11-23T12:00:00.000Z',
});

/** The request every mode sends, as bytes (the bare modes send them as they are). */
const requestBytes = toBinary(
  GetMarketingItemRequestSchema,
  create(GetMarketingItemRequestSchema, { itemId: item.itemId }),
);

/** The server of `mode`, listening on an ephemeral loopback port; prints `LISTENING <port>`. */
async function serve(mode: Mode): Promise<void> {
  let server: http2.Http2Server | http.Server;
  const answer = Buffer.from(
    toBinary(GetMarketingItemResponseSchema, create(GetMarketingItemResponseSchema, { item })),
  );
  // The bare modes: read the request to its end, answer with the fixed bytes.
  const answerFixed = (
    req: { resume(): unknown; on(event: 'end', listener: () => void): unknown },
    res: {
      writeHead(status: number, headers: Record<string, string | number>): unknown;
      end(body: Buffer): unknown;
    },
  ) => {
    req.resume();
    req.on('end', () => {
      res.writeHead(200, { 'content-type': 'application/proto', 'content-length': answer.length });
      res.end(answer);
    });
  };
  if (mode === 'http1') {
    server = http.createServer(answerFixed);
  } else if (mode === 'http2') {
    server = http2.createServer(answerFixed);
  } else if (mode === 'connect-node') {
    server = http2.createServer(
      connectNodeAdapter({
        routes: (router) => router.service(MarketingService, { getMarketingItem: async () => ({ item }) }),
      }),
    );
  } else {
    const verifier = await createPrincipalVerifier(process.env.HOP_PUBLIC_KEY ?? '', 'marketing');
    const built = buildConnectServer({
      serviceName: 'marketing',
      verifier,
      logger: createLogger('marketing', 'warn'),
      routes: (router) => router.service(MarketingService, { getMarketingItem: async () => ({ item }) }),
    });
    server = built.server;
  }
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  process.stdout.write(`LISTENING ${(server.address() as AddressInfo).port}\n`);
  // Each line on stdin asks for the CPU this process has used so far, in µs.
  createInterface({ input: process.stdin }).on('line', () => {
    const used = process.cpuUsage();
    process.stdout.write(`CPU ${used.user + used.system}\n`);
  });
  process.stdin.on('end', () => process.exit(0));
}

/** A server child of `mode`: its port, and a way to read its CPU. */
async function startServer(mode: Mode, env: NodeJS.ProcessEnv) {
  // HOP_CPU_PROF_DIR=<dir> writes a CPU profile of each server there (`npm run bench:profile <dir>`).
  const dir = process.env.HOP_CPU_PROF_DIR;
  const profile = dir ? ['--cpu-prof', `--cpu-prof-dir=${dir}`] : [];
  const args = [...profile, '--import', 'tsx', fileURLToPath(import.meta.url), 'serve', mode];
  const child = spawn(process.execPath, args, {
    env: { ...process.env, ...env },
    stdio: ['pipe', 'pipe', 'inherit'],
  });
  const lines = createInterface({ input: child.stdout })[Symbol.asyncIterator]();
  const next = async () => {
    const { value, done } = await lines.next();
    if (done) throw new Error(`the ${mode} server ended`);
    return value as string;
  };
  const port = Number((await next()).split(' ')[1]);
  return {
    url: `http://127.0.0.1:${port}`,
    async cpuUs() {
      child.stdin.write('cpu\n');
      return Number((await next()).split(' ')[1]);
    },
    stop() {
      child.stdin.end();
    },
  };
}

/** The call of `mode` to the server at `url`, made by up to `concurrency` callers at once. */
async function caller(
  mode: Mode,
  url: string,
  privateKeyPem: string,
  concurrency: number,
): Promise<() => Promise<unknown>> {
  if (mode === 'http2') {
    const session = http2.connect(url);
    return () =>
      new Promise((resolve, reject) => {
        const req = session.request({
          ':method': 'POST',
          ':path': PATH,
          'content-type': 'application/proto',
        });
        const chunks: Buffer[] = [];
        req.on('data', (c: Buffer) => chunks.push(c));
        req.on('end', () => resolve(Buffer.concat(chunks)));
        req.on('error', reject);
        req.end(requestBytes);
      });
  }
  if (mode === 'http1') {
    const pool = new Pool(url, { connections: concurrency });
    return async () => {
      const res = await pool.request({
        method: 'POST',
        path: PATH,
        headers: { 'content-type': 'application/proto' },
        body: requestBytes,
      });
      return Buffer.from(await res.body.arrayBuffer());
    };
  }
  let client: Client<typeof MarketingService>;
  const options: { contextValues?: ReturnType<typeof createContextValues> } = {};
  if (mode === 'connect-node') {
    client = createClient(
      MarketingService,
      createConnectTransport({ baseUrl: url, httpVersion: '2', useBinaryFormat: true }),
    );
  } else {
    const signer = await createPrincipalSigner(privateKeyPem);
    client = createServiceClient(MarketingService, url, 'marketing', signer);
    const principal: Principal = {
      workspaceId: WORKSPACE,
      credentialId: 'bench',
      userId: null,
      role: 'editor',
      scopes: ['read'],
      via: 'mcp',
    };
    options.contextValues = createContextValues().set(callerKey, principal);
  }
  return () => client.getMarketingItem({ itemId: item.itemId }, options);
}

async function run(concurrency: number, calls: number, call: () => Promise<unknown>): Promise<void> {
  let started = 0;
  await Promise.all(
    Array.from({ length: concurrency }, async () => {
      while (started++ < calls) await call();
    }),
  );
}

async function main(): Promise<void> {
  const calls = Number(process.env.HOP_CALLS ?? 20_000);
  const concurrency = Number(process.env.HOP_CONCURRENCY ?? 20);
  const only = process.env.HOP_ONLY;
  const keys = await generatePrincipalKeys();
  process.stdout.write(`one unary call between two processes, ${calls} calls from ${concurrency} callers\n`);
  for (const mode of MODES) {
    if (only !== undefined && mode !== only) continue;
    const server = await startServer(mode, { HOP_PUBLIC_KEY: keys.publicKeyPem });
    try {
      const call = await caller(mode, server.url, keys.privateKeyPem, concurrency);
      await run(concurrency, 2000, call);
      const serverBefore = await server.cpuUs();
      const clientBefore = process.cpuUsage();
      const t0 = performance.now();
      await run(concurrency, calls, call);
      const seconds = (performance.now() - t0) / 1000;
      const client = process.cpuUsage(clientBefore);
      const serverUs = (await server.cpuUs()) - serverBefore;
      process.stdout.write(
        `${mode.padEnd(14)} ${String(Math.round(calls / seconds)).padStart(6)} calls/s   ` +
          `client ${Math.round((client.user + client.system) / calls)} µs/call   ` +
          `server ${Math.round(serverUs / calls)} µs/call\n`,
      );
    } finally {
      server.stop();
    }
  }
  // The http2 session and connect-node's keep the process alive.
  process.exit(0);
}

if (process.argv[2] === 'serve') await serve(process.argv[3] as Mode);
else await main();
