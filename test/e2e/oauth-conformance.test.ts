/**
 * The official conformance package's `authorization` command against our issuer: every
 * authorization-server scenario it has (the metadata endpoint; the authorization code grant with
 * PKCE, `state`, `iss` and the RFC 8707 resource), with the consent clicked in Chromium when the
 * package prints its authorization request. Each scenario's checks.json is read: any failed or
 * skipped check fails the test.
 */
import assert from 'node:assert/strict';
import { type ChildProcess, spawn } from 'node:child_process';
import { mkdtemp, readdir, readFile, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, describe, test } from 'node:test';
import { launchBrowser } from '@adsmcp/testkit/browser';
import { type SeededStack, startSeededStack } from '@adsmcp/testkit/e2e';
import { freePort } from '@adsmcp/testkit/free-port';
import { signInToConsent } from '@adsmcp/testkit/oauth-client';
import { REPO_ROOT, type SeedResult, type Stack } from '@adsmcp/testkit/stack';
import type { Browser } from 'playwright-core';

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
 * that import alone stops it loading. This hook gives the package, and nothing else, an `fs` with a
 * `globSync` that says so, so the `authorization` command runs on the Node this project supports.
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

interface Check {
  id: string;
  status: 'SUCCESS' | 'FAILURE' | 'WARNING' | 'SKIPPED' | 'INFO';
  errorMessage?: string;
}

let e2e: SeededStack;
let stack: Stack;
let seed: SeedResult;
let browser: Browser;
let outputDir: string;

before(async () => {
  e2e = await startSeededStack();
  ({ stack, seed } = e2e);
  browser = await launchBrowser();
  outputDir = await mkdtemp(join(tmpdir(), 'adsmcp-conformance-'));
});

after(async () => {
  await browser?.close();
  await e2e?.stop();
  if (outputDir) await rm(outputDir, { recursive: true, force: true });
});

/** Signs a new editor in on the authorization page at `url` and approves. */
async function consent(url: string): Promise<void> {
  const email = 'conformance@demo.example';
  const password = 'conformance-password-1';
  await stack.admin([
    'add-user',
    '--workspace',
    seed.workspaceId,
    '--email',
    email,
    '--password',
    password,
    '--role',
    'editor',
  ]);
  const context = await browser.newContext();
  try {
    const page = await context.newPage();
    await signInToConsent(page, url, { email, password });
    await Promise.all([page.waitForURL(/^http:\/\/127\.0\.0\.1:\d+\/callback/), page.click('#approve')]);
  } finally {
    await context.close();
  }
}

/** Runs the command to its end, answering the authorization request it prints; its exit code and output. */
async function runAuthorization(args: string[]): Promise<{ code: number | null; output: string }> {
  const nodeArgs = NODE_HAS_GLOB_SYNC
    ? []
    : ['--import', `data:text/javascript,${encodeURIComponent(REGISTER)}`];
  const child: ChildProcess = spawn(process.execPath, [...nodeArgs, CONFORMANCE, 'authorization', ...args], {
    cwd: outputDir,
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  let output = '';
  let consenting: Promise<void> | undefined;
  const authorizePrefix = `${stack.gatewayUrl}/oauth/authorize?`;
  const read = (chunk: Buffer) => {
    output += chunk.toString();
    if (consenting) return;
    const line = output.split('\n').find((l) => l.startsWith(authorizePrefix));
    if (line) consenting = consent(line.trim());
  };
  child.stdout?.on('data', read);
  child.stderr?.on('data', (chunk: Buffer) => {
    output += chunk.toString();
  });
  const code = await new Promise<number | null>((resolve) => child.on('close', resolve));
  if (consenting) await consenting;
  return { code, output };
}

/** Every checks.json the command wrote, by scenario directory. */
async function writtenChecks(): Promise<Map<string, Check[]>> {
  const out = new Map<string, Check[]>();
  for (const entry of await readdir(outputDir, { recursive: true })) {
    if (!entry.endsWith('checks.json')) continue;
    out.set(entry, JSON.parse(await readFile(join(outputDir, entry), 'utf8')) as Check[]);
  }
  return out;
}

describe('the conformance package’s authorization scenarios', () => {
  test('every authorization-server scenario passes against our issuer', { timeout: 180_000 }, async () => {
    const port = await freePort();
    const registered = await fetch(`${stack.gatewayUrl}/oauth/register`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({
        client_name: 'MCP conformance',
        redirect_uris: [`http://127.0.0.1:${port}/callback`],
        token_endpoint_auth_method: 'none',
      }),
    });
    assert.equal(registered.status, 201, await registered.clone().text());
    const { client_id } = (await registered.json()) as { client_id: string };

    const run = await runAuthorization([
      '--url',
      stack.gatewayUrl,
      '--client-id',
      client_id,
      '--resource',
      stack.mcpUrl,
      '--port',
      String(port),
      '--output-dir',
      outputDir,
    ]);
    const checks = await writtenChecks();
    const scenarios = [...checks.keys()].map((k) => k.split('/')[0] ?? k).join(', ');
    for (const scenario of ['authorization-server-metadata-endpoint', 'authorization-code-grant']) {
      assert.ok(
        [...checks.keys()].some((k) => k.includes(`authorization-server-${scenario}`)),
        `${scenario} ran (results: ${scenarios}); output:\n${run.output}`,
      );
    }
    for (const [scenario, list] of checks) {
      assert.ok(list.length > 0, `${scenario} reported no checks`);
      for (const c of list) {
        assert.ok(
          c.status === 'SUCCESS' || c.status === 'INFO',
          `${scenario}: ${c.id} is ${c.status}${c.errorMessage ? `: ${c.errorMessage}` : ''}\n${run.output}`,
        );
      }
    }
    assert.equal(run.code, 0, run.output);
    assert.match(run.output, /Total: \d+ passed, 0 failed/);
  });
});
