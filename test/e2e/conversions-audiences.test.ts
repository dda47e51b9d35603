/**
 * Insights, conversion tracking and custom audiences, end to end through the official MCP client:
 * every read with valid and invalid arguments, and every prepare tool through prepare, approval
 * and apply, with the sandbox's ledger as the witness of exactly one upstream POST carrying the
 * reviewed body.
 */
import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import { type SeededStack, startSeededStack } from '@adsmcp/testkit/e2e';
import { connectClient, type McpTestClient } from '@adsmcp/testkit/mcp-clients';
import type { SeedResult, Stack } from '@adsmcp/testkit/stack';
import { sandboxLedger, toolCalls } from '@adsmcp/testkit/tool-calls';

let e2e: SeededStack;
let stack: Stack;
let seed: SeedResult;
let agent: McpTestClient;
let account: SeedResult['accounts'][number];
let accountId: string;
let ad: { id: string; ad_group_id: string };
/** The account's current local date, as the platform's insights report it. */
let localToday: string;

interface ChangeView {
  change_id: string;
  status: string;
  digest: string;
  summary: string;
  operation: { method: string; path: string; body: unknown };
  upstream_response: unknown;
}
interface Audience {
  id: string;
  name: string;
  status: string;
  revision: number;
  matched_count: number | null;
}
type Row = Record<string, unknown> & { preliminary: boolean };

async function applied(changeId: string, digest: string): Promise<ChangeView> {
  let c = await ok<ChangeView>('ads_apply_change', { change_id: changeId, digest });
  const deadline = Date.now() + 30_000;
  while (c.status !== 'applied' && c.status !== 'failed' && Date.now() < deadline) {
    await new Promise((r) => setTimeout(r, 250));
    c = await ok<ChangeView>('ads_get_change', { change_id: changeId });
  }
  return c;
}

/**
 * Prepares with `tool`, checks nothing reached the platform, approves as an operator, applies,
 * and checks the ledger holds exactly one POST to `path` with the reviewed body and the change's key.
 */
async function throughApproval(
  tool: string,
  args: Record<string, unknown>,
  path: string,
  body: unknown,
): Promise<ChangeView> {
  const prepared = await ok<ChangeView>(tool, { account_id: accountId, ...args });
  assert.equal(prepared.status, 'prepared');
  assert.deepEqual(prepared.operation, { method: 'POST', path, body });
  const before = (await ledger(path)).length;
  await stack.admin(['approve', prepared.change_id, '--workspace', seed.workspaceId, '--yes']);
  assert.equal((await ledger(path)).length, before, 'approving changed nothing upstream');
  const final = await applied(prepared.change_id, prepared.digest);
  assert.equal(final.status, 'applied', JSON.stringify(final));
  const rows = (await ledger(path)).filter((r) => r.idempotency_key === `change-${prepared.change_id}`);
  assert.equal(rows.length, 1, 'applied exactly once');
  assert.equal(rows[0]?.method, 'POST');
  assert.deepEqual(rows[0]?.request_body, body, 'the reviewed payload is the applied payload');
  assert.equal((await ledger(path)).length, before + 1, 'one upstream POST, no other');
  return { ...final, summary: prepared.summary };
}

async function audiences(): Promise<Audience[]> {
  const res = await ok<{ custom_audiences: Audience[] }>('ads_list_custom_audiences', {
    account_id: accountId,
    matched_count_granularity: 'granular',
  });
  return res.custom_audiences;
}

async function audienceNamed(name: string): Promise<Audience> {
  const found = (await audiences()).find((a) => a.name === name);
  assert.ok(found, `the seeded audience ${name}`);
  return found;
}

const { ok, refused } = toolCalls(() => agent);
/** The sandbox's ledger of mutations applied to the account, for one path. */
const ledger = (path: string) => sandboxLedger(stack, account.upstream_account_id, path);

before(async () => {
  e2e = await startSeededStack({ env: { MCP_RATE_BURST: '500' } });
  ({ stack, seed } = e2e);
  account = seed.accounts.find((a) => a.currency === 'USD') as SeedResult['accounts'][number];
  accountId = account.account_id;
  agent = await connectClient('v2-2026', stack.mcpUrl, seed.token);
  const list = await ok<{ ads: (typeof ad)[] }>('ads_list_ads', { account_id: accountId, limit: 1 });
  ad = list.ads[0] as typeof ad;
  const today = await ok<{ insights: { date_start: string }[] }>('ads_get_ad_insights', {
    account_id: accountId,
    ad_id: ad.id,
    time_granularity: 'daily',
  });
  localToday = today.insights.at(-1)?.date_start as string;
});

after(async () => {
  await agent?.close();
  await e2e?.stop();
});

describe('insights', () => {
  test('ad group insights by day mark the current account-local day preliminary', async () => {
    const res = await ok<{
      insights: Row[];
      paging: { has_more: boolean };
      currency: string;
      time_zone: string;
    }>('ads_get_ad_group_insights', {
      account_id: accountId,
      ad_group_id: ad.ad_group_id,
      time_granularity: 'daily',
      fields: ['impressions', 'clicks', 'conversions'],
      includes: ['entity_name', 'totals'],
    });
    assert.equal(res.currency, 'USD');
    assert.ok(res.time_zone.length > 0);
    // The default range is the last 7 local days, today included: today alone is preliminary.
    assert.equal(res.insights.length, 7);
    assert.deepEqual(
      res.insights.map((r) => r.preliminary),
      [false, false, false, false, false, false, true],
    );
    assert.equal(res.insights[0]?.ad_group_id, ad.ad_group_id);
    assert.ok(typeof res.insights[0]?.impressions === 'number');
    assert.ok('totals' in res, 'totals when asked');
  });

  test('ad group insights per ad, segmented, sorted, filtered and paged', async () => {
    const args = {
      account_id: accountId,
      ad_group_id: ad.ad_group_id,
      aggregation_level: 'ad',
      time_ranges: ['2026-01-01..2026-01-07'],
      segments: ['device'],
      sort: ['clicks:desc'],
      filters: ['impressions:gte:0'],
      limit: 2,
    };
    const first = await ok<{ insights: Row[]; paging: { after: string; has_more: boolean } }>(
      'ads_get_ad_group_insights',
      args,
    );
    assert.equal(first.insights.length, 2);
    assert.ok(Number(first.insights[0]?.clicks) >= Number(first.insights[1]?.clicks));
    assert.ok(first.insights.every((r) => typeof r.ad_id === 'string' && typeof r.device === 'string'));
    assert.equal(first.paging.has_more, true);
    const next = await ok<{ insights: Row[] }>('ads_get_ad_group_insights', {
      ...args,
      after: first.paging.after,
    });
    assert.ok(next.insights.length > 0);
  });

  test('the largest insights page, 2000 rows with every metric, totals and entity names, is read whole', async () => {
    const res = await ok<{ insights: Row[]; paging: { has_more: boolean }; totals: unknown }>(
      'ads_get_ad_group_insights',
      {
        account_id: accountId,
        ad_group_id: ad.ad_group_id,
        aggregation_level: 'ad',
        time_granularity: 'daily',
        time_ranges: ['2026-01-01..2026-04-03'],
        segments: ['device', 'country'],
        fields: [
          'impressions',
          'clicks',
          'ctr',
          'spend_micros',
          'cpc_micros',
          'conversions',
          'conversion_value_micros',
          'view_through_conversions',
          'click_through_conversions',
          'cpm_micros',
          'conversion_rate',
          'cpa_micros',
          'roas',
        ],
        includes: ['entity_name', 'totals'],
        limit: 2000,
      },
    );
    assert.equal(res.insights.length, 2000);
    assert.equal(res.paging.has_more, true);
    assert.ok(res.totals !== undefined);
  });

  test('ad insights for one ad', async () => {
    const res = await ok<{ insights: Row[] }>('ads_get_ad_insights', {
      account_id: accountId,
      ad_id: ad.id,
      time_ranges: ['2026-01-01..2026-01-31'],
      time_granularity: 'weekly',
      segments: ['country', 'device'],
      override_segment_group_order: ['device', 'country'],
    });
    assert.ok(res.insights.length > 0);
    assert.ok(res.insights.every((r) => r.ad_id === ad.id && r.preliminary === false));
  });

  test('bad insight arguments are refused, naming the argument and the rule', async () => {
    const base = { account_id: accountId, ad_group_id: ad.ad_group_id };
    const limit = await refused('ads_get_ad_group_insights', { ...base, limit: 2001 });
    assert.equal(limit.code, 'invalid_argument');
    assert.match(limit.message, /limit.*from 1 to 2000/);
    const range = await refused('ads_get_ad_group_insights', { ...base, time_ranges: ['last week'] });
    assert.match(range.message, /time_ranges\[0\].*YYYY-MM-DD\.\.YYYY-MM-DD/);
    const level = await refused('ads_get_ad_insights', {
      account_id: accountId,
      ad_id: ad.id,
      aggregation_level: 'ad_group',
    });
    assert.match(level.message, /aggregation_level.*one of ad/);
    const unknown = await refused('ads_get_ad_insights', {
      account_id: accountId,
      ad_id: ad.id,
      metric: 'x',
    });
    assert.match(unknown.message, /unknown argument `metric`/);
    // A sort on a field the platform does not know passes the gateway and is refused by the platform.
    const sort = await refused('ads_get_ad_group_insights', { ...base, sort: ['bogus:asc'] });
    assert.equal(sort.code, 'invalid_argument');
    assert.match(sort.message, /the ad platform refused the request \(field sort/);
    const missing = await refused('ads_get_ad_insights', { account_id: accountId, ad_id: 'ad_nope' });
    assert.equal(missing.code, 'not_found');
    assert.match(missing.message, /no ad ad_nope/);
    // Ids and cursors the platform never gives are refused by the argument's own name, whatever
    // their length once encoded for the platform.
    const longId = await refused('ads_get_ad_group_insights', {
      ...base,
      ad_group_id: '\u{1F600}'.repeat(255),
    });
    assert.equal(longId.code, 'invalid_argument');
    assert.match(longId.message, /`ad_group_id` must be an id of letters, digits/);
    const adId = await refused('ads_get_ad_insights', { account_id: accountId, ad_id: 'é'.repeat(255) });
    assert.match(adId.message, /`ad_id` must be an id of letters, digits/);
    const longCursor = await refused('ads_get_ad_group_insights', {
      ...base,
      after: '\u{1F600}'.repeat(2048),
    });
    assert.equal(longCursor.code, 'invalid_argument');
    assert.match(longCursor.message, /`after` must be a cursor as the platform gives it/);
  });
});

describe('conversions', () => {
  test('pixels, their sampled events and the event settings are listed; the events carry no personal data', async () => {
    const sources = await ok<{ conversion_sources: { id: string; name: string }[]; paging: unknown }>(
      'ads_list_conversion_sources',
      { account_id: accountId, limit: 10, order: 'asc' },
    );
    const pixel = sources.conversion_sources.find((p) => p.name === 'Website pixel');
    assert.ok(pixel, 'the seeded pixel');
    const events = await ok<{ events: Record<string, unknown>[]; sampled: boolean }>(
      'ads_list_conversion_events',
      {
        account_id: accountId,
        pid: pixel.id,
        limit: 5,
      },
    );
    assert.equal(events.events.length, 5);
    assert.equal(events.sampled, true);
    for (const e of events.events) {
      for (const personal of ['ip', 'ip_address', 'user_agent', 'email', 'phone', 'click_id'])
        assert.ok(!(personal in e), `an event never carries ${personal}`);
    }
    const settings = await ok<{ event_settings: { name: string }[] }>('ads_list_conversion_event_settings', {
      account_id: accountId,
      limit: 500,
    });
    assert.ok(settings.event_settings.some((s) => s.name === 'Purchases'));
  });

  test('bad conversion reads are refused', async () => {
    assert.match(
      (await refused('ads_list_conversion_events', { account_id: accountId, pid: '' })).message,
      /pid/,
    );
    assert.match(
      (await refused('ads_list_conversion_events', { account_id: accountId, pid: 'px_1', limit: 51 }))
        .message,
      /limit.*from 1 to 50/,
    );
    const unknownPixel = await refused('ads_list_conversion_events', {
      account_id: accountId,
      pid: 'px_nope',
    });
    assert.equal(unknownPixel.code, 'not_found');
    assert.match(
      (await refused('ads_list_conversion_sources', { account_id: accountId, limit: 501 })).message,
      /limit.*from 1 to 500/,
    );
    assert.match(
      (await refused('ads_list_conversion_event_settings', { account_id: accountId, order: 'newest' }))
        .message,
      /order.*one of asc, desc/,
    );
  });

  test('conversion insights are a read made with POST: totals by day, today preliminary, nothing in the ledger', async () => {
    const res = await ok<{ insights: Row[]; currency: string; aggregation_level: string }>(
      'ads_post_conversion_insights',
      {
        account_id: accountId,
        body: {
          aggregation_level: 'ad_group',
          time_ranges: [lastDays(3)],
          time_granularity: 'daily',
          entity_ids: [ad.ad_group_id],
          group_by_entity: true,
          include_zero_rows: true,
        },
      },
    );
    assert.equal(res.aggregation_level, 'ad_group');
    assert.equal(res.currency, 'USD');
    assert.equal(res.insights.length, 3);
    assert.ok(res.insights.every((r) => r.entity_id === ad.ad_group_id && typeof r.conversions === 'number'));
    assert.equal(res.insights.at(-1)?.preliminary, true);
    assert.deepEqual(await ledger('/conversions/insights'), [], 'a read is never a mutation');
  });

  test('a read-only credential may run the conversion report, a read made with POST, but not prepare a pixel', async () => {
    const issued = JSON.parse(
      await stack.admin(['create-token', '--workspace', seed.workspaceId, '--scopes', 'read']),
    ) as { token: string };
    const reader = await connectClient('v2-2026', stack.mcpUrl, issued.token);
    try {
      const report = await reader.callTool('ads_post_conversion_insights', {
        account_id: accountId,
        body: { aggregation_level: 'account', time_ranges: [lastDays(2)] },
      });
      assert.equal(report.isError, undefined, JSON.stringify(report.structuredContent));
      assert.ok(Array.isArray((report.structuredContent as { insights: unknown[] }).insights));
      // The gateway refuses the prepare itself (HTTP 403 with an insufficient_scope challenge),
      // before any service is asked; the v2 client surfaces the challenge as its own error.
      await assert.rejects(
        reader.callTool('ads_create_conversion_source', {
          account_id: accountId,
          body: { name: 'Reader pixel', client_type: 'web' },
        }),
        (err: unknown) => {
          const e = err as { name?: string; requiredScope?: string; errorDescription?: string };
          assert.equal(e.name, 'InsufficientScopeError');
          assert.equal(e.requiredScope, 'read write');
          assert.equal(
            e.errorDescription,
            'ads_create_conversion_source needs the write scope; this token has read',
          );
          return true;
        },
      );
    } finally {
      await reader.close();
    }
  });

  test('bad conversion insight bodies are refused', async () => {
    const missing = await refused('ads_post_conversion_insights', {
      account_id: accountId,
      body: { aggregation_level: 'account' },
    });
    assert.equal(missing.code, 'invalid_argument');
    assert.match(missing.message, /time_ranges.*required/);
    const breakdown = await refused('ads_post_conversion_insights', {
      account_id: accountId,
      body: { aggregation_level: 'account', time_ranges: [lastDays(2)], breakdown: 'age' },
    });
    assert.match(breakdown.message, /breakdown.*one of device, country/);
    const entity = await refused('ads_post_conversion_insights', {
      account_id: accountId,
      body: { aggregation_level: 'ad', time_ranges: [lastDays(2)], entity_ids: ['ad_nope'] },
    });
    assert.match(entity.message, /the ad platform refused the request \(field entity_ids\.0\)/);
    const noEntity = await refused('ads_post_conversion_insights', {
      account_id: accountId,
      body: { aggregation_level: 'ad', time_ranges: [lastDays(2)], entity_ids: [] },
    });
    assert.match(noEntity.message, /`body\.entity_ids` must have 1 to 100 items \(got 0\)/);
  });

  test('creating a pixel and an event setting on it: prepare, approve, apply once with the reviewed body', async () => {
    const pixelBody = { name: 'Checkout pixel', client_type: 'web' };
    const pixel = await throughApproval(
      'ads_create_conversion_source',
      { body: pixelBody },
      '/conversions/pixels',
      pixelBody,
    );
    assert.match(pixel.summary, /^Create conversion source "Checkout pixel" on /);
    const pixelId = (pixel.upstream_response as { id: string }).id;
    assert.match(pixelId, /^px_/);

    const settingBody = {
      name: 'Newsletter sign-ups',
      event_type: 'custom',
      custom_event_name: 'newsletter_signup',
      attribution_window_days: 7,
      source_ids: [pixelId],
    };
    const setting = await throughApproval(
      'ads_create_conversion_event_setting',
      { body: settingBody },
      '/conversions/event_settings',
      settingBody,
    );
    assert.match(setting.summary, /^Create conversion event setting "Newsletter sign-ups"/);
    const settings = await ok<{ event_settings: { name: string; source_ids: string[] }[] }>(
      'ads_list_conversion_event_settings',
      { account_id: accountId, order: 'desc', limit: 1 },
    );
    assert.deepEqual(settings.event_settings[0]?.source_ids, [pixelId]);
  });

  test('a setting counting a pixel the account does not have is refused when it is prepared, naming the item', async () => {
    const sources = await ok<{ conversion_sources: { id: string }[] }>('ads_list_conversion_sources', {
      account_id: accountId,
      limit: 500,
    });
    const pixel = sources.conversion_sources[0]?.id as string;
    const res = await refused('ads_create_conversion_event_setting', {
      account_id: accountId,
      body: {
        name: 'Unknown pixel',
        event_type: 'purchase',
        attribution_window_days: 7,
        source_ids: [pixel, 'px_nope'],
      },
    });
    assert.equal(res.code, 'invalid_argument');
    assert.match(res.message, /`body\.source_ids\[1\]` px_nope: ad account .* has no pixel with this id/);
    assert.deepEqual(
      (await ledger('/conversions/event_settings')).filter(
        (r) => (r.request_body as { name?: string }).name === 'Unknown pixel',
      ),
      [],
    );
  });

  test('a setting or a pixel the platform would refuse is refused when it is prepared', async () => {
    const setting = { name: 'X', event_type: 'purchase', attribution_window_days: 3, source_ids: ['px_1'] };
    const window = await refused('ads_create_conversion_event_setting', {
      account_id: accountId,
      body: setting,
    });
    assert.equal(window.code, 'invalid_argument');
    assert.match(window.message, /attribution_window_days` must be 1, 7, 28 days \(got 3\)/);
    const blank = await refused('ads_create_conversion_source', {
      account_id: accountId,
      body: { name: '   ', client_type: 'web' },
    });
    assert.match(blank.message, /body\.name/);
    const type = await refused('ads_create_conversion_source', {
      account_id: accountId,
      body: { name: 'Pixel', client_type: 'app' },
    });
    assert.match(type.message, /client_type.*one of web/);
    const noSources = await refused('ads_create_conversion_event_setting', {
      account_id: accountId,
      body: { ...setting, attribution_window_days: 7, source_ids: [] },
    });
    assert.match(noSources.message, /source_ids.*at least 1 items/);
    assert.deepEqual(
      (await ledger('/conversions/event_settings')).filter(
        (r) => (r.request_body as { name?: string }).name === 'X',
      ),
      [],
    );
  });
});

describe('custom audiences', () => {
  test('audiences are listed with privacy-safe counts and filters, never members', async () => {
    const all = await audiences();
    assert.ok(all.some((a) => a.name === 'Newsletter subscribers' && a.matched_count === 48_000));
    for (const a of all) {
      for (const personal of ['members', 'emails', 'identifiers']) assert.ok(!(personal in a));
    }
    const eligible = await ok<{ custom_audiences: Audience[] }>('ads_list_custom_audiences', {
      account_id: accountId,
      intended_use: 'bid_multiplier',
    });
    assert.ok(eligible.custom_audiences.every((a) => a.status === 'active'));
    const one = await ok<{ custom_audiences: Audience[] }>('ads_list_custom_audiences', {
      account_id: accountId,
      custom_audience_ids: [all[0]?.id],
    });
    assert.deepEqual(
      one.custom_audiences.map((a) => a.id),
      [all[0]?.id],
    );
    // As many ids as the filter allows (500), as long as it allows (255), the known one among
    // them, reach the platform whole.
    const many = await ok<{ custom_audiences: Audience[] }>('ads_list_custom_audiences', {
      account_id: accountId,
      custom_audience_ids: [
        ...Array.from({ length: 499 }, (_, i) => `ca_${'0'.repeat(249)}${String(i).padStart(3, '0')}`),
        all[0]?.id,
      ],
    });
    assert.deepEqual(
      many.custom_audiences.map((a) => a.id),
      [all[0]?.id],
    );
  });

  test('bad audience reads are refused', async () => {
    const policy = await refused('ads_list_custom_audiences', {
      account_id: accountId,
      policy_revision: 'abc',
    });
    assert.match(policy.message, /policy_revision.*exactly 64 characters \(got 3\)/);
    const use = await refused('ads_list_custom_audiences', {
      account_id: accountId,
      intended_use: 'lookalike',
    });
    assert.match(use.message, /intended_use.*one of inclusion, exclusion, bid_multiplier/);
    const ids = await refused('ads_list_custom_audiences', {
      account_id: accountId,
      custom_audience_ids: Array.from({ length: 501 }, (_, i) => `ca_${i}`),
    });
    assert.match(ids.message, /`custom_audience_ids` must have 1 to 500 items \(got 501\)/);
    // An empty filter would list every audience: it is refused, and omitting it lists them all.
    const none = await refused('ads_list_custom_audiences', {
      account_id: accountId,
      custom_audience_ids: [],
    });
    assert.match(none.message, /`custom_audience_ids` must have 1 to 500 items \(got 0\)/);
    const audience = await audienceNamed('VIP customers');
    const op = await refused('ads_get_custom_audience_operation', {
      account_id: accountId,
      custom_audience_id: audience.id,
      operation_id: 'cao_nope',
    });
    assert.equal(op.code, 'not_found');
    // The longest operation id the tool accepts is looked up like any other.
    const longest = await refused('ads_get_custom_audience_operation', {
      account_id: accountId,
      custom_audience_id: audience.id,
      operation_id: `cao_${'0'.repeat(124)}`,
    });
    assert.equal(longest.code, 'not_found', longest.message);
    const long = await refused('ads_get_custom_audience_operation', {
      account_id: accountId,
      custom_audience_id: audience.id,
      operation_id: 'x'.repeat(129),
    });
    assert.match(long.message, /operation_id.*1 to 128/);
  });

  test('replacing members: a stale revision is refused naming the current one; the current one applies once and starts an operation', async () => {
    const audience = await audienceNamed('VIP customers');
    const stale = await refused('ads_replace_custom_audience_members', {
      account_id: accountId,
      custom_audience_id: audience.id,
      body: { file_id: 'file_members', expected_revision: audience.revision + 5 },
    });
    assert.equal(stale.code, 'failed_precondition');
    assert.match(stale.message, new RegExp(`is at revision ${audience.revision};`));

    const body = {
      file_id: 'file_members_2026_11',
      expected_revision: audience.revision,
      filename: 'members.csv',
      mimetype: 'text/csv',
      file_size: 2_600_000,
      identifier_type: 'email',
      identifier_resolution: 'auto',
    };
    const path = `/custom_audiences/${audience.id}/replace`;
    const change = await throughApproval(
      'ads_replace_custom_audience_members',
      { custom_audience_id: audience.id, body },
      path,
      body,
    );
    assert.match(change.summary, /^Replace the members of custom audience "VIP customers"/);
    const operationId = (change.upstream_response as { id: string }).id;
    const op = await ok<{ operation: { id: string; type: string; status: string; matched_count: unknown } }>(
      'ads_get_custom_audience_operation',
      { account_id: accountId, custom_audience_id: audience.id, operation_id: operationId },
    );
    assert.equal(op.operation.type, 'replace');
    assert.ok(['pending', 'processing', 'completed'].includes(op.operation.status));
    assert.equal((await audienceNamed('VIP customers')).revision, audience.revision + 1);
  });

  test('a member file whose type is not type/subtype is refused when prepared, as the platform would refuse it', async () => {
    const audience = await audienceNamed('Newsletter subscribers');
    const path = `/custom_audiences/${audience.id}/replace`;
    const before = (await ledger(path)).length;
    const res = await refused('ads_replace_custom_audience_members', {
      account_id: accountId,
      custom_audience_id: audience.id,
      body: { file_id: 'file_members', expected_revision: audience.revision, mimetype: 'csv' },
    });
    assert.equal(res.code, 'invalid_argument');
    assert.match(
      res.message,
      /`body\.mimetype` must be a media type, type\/subtype \(text\/csv\) \(got "csv"\)/,
    );
    assert.equal((await ledger(path)).length, before);
  });

  test('merging audiences creates a new one, once', async () => {
    const a = await audienceNamed('Newsletter subscribers');
    const b = await audienceNamed('Past purchasers (180 days)');
    const body = { name: 'Buyers and subscribers', custom_audience_ids: [a.id, b.id] };
    const change = await throughApproval(
      'ads_merge_custom_audiences',
      { body },
      '/custom_audiences/merge',
      body,
    );
    assert.match(change.summary, /^Merge into a new custom audience "Buyers and subscribers"/);
    const merged = change.upstream_response as {
      custom_audience: { id: string };
      operation: { type: string };
    };
    assert.equal(merged.operation.type, 'merge');
    assert.ok((await audiences()).some((x) => x.id === merged.custom_audience.id));
    const tooMany = await refused('ads_merge_custom_audiences', {
      account_id: accountId,
      body: { name: 'Too many', custom_audience_ids: Array.from({ length: 65 }, (_, i) => `ca_${i}`) },
    });
    assert.match(tooMany.message, /custom_audience_ids.*at most 64 items/);
  });

  test('a merge naming an audience the account does not have, or an archived one, is refused when prepared', async () => {
    const active = await audienceNamed('Newsletter subscribers');
    const archived = await audienceNamed('Lapsed customers 2024');
    assert.equal(archived.status, 'archived');
    const before = (await ledger('/custom_audiences/merge')).length;
    const unknown = await refused('ads_merge_custom_audiences', {
      account_id: accountId,
      body: { name: 'Unknown source', custom_audience_ids: [active.id, 'ca_nope'] },
    });
    assert.equal(unknown.code, 'invalid_argument');
    assert.match(
      unknown.message,
      /`body\.custom_audience_ids\[1\]` ca_nope: ad account .* has no custom audience with this id/,
    );
    const gone = await refused('ads_merge_custom_audiences', {
      account_id: accountId,
      body: { name: 'Archived source', custom_audience_ids: [archived.id] },
    });
    assert.equal(gone.code, 'invalid_argument');
    assert.match(
      gone.message,
      new RegExp(
        `\`body\\.custom_audience_ids\\[0\\]\` ${archived.id}: custom audience "Lapsed customers 2024" is archived`,
      ),
    );
    assert.equal((await ledger('/custom_audiences/merge')).length, before, 'nothing reached the platform');
  });

  test('archiving an audience applies once; archiving an archived one is refused as changing nothing', async () => {
    const audience = await audienceNamed('Cart abandoners');
    const path = `/custom_audiences/${audience.id}/archive`;
    const change = await throughApproval(
      'ads_archive_custom_audience',
      { custom_audience_id: audience.id },
      path,
      {},
    );
    assert.match(change.summary, /^Archive custom audience "Cart abandoners"/);
    assert.equal((await audienceNamed('Cart abandoners')).status, 'archived');

    const lapsed = await audienceNamed('Lapsed customers 2024');
    const again = await refused('ads_archive_custom_audience', {
      account_id: accountId,
      custom_audience_id: lapsed.id,
    });
    assert.equal(again.code, 'failed_precondition');
    assert.match(
      again.message,
      /nothing would change: custom audience "Lapsed customers 2024" .* is already archived/,
    );
    const unknown = await refused('ads_archive_custom_audience', {
      account_id: accountId,
      custom_audience_id: 'ca_nope',
    });
    assert.equal(unknown.code, 'not_found');
  });
});

/** The last `n` account-local days, today included, as a time range. */
function lastDays(n: number): string {
  const start = new Date(Date.parse(`${localToday}T00:00:00Z`) - (n - 1) * 86_400_000)
    .toISOString()
    .slice(0, 10);
  return `${start}..${localToday}`;
}
