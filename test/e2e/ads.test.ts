/**
 * Reading ads end to end: official MCP clients -> gateway -> upstream-proxy -> ads sandbox, every
 * process real, against a seeded demo account (12 ads: 2 campaigns x 2 ad groups x 3 ads).
 */
import assert from 'node:assert/strict';
import { after, afterEach, before, describe, test } from 'node:test';
import { newWorkspaceToken, type SeededStack, startSeededStack } from '@adsmcp/testkit/e2e';
import { CLIENT_KINDS, connectClient, type McpTestClient } from '@adsmcp/testkit/mcp-clients';
import type { SeedResult, Stack } from '@adsmcp/testkit/stack';

interface Ad {
  id: string;
  account_id: string;
  ad_group_id: string;
  name: string;
  status: string;
  serving_issues?: { code: string; message: string }[];
}
interface Page {
  ads: Ad[];
  paging: { after: string | null; before: string | null; has_more: boolean };
}
interface ToolError {
  error: { code: string; message: string; retry_after_seconds?: number };
}

let e2e: SeededStack;
let stack: Stack;
let seed: SeedResult;
/** The demo workspace's USD account. */
let accountId: string;
let readOnlyToken: string;
let otherWorkspaceToken: string;
const clients: McpTestClient[] = [];

before(async () => {
  e2e = await startSeededStack();
  ({ stack, seed } = e2e);
  const usd = seed.accounts.find((a) => a.currency === 'USD');
  assert.ok(usd, 'the demo seed has no USD account');
  accountId = usd.account_id;
  readOnlyToken = (
    JSON.parse(
      await stack.admin([
        'create-token',
        '--workspace',
        seed.workspaceId,
        '--scopes',
        'read',
        '--name',
        'reader',
      ]),
    ) as { token: string }
  ).token;
  otherWorkspaceToken = (await newWorkspaceToken(stack, 'Another workspace')).token;
});

afterEach(async () => {
  for (const c of clients.splice(0)) await c.close();
  await sandboxFaults('DELETE');
});

after(async () => {
  await e2e?.stop();
});

async function client(
  kind: (typeof CLIENT_KINDS)[number] = 'v2-2026',
  token = seed.token,
): Promise<McpTestClient> {
  const c = await connectClient(kind, stack.mcpUrl, token);
  clients.push(c);
  return c;
}

/** Calls a tool that must succeed and returns its structured result. */
async function ok<T>(c: McpTestClient, name: string, args: Record<string, unknown>): Promise<T> {
  const res = await c.callTool(name, args);
  assert.notEqual(res.isError, true, JSON.stringify(res.structuredContent));
  const text = (res.content[0] as { text: string }).text;
  assert.deepEqual(JSON.parse(text), res.structuredContent);
  return res.structuredContent as T;
}

/** Calls a tool that must fail and returns its error. */
async function fails(
  c: McpTestClient,
  name: string,
  args: Record<string, unknown>,
): Promise<ToolError['error']> {
  const res = await c.callTool(name, args);
  assert.equal(res.isError, true, JSON.stringify(res.structuredContent));
  return (res.structuredContent as unknown as ToolError).error;
}

/** Queues (POST) or clears (DELETE) faults on the ads sandbox, as its operator. */
async function sandboxFaults(method: 'POST' | 'DELETE', fault?: Record<string, unknown>): Promise<void> {
  const res = await fetch(`${stack.urls['ads-sandbox']}/_sandbox/faults`, {
    method,
    headers: {
      authorization: `Bearer ${stack.secrets.sandboxAdminToken}`,
      ...(fault ? { 'content-type': 'application/json' } : {}),
    },
    ...(fault ? { body: JSON.stringify(fault) } : {}),
  });
  assert.ok(res.ok, `sandbox refused the fault: ${res.status} ${await res.text()}`);
}

/** Every ad of the account, in one page. */
async function allAds(c: McpTestClient): Promise<Ad[]> {
  return (await ok<Page>(c, 'ads_list_ads', { account_id: accountId, limit: 500 })).ads;
}

describe('ads_list_ads', () => {
  for (const kind of CLIENT_KINDS) {
    test(`${kind}: pages forward through all 12 ads, 5 at a time, each ad once`, async () => {
      const c = await client(kind);
      const sizes: number[] = [];
      const ids: string[] = [];
      let cursor: string | undefined;
      for (let page = 0; page < 5; page++) {
        const res = await ok<Page>(c, 'ads_list_ads', {
          account_id: accountId,
          limit: 5,
          ...(cursor === undefined ? {} : { after: cursor }),
        });
        sizes.push(res.ads.length);
        ids.push(...res.ads.map((a) => a.id));
        if (!res.paging.has_more) {
          assert.equal(res.paging.after, null);
          break;
        }
        assert.ok(res.paging.after, 'has_more without an after cursor');
        cursor = res.paging.after;
      }
      assert.deepEqual(sizes, [5, 5, 2]);
      assert.equal(new Set(ids).size, 12);
      assert.deepEqual(
        ids,
        (await allAds(c)).map((a) => a.id),
      );
    });
  }

  test('pages back with before, and lists newest first with order desc', async () => {
    const c = await client();
    const all = await allAds(c);
    const first = await ok<Page>(c, 'ads_list_ads', { account_id: accountId, limit: 5 });
    const second = await ok<Page>(c, 'ads_list_ads', {
      account_id: accountId,
      limit: 5,
      after: first.paging.after,
    });
    assert.ok(second.paging.before);
    const back = await ok<Page>(c, 'ads_list_ads', {
      account_id: accountId,
      limit: 5,
      before: second.paging.before,
    });
    assert.deepEqual(
      back.ads.map((a) => a.id),
      first.ads.map((a) => a.id),
    );
    const desc = await ok<Page>(c, 'ads_list_ads', { account_id: accountId, order: 'desc', limit: 500 });
    assert.deepEqual(
      desc.ads.map((a) => a.id),
      all.map((a) => a.id).reverse(),
    );
  });

  test('filters by ad_group_id and by name', async () => {
    const c = await client();
    const all = await allAds(c);
    const group = all[0]?.ad_group_id as string;
    const inGroup = await ok<Page>(c, 'ads_list_ads', { account_id: accountId, ad_group_id: group });
    assert.deepEqual(
      inGroup.ads.map((a) => a.id),
      all.filter((a) => a.ad_group_id === group).map((a) => a.id),
    );
    assert.equal(inGroup.ads.length, 3);

    const named = await ok<Page>(c, 'ads_list_ads', {
      account_id: accountId,
      name: 'Summer Launch — Group B',
    });
    assert.equal(named.ads.length, 3);
    for (const a of named.ads) assert.match(a.name, /Summer Launch — Group B/);
  });

  test('adds serving issues only when include asks for them', async () => {
    const c = await client();
    const plain = await allAds(c);
    assert.ok(plain.every((a) => !('serving_issues' in a)));
    const withIssues = (
      await ok<Page>(c, 'ads_list_ads', { account_id: accountId, limit: 500, include: ['serving_issues'] })
    ).ads;
    assert.equal(withIssues.length, 12);
    assert.ok(withIssues.every((a) => Array.isArray(a.serving_issues)));
    const paused = withIssues.filter((a) => a.status === 'paused');
    assert.ok(paused.length > 0);
    for (const a of paused) assert.ok(a.serving_issues?.some((i) => i.code === 'paused'));
  });

  test('lets a read-only credential read', async () => {
    const c = await client('v1', readOnlyToken);
    assert.equal((await allAds(c)).length, 12);
  });

  test('retries a passing platform failure, so the agent still gets its page', async () => {
    const c = await client();
    const upstreamAccount = (await allAds(c))[0]?.account_id;
    await sandboxFaults('POST', {
      account_id: upstreamAccount,
      path_prefix: '/ads',
      kind: 'status_500',
      count: 1,
    });
    const page = await ok<Page>(c, 'ads_list_ads', { account_id: accountId, limit: 5 });
    assert.equal(page.ads.length, 5);
  });

  test('passes on a long platform rate limit as rate_limited with the seconds to wait', async () => {
    const c = await client();
    const upstreamAccount = (await allAds(c))[0]?.account_id;
    await sandboxFaults('POST', {
      account_id: upstreamAccount,
      path_prefix: '/ads',
      kind: 'rate_limit',
      count: 3,
      retry_after_seconds: 30,
    });
    const err = await fails(c, 'ads_list_ads', { account_id: accountId });
    assert.equal(err.code, 'rate_limited');
    assert.equal(err.retry_after_seconds, 30);
    assert.match(err.message, /retry in 30 s/);
  });

  test('passes on the platform’s own refusal of an argument as invalid_argument with its message', async () => {
    const c = await client();
    const err = await fails(c, 'ads_list_ads', { account_id: accountId, after: 'not-a-cursor' });
    assert.equal(err.code, 'invalid_argument');
    assert.match(
      err.message,
      /the ad platform refused the request \(field after\): after is not a valid cursor/,
    );
  });
});

describe('ads_get_ad', () => {
  test('returns an ad from the list as the list showed it, and its serving issues on request', async () => {
    const c = await client('v2-2025');
    const listed = (await allAds(c))[4] as Ad;
    const { ad } = await ok<{ ad: Ad }>(c, 'ads_get_ad', { account_id: accountId, ad_id: listed.id });
    assert.deepEqual(ad, listed);
    const detailed = await ok<{ ad: Ad }>(c, 'ads_get_ad', {
      account_id: accountId,
      ad_id: listed.id,
      include: ['serving_issues'],
    });
    assert.ok(Array.isArray(detailed.ad.serving_issues));
  });

  test('answers an unknown ad with not_found naming the ad and the account', async () => {
    const c = await client();
    const err = await fails(c, 'ads_get_ad', { account_id: accountId, ad_id: 'ad_0000000000000000' });
    assert.equal(err.code, 'not_found');
    assert.match(err.message, new RegExp(`^no ad ad_0000000000000000 in ad account ${accountId};`));
  });

  test('refuses an ad_id that would change the path, naming the argument', async () => {
    const c = await client();
    for (const adId of ['..', 'ads/../me']) {
      const err = await fails(c, 'ads_get_ad', { account_id: accountId, ad_id: adId });
      assert.equal(err.code, 'invalid_argument');
      // A slash is refused by the argument's pattern; ".." by the path check that guards every route.
      assert.match(err.message, /`ad_id` must be an id (as the platform gives it|of letters, digits)/);
    }
  });
});

describe('the ad tools and other workspaces', () => {
  test("answers another workspace's account with not_found, for both tools", async () => {
    const c = await client('v2-2026', otherWorkspaceToken);
    for (const [name, args] of [
      ['ads_list_ads', { account_id: accountId }],
      ['ads_get_ad', { account_id: accountId, ad_id: 'ad_1' }],
    ] as const) {
      const err = await fails(c, name, args);
      assert.equal(err.code, 'not_found');
      assert.equal(err.message, `no ad account ${accountId} in this workspace; ads_list_accounts lists them`);
    }
  });
});

describe('ad tool arguments', () => {
  const cases: [string, Record<string, unknown>, RegExp][] = [
    ['limit 501', { limit: 501 }, /`limit` must be an integer from 1 to 500 \(got 501\)/],
    ['order "up"', { order: 'up' }, /`order` must be one of asc, desc \(got "up"\)/],
    ['an unknown argument', { sort: 'name' }, /unknown argument `sort`/],
    ['include ["x"]', { include: ['x'] }, /`include\[0\]` must be one of serving_issues \(got "x"\)/],
    ['a blank name', { name: '    ' }, /`name` must contain a visible character, not only white space/],
    ['an account_id that is not a UUID', { account_id: 'acct-1' }, /`account_id` must be a UUID/],
    [
      'a cursor no platform gave, longer once encoded than a query value may be',
      { before: '\u{1F600}'.repeat(2048) },
      /`before` must be a cursor as the platform gives it \(visible ASCII characters, no spaces\)/,
    ],
  ];
  for (const [what, args, message] of cases) {
    test(`refuses ${what} as invalid_argument naming it`, async () => {
      const c = await client('v1');
      const err = await fails(c, 'ads_list_ads', { account_id: accountId, ...args });
      assert.equal(err.code, 'invalid_argument');
      assert.match(err.message, message);
    });
  }

  test('publishes both tools as read-only, open-world tools with their bounds', async () => {
    const c = await client();
    const { tools } = await c.listTools();
    const byName = new Map(tools.map((t) => [t.name, t]));
    for (const name of ['ads_get_ad', 'ads_list_ads']) {
      const tool = byName.get(name);
      assert.equal(tool?.annotations?.readOnlyHint, true, name);
      assert.equal(tool?.annotations?.openWorldHint, true, name);
    }
    const schema = byName.get('ads_list_ads')?.inputSchema as {
      properties: Record<string, Record<string, unknown>>;
      required: string[];
      additionalProperties: boolean;
    };
    assert.deepEqual(schema.required, ['account_id']);
    assert.equal(schema.additionalProperties, false);
    assert.deepEqual(Object.keys(schema.properties).sort(), [
      'account_id',
      'ad_group_id',
      'after',
      'before',
      'include',
      'limit',
      'name',
      'order',
    ]);
    assert.deepEqual([schema.properties.limit?.minimum, schema.properties.limit?.maximum], [1, 500]);
  });
});
