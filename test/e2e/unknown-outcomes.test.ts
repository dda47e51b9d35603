/**
 * A change whose apply outcome is unknown, settled by people, end to end: the platform fails the
 * apply after it was sent, the changes list shows it under "outcome unknown", its page offers the
 * three ways to settle it and, after one, says who settled it, when and with what note; the
 * operators' command lists such changes and settles one.
 */
import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import { launchBrowser } from '@adsmcp/testkit/browser';
import { signInToDashboard } from '@adsmcp/testkit/dashboard';
import { type SeededStack, startSeededStack } from '@adsmcp/testkit/e2e';
import { connectClient, type McpTestClient } from '@adsmcp/testkit/mcp-clients';
import type { SeedResult, Stack } from '@adsmcp/testkit/stack';
import { sandboxLedger, toolCalls } from '@adsmcp/testkit/tool-calls';
import type { Browser } from 'playwright-core';

let e2e: SeededStack;
let stack: Stack;
let seed: SeedResult;
let agent: McpTestClient;
let browser: Browser;
let account: SeedResult['accounts'][number];
let ads: { id: string; name: string; status: string }[];

interface ChangeView {
  change_id: string;
  status: string;
  outcome_unknown: boolean;
  resolution: string | null;
  resolved_by: string | null;
  resolved_at: string | null;
  resolution_note: string | null;
  error: string | null;
}

const { ok, waitForChange } = toolCalls(() => agent);

before(async () => {
  // The first delivery of an apply message is its last: an apply that meets a failing platform
  // after it was sent ends at once with its outcome unknown.
  e2e = await startSeededStack({ env: { APPLY_MAX_ATTEMPTS: '1', MCP_RATE_BURST: '500' } });
  ({ stack, seed } = e2e);
  account = seed.accounts.find((a) => a.currency === 'USD') as SeedResult['accounts'][number];
  agent = await connectClient('v2-2026', stack.mcpUrl, seed.token);
  browser = await launchBrowser();
  const list = await ok<{ ads: typeof ads }>('ads_list_ads', { account_id: account.account_id, limit: 20 });
  ads = list.ads.filter((a) => a.status !== 'archived');
  assert.ok(ads.length >= 2, 'the seeded account has ads to change');
});

after(async () => {
  await agent?.close();
  await browser?.close();
  await e2e?.stop();
});

/** An update of `ad`, approved, applied while the platform answers every send of it with 500. */
async function sentWithoutAnswer(ad: { id: string }, name: string): Promise<ChangeView> {
  const prepared = await ok<ChangeView>('ads_update_ad', {
    account_id: account.account_id,
    ad_id: ad.id,
    body: { name },
  });
  await stack.admin(['approve', prepared.change_id, '--workspace', seed.workspaceId, '--yes']);
  const res = await fetch(`${stack.urls['ads-sandbox']}/_sandbox/faults`, {
    method: 'POST',
    headers: {
      authorization: `Bearer ${stack.secrets.sandboxAdminToken}`,
      'content-type': 'application/json',
    },
    // The upstream-proxy tries each send three times.
    body: JSON.stringify({
      account_id: account.upstream_account_id,
      method: 'POST',
      path_prefix: `/ads/${ad.id}`,
      kind: 'status_500',
      count: 3,
    }),
  });
  assert.ok(res.ok, `fault not accepted: ${res.status}`);
  await agent.callTool('ads_apply_change', { change_id: prepared.change_id });
  const failed = await waitForChange<ChangeView>(prepared.change_id, ['failed', 'applied']);
  assert.equal(failed.status, 'failed', JSON.stringify(failed));
  assert.equal(failed.outcome_unknown, true, JSON.stringify(failed));
  return failed;
}

describe('a change whose apply outcome is unknown', () => {
  test('is listed as such, and a person marks it not applied with a note in the dashboard', async () => {
    const ad = ads[0] as (typeof ads)[number];
    const change = await sentWithoutAnswer(ad, 'Outcome unknown, checked by a person');
    const { context, page } = await signInToDashboard(browser, stack.gatewayUrl, {
      email: seed.dashboardUser,
      password: seed.dashboardPassword as string,
    });
    try {
      await page.goto(`${stack.gatewayUrl}/dashboard/changes?status=outcome_unknown`);
      const row = page.locator(`tr[data-change="${change.change_id}"]`);
      assert.equal(await row.count(), 1, 'the filtered list shows the change');
      assert.match(
        (await row.locator('[data-mark="outcome-unknown"]').textContent()) ?? '',
        /may or may not have been applied/,
      );
      assert.equal(
        await page.locator('#changes tbody tr').count(),
        await page.locator('#changes [data-mark="outcome-unknown"]').count(),
        'every change listed under the filter has an unknown outcome',
      );

      await page.goto(`${stack.gatewayUrl}/dashboard/changes/${change.change_id}`);
      assert.match(
        (await page.textContent('#outcome-unknown')) ?? '',
        /the platform may or may not have applied it/,
      );
      // The platform never applied it: the live object does not show the reviewed name.
      assert.equal(await page.getAttribute('#live-verdict', 'data-shows-reviewed'), 'false');
      assert.match((await page.textContent('#live-object')) ?? '', new RegExp(ad.name.slice(0, 20)));
      for (const id of ['#resolve-send_again', '#resolve-applied', '#resolve-not_applied'])
        assert.equal(await page.locator(id).count(), 1, `${id} is offered`);
      assert.equal(
        (await page.textContent('#resolve-send_again'))?.trim(),
        'Send again (same idempotency key)',
      );

      // A note over 2000 characters is refused, naming the rule, and stays in its form's field.
      await page.fill('#note-not_applied', 'x'.repeat(2001));
      await Promise.all([
        page.waitForResponse((r) => r.url().endsWith('/resolve')),
        page.click('#resolve-not_applied'),
      ]);
      assert.match((await page.textContent('[role=alert]')) ?? '', /note must be at most 2000 characters/);
      assert.equal(await page.inputValue('#note-not_applied'), 'x'.repeat(2001));
      assert.equal(await page.inputValue('#note-applied'), '', 'only the refused form keeps its note');
      await page.fill('#note-not_applied', 'Checked the console: still the old name');
      await Promise.all([
        page.waitForURL(new RegExp(`/dashboard/changes/${change.change_id}$`)),
        page.click('#resolve-not_applied'),
      ]);
      assert.equal((await page.textContent('#status'))?.trim(), 'failed');
      const settled = (await page.textContent('#resolved-by')) ?? '';
      assert.match(settled, /^marked as not applied, /);
      assert.ok(settled.includes(seed.dashboardUser), settled);
      assert.ok(settled.includes('in the dashboard'), settled);
      assert.equal(
        (await page.textContent('#resolution-note'))?.trim(),
        'Checked the console: still the old name',
      );
      assert.equal(await page.locator('#resolved-by time').count(), 1, 'when it was settled is shown');
      assert.equal(await page.locator('#settle').count(), 0, 'nothing is left to settle');
      assert.equal(await page.locator('#outcome-unknown').count(), 0);
    } finally {
      await context.close();
    }

    const read = await ok<ChangeView>('ads_get_change', { change_id: change.change_id });
    assert.equal(read.outcome_unknown, false);
    assert.equal(read.resolution, 'not_applied');
    assert.equal(read.resolution_note, 'Checked the console: still the old name');
    assert.match(read.resolved_by ?? '', /via dashboard/);
    assert.deepEqual(
      await sandboxLedger(stack, account.upstream_account_id, `/ads/${ad.id}`),
      [],
      'nothing was applied',
    );
  });

  test('the operators’ command lists it, and settles it as applied', async () => {
    const ad = ads[1] as (typeof ads)[number];
    const change = await sentWithoutAnswer(ad, 'Outcome unknown, settled by an operator');
    const listed = JSON.parse(await stack.admin(['unknown-outcomes', '--workspace', seed.workspaceId])) as {
      change_id: string;
      error: string;
    }[];
    const mine = listed.find((c) => c.change_id === change.change_id);
    assert.ok(mine, 'unknown-outcomes lists the change');
    assert.match(mine.error, /may or may not have been applied/);

    const out = JSON.parse(
      await stack.admin([
        'resolve',
        change.change_id,
        '--applied',
        '--note',
        'Seen in the platform console',
        '--workspace',
        seed.workspaceId,
      ]),
    ) as { status: string; resolution: string; by: string };
    assert.equal(out.status, 'applied');
    assert.equal(out.resolution, 'applied');
    assert.equal(out.by, seed.dashboardUser);
    const read = await ok<ChangeView>('ads_get_change', { change_id: change.change_id });
    assert.equal(read.status, 'applied');
    assert.equal(read.resolution, 'applied');
    assert.equal(read.resolution_note, 'Seen in the platform console');
    assert.match(read.resolved_by ?? '', /via operator/);
    const after = JSON.parse(await stack.admin(['unknown-outcomes', '--workspace', seed.workspaceId])) as {
      change_id: string;
    }[];
    assert.ok(!after.some((c) => c.change_id === change.change_id), 'it is no longer listed');
  });
});
