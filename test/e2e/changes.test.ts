/**
 * Prepare -> approve -> apply, end to end: an agent prepares through the MCP clients, a person
 * approves in a real browser, the change is applied once, and the sandbox's ledger of applied
 * mutations is the witness that nothing reached the account early or twice.
 */
import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import { launchBrowser } from '@adsmcp/testkit/browser';
import { newWorkspaceToken, type SeededStack, startSeededStack } from '@adsmcp/testkit/e2e';
import { connectClient, type McpTestClient } from '@adsmcp/testkit/mcp-clients';
import type { TestDatabase } from '@adsmcp/testkit/postgres';
import type { SeedResult, Stack } from '@adsmcp/testkit/stack';
import { sandboxLedger, toolCalls } from '@adsmcp/testkit/tool-calls';
import pg from 'pg';
import type { Browser } from 'playwright-core';

let db: TestDatabase;
let e2e: SeededStack;
let stack: Stack;
let seed: SeedResult;
let agent: McpTestClient;
let browser: Browser;
let account: SeedResult['accounts'][number];
let ads: { id: string; name: string; status: string; revision: number }[];

interface ChangeView {
  change_id: string;
  status: string;
  digest: string;
  summary: string;
  operation: { method: string; path: string; body: unknown };
  error?: string;
  review_url: string;
  next_step: string;
  applied_differences: string[];
}

/** Signs in to the dashboard in a real browser and decides a change there. */
async function decideInBrowser(
  changeId: string,
  decision: 'approve' | 'reject',
  reason = '',
): Promise<string> {
  const context = await browser.newContext();
  try {
    const page = await context.newPage();
    await page.goto(`${stack.gatewayUrl}/dashboard/changes/${changeId}`);
    // Signed out, the review link asks for sign-in and then lands on the review page itself.
    assert.match(page.url(), /\/dashboard\/login\?next=%2Fdashboard%2Fchanges%2F/);
    await page.fill('#email', seed.dashboardUser);
    await page.fill('#password', seed.dashboardPassword as string);
    await Promise.all([
      page.waitForURL(new RegExp(`/dashboard/changes/${changeId}$`)),
      page.click('button[type=submit]'),
    ]);
    const shownDigest = (await page.textContent('#digest'))?.trim();
    const payload = JSON.parse((await page.textContent('#payload')) ?? 'null') as unknown;
    if (decision === 'approve') {
      await Promise.all([
        page.waitForURL(new RegExp(`/dashboard/changes/${changeId}$`)),
        page.click('#approve'),
      ]);
    } else {
      await page.fill('#reason', reason);
      await Promise.all([
        page.waitForURL(new RegExp(`/dashboard/changes/${changeId}$`)),
        page.click('#reject'),
      ]);
    }
    const status = (await page.textContent('#status'))?.trim() ?? '';
    assert.ok(shownDigest && payload, 'the review page shows the digest and the payload');
    return `${status}|${shownDigest}|${JSON.stringify(payload)}`;
  } finally {
    await context.close();
  }
}

const { call, ok, refused, waitForChange: waitForStatus } = toolCalls(() => agent);

/** Queues one fault on the sandbox for the account's next POST matching `fault`, as its operator. */
async function queueFault(fault: Record<string, unknown>): Promise<void> {
  const res = await fetch(`${stack.urls['ads-sandbox']}/_sandbox/faults`, {
    method: 'POST',
    headers: {
      authorization: `Bearer ${stack.secrets.sandboxAdminToken}`,
      'content-type': 'application/json',
    },
    body: JSON.stringify({ account_id: account.upstream_account_id, method: 'POST', count: 1, ...fault }),
  });
  assert.ok(res.ok, `fault not accepted: ${res.status}`);
}
/** The sandbox's ledger of mutations applied to the account, for one path. */
const ledger = (path: string) => sandboxLedger(stack, account.upstream_account_id, path);

before(async () => {
  // A short lease so that a worker killed mid-apply is replaced within seconds.
  e2e = await startSeededStack({ env: { APPLY_LEASE_MS: '3000', MCP_RATE_BURST: '500' } });
  ({ stack, seed, db } = e2e);
  account = seed.accounts.find((a) => a.currency === 'USD') as SeedResult['accounts'][number];
  agent = await connectClient('v2-2026', stack.mcpUrl, seed.token);
  browser = await launchBrowser();
  const list = await ok<{ ads: typeof ads }>('ads_list_ads', { account_id: account.account_id, limit: 20 });
  ads = list.ads.filter((a) => a.status !== 'archived');
  assert.ok(ads.length >= 10, 'the seeded account has ads to change');
});

after(async () => {
  await agent?.close();
  await browser?.close();
  await e2e?.stop();
});

describe('prepare, approve in the browser, apply once', () => {
  test('the whole path, with the ledger as witness', async () => {
    const ad = ads[0] as (typeof ads)[number];
    const path = `/ads/${ad.id}`;
    const body = { name: 'Spring sale — reviewed copy', status: 'paused' };
    const prepared = await ok<ChangeView>('ads_update_ad', {
      account_id: account.account_id,
      ad_id: ad.id,
      body,
    });
    assert.equal(prepared.status, 'prepared');
    assert.deepEqual(prepared.operation, { method: 'POST', path, body });
    assert.match(prepared.summary, /name .* → "Spring sale — reviewed copy"/);
    assert.match(prepared.digest, /^[0-9a-f]{64}$/);
    assert.deepEqual(await ledger(path), [], 'preparing changed nothing upstream');

    const early = await refused('ads_apply_change', { change_id: prepared.change_id });
    assert.equal(early.code, 'failed_precondition');
    assert.match(early.message, /not approved yet/);
    assert.deepEqual(await ledger(path), []);

    const seen = await decideInBrowser(prepared.change_id, 'approve');
    assert.equal(seen, `approved|${prepared.digest}|${JSON.stringify(body)}`);

    const applied = await ok<ChangeView>('ads_apply_change', {
      change_id: prepared.change_id,
      digest: prepared.digest,
    });
    const final = (
      applied.status === 'applied' ? applied : await waitForStatus(prepared.change_id, ['applied', 'failed'])
    ) as ChangeView;
    assert.equal(final.status, 'applied', JSON.stringify(final));
    const rows = await ledger(path);
    assert.equal(rows.length, 1, 'applied exactly once');
    assert.equal(rows[0]?.idempotency_key, `change-${prepared.change_id}`);
    assert.deepEqual(rows[0]?.request_body, body, 'the reviewed payload is the applied payload');
    const live = await ok<{ ad: { name: string; status: string } }>('ads_get_ad', {
      account_id: account.account_id,
      ad_id: ad.id,
    });
    assert.equal(live.ad.name, body.name);
    assert.equal(live.ad.status, 'paused');
    assert.deepEqual(final.applied_differences, [], 'the platform applied what was reviewed');

    const twice = await refused('ads_apply_change', { change_id: prepared.change_id });
    assert.match(twice.message, /already applied/);
    assert.equal((await ledger(path)).length, 1, 'applying twice never doubles the effect');
  });

  test('a change rejected in the browser is never applied', async () => {
    const ad = ads[1] as (typeof ads)[number];
    const prepared = await ok<ChangeView>('ads_archive_ad', { account_id: account.account_id, ad_id: ad.id });
    assert.deepEqual(prepared.operation, { method: 'POST', path: `/ads/${ad.id}/archive`, body: {} });
    const seen = await decideInBrowser(prepared.change_id, 'reject', 'wrong ad');
    assert.ok(seen.startsWith('rejected|'));
    const err = await refused('ads_apply_change', { change_id: prepared.change_id });
    assert.match(err.message, /rejected/);
    assert.deepEqual(await ledger(`/ads/${ad.id}/archive`), []);
    const got = await ok<{ status: string; reject_reason: string }>('ads_get_change', {
      change_id: prepared.change_id,
    });
    assert.equal(got.status, 'rejected');
    assert.equal(got.reject_reason, 'wrong ad');
  });

  test('a plan made stale by another applied change is refused at apply time', async () => {
    const ad = ads[2] as (typeof ads)[number];
    const first = await ok<ChangeView>('ads_update_ad', {
      account_id: account.account_id,
      ad_id: ad.id,
      body: { name: 'First edit' },
    });
    const second = await ok<ChangeView>('ads_update_ad', {
      account_id: account.account_id,
      ad_id: ad.id,
      body: { name: 'Second edit' },
    });
    for (const c of [first, second])
      await stack.admin(['approve', c.change_id, '--workspace', seed.workspaceId, '--yes']);
    await ok('ads_apply_change', { change_id: first.change_id });
    assert.equal((await waitForStatus(first.change_id, ['applied', 'failed'])).status, 'applied');
    // A failed apply is an error result, with the status, the reason and the change in it.
    const applied = await call('ads_apply_change', { change_id: second.change_id });
    assert.equal(applied.isError, true, 'a failed apply must be an error result');
    const error = applied.data.error as { code: string; message: string; status: string; change: ChangeView };
    assert.equal(error.code, 'apply_failed');
    assert.equal(error.status, 'failed');
    assert.match(error.message, /changed since this change was prepared \(revision 1, now 2\)/);
    assert.equal(error.change.change_id, second.change_id);
    // Reading the change stays a plain read.
    const stale = await ok<ChangeView>('ads_get_change', { change_id: second.change_id });
    assert.equal(stale.status, 'failed');
    assert.match(stale.error ?? '', /changed since this change was prepared/);
    assert.equal((await ledger(`/ads/${ad.id}`)).length, 1, 'only the first edit reached the account');
  });

  test('the operator command approves as a person; invalid prepare arguments are tool errors naming the field', async () => {
    const ad = ads[3] as (typeof ads)[number];
    const bad = [
      [{ account_id: account.account_id, ad_id: ad.id, body: {} }, /`body` must change at least one field/],
      [
        { account_id: account.account_id, ad_id: ad.id, body: { name: 'ab' } },
        /`body.name` must be 3 to 1000 characters/,
      ],
      [
        { account_id: account.account_id, ad_id: ad.id, body: { status: 'deleted' } },
        /`body.status` must be one of active, paused, archived/,
      ],
      [
        { account_id: account.account_id, ad_id: ad.id, body: { bid: 1 } },
        /unknown property of `body` `bid`/,
      ],
      [
        { account_id: account.account_id, ad_id: 'no such ad', body: { name: 'abc' } },
        /`ad_id` must be an id/,
      ],
      [
        { account_id: account.account_id, ad_id: 'ad_0000000000000000', body: { name: 'abc' } },
        /no ad ad_0000000000000000/,
      ],
      [
        { account_id: '00000000-0000-4000-8000-000000000000', ad_id: ad.id, body: { name: 'abc' } },
        /no ad account/,
      ],
    ] as const;
    for (const [args, message] of bad) {
      const err = await refused('ads_update_ad', args);
      assert.match(err.message, message);
    }
    const prepared = await ok<ChangeView>('ads_update_ad', {
      account_id: account.account_id,
      ad_id: ad.id,
      body: { status: 'paused' },
    });
    const out = JSON.parse(
      await stack.admin(['approve', prepared.change_id, '--workspace', seed.workspaceId, '--yes']),
    ) as { status: string; digest: string };
    assert.equal(out.status, 'approved');
    assert.equal(out.digest, prepared.digest);
    const listed = await ok<{ changes: { change_id: string; status: string }[] }>('ads_list_changes', {
      status: 'approved',
    });
    assert.ok(listed.changes.some((c) => c.change_id === prepared.change_id));
  });

  test('listing by a status lists only the changes in it, and a status the changes lack is refused naming those there are', async () => {
    type Listed = { changes: { change_id: string; status: string }[]; total: number };
    const all = await ok<Listed>('ads_list_changes', { limit: 100 });
    // The tests above left an applied change and an approved one.
    for (const status of ['applied', 'approved']) {
      const { changes, total } = await ok<Listed>('ads_list_changes', { status, limit: 100 });
      assert.ok(changes.length > 0, `a change ${status}`);
      assert.ok(
        changes.every((c) => c.status === status),
        JSON.stringify(changes.map((c) => c.status)),
      );
      assert.ok(total < all.total, 'the filter was applied');
    }
    const err = await refused('ads_list_changes', { status: 'done' });
    assert.equal(err.code, 'invalid_argument');
    assert.equal(
      err.message,
      'invalid arguments for ads_list_changes: `status` must be one of prepared, approved, expired, rejected, applying, applied, failed (got "done")',
    );
  });

  test('prepare refuses hidden characters, an object the platform would refuse and a change that changes nothing, recording nothing', async () => {
    // The ninth seeded ad is a chat card with an image and a crop, and no other test changes it.
    const { ad } = await ok<{ ad: { id: string; name: string; status: string; creative: { type: string } } }>(
      'ads_get_ad',
      { account_id: account.account_id, ad_id: (ads[8] as (typeof ads)[number]).id },
    );
    assert.equal(ad.creative.type, 'chat_card');
    const before = await ok<{ total: number }>('ads_list_changes', {});
    const cases: [Record<string, unknown>, RegExp][] = [
      [{ name: 'Price \u202Edesuap' }, /`body.name` must not contain the invisible character U\+202E/],
      [
        { creative: { title: '\u200B\u200B' } },
        /`body.creative.title` must not contain the invisible character U\+200B/,
      ],
      [
        { creative: { body: 'ring \u0007' } },
        /`body.creative.body` must not contain the invisible character U\+0007/,
      ],
      [
        { creative: { target_url: 'javascript:alert(1)' } },
        /`body.creative.target_url` must be an absolute http or https URL/,
      ],
      [
        { creative: { target_url: '/relative' } },
        /`body.creative.target_url` must be an absolute http or https URL/,
      ],
      [
        { creative: { type: 'product_ad_template' } },
        /`body.creative.image_crop` is only for chat_card creatives, and the ad would have a product_ad_template creative with an image_crop \(the ad's current image_crop\)/,
      ],
      [
        { creative: { image_crop: { x: 0, y: 0, width: 0.5, height: 0.25 } } },
        /`body.creative.image_crop` must be square/,
      ],
      [
        { creative: { image_crop: { x: 0.5, y: 0.5, width: 0.6, height: 0.6 } } },
        /`body.creative.image_crop` must lie within the image/,
      ],
      [
        { name: ad.name, status: ad.status },
        new RegExp(`^nothing would change: name is already "${ad.name}"; status is already "${ad.status}"$`),
      ],
    ];
    for (const [body, message] of cases) {
      const err = await refused('ads_update_ad', { account_id: account.account_id, ad_id: ad.id, body });
      assert.match(err.message, message, JSON.stringify(body));
    }
    const after = await ok<{ total: number }>('ads_list_changes', {});
    assert.equal(after.total, before.total, 'a refused prepare records no change');
    assert.deepEqual(await ledger(`/ads/${ad.id}`), [], 'nothing reached the account');
  });

  test("another workspace's token never sees or applies this workspace's changes", async () => {
    const token = (await newWorkspaceToken(stack, 'Elsewhere')).token;
    const stranger = await connectClient('v1', stack.mcpUrl, token);
    try {
      const mine = await ok<{ changes: { change_id: string }[] }>('ads_list_changes', {});
      const id = mine.changes[0]?.change_id as string;
      for (const name of ['ads_get_change', 'ads_apply_change']) {
        const res = await call(name, { change_id: id }, stranger);
        assert.equal(res.isError, true);
        assert.equal((res.data as { error: { code: string } }).error.code, 'not_found');
      }
      const list = await ok<{ total: number }>('ads_list_changes', {}, stranger);
      assert.equal(list.total, 0);
      const ad = ads[4] as (typeof ads)[number];
      const res = await call(
        'ads_update_ad',
        { account_id: account.account_id, ad_id: ad.id, body: { name: 'hijack' } },
        stranger,
      );
      assert.equal(res.isError, true);
    } finally {
      await stranger.close();
    }
  });
});

describe('a platform that applies another result than the one reviewed', () => {
  test('the change is applied once as sent, and the difference is recorded and shown, not passed over', async () => {
    const ad = ads[6] as (typeof ads)[number];
    const path = `/ads/${ad.id}`;
    const body = { name: 'Reviewed name', status: 'paused' };
    const prepared = await ok<ChangeView>('ads_update_ad', {
      account_id: account.account_id,
      ad_id: ad.id,
      body,
    });
    await stack.admin(['approve', prepared.change_id, '--workspace', seed.workspaceId, '--yes']);
    // The platform quietly drops the name from this ad's next update and applies the rest.
    await queueFault({ path_prefix: path, kind: 'ignore_field', field: 'name' });

    const applied = await ok<ChangeView>('ads_apply_change', { change_id: prepared.change_id });
    const final = (
      applied.status === 'applied' ? applied : await waitForStatus(prepared.change_id, ['applied', 'failed'])
    ) as ChangeView;
    assert.equal(final.status, 'applied', JSON.stringify(final));
    const rows = await ledger(path);
    assert.equal(rows.length, 1);
    // The ledger has the body as the platform took it, after the fault dropped the name on arrival.
    assert.deepEqual(rows[0]?.request_body, { status: 'paused' });
    assert.deepEqual(final.operation.body, body, 'what was sent is what was reviewed');
    assert.equal(final.digest, prepared.digest);
    const expected = [`name: reviewed "Reviewed name", applied ${JSON.stringify(ad.name)}`];
    assert.deepEqual(final.applied_differences, expected);
    assert.match(final.next_step, /differs from what was reviewed/);
    const read = await ok<ChangeView>('ads_get_change', { change_id: prepared.change_id });
    assert.deepEqual(read.applied_differences, expected);

    // The person who approved it sees the difference on the change's page.
    const context = await browser.newContext();
    try {
      const page = await context.newPage();
      await page.goto(`${stack.gatewayUrl}/dashboard/login`);
      await page.fill('#email', seed.dashboardUser);
      await page.fill('#password', seed.dashboardPassword as string);
      await Promise.all([page.waitForURL(/\/dashboard$/), page.click('button[type=submit]')]);
      await page.goto(`${stack.gatewayUrl}/dashboard/changes/${prepared.change_id}`);
      const shown = (await page.textContent('#applied-differences')) ?? '';
      assert.match(shown, /differs from what was approved/);
      assert.ok(shown.includes(expected[0] as string), shown);
    } finally {
      await context.close();
    }
  });
});

describe('approved changes to one object applied at once', () => {
  test('one is applied; the others find the object changed and fail unsent, so no edit is lost', async () => {
    const ad = ads[7] as (typeof ads)[number];
    const path = `/ads/${ad.id}`;
    const prepared: ChangeView[] = [];
    for (const name of ['First edit', 'Second edit', 'Third edit']) {
      const c = await ok<ChangeView>('ads_update_ad', {
        account_id: account.account_id,
        ad_id: ad.id,
        body: { name },
      });
      await stack.admin(['approve', c.change_id, '--workspace', seed.workspaceId, '--yes']);
      prepared.push(c);
    }
    await Promise.all(prepared.map((c) => call('ads_apply_change', { change_id: c.change_id })));
    const finals = await Promise.all(prepared.map((c) => waitForStatus(c.change_id, ['applied', 'failed'])));
    const applied = finals.filter((f) => f.status === 'applied');
    assert.equal(applied.length, 1, JSON.stringify(finals));
    for (const f of finals.filter((x) => x.status === 'failed') as ChangeView[]) {
      assert.match(f.error ?? '', /the object changed since this change was prepared/);
    }
    const rows = await ledger(path);
    assert.equal(rows.length, 1, 'one update reached the account');
    const winner = prepared.find((c) => c.change_id === (applied[0] as ChangeView).change_id) as ChangeView;
    const live = await ok<{ ad: { name: string } }>('ads_get_ad', {
      account_id: account.account_id,
      ad_id: ad.id,
    });
    assert.deepEqual({ name: live.ad.name }, winner.operation.body);
  });
});

describe('a change sent whose outcome is not known yet', () => {
  test('keeps its object: another approved change to it waits, then finds it changed and fails unsent', async () => {
    const ad = ads[9] as (typeof ads)[number];
    const archive = await ok<ChangeView>('ads_archive_ad', { account_id: account.account_id, ad_id: ad.id });
    const rename = await ok<ChangeView>('ads_update_ad', {
      account_id: account.account_id,
      ad_id: ad.id,
      body: { name: 'Renamed while the archive was in doubt' },
    });
    for (const c of [archive, rename])
      await stack.admin(['approve', c.change_id, '--workspace', seed.workspaceId, '--yes']);
    // The platform fails the archive twice over (the upstream-proxy tries each send three times):
    // its first two attempts end with the outcome unknown, the third lands.
    await queueFault({ path_prefix: `/ads/${ad.id}/archive`, kind: 'status_500', count: 6 });
    const c = new pg.Client({ connectionString: db.url });
    await c.connect();
    try {
      const applying = call('ads_apply_change', { change_id: archive.change_id });
      // Wait until the archive was sent and its first attempt ended without an outcome.
      const deadline = Date.now() + 20_000;
      for (;;) {
        const { rows } = await c.query<{ last_error: string | null }>(
          `SELECT last_error FROM changes.bus_outbox WHERE payload->>'change_id' = $1`,
          [archive.change_id],
        );
        if (rows[0]?.last_error) break;
        assert.ok(Date.now() < deadline, 'the archive’s first attempt did not fail');
        await new Promise((r) => setTimeout(r, 50));
      }
      await call('ads_apply_change', { change_id: rename.change_id });
      await applying;
    } finally {
      await c.end();
    }
    const archived = await waitForStatus(archive.change_id, ['applied', 'failed']);
    assert.equal(archived.status, 'applied', JSON.stringify(archived));
    const renamed = (await waitForStatus(rename.change_id, ['applied', 'failed'])) as ChangeView;
    assert.equal(renamed.status, 'failed', JSON.stringify(renamed));
    assert.match(renamed.error ?? '', /the object changed since this change was prepared/);
    assert.equal((await ledger(`/ads/${ad.id}/archive`)).length, 1, 'the archive reached the account once');
    assert.deepEqual(await ledger(`/ads/${ad.id}`), [], 'the rename never reached the account');
  });
});

describe('a worker killed mid-apply', () => {
  test('the change is applied exactly once, by the worker that replaces it', async () => {
    const ad = ads[5] as (typeof ads)[number];
    const path = `/ads/${ad.id}`;
    const prepared = await ok<ChangeView>('ads_update_ad', {
      account_id: account.account_id,
      ad_id: ad.id,
      body: { name: 'Survives a crash' },
    });
    await stack.admin(['approve', prepared.change_id, '--workspace', seed.workspaceId, '--yes']);
    // The platform takes two seconds to answer this ad's update: long enough to kill the worker while it waits.
    await queueFault({ path_prefix: path, kind: 'delay', delay_ms: 2000 });

    const applying = call('ads_apply_change', { change_id: prepared.change_id });
    const c = new pg.Client({ connectionString: db.url });
    await c.connect();
    try {
      const deadline = Date.now() + 10_000;
      while (Date.now() < deadline) {
        const { rows } = await c.query('SELECT sent_at FROM changes.changes WHERE change_id = $1', [
          prepared.change_id,
        ]);
        if (rows[0]?.sent_at) break;
        await new Promise((r) => setTimeout(r, 50));
      }
    } finally {
      await c.end();
    }
    await stack.kill('changes', 'SIGKILL');
    const during = await applying;
    // The call in flight fails cleanly (the service it needed vanished) or reports the change as applying.
    if (during.isError) {
      await new Promise((r) => setTimeout(r, 500));
      const failure = (during.data as { error: { code: string } }).error.code;
      assert.equal(
        failure,
        'unavailable',
        `${JSON.stringify(during.data)}\n${stack
          .recentOutput('gateway')
          .filter((l) => l.includes('tool failed'))
          .join('\n')}`,
      );
    }
    await stack.restart('changes');

    const final = await waitForStatus(prepared.change_id, ['applied', 'failed']);
    assert.equal(final.status, 'applied', JSON.stringify(final));
    const rows = await ledger(path);
    assert.equal(rows.length, 1, 'exactly one application reached the account');
    assert.equal(rows[0]?.idempotency_key, `change-${prepared.change_id}`);
    const live = await ok<{ ad: { name: string } }>('ads_get_ad', {
      account_id: account.account_id,
      ad_id: ad.id,
    });
    assert.equal(live.ad.name, 'Survives a crash');
  });
});
