/**
 * The planning tools through the official client and the real processes: amounts become exact
 * micros of the ad account's currency, local times become instants in its time zone, and what
 * cannot be planned is refused with the rule that was broken.
 */
import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import { type SeededStack, startSeededStack } from '@adsmcp/testkit/e2e';
import { connectClient, type McpTestClient } from '@adsmcp/testkit/mcp-clients';
import { toolCalls } from '@adsmcp/testkit/tool-calls';

let e2e: SeededStack;
let agent: McpTestClient;
const tools = toolCalls(() => agent);

before(async () => {
  e2e = await startSeededStack({ env: { MCP_RATE_BURST: '500' } });
  agent = await connectClient('v1', e2e.stack.mcpUrl, e2e.seed.token);
});

after(async () => {
  await agent?.close();
  await e2e?.stop();
});

function account(currency: string): string {
  const found = e2e.seed.accounts.find((a) => a.currency === currency);
  assert.ok(found, `the seed has a ${currency} account`);
  return found.account_id;
}

describe('ads_plan_money', () => {
  test('a decimal amount becomes exact micros of the account currency', async () => {
    const r = await tools.ok<Record<string, unknown>>('ads_plan_money', {
      account_id: account('USD'),
      amount: '0.3',
      currency: 'USD',
      purpose: 'budget',
    });
    assert.equal(r.amount_micros, '300000');
    assert.equal(r.wire_micros, '300000');
    assert.equal(r.currency, 'USD');
    assert.equal(r.minor_units, 2);
    assert.equal(r.cpm_single_micros, null);
    const bid = await tools.ok<Record<string, unknown>>('ads_plan_money', {
      account_id: account('EUR'),
      amount: '19.99',
      currency: 'EUR',
      purpose: 'cpc',
      objective: 'clicks',
    });
    assert.equal(bid.amount_micros, '19990000');
  });

  test('a CPM shows micros per single impression and per thousand, and sends the chosen one', async () => {
    const args = { account_id: account('USD'), amount: '2.50', currency: 'USD', purpose: 'cpm' };
    const single = await tools.ok<Record<string, unknown>>('ads_plan_money', args);
    assert.equal(single.wire_format, 'single');
    assert.equal(single.cpm_single_micros, '2500');
    assert.equal(single.cpm_bulk_micros, '2500000');
    assert.equal(single.wire_micros, '2500');
    const bulk = await tools.ok<Record<string, unknown>>('ads_plan_money', { ...args, wire_format: 'bulk' });
    assert.equal(bulk.wire_micros, '2500000');
  });

  test('another currency is refused, naming the one the account uses', async () => {
    const err = await tools.refused('ads_plan_money', {
      account_id: account('USD'),
      amount: '10',
      currency: 'EUR',
      purpose: 'budget',
    });
    assert.equal(err.code, 'invalid_argument');
    assert.match(err.message, /uses USD, not EUR/);
  });

  test('too many decimals, an unsuited objective, a bid too large and a malformed amount are refused', async () => {
    const base = { account_id: account('USD'), currency: 'USD' };
    const decimals = await tools.refused('ads_plan_money', { ...base, amount: '1.999', purpose: 'budget' });
    assert.match(decimals.message, /3 decimal places, but USD has 2/);
    const objective = await tools.refused('ads_plan_money', {
      ...base,
      amount: '1',
      purpose: 'cpc',
      objective: 'impressions',
    });
    assert.match(objective.message, /purpose cpc pays for clicks/);
    const large = await tools.refused('ads_plan_money', { ...base, amount: '30400000.01', purpose: 'cpa' });
    assert.match(large.message, /above the largest bid, 30400000 USD/);
    const malformed = await tools.refused('ads_plan_money', { ...base, amount: '1e3', purpose: 'budget' });
    assert.match(malformed.message, /`amount` must be decimal digits/);
  });

  test('an ad account the workspace does not have is not found', async () => {
    const err = await tools.refused('ads_plan_money', {
      account_id: '00000000-0000-4000-8000-000000000000',
      amount: '1',
      currency: 'USD',
      purpose: 'budget',
    });
    assert.equal(err.code, 'not_found');
  });
});

describe('ads_plan_schedule', () => {
  test('local times in the account time zone become instants', async () => {
    const r = await tools.ok<{ time_zone: string; start: Record<string, string>; duration_seconds: string }>(
      'ads_plan_schedule',
      { account_id: account('EUR'), start_local: '2026-01-10T00:00', end_local: '2026-01-11T00:00:00' },
    );
    assert.equal(r.time_zone, 'Europe/Berlin');
    assert.equal(r.start.utc, '2026-01-09T23:00:00Z');
    assert.equal(r.start.with_offset, '2026-01-10T00:00:00+01:00');
    assert.equal(r.duration_seconds, '86400');
  });

  test('a repeated local time is refused unless an ambiguity choice is given', async () => {
    const args = {
      account_id: account('USD'),
      start_local: '2026-11-01T01:30',
      end_local: '2026-11-02T00:00',
    };
    const err = await tools.refused('ads_plan_schedule', args);
    assert.equal(err.code, 'invalid_argument');
    assert.match(err.message, /happens twice in America\/New_York/);
    await tools.refused('ads_plan_schedule', { ...args, ambiguity: 'reject' });
    const later = await tools.ok<{ start: Record<string, string> }>('ads_plan_schedule', {
      ...args,
      ambiguity: 'later',
    });
    assert.equal(later.start.utc, '2026-11-01T06:30:00Z');
    assert.equal(later.start.with_offset, '2026-11-01T01:30:00-05:00');
  });

  test('a skipped local time and an end before the start are refused', async () => {
    const gap = await tools.refused('ads_plan_schedule', {
      account_id: account('USD'),
      start_local: '2026-03-08T02:30',
      end_local: '2026-03-09T00:00',
    });
    assert.match(gap.message, /does not exist in America\/New_York/);
    const backwards = await tools.refused('ads_plan_schedule', {
      account_id: account('USD'),
      start_local: '2026-06-02T09:00',
      end_local: '2026-06-01T09:00',
    });
    assert.match(backwards.message, /must be after start_local/);
    const malformed = await tools.refused('ads_plan_schedule', {
      account_id: account('USD'),
      start_local: '2026-06-01T09:00Z',
      end_local: '2026-06-02T09:00',
    });
    assert.match(malformed.message, /start_local/);
  });
});
