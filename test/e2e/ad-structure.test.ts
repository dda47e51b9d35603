/**
 * The ad structure tools end to end, through the official MCP client and the real processes:
 * campaigns, ad groups, product feeds, bulk jobs and the geo lookup read from the sandbox, and
 * every ad group and feed change prepared, approved, applied once, with the sandbox's ledger as
 * the witness of what reached the account.
 */
import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import { type SeededStack, startSeededStack } from '@adsmcp/testkit/e2e';
import { connectClient, type McpTestClient } from '@adsmcp/testkit/mcp-clients';
import type { SeedResult, Stack } from '@adsmcp/testkit/stack';
import { sandboxLedger, toolCalls } from '@adsmcp/testkit/tool-calls';
import pg from 'pg';

let e2e: SeededStack;
let stack: Stack;
let seed: SeedResult;
let agent: McpTestClient;
let account: SeedResult['accounts'][number];
let acct: string;

interface Campaign {
  id: string;
  name: string;
  status: string;
  objective: string;
}
interface AdGroup {
  id: string;
  campaign_id: string;
  name: string;
  status: string;
  revision: number;
  bidding_config: { strategy: string; max_bid_micros: number | null };
  product_set: { product_feed_id: string } | null;
  serving_issues?: { code: string }[];
}
interface Feed {
  id: string;
  name: string;
  status: string;
}
interface ChangeView {
  change_id: string;
  status: string;
  digest: string;
  summary: string;
  operation: { method: string; path: string; body: unknown };
  upstream_response?: unknown;
}
interface Paging {
  after: string | null;
  before: string | null;
  has_more: boolean;
}

let campaigns: Campaign[];
let groups: AdGroup[];
let feeds: Feed[];

async function changeCount(): Promise<number> {
  return (await ok<{ total: number }>('ads_list_changes', {})).total;
}

/**
 * Prepares with `tool`, approves as the operator, applies, and checks the ledger: exactly one
 * POST at the operation's path with the reviewed body and the change's idempotency key.
 */
async function prepareApproveApply(
  tool: string,
  args: Record<string, unknown>,
  expected: { path: string; body: unknown },
  ledgerRows: (rows: Awaited<ReturnType<typeof ledger>>) => Awaited<ReturnType<typeof ledger>> = (r) => r,
): Promise<ChangeView> {
  const before = ledgerRows(await ledger(expected.path)).length;
  const prepared = await ok<ChangeView>(tool, { account_id: acct, ...args });
  assert.equal(prepared.status, 'prepared');
  assert.deepEqual(prepared.operation, { method: 'POST', ...expected });
  assert.equal(ledgerRows(await ledger(expected.path)).length, before, 'preparing changed nothing upstream');
  const out = JSON.parse(
    await stack.admin(['approve', prepared.change_id, '--workspace', seed.workspaceId, '--yes']),
  ) as { status: string };
  assert.equal(out.status, 'approved');
  let applied = await ok<ChangeView>('ads_apply_change', {
    change_id: prepared.change_id,
    digest: prepared.digest,
  });
  const deadline = Date.now() + 30_000;
  while (applied.status === 'applying' && Date.now() < deadline) {
    await new Promise((r) => setTimeout(r, 250));
    applied = await ok<ChangeView>('ads_get_change', { change_id: prepared.change_id });
  }
  assert.equal(applied.status, 'applied', JSON.stringify(applied));
  const rows = ledgerRows(await ledger(expected.path));
  assert.equal(rows.length, before + 1, 'applied exactly once');
  const row = rows.at(-1);
  assert.equal(row?.method, 'POST');
  assert.equal(row?.idempotency_key, `change-${prepared.change_id}`);
  assert.deepEqual(row?.request_body ?? {}, expected.body, 'the reviewed payload is the applied payload');
  return applied;
}

async function getGroup(id: string): Promise<AdGroup> {
  return (await ok<{ ad_group: AdGroup }>('ads_get_ad_group', { account_id: acct, ad_group_id: id }))
    .ad_group;
}

const { ok, refused } = toolCalls(() => agent);
/** The sandbox's ledger of mutations applied to the account, for one path. */
const ledger = (path: string) => sandboxLedger(stack, account.upstream_account_id, path);

before(async () => {
  e2e = await startSeededStack({ env: { MCP_RATE_BURST: '500' } });
  ({ stack, seed } = e2e);
  account = seed.accounts.find((a) => a.currency === 'USD') as SeedResult['accounts'][number];
  acct = account.account_id;
  agent = await connectClient('v2-2026', stack.mcpUrl, seed.token);
  campaigns = (await ok<{ campaigns: Campaign[] }>('ads_list_campaigns', { account_id: acct })).campaigns;
  groups = (await ok<{ ad_groups: AdGroup[] }>('ads_list_ad_groups', { account_id: acct })).ad_groups;
  feeds = (await ok<{ product_feeds: Feed[] }>('ads_list_product_feeds', { account_id: acct })).product_feeds;
});

after(async () => {
  await agent?.close();
  await e2e?.stop();
});

const GONE = 'zz_0000000000000000';

describe('reads of the ad structure', () => {
  test('campaigns are listed, filtered and read one by one; bad arguments are named', async () => {
    assert.deepEqual(
      campaigns.map((c) => [c.name, c.status, c.objective]),
      [
        ['Spring Sale', 'active', 'clicks'],
        ['Summer Launch', 'active', 'conversions'],
      ],
    );
    const page = await ok<{ campaigns: Campaign[]; paging: Paging }>('ads_list_campaigns', {
      account_id: acct,
      limit: 1,
      order: 'desc',
    });
    assert.deepEqual(
      page.campaigns.map((c) => c.name),
      ['Summer Launch'],
    );
    assert.equal(page.paging.has_more, true);
    const next = await ok<{ campaigns: Campaign[] }>('ads_list_campaigns', {
      account_id: acct,
      limit: 1,
      order: 'desc',
      after: page.paging.after,
    });
    assert.deepEqual(
      next.campaigns.map((c) => c.name),
      ['Spring Sale'],
    );
    const archived = await ok<{ campaigns: Campaign[] }>('ads_list_campaigns', {
      account_id: acct,
      status: 'archived',
    });
    assert.deepEqual(archived.campaigns, []);
    const one = await ok<{ campaign: Campaign & { budget_micros: number } }>('ads_get_campaign', {
      account_id: acct,
      campaign_id: campaigns[0]?.id,
    });
    assert.equal(one.campaign.name, 'Spring Sale');
    assert.equal(one.campaign.budget_micros, 50_000_000);

    assert.match(
      (await refused('ads_list_campaigns', { account_id: acct, limit: 501 })).message,
      /`limit` must be an integer from 1 to 500/,
    );
    assert.match(
      (await refused('ads_list_campaigns', { account_id: acct, status: 'deleted' })).message,
      /`status` must be one of active, paused, archived/,
    );
    assert.match(
      (await refused('ads_get_campaign', { account_id: acct, campaign_id: campaigns[0]?.id, include: [] }))
        .message,
      /unknown argument `include`/,
    );
    const missing = await refused('ads_get_campaign', { account_id: acct, campaign_id: GONE });
    assert.equal(missing.code, 'not_found');
    assert.match(missing.message, new RegExp(`no campaign ${GONE}`));
  });

  test('ad groups are listed by campaign and name, with serving issues, and read one by one', async () => {
    assert.equal(groups.length, 4);
    const spring = campaigns[0] as Campaign;
    const inSpring = await ok<{ ad_groups: AdGroup[] }>('ads_list_ad_groups', {
      account_id: acct,
      campaign_id: spring.id,
      include: ['serving_issues'],
    });
    assert.deepEqual(
      inSpring.ad_groups.map((g) => g.name),
      ['Spring Sale — Group A', 'Spring Sale — Group B'],
    );
    assert.ok(inSpring.ad_groups.every((g) => Array.isArray(g.serving_issues)));
    const named = await ok<{ ad_groups: AdGroup[]; paging: Paging }>('ads_list_ad_groups', {
      account_id: acct,
      name: 'group b',
      limit: 1,
    });
    assert.deepEqual(
      named.ad_groups.map((g) => g.name),
      ['Spring Sale — Group B'],
    );
    assert.equal(named.paging.has_more, true);
    const back = await ok<{ ad_groups: AdGroup[] }>('ads_list_ad_groups', {
      account_id: acct,
      name: 'group b',
      before: (
        await ok<{ paging: Paging }>('ads_list_ad_groups', {
          account_id: acct,
          name: 'group b',
          limit: 1,
          after: named.paging.after,
        })
      ).paging.before,
    });
    assert.deepEqual(
      back.ad_groups.map((g) => g.name),
      ['Spring Sale — Group B'],
    );
    const one = await getGroup((groups[0] as AdGroup).id);
    assert.equal(one.name, 'Spring Sale — Group A');
    assert.equal(one.bidding_config.strategy, 'fixed_bid');
    assert.equal(one.bidding_config.max_bid_micros, 1_500_000);

    for (const [args, message] of [
      [{ name: 'ab' }, /`name` must be 3 to 1000 characters/],
      [{ name: '   ' }, /`name` must contain a visible character/],
      [{ limit: 0 }, /`limit` must be an integer from 1 to 500/],
      [{ order: 'newest' }, /`order` must be one of asc, desc/],
      [{ include: ['everything'] }, /`include\[0\]` must be one of serving_issues/],
      [{ ad_group_id: 'x' }, /unknown argument `ad_group_id`/],
    ] as const) {
      assert.match((await refused('ads_list_ad_groups', { account_id: acct, ...args })).message, message);
    }
    const missing = await refused('ads_get_ad_group', { account_id: acct, ad_group_id: GONE });
    assert.equal(missing.code, 'not_found');
    assert.match(missing.message, new RegExp(`no ad group ${GONE} in ad account`));
    assert.match(
      (await refused('ads_get_ad_group', { account_id: acct, ad_group_id: '../ads' })).message,
      /`ad_group_id` must be an id of letters, digits/,
    );
  });

  test('product feeds are listed with the ids an ad group product set takes', async () => {
    assert.deepEqual(
      feeds.map((f) => [f.name, f.status]),
      [
        ['Main catalogue', 'active'],
        ['Clearance items', 'active'],
      ],
    );
    const desc = await ok<{ product_feeds: Feed[]; paging: Paging }>('ads_list_product_feeds', {
      account_id: acct,
      order: 'desc',
      limit: 1,
    });
    assert.deepEqual(
      desc.product_feeds.map((f) => f.name),
      ['Clearance items'],
    );
    assert.match(
      (await refused('ads_list_product_feeds', { account_id: acct, limit: 1000 })).message,
      /`limit` must be an integer from 1 to 500/,
    );
    assert.match(
      (await refused('ads_list_product_feeds', { account_id: acct, status: 'paused' })).message,
      /`status` must be one of active, archived/,
    );
    assert.match(
      (await refused('ads_list_product_feeds', { account_id: acct, feed_id: 'x' })).message,
      /unknown argument `feed_id`/,
    );
    assert.match(
      (await refused('ads_list_product_feeds', { account_id: acct, after: 'not-a-cursor' })).message,
      /the ad platform refused the request/,
    );
  });

  test('a bulk job is read with its status; an unknown job is not found', async () => {
    // No tool starts a bulk job yet: one is recorded in the sandbox as the platform would have it.
    const client = new pg.Client({ connectionString: e2e.db.url });
    await client.connect();
    try {
      await client.query(
        `INSERT INTO ads_sandbox.bulk_mutation_jobs (id, account_id, partial_failure, operations, results, created_at)
         VALUES ($1, $2, false, '[]'::jsonb, '[]'::jsonb, now() - interval '1 hour')`,
        ['job_00e2e00000000001', account.upstream_account_id],
      );
    } finally {
      await client.end();
    }
    const { job } = await ok<{ job: { id: string; status: string } }>('ads_get_bulk_job', {
      account_id: acct,
      job_id: 'job_00e2e00000000001',
    });
    assert.equal(job.id, 'job_00e2e00000000001');
    assert.ok(['succeeded', 'failed'].includes(job.status), job.status);
    const missing = await refused('ads_get_bulk_job', { account_id: acct, job_id: GONE });
    assert.equal(missing.code, 'not_found');
    assert.match(missing.message, new RegExp(`no bulk mutation job ${GONE}`));
    assert.match((await refused('ads_get_bulk_job', { account_id: acct })).message, /`job_id` is required/);
    assert.match(
      (await refused('ads_get_bulk_job', { account_id: acct, job_id: 'job_1', verbose: true })).message,
      /unknown argument `verbose`/,
    );
  });

  test('the geo lookup finds regions and DMA codes by name, within the limit', async () => {
    const { locations } = await ok<{ locations: { code: string; name: string; type: string }[] }>(
      'ads_get_geo_lookup',
      { account_id: acct, q: 'California', limit: 3 },
    );
    assert.ok(locations.length >= 1 && locations.length <= 3);
    assert.deepEqual([locations[0]?.code, locations[0]?.type], ['US-CA', 'region']);
    assert.match(
      (await refused('ads_get_geo_lookup', { account_id: acct, q: '' })).message,
      /`q` must be 1 to 200 characters/,
    );
    assert.match((await refused('ads_get_geo_lookup', { account_id: acct })).message, /`q` is required/);
    assert.match(
      (await refused('ads_get_geo_lookup', { account_id: acct, q: 'York', limit: 101 })).message,
      /`limit` must be an integer from 1 to 100/,
    );
    assert.match(
      (await refused('ads_get_geo_lookup', { account_id: acct, q: 'York', country: 'US' })).message,
      /unknown argument `country`/,
    );
  });
});

describe('ad group and product feed changes: prepare, approve, apply once', () => {
  test('an ad group is created as reviewed, with its money in exact micros', async () => {
    const spring = campaigns[0] as Campaign;
    const body = {
      campaign_id: spring.id,
      name: 'Spring Sale — Group C',
      description: 'Returning visitors',
      context_hints: ['gardening'],
      status: 'paused',
      bidding_config: {
        billing_event_type: 'click',
        strategy: 'fixed_bid',
        max_bid_micros: 30_400_000_000_000,
      },
      product_set: {
        product_feed_id: (feeds[0] as Feed).id,
        filters: [{ field: 'price', operator: 'lte', values: ['49.99'] }],
      },
      landing_page_configuration: { query_string_template: 'utm_source=ads' },
    };
    const applied = await prepareApproveApply(
      'ads_create_ad_group',
      { body },
      { path: '/ad_groups', body },
      (rows) => rows.filter((r) => (r.request_body as { name?: string }).name === body.name),
    );
    const created = applied.upstream_response as AdGroup;
    const live = await getGroup(created.id);
    assert.equal(live.name, body.name);
    assert.equal(live.status, 'paused');
    assert.equal(live.bidding_config.max_bid_micros, 30_400_000_000_000);
    assert.equal(live.product_set?.product_feed_id, (feeds[0] as Feed).id);
  });

  test('an ad group update merges the bidding fields and reaches the account once', async () => {
    const group = groups[0] as AdGroup;
    const body = {
      bidding_config: { max_bid_micros: 2_250_000 },
      description: null,
      name: 'Spring Sale — Group A (v2)',
    };
    const applied = await prepareApproveApply(
      'ads_update_ad_group',
      { ad_group_id: group.id, body },
      { path: `/ad_groups/${group.id}`, body },
    );
    assert.match(applied.summary, /bidding_config.max_bid_micros 1500000 → 2250000/);
    const live = await getGroup(group.id);
    assert.equal(live.name, body.name);
    assert.equal(live.bidding_config.strategy, 'fixed_bid', 'the fields not supplied are kept');
    assert.equal(live.bidding_config.max_bid_micros, 2_250_000);
  });

  test('an ad group is paused, activated and archived, each once', async () => {
    const group = groups[1] as AdGroup;
    for (const [tool, effect, status] of [
      ['ads_pause_ad_group', 'pause', 'paused'],
      ['ads_activate_ad_group', 'activate', 'active'],
      ['ads_archive_ad_group', 'archive', 'archived'],
    ] as const) {
      await prepareApproveApply(
        tool,
        { ad_group_id: group.id },
        { path: `/ad_groups/${group.id}/${effect}`, body: {} },
      );
      assert.equal((await getGroup(group.id)).status, status);
    }
    // An archived ad group is final: activating it is refused when it is prepared.
    const before = await changeCount();
    const err = await refused('ads_activate_ad_group', { account_id: acct, ad_group_id: group.id });
    assert.equal(err.code, 'failed_precondition');
    assert.match(err.message, /is archived; an archived ad group cannot be changed/);
    assert.match(
      (await refused('ads_pause_ad_group', { account_id: acct, ad_group_id: group.id })).message,
      /is archived/,
    );
    assert.equal(await changeCount(), before, 'a refused change records nothing');
    assert.deepEqual(await ledger(`/ad_groups/${group.id}/activate`).then((r) => r.length), 1);
  });

  test('a product feed is archived once; archiving it again would change nothing', async () => {
    const feed = feeds[1] as Feed;
    await prepareApproveApply(
      'ads_archive_product_feed',
      { feed_id: feed.id },
      { path: `/feeds/${feed.id}/archive`, body: {} },
    );
    const archived = await ok<{ product_feeds: Feed[] }>('ads_list_product_feeds', {
      account_id: acct,
      status: 'archived',
    });
    assert.deepEqual(
      archived.product_feeds.map((f) => f.id),
      [feed.id],
    );
    const again = await refused('ads_archive_product_feed', { account_id: acct, feed_id: feed.id });
    assert.equal(again.code, 'failed_precondition');
    assert.match(
      again.message,
      /nothing would change: product feed "Clearance items" .* is already archived/,
    );
    const missing = await refused('ads_archive_product_feed', { account_id: acct, feed_id: GONE });
    assert.equal(missing.code, 'not_found');
  });

  test('prepare refuses a no-op, a fixed bid without its amount and a new archived ad group, recording nothing', async () => {
    const group = groups[2] as AdGroup;
    const before = await changeCount();
    const noop = await refused('ads_update_ad_group', {
      account_id: acct,
      ad_group_id: group.id,
      body: { name: group.name, status: group.status },
    });
    assert.equal(noop.code, 'failed_precondition');
    assert.match(noop.message, /^nothing would change: name is already ".*"; status is already "active"$/);
    // Group B of the summer campaign (not archived here) lets the platform bid: a fixed bid needs its amount.
    const platformBid = groups[3] as AdGroup;
    assert.equal(platformBid.bidding_config.max_bid_micros, null);
    const fixed = await refused('ads_update_ad_group', {
      account_id: acct,
      ad_group_id: platformBid.id,
      body: { bidding_config: { strategy: 'fixed_bid' } },
    });
    assert.equal(fixed.code, 'invalid_argument');
    assert.match(
      fixed.message,
      /`body.bidding_config.max_bid_micros` is required with the strategy "fixed_bid"/,
    );
    const newFixed = await refused('ads_create_ad_group', {
      account_id: acct,
      body: {
        campaign_id: (campaigns[0] as Campaign).id,
        name: 'No bid',
        status: 'active',
        bidding_config: { billing_event_type: 'click', strategy: 'fixed_bid' },
      },
    });
    assert.match(newFixed.message, /max_bid_micros` is required with the strategy "fixed_bid"/);
    const archived = await refused('ads_create_ad_group', {
      account_id: acct,
      body: {
        campaign_id: (campaigns[0] as Campaign).id,
        name: 'Born archived',
        status: 'archived',
        bidding_config: { billing_event_type: 'click' },
      },
    });
    assert.match(archived.message, /`body.status` must be one of active, paused/);
    const moved = await refused('ads_update_ad_group', {
      account_id: acct,
      ad_group_id: group.id,
      body: {
        campaign_id:
          (campaigns[0] as Campaign).id === group.campaign_id
            ? (campaigns[1] as Campaign).id
            : (campaigns[0] as Campaign).id,
      },
    });
    assert.match(moved.message, /cannot move to another campaign/);
    for (const [body, message] of [
      [
        { bidding_config: { max_bid_micros: 30_400_000_000_001 } },
        /`body.bidding_config.max_bid_micros` must be an integer from 1 to 30400000000000/,
      ],
      [
        {
          bidding_config: {
            custom_audience_bid_multipliers: [{ custom_audience_id: 'ca_1', bid_multiplier_micros: 99_999 }],
          },
        },
        /bid_multiplier_micros` must be an integer from 100000 to 10000000/,
      ],
      [
        { product_set: { filters: [{ field: 'price', operator: 'between', values: ['1'] }] } },
        /`body.product_set.filters\[0\].operator` must be one of in, not_in/,
      ],
      [
        { context_hints: Array.from({ length: 2001 }, () => 'x') },
        /`body.context_hints` must have at most 2000 items/,
      ],
      // Every hint within its bounds, but 1.2 MB in all: more than the platform takes in one request.
      [
        { context_hints: Array.from({ length: 2000 }, (_, i) => `${i} ${'h'.repeat(600)}`) },
        /^body is \d+ bytes as JSON, over the 1048576 bytes \(1 MiB\) the ad platform takes in one request: the change could never be sent/,
      ],
      [{ revision: 4 }, /unknown property of `body` `revision`/],
    ] as const) {
      assert.match(
        (await refused('ads_update_ad_group', { account_id: acct, ad_group_id: group.id, body })).message,
        message,
      );
    }
    assert.equal(await changeCount(), before, 'a refused change records nothing');
  });
});
