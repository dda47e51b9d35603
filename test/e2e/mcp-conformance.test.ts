/**
 * The official conformance package's `server` scenarios against the stack, in both protocol eras:
 * every scenario that applies to this server (docs/testing.md lists the others and why) must pass.
 * A check the package itself reports as "Not testable" (it needs a diagnostic tool the product does
 * not have, such as `test_missing_capability`) is allowed only where it is listed below.
 *
 * The package has no way to send a bearer token, so it talks to a loopback proxy that adds the
 * token and otherwise forwards the request as it came, standing for the address a client uses: the
 * proxy's own `localhost:<port>` in Host and Origin is written as the gateway's.
 */
import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import { mkdtemp, readdir, readFile, rm } from 'node:fs/promises';
import { createServer, request, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, describe, test } from 'node:test';
import { type SeededStack, startSeededStack } from '@adsmcp/testkit/e2e';
import { REPO_ROOT } from '@adsmcp/testkit/stack';

const CONFORMANCE = join(
  REPO_ROOT,
  'node_modules',
  '@modelcontextprotocol',
  'conformance',
  'dist',
  'index.js',
);

/**
 * The package imports `globSync` from `fs` (Node 22) for its tier-check command only; on Node 20
 * that import alone stops it loading (as in oauth-conformance.test.ts).
 */
const SHIM = `import fs from 'node:fs'; export * from 'node:fs'; export default fs;
export function globSync() { throw new Error('fs.globSync needs Node 22'); }`;
const HOOKS = `export async function resolve(specifier, context, next) {
  if ((specifier === 'fs' || specifier === 'node:fs') && context.parentURL?.includes('/@modelcontextprotocol/conformance/'))
    return { url: ${JSON.stringify(`data:text/javascript,${encodeURIComponent(SHIM)}`)}, shortCircuit: true };
  return next(specifier, context);
}`;
const REGISTER = `import { register } from 'node:module'; register(${JSON.stringify(`data:text/javascript,${encodeURIComponent(HOOKS)}`)});`;
const NODE_HAS_GLOB_SYNC = Number(process.versions.node.split('.')[0]) >= 22;

/** The scenarios that apply to this server, by the revision they are run at. */
const SCENARIOS: Record<'2025-11-25' | '2026-07-28', readonly string[]> = {
  '2025-11-25': [
    'server-initialize',
    'ping',
    'tools-list',
    'server-sse-multiple-streams',
    'resources-list',
    'prompts-list',
    'dns-rebinding-protection',
  ],
  '2026-07-28': [
    'server-stateless',
    'tools-list',
    'server-sse-multiple-streams',
    'resources-list',
    'sep-2164-resource-not-found',
    'prompts-list',
    'dns-rebinding-protection',
    'caching',
    // The tasks extension (io.modelcontextprotocol/tasks): the checks that need no fixture tool.
    'tasks-capability-negotiation',
    'tasks-dispatch-and-envelope',
    'tasks-request-headers',
  ],
};

/**
 * Checks of the tasks scenarios that call the package's fixture tools (`greet`, `slow_compute`,
 * `failing_job`, ...), which the product does not have: the server answers them as unknown tools.
 * The task behaviour they check is proven with the product's own task tool in
 * person-in-the-loop.test.ts.
 */
const NEEDS_FIXTURE_TOOL = new Set([
  'sep-2663-server-rejects-undeclared-client',
  'tasks-per-request-meta-opt-in',
  'sep-2663-durable-create-strong-consistency',
  'sep-2663-legacy-task-param-ignored',
  'tasks-immediate-result-shortcut',
  'tasks-result-type-complete-on-non-task-responses',
  'tasks-server-directed-creation-no-hint',
  'sep-2663-routing-headers-accepted-on-tasks-get',
  'sep-2663-server-rejects-mismatched-mcp-name-on-tasks-get',
  'tasks-headers-tolerate-mcp-method-on-tools-call',
]);

/**
 * Checks of applicable scenarios that need a diagnostic tool of the package's reference server,
 * which the product does not have; the package reports them "Not testable".
 */
const NOT_TESTABLE = new Set([
  'sep-2575-server-rejects-undeclared-capability',
  'sep-2575-missing-capability-http-400',
  'sep-2575-http-server-no-independent-requests-on-stream',
  'sep-2575-server-no-log-without-loglevel',
]);

/** Checks skipped because the server does not offer what they exercise (list-changed notifications). */
const SKIPPED = new Set([
  'sep-2575-server-sends-prompts-list-changed-on-subscription',
  'sep-2575-server-sends-tools-list-changed-on-subscription',
]);

interface Check {
  id: string;
  status: 'SUCCESS' | 'FAILURE' | 'WARNING' | 'SKIPPED' | 'INFO';
  errorMessage?: string;
}

let e2e: SeededStack;
let proxy: Server;
let proxyUrl: string;
let outputDir: string;

/** A loopback proxy to the gateway that adds the seeded token. */
async function startTokenProxy(gateway: URL, token: string): Promise<Server> {
  const server = createServer((req, res) => {
    const own = `localhost:${(server.address() as AddressInfo).port}`;
    const asGateway = (v: string | undefined) => v?.replace(own, `localhost:${gateway.port}`);
    const headers = {
      ...req.headers,
      authorization: `Bearer ${token}`,
      host: asGateway(req.headers.host),
      ...(req.headers.origin === undefined ? {} : { origin: asGateway(req.headers.origin) }),
    };
    const upstream = request(
      { host: '127.0.0.1', port: gateway.port, method: req.method, path: req.url, headers },
      (answer) => {
        res.writeHead(answer.statusCode ?? 502, answer.headers);
        answer.pipe(res);
      },
    );
    upstream.on('error', () => {
      res.writeHead(502);
      res.end();
    });
    req.pipe(upstream);
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  return server;
}

before(async () => {
  // The package sends its requests as fast as it can; the credential's default rate would refuse some.
  e2e = await startSeededStack({ env: { MCP_RATE_PER_SECOND: '1000', MCP_RATE_BURST: '2000' } });
  proxy = await startTokenProxy(new URL(e2e.stack.mcpUrl), e2e.seed.token);
  proxyUrl = `http://localhost:${(proxy.address() as AddressInfo).port}/mcp`;
  outputDir = await mkdtemp(join(tmpdir(), 'adsmcp-server-conformance-'));
});

after(async () => {
  proxy?.close();
  await e2e?.stop();
  if (outputDir) await rm(outputDir, { recursive: true, force: true });
});

/** Runs one scenario at one revision; its checks, and what the command printed. */
async function runScenario(
  scenario: string,
  version: string,
): Promise<{ checks: Check[]; output: string; code: number | null }> {
  const dir = join(outputDir, `${version}-${scenario}`);
  const nodeArgs = NODE_HAS_GLOB_SYNC
    ? []
    : ['--import', `data:text/javascript,${encodeURIComponent(REGISTER)}`];
  const args = ['server', '--url', proxyUrl, '--scenario', scenario, '--spec-version', version];
  // Extension scenarios are on no revision's timeline; the package runs them only when forced.
  if (scenario.startsWith('tasks-')) args.push('--force');
  const child = spawn(process.execPath, [...nodeArgs, CONFORMANCE, ...args, '--output-dir', dir], {
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  let output = '';
  child.stdout.on('data', (chunk: Buffer) => {
    output += chunk.toString();
  });
  child.stderr.on('data', (chunk: Buffer) => {
    output += chunk.toString();
  });
  const code = await new Promise<number | null>((resolve) => child.on('close', resolve));
  const checks: Check[] = [];
  for (const entry of await readdir(dir, { recursive: true }).catch(() => [] as string[])) {
    if (entry.endsWith('checks.json')) {
      checks.push(...(JSON.parse(await readFile(join(dir, entry), 'utf8')) as Check[]));
    }
  }
  return { checks, output, code };
}

for (const [version, scenarios] of Object.entries(SCENARIOS)) {
  describe(`the conformance package's server scenarios at ${version}`, () => {
    for (const scenario of scenarios) {
      test(`${scenario} passes`, { timeout: 60_000 }, async () => {
        const run = await runScenario(scenario, version);
        assert.ok(run.checks.length > 0, `${scenario} reported no checks:\n${run.output}`);
        const failed = run.checks.filter(
          (c) =>
            !(c.status === 'SUCCESS' || c.status === 'INFO' || c.status === 'WARNING') &&
            !(
              c.status === 'FAILURE' &&
              NOT_TESTABLE.has(c.id) &&
              /^Not testable/.test(c.errorMessage ?? '')
            ) &&
            !(c.status === 'SKIPPED' && SKIPPED.has(c.id)) &&
            !(
              c.status === 'FAILURE' &&
              NEEDS_FIXTURE_TOOL.has(c.id) &&
              /^unknown tool: [a-z_]+; |fixture from Check \d+ unavailable/.test(c.errorMessage ?? '')
            ),
        );
        assert.deepEqual(
          failed.map((c) => `${c.id}: ${c.status}${c.errorMessage ? `: ${c.errorMessage}` : ''}`),
          [],
          run.output,
        );
      });
    }
  });
}
