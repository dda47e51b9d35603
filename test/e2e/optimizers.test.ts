/**
 * Optimizers end to end: every process running, driven through the MCP edge with the official
 * clients, in the demo workspace (which has the optimizer feature) and in workspaces of their own.
 */
import assert from 'node:assert/strict';
import { randomUUID } from 'node:crypto';
import { after, before, describe, test } from 'node:test';
import { newWorkspaceToken, type SeededStack, startSeededStack } from '@adsmcp/testkit/e2e';
import { CLIENT_KINDS, connectClient, type McpTestClient } from '@adsmcp/testkit/mcp-clients';
import { optimizerConfig } from '@adsmcp/testkit/optimizer-config';
import type { SeedResult, Stack } from '@adsmcp/testkit/stack';
import pg from 'pg';

let e2e: SeededStack;
let stack: Stack;
let seed: SeedResult;
/** A workspace without the optimizer feature, and another workspace with it. */
let featureless: McpTestClient;
let otherWorkspace: McpTestClient;
let client: McpTestClient;
let accountId: string;

interface ToolError {
  code: string;
  message: string;
  issues?: { path: string; message: string }[];
}

interface OptimizerResult {
  optimizer_id: string;
  account_id: string;
  name: string;
  config: Record<string, unknown>;
  enabled: boolean;
  status: string;
  revision: number;
  created_at: string;
  updated_at: string;
  paused_at: string | null;
  next_review_at: string | null;
}

const validConfig = (): Record<string, unknown> => optimizerConfig(['cmp_1', 'cmp_2']);

const saveArgs = (patch: Record<string, unknown> = {}) => ({
  account_id: accountId,
  name: 'Weekly copy review',
  config: validConfig(),
  enabled: true,
  ...patch,
});

/** Calls a tool that must succeed and returns its data. */
async function ok<T>(c: McpTestClient, name: string, args: Record<string, unknown>): Promise<T> {
  const res = await c.callTool(name, args);
  assert.notEqual(res.isError, true, `${name} failed: ${JSON.stringify(res.structuredContent)}`);
  return res.structuredContent as T;
}

/** Calls a tool that must fail and returns its error. */
async function fails(c: McpTestClient, name: string, args: Record<string, unknown>): Promise<ToolError> {
  const res = await c.callTool(name, args);
  assert.equal(res.isError, true, `${name} unexpectedly succeeded: ${JSON.stringify(res.structuredContent)}`);
  return (res.structuredContent as { error: ToolError }).error;
}

async function newWorkspace(name: string, features: string[]): Promise<string> {
  return (await newWorkspaceToken(stack, name, features)).token;
}

before(async () => {
  e2e = await startSeededStack({ env: { MCP_RATE_BURST: '200' } });
  ({ stack, seed } = e2e);
  const first = seed.accounts[0];
  assert.ok(first, 'the demo workspace has an ad account');
  accountId = first.account_id;
  const [featurelessToken, otherToken] = await Promise.all([
    newWorkspace('No optimizer', []),
    newWorkspace('Other optimizers', ['optimizer']),
  ]);
  client = await connectClient('v2-2026', stack.mcpUrl, seed.token);
  featureless = await connectClient('v2-2025', stack.mcpUrl, featurelessToken);
  otherWorkspace = await connectClient('v1', stack.mcpUrl, otherToken);
});

after(async () => {
  await Promise.allSettled([client?.close(), featureless?.close(), otherWorkspace?.close()]);
  await e2e?.stop();
});

describe('an optimizer through its whole life', () => {
  for (const kind of CLIENT_KINDS) {
    test(`${kind}: save, get, list, update with the revision, stale revision refused, pause`, async () => {
      const c = await connectClient(kind, stack.mcpUrl, seed.token);
      try {
        const created = await ok<{ created: boolean; optimizer: OptimizerResult }>(
          c,
          'ads_save_optimizer',
          saveArgs({ name: `Review (${kind})`, config: { ...validConfig(), goal: 'cpa', target: 12.5 } }),
        );
        assert.equal(created.created, true);
        const o = created.optimizer;
        assert.equal(o.account_id, accountId);
        assert.equal(o.revision, 1);
        assert.equal(o.status, 'active');
        assert.equal(o.paused_at, null);
        assert.equal(o.config.target, 12.5);
        assert.equal(o.config.brand_instructions, null);
        assert.equal(
          Date.parse(o.next_review_at ?? '') - Date.parse(o.created_at),
          24 * 3_600_000,
          'the first review is one cadence after saving',
        );

        const got = await ok<{ optimizer: OptimizerResult }>(c, 'ads_get_optimizer', {
          optimizer_id: o.optimizer_id,
        });
        assert.deepEqual(got.optimizer, o);

        const listed = await ok<{ optimizers: OptimizerResult[]; total: number; next_offset: number | null }>(
          c,
          'ads_list_optimizers',
          { account_id: accountId, limit: 100 },
        );
        assert.ok(listed.optimizers.some((x) => x.optimizer_id === o.optimizer_id));
        assert.equal(listed.total, listed.optimizers.length);
        assert.equal(listed.next_offset, null);

        const update = { optimizer_id: o.optimizer_id, config: { ...validConfig(), cadence_hours: 48 } };
        const updated = await ok<{ created: boolean; optimizer: OptimizerResult }>(
          c,
          'ads_save_optimizer',
          saveArgs({ ...update, name: 'Renamed', expected_revision: 1 }),
        );
        assert.equal(updated.created, false);
        assert.equal(updated.optimizer.revision, 2);
        assert.equal(updated.optimizer.name, 'Renamed');
        assert.equal(updated.optimizer.config.cadence_hours, 48);

        const stale = await fails(c, 'ads_save_optimizer', saveArgs({ ...update, expected_revision: 1 }));
        assert.equal(stale.code, 'stale_revision');
        assert.match(stale.message, /at revision 2; read it again and retry with expected_revision 2/);

        const paused = await ok<{ optimizer: OptimizerResult }>(c, 'ads_pause_optimizer', {
          optimizer_id: o.optimizer_id,
        });
        assert.equal(paused.optimizer.status, 'paused');
        assert.equal(paused.optimizer.enabled, false);
        assert.notEqual(paused.optimizer.paused_at, null);
        assert.equal(paused.optimizer.next_review_at, null);
        const again = await ok<{ optimizer: OptimizerResult }>(c, 'ads_pause_optimizer', {
          optimizer_id: o.optimizer_id,
        });
        assert.deepEqual(again.optimizer, paused.optimizer, 'pausing again changes nothing');
      } finally {
        await c.close();
      }
    });
  }

  test('list pages carry the total and the next offset', async () => {
    for (let i = 0; i < 3; i++) await ok(client, 'ads_save_optimizer', saveArgs({ name: `Paged ${i}` }));
    const first = await ok<{ optimizers: OptimizerResult[]; total: number; next_offset: number | null }>(
      client,
      'ads_list_optimizers',
      { limit: 2 },
    );
    assert.equal(first.optimizers.length, 2);
    assert.ok(first.total >= 3);
    assert.equal(first.next_offset, 2);
    assert.equal(first.optimizers[0]?.name, 'Paged 2', 'newest first');
    const second = await ok<{ optimizers: OptimizerResult[] }>(client, 'ads_list_optimizers', {
      limit: 2,
      offset: 2,
    });
    assert.equal(second.optimizers[0]?.name, 'Paged 0');
  });
});

describe('configuration bounds', () => {
  /** What is wrong, the config patch that breaks it, the path named, and the message. */
  const violations: [string, Record<string, unknown>, string, RegExp][] = [
    [
      'cadence_hours 5',
      { cadence_hours: 5 },
      'config.cadence_hours',
      /`config\.cadence_hours` must be an integer from 6 to 720 \(got 5\)/,
    ],
    [
      'window_hours 745',
      { window_hours: 745 },
      'config.window_hours',
      /`config\.window_hours` must be an integer from 24 to 744 \(got 745\)/,
    ],
    [
      'goal roas',
      { goal: 'roas' },
      'config.goal',
      /`config\.goal` must be one of cpc, cpa, ctr \(got "roas"\)/,
    ],
    [
      'no campaign ids',
      { campaign_ids: [] },
      'config.campaign_ids',
      /`config\.campaign_ids` must have 1 to 20 items \(got 0\)/,
    ],
    [
      'a repeated campaign id',
      { campaign_ids: ['a', 'b', 'a'] },
      'config.campaign_ids[2]',
      /`config\.campaign_ids\[2\]` repeats an earlier item/,
    ],
    [
      'an allowed domain with a scheme',
      { allowed_domains: ['https://x.com'] },
      'config.allowed_domains[0]',
      /`config\.allowed_domains\[0\]` must be a hostname such as example\.com.* \(got "https:\/\/x\.com"\)/,
    ],
    [
      'max_ads_per_campaign 6',
      { max_ads_per_campaign: 6 },
      'config.max_ads_per_campaign',
      /`config\.max_ads_per_campaign` must be an integer from 1 to 5 \(got 6\)/,
    ],
    [
      'target 0',
      { target: 0 },
      'config.target',
      /`config\.target` must be a number greater than 0 and at most 1000000 \(got 0\)/,
    ],
    [
      'brand_instructions of 12001 characters',
      { brand_instructions: 'b'.repeat(12_001) },
      'config.brand_instructions',
      /`config\.brand_instructions` must be at most 12000 characters \(got 12001\)/,
    ],
    [
      'an unknown config property',
      { colour: 'blue' },
      'config.colour',
      /unknown property of `config` `colour`/,
    ],
  ];
  for (const [what, patch, path, rule] of violations) {
    test(`${what} is a tool error naming ${path}`, async () => {
      const err = await fails(
        client,
        'ads_save_optimizer',
        saveArgs({ name: `Invalid: ${what}`, config: { ...validConfig(), ...patch } }),
      );
      assert.equal(err.code, 'invalid_argument');
      assert.match(err.message, rule);
      assert.deepEqual(
        err.issues?.map((i) => i.path),
        [path],
      );
    });
  }

  test('nothing invalid was stored', async () => {
    const listed = await ok<{ optimizers: OptimizerResult[] }>(client, 'ads_list_optimizers', { limit: 100 });
    assert.equal(listed.optimizers.filter((o) => o.name.startsWith('Invalid:')).length, 0);
  });
});

describe('accounts, features and workspaces', () => {
  test('an account that is not the workspace’s is not found', async () => {
    const missing = randomUUID();
    const err = await fails(client, 'ads_save_optimizer', saveArgs({ account_id: missing }));
    assert.equal(err.code, 'not_found');
    assert.match(err.message, new RegExp(`no ad account ${missing} in this workspace`));
  });

  test('a workspace without the optimizer feature is refused with feature_disabled', async () => {
    for (const [name, args] of [
      ['ads_save_optimizer', saveArgs()],
      ['ads_list_optimizers', {}],
      ['ads_get_optimizer', { optimizer_id: randomUUID() }],
    ] as const) {
      const err = await fails(featureless, name, args);
      assert.equal(err.code, 'feature_disabled', name);
      assert.match(err.message, /needs the optimizer feature/);
    }
  });

  test('another workspace can neither get, pause, update nor list an optimizer, nor use its account', async () => {
    const { optimizer } = await ok<{ optimizer: OptimizerResult }>(
      client,
      'ads_save_optimizer',
      saveArgs({ name: 'Private' }),
    );
    const id = { optimizer_id: optimizer.optimizer_id };
    assert.equal((await fails(otherWorkspace, 'ads_get_optimizer', id)).code, 'not_found');
    assert.equal((await fails(otherWorkspace, 'ads_pause_optimizer', id)).code, 'not_found');
    const update = await fails(
      otherWorkspace,
      'ads_save_optimizer',
      saveArgs({ ...id, expected_revision: 1 }),
    );
    assert.equal(update.code, 'not_found');
    assert.match(update.message, /no ad account/);
    const listed = await ok<{ total: number }>(otherWorkspace, 'ads_list_optimizers', {});
    assert.equal(listed.total, 0);
    const still = await ok<{ optimizer: OptimizerResult }>(client, 'ads_get_optimizer', id);
    assert.deepEqual(still.optimizer, optimizer);
  });

  test('the catalogue lists the optimizer tools in their group, needing the optimizer feature', async () => {
    const catalogue = (await (await fetch(`${stack.gatewayUrl}/catalogue.json`)).json()) as {
      tools: { name: string; group: string; behavior: string; required_features: string[] }[];
    };
    const tools = catalogue.tools.filter((t) => t.name.includes('optimizer'));
    assert.deepEqual(
      tools.map((t) => [t.name, t.behavior]),
      [
        ['ads_save_optimizer', 'Write'],
        ['ads_get_optimizer', 'Read'],
        ['ads_list_optimizers', 'Read'],
        ['ads_pause_optimizer', 'Write'],
      ],
    );
    for (const t of tools) {
      assert.equal(t.group, 'Automation and optimization');
      // Pausing stays allowed when the feature has ended.
      assert.deepEqual(t.required_features, t.name === 'ads_pause_optimizer' ? [] : ['optimizer'], t.name);
    }
  });

  test('once the workspace’s optimizer feature has ended its optimizers can still be paused, and nothing else', async () => {
    const { optimizer } = await ok<{ optimizer: OptimizerResult }>(
      client,
      'ads_save_optimizer',
      saveArgs({ name: 'Outlives its feature' }),
    );
    assert.equal(optimizer.status, 'active');
    const id = { optimizer_id: optimizer.optimizer_id };
    const suspended = async () => {
      const c = new pg.Client({ connectionString: e2e.db.url });
      await c.connect();
      try {
        const { rowCount } = await c.query(
          'SELECT 1 FROM optimizer.feature_suspensions WHERE workspace_id = $1',
          [seed.workspaceId],
        );
        return rowCount === 1;
      } finally {
        await c.end();
      }
    };
    await stack.admin(['disable-feature', 'optimizer', '--workspace', seed.workspaceId]);
    try {
      // The optimizer service heard it: it schedules no review for the workspace now.
      assert.equal(await suspended(), true);
      assert.equal((await fails(client, 'ads_get_optimizer', id)).code, 'feature_disabled');
      assert.equal((await fails(client, 'ads_save_optimizer', saveArgs(id))).code, 'feature_disabled');
      const paused = await ok<{ optimizer: OptimizerResult }>(client, 'ads_pause_optimizer', id);
      assert.equal(paused.optimizer.status, 'paused');
      assert.equal(paused.optimizer.next_review_at, null);
      // Without the feature, an optimizer that is not there is still not found.
      assert.equal(
        (await fails(featureless, 'ads_pause_optimizer', { optimizer_id: randomUUID() })).code,
        'not_found',
      );
    } finally {
      await stack.admin(['enable-feature', 'optimizer', '--workspace', seed.workspaceId]);
    }
    assert.equal(await suspended(), false);
    const after = await ok<{ optimizer: OptimizerResult }>(client, 'ads_get_optimizer', id);
    assert.equal(after.optimizer.status, 'paused');
  });
});
