/**
 * Property-based fuzzing of every tool's arguments through the real processes and the official
 * MCP clients: for each tool of `tools/list`, argument sets made from its valid catalogue example
 * by one mutation at a known place (wrong type, out of range, too long, a hidden character, an
 * unknown property, a required one left out, ...; see argument-mutations.ts). Every set is invalid
 * by its published JSON Schema, checked with the MCP SDK's own JSON Schema validator (Ajv), or
 * by the house rule no schema can state (no hidden character in a string); the gateway must
 * refuse each one with a tool error that names the place and the rule, never a transport or
 * JSON-RPC error, and every process must still be running after.
 *
 * The hand-written hostile values of robustness.test.ts check that nothing fails uncleanly; this
 * checks, on many more generated sets, that each refusal says where and why.
 *
 * Deterministic: FUZZ_SEED (printed on failure) reproduces a run, FUZZ_RUNS sets how many sets are
 * sent in all (at least 10,000 by default).
 */
import assert from 'node:assert/strict';
import { after, before, test } from 'node:test';
import { type SeededStack, startSeededStack } from '@adsmcp/testkit/e2e';
import { connectClient, type McpTestClient } from '@adsmcp/testkit/mcp-clients';
import type { ServiceName } from '@adsmcp/testkit/stack';
import { AjvJsonSchemaValidator } from '@modelcontextprotocol/sdk/validation/ajv';
import fc from 'fast-check';
import { allTools } from '../../services/gateway/src/catalogue/tools/index.ts';
import {
  type Accepts,
  HOUSE_RULE_KINDS,
  type JsonSchema,
  type Mutation,
  mutationsOf,
  refusalProblem,
  type ToolErrorBody,
} from './argument-mutations.ts';

const DEFAULT_SEED = 20_240_611;
const DEFAULT_RUNS = 10_000;
/** Calls in flight at once, over CLIENTS connections. */
const CONCURRENCY = 8;
const CLIENTS = 4;
const SERVICES: readonly ServiceName[] = [
  'gateway',
  'changes',
  'optimizer',
  'marketing',
  'upstream-proxy',
  'ads-sandbox',
];

/** A whole number from the environment, or the default; anything else stops the run, saying why. */
function envInteger(name: string, fallback: number, min: number): number {
  const raw = process.env[name];
  if (raw === undefined || raw.trim() === '') return fallback;
  const n = Number(raw);
  if (!Number.isSafeInteger(n) || n < min) {
    throw new Error(`${name} must be a whole number of at least ${min} (got "${raw}")`);
  }
  return n;
}

const SEED = envInteger('FUZZ_SEED', DEFAULT_SEED, -(2 ** 31));
const RUNS = envInteger('FUZZ_RUNS', DEFAULT_RUNS, 1);

/** A tool's own seed, from the run's and its name, so that adding a tool changes no other's sets. */
function toolSeed(tool: string): number {
  let h = SEED | 0;
  for (const ch of tool) h = Math.imul(h ^ ch.charCodeAt(0), 0x01000193);
  return h | 0;
}

let e2e: SeededStack;
let clients: McpTestClient[] = [];
/** Calls to ads_disconnect_client go through a credential of their own: a set it took would revoke it. */
let disconnectClient: McpTestClient;
const pids = new Map<ServiceName, number | undefined>();

before(async () => {
  e2e = await startSeededStack({
    env: {
      MCP_RATE_PER_SECOND: '100000',
      MCP_RATE_BURST: '100000',
      UPSTREAM_BURST: '100000',
      UPSTREAM_RATE_PER_SECOND: '100000',
      SANDBOX_RATE_PER_SECOND: '100000',
    },
  });
  const { stack, seed } = e2e;
  for (const s of SERVICES) pids.set(s, stack.process(s).pid);
  clients = await Promise.all(
    Array.from({ length: CLIENTS }, (_, i) =>
      connectClient(i % 2 === 0 ? 'v1' : 'v2-2025', stack.mcpUrl, seed.token),
    ),
  );
  const own = JSON.parse(await stack.admin(['create-token', '--workspace', seed.workspaceId])) as {
    token: string;
  };
  disconnectClient = await connectClient('v1', stack.mcpUrl, own.token);
});

after(async () => {
  await Promise.all([...clients, disconnectClient].map((c) => c?.close()));
  await e2e?.stop();
});

/** Whether a value meets a schema, by the JSON Schema validator the MCP SDK's clients use. */
function schemaValidator(): Accepts {
  const ajv = new AjvJsonSchemaValidator();
  const compiled = new WeakMap<JsonSchema, (v: unknown) => boolean>();
  return (schema, value) => {
    let check = compiled.get(schema);
    if (check === undefined) {
      const v = ajv.getValidator(schema as Parameters<typeof ajv.getValidator>[0]);
      check = (x) => v(x).valid;
      compiled.set(schema, check);
    }
    return check(value);
  };
}

/** Runs `work` on every item, `limit` at a time. */
async function pool<T>(items: readonly T[], limit: number, work: (item: T, i: number) => Promise<void>) {
  let next = 0;
  await Promise.all(
    Array.from({ length: limit }, async () => {
      while (next < items.length) {
        const i = next++;
        await work(items[i] as T, i);
      }
    }),
  );
}

test('every generated invalid argument set of every tool is refused, naming the argument and the rule', async (t) => {
  const accepts = schemaValidator();
  const listed = (await clients[0]?.listTools())?.tools ?? [];
  const examples = new Map(allTools.map((row) => [row.name, row.example]));
  assert.ok(listed.length > 0, 'tools/list lists no tool');
  const perTool = Math.ceil(RUNS / listed.length);

  const sets: Mutation[] = [];
  for (const tool of listed) {
    const example = examples.get(tool.name);
    assert.ok(example !== undefined, `${tool.name} is listed but has no catalogue example`);
    const schema = tool.inputSchema as JsonSchema;
    assert.ok(accepts(schema, example), `${tool.name}: its example does not meet its published schema`);
    const invalid = mutationsOf(tool.name, schema, example, accepts)
      // What is checked is what is sent: the arguments as JSON carries them.
      .map((m) => ({ ...m, args: JSON.parse(JSON.stringify(m.args)) as Record<string, unknown> }))
      .filter((m) => HOUSE_RULE_KINDS.has(m.kind) || !accepts(schema, m.args));
    const [distinct] = fc.sample(
      fc.uniqueArray(invalid, {
        minLength: perTool,
        maxLength: perTool,
        selector: (m) => JSON.stringify(m.args),
      }),
      { seed: toolSeed(tool.name), numRuns: 1 },
    );
    sets.push(...(distinct ?? []));
  }

  const sent = new Map<string, number>();
  /** The first failing set of each tool and kind of mutation, and how many failed in all. */
  const failures = new Map<string, string>();
  let failed = 0;
  const started = Date.now();
  await pool(sets, CONCURRENCY, async (m, i) => {
    const client =
      m.tool === 'ads_disconnect_client' ? disconnectClient : (clients[i % clients.length] as McpTestClient);
    sent.set(m.tool, (sent.get(m.tool) ?? 0) + 1);
    let problem: string | undefined;
    try {
      const res = await client.callTool(m.tool, m.args);
      problem =
        res.isError === true
          ? refusalProblem(m, res.structuredContent?.error as ToolErrorBody | undefined)
          : 'it succeeded';
    } catch (err) {
      // An HTTP error status, a JSON-RPC error (such as -32603 internal) or a broken connection.
      problem = `the call failed: ${err instanceof Error ? err.message : String(err)}`;
    }
    if (problem !== undefined) {
      failed++;
      const key = `${m.tool} ${m.kind}`;
      // JSON shows what was sent, hidden characters escaped, as a report should.
      const args = JSON.stringify(m.args);
      if (!failures.has(key))
        failures.set(
          key,
          `${key} at ${JSON.stringify(m.path)}: ${problem}\n    arguments: ${args.length > 400 ? `${args.slice(0, 400)}…` : args}`,
        );
    }
  });

  const total = [...sent.values()].reduce((a, b) => a + b, 0);
  t.diagnostic(
    `FUZZ_SEED=${SEED}: ${total} invalid argument sets sent to ${sent.size} tools in ${((Date.now() - started) / 1000).toFixed(1)} s`,
  );
  t.diagnostic(`per tool: ${[...sent].map(([name, n]) => `${name} ${n}`).join(', ')}`);
  assert.deepEqual(
    [...failures.values()].slice(0, 40),
    [],
    `${failed} of ${total} sets were not refused as they should be, the first of each tool and kind listed ` +
      `(reproduce with FUZZ_SEED=${SEED} FUZZ_RUNS=${RUNS})`,
  );
  assert.equal(sent.size, listed.length, 'a listed tool got no argument set');
  assert.ok(total >= RUNS, `only ${total} sets were sent, fewer than ${RUNS}`);

  // No process crashed or was replaced, and the server still does valid work.
  for (const s of SERVICES) {
    const p = e2e.stack.process(s);
    assert.equal(p.pid, pids.get(s), `${s} is not the process it was`);
    assert.equal(p.exitCode ?? p.signalCode, null, `${s} exited`);
  }
  const client = clients[0] as McpTestClient;
  const accounts = await client.callTool('ads_list_accounts', {});
  assert.notEqual(accounts.isError, true, JSON.stringify(accounts.structuredContent));
  const account = e2e.seed.accounts[0]?.account_id;
  const ads = await client.callTool('ads_list_ads', { account_id: account, limit: 1 });
  assert.notEqual(ads.isError, true, JSON.stringify(ads.structuredContent));
  assert.equal((ads.structuredContent as { ads: unknown[] }).ads.length, 1);
});
