/**
 * Webhooks, end to end: an admin registers a webhook in the dashboard (its secret shown once), a
 * receiver on 127.0.0.1 (allowed by WEBHOOK_ALLOW_HOSTS) gets one signed delivery for each change
 * event (awaiting approval, approved, rejected, applied, failed, expired), the first one answered
 * 500 is delivered again and then accepted, and the delivery log shows both attempts. A loopback
 * or private URL the operator did not allow is refused, naming the field and the rule. An
 * optimizer's proposal and a performance import's end (completed or failed) are delivered too.
 */
import assert from 'node:assert/strict';
import { createHmac, timingSafeEqual } from 'node:crypto';
import { createServer, type IncomingHttpHeaders, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { after, before, describe, test } from 'node:test';
import { launchBrowser } from '@adsmcp/testkit/browser';
import { signInToDashboard } from '@adsmcp/testkit/dashboard';
import { type SeededStack, startSeededStack } from '@adsmcp/testkit/e2e';
import { connectClient, type McpTestClient } from '@adsmcp/testkit/mcp-clients';
import { optimizerConfig, QUICK_REVIEW } from '@adsmcp/testkit/optimizer-config';
import type { SeedResult, Stack } from '@adsmcp/testkit/stack';
import { toolCalls } from '@adsmcp/testkit/tool-calls';
import pg from 'pg';
import type { Browser, BrowserContext, Page } from 'playwright-core';

interface Received {
  headers: IncomingHttpHeaders;
  body: string;
  answered: number;
}

interface ChangeView {
  change_id: string;
  status: string;
  digest: string;
}

let e2e: SeededStack;
let stack: Stack;
let seed: SeedResult;
let agent: McpTestClient;
let browser: Browser;
let context: BrowserContext;
let page: Page;
let receiver: Server;
let receiverUrl: string;
const received: Received[] = [];
let account: SeedResult['accounts'][number];
let ads: { id: string; status: string; campaign_id: string }[];

const { ok, call } = toolCalls(() => agent);

before(async () => {
  receiver = createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on('data', (c: Buffer) => chunks.push(c));
    req.on('end', () => {
      // The receiver is down for the first delivery it gets: the sender must try it again.
      const answered = received.length === 0 ? 500 : 200;
      received.push({ headers: req.headers, body: Buffer.concat(chunks).toString('utf8'), answered });
      // The Slack-format URL acknowledges with a page of 100 KiB, as some receivers do.
      if (answered === 200 && req.url?.includes('format=slack'))
        res.writeHead(200, { 'content-type': 'text/html' }).end('<p>ok</p>'.repeat(12_000));
      else res.writeHead(answered).end();
    });
  });
  await new Promise<void>((resolve) => receiver.listen(0, '127.0.0.1', resolve));
  const port = (receiver.address() as AddressInfo).port;
  receiverUrl = `http://127.0.0.1:${port}/hooks/adsmcp`;
  e2e = await startSeededStack({
    env: {
      MCP_RATE_BURST: '500',
      WEBHOOK_ALLOW_HOSTS: `127.0.0.1:${port}`,
      WEBHOOK_RETRY_BASE_MS: '200',
      WEBHOOK_FAN_OUT_EVERY_MS: '100',
    },
  });
  ({ stack, seed } = e2e);
  account = seed.accounts.find((a) => a.currency === 'USD') as SeedResult['accounts'][number];
  agent = await connectClient('v2-2026', stack.mcpUrl, seed.token);
  browser = await launchBrowser();
  ({ context, page } = await signInToDashboard(browser, stack.gatewayUrl, {
    email: seed.dashboardUser,
    password: seed.dashboardPassword as string,
  }));
  const list = await ok<{ ads: typeof ads }>('ads_list_ads', { account_id: account.account_id, limit: 20 });
  ads = list.ads.filter((a) => a.status !== 'archived');
  assert.ok(ads.length >= 3, 'the seeded account has ads to change');
});

after(async () => {
  await agent?.close();
  await context?.close();
  await browser?.close();
  await e2e?.stop();
  await new Promise((resolve) => receiver?.close(resolve));
});

/** Registers a webhook through the dashboard's form; the page that answers. */
async function register(url: string, events: string[], format = 'json'): Promise<void> {
  await page.goto(`${stack.gatewayUrl}/dashboard/webhooks`);
  await page.fill('#webhook-url', url);
  for (const e of events) await page.check(`input[name="event:${e}"]`);
  await page.selectOption('#webhook-format', format);
  await page.click('#register-webhook');
  await page.waitForLoadState();
}

/** Verifies `X-Adsmcp-Signature` as docs/webhooks.md tells a receiver to. */
function verify(secret: string, header: string, body: string): boolean {
  const m = /^t=(\d+),v1=([0-9a-f]{64})$/.exec(header);
  if (!m) return false;
  const expected = createHmac('sha256', secret).update(`${m[1]}.${body}`).digest();
  return timingSafeEqual(expected, Buffer.from(m[2] as string, 'hex'));
}

async function waitFor<T>(what: string, probe: () => T | undefined, ms = 30_000): Promise<T> {
  const until = Date.now() + ms;
  for (;;) {
    const got = probe();
    if (got !== undefined) return got;
    if (Date.now() > until) throw new Error(`timed out waiting for ${what}`);
    await new Promise((r) => setTimeout(r, 100));
  }
}

const bodies = () => received.map((r) => ({ ...r, json: JSON.parse(r.body) as Record<string, unknown> }));
const deliveredFor = (changeId: string, event: string) =>
  bodies().find(
    (r) => r.answered === 200 && r.json.event === event && (r.json.change as { id: string }).id === changeId,
  );

async function waitForStatus(changeId: string, statuses: string[]): Promise<ChangeView> {
  for (let i = 0; i < 300; i++) {
    const c = await ok<ChangeView>('ads_get_change', { change_id: changeId });
    if (statuses.includes(c.status)) return c;
    await new Promise((r) => setTimeout(r, 100));
  }
  throw new Error(`change ${changeId} never became ${statuses.join(' or ')}`);
}

describe('webhooks', () => {
  test('a loopback or private URL the operator did not allow is refused, naming the field', async () => {
    await register('http://127.0.0.1:9/hook', ['change.approved']);
    assert.match(
      (await page.textContent('[role=alert]')) ?? '',
      /url must use https; a webhook URL must be https to a public address/,
    );
    await register('https://127.0.0.1:9/hook', ['change.approved']);
    assert.match(
      (await page.textContent('[role=alert]')) ?? '',
      /url is refused: the host resolves to a loopback address \(127\.0\.0\.1\)/,
    );
    await register('https://10.1.2.3/hook', ['change.approved', 'change.failed'], 'slack');
    assert.match(
      (await page.textContent('[role=alert]')) ?? '',
      /url is refused: .*a private address \(10\.1\.2\.3\)/,
    );
    // The refused registration is still in the form, to be corrected rather than typed again.
    assert.equal(await page.inputValue('#webhook-url'), 'https://10.1.2.3/hook');
    assert.deepEqual(
      await page
        .locator('#webhook-form input[type=checkbox]:checked')
        .evaluateAll((boxes) => boxes.map((b) => b.getAttribute('name'))),
      ['event:change.approved', 'event:change.failed'],
    );
    assert.equal(await page.inputValue('#webhook-format'), 'slack');
    await register('https://hooks.example.com/x', []);
    assert.match((await page.textContent('[role=alert]')) ?? '', /events must name at least one of/);
    assert.equal(await page.locator('#webhook-list').count(), 0, 'nothing was registered');
  });

  test('a receiver gets a signed delivery for each change event, retried after a failure', async () => {
    const events = [
      'change.awaiting_approval',
      'change.approved',
      'change.rejected',
      'change.applied',
      'change.failed',
      'change.expired',
    ];
    await register(receiverUrl, events);
    const secret = ((await page.textContent('#secret')) ?? '').trim();
    assert.match(secret, /^whsec_[A-Za-z0-9_-]{43}$/, 'the secret is shown once, on the page that answers');
    await page.goto(`${stack.gatewayUrl}/dashboard/webhooks`);
    assert.equal(await page.locator('#secret').count(), 0, 'and never again');
    assert.match((await page.textContent('#webhook-list')) ?? '', /127\.0\.0\.1/);

    // awaiting approval, approved, applied
    const [a0, a1, a2] = ads as [(typeof ads)[0], (typeof ads)[0], (typeof ads)[0]];
    const applied = await ok<ChangeView>('ads_update_ad', {
      account_id: account.account_id,
      ad_id: a0.id,
      body: { name: 'Webhook: applied' },
    });
    await stack.admin(['approve', applied.change_id, '--workspace', seed.workspaceId, '--yes']);
    await ok('ads_apply_change', { change_id: applied.change_id });
    assert.equal((await waitForStatus(applied.change_id, ['applied', 'failed'])).status, 'applied');

    // rejected
    const rejected = await ok<ChangeView>('ads_update_ad', {
      account_id: account.account_id,
      ad_id: a1.id,
      body: { name: 'Webhook: rejected' },
    });
    await stack.admin(['reject', rejected.change_id, '--reason', 'not now', '--workspace', seed.workspaceId]);

    // failed: two approved changes to one ad; the second finds the ad moved by the first
    const first = await ok<ChangeView>('ads_update_ad', {
      account_id: account.account_id,
      ad_id: a2.id,
      body: { name: 'Webhook: first' },
    });
    const failed = await ok<ChangeView>('ads_update_ad', {
      account_id: account.account_id,
      ad_id: a2.id,
      body: { name: 'Webhook: second' },
    });
    for (const c of [first, failed])
      await stack.admin(['approve', c.change_id, '--workspace', seed.workspaceId, '--yes']);
    await ok('ads_apply_change', { change_id: first.change_id });
    await waitForStatus(first.change_id, ['applied']);
    await call('ads_apply_change', { change_id: failed.change_id });
    assert.equal((await waitForStatus(failed.change_id, ['failed'])).status, 'failed');

    // expired: a prepared change left past its 72 hours
    const expired = await ok<ChangeView>('ads_update_ad', {
      account_id: account.account_id,
      ad_id: a1.id,
      body: { name: 'Webhook: expired' },
    });
    const db = new pg.Client({ connectionString: e2e.db.url });
    await db.connect();
    try {
      await db.query(
        `UPDATE changes.changes SET prepared_at = prepared_at - make_interval(hours => 73) WHERE change_id = $1`,
        [expired.change_id],
      );
    } finally {
      await db.end();
    }

    const expected: [string, string][] = [
      [applied.change_id, 'change.awaiting_approval'],
      [applied.change_id, 'change.approved'],
      [applied.change_id, 'change.applied'],
      [rejected.change_id, 'change.rejected'],
      [failed.change_id, 'change.failed'],
      [expired.change_id, 'change.expired'],
    ];
    for (const [id, event] of expected) {
      const got = await waitFor(`${event} of ${id}`, () => deliveredFor(id, event));
      const change = got.json.change as Record<string, unknown>;
      assert.equal(got.headers['x-adsmcp-event'], event);
      assert.ok(
        verify(secret, String(got.headers['x-adsmcp-signature']), got.body),
        `the ${event} signature verifies`,
      );
      assert.equal(got.json.id, got.headers['x-adsmcp-delivery'], 'the body names its delivery id');
      assert.equal(change.review_url, `${stack.gatewayUrl}/dashboard/changes/${id}`);
      assert.equal(typeof change.summary, 'string');
      assert.equal(
        change.status,
        event === 'change.awaiting_approval' ? 'prepared' : event.slice('change.'.length),
      );
      assert.ok(!got.body.includes(seed.token), 'no credential in a delivery');
      assert.ok(!/token|secret|authorization/i.test(Object.keys(change).join(' ')), 'no credential field');
    }
    assert.ok(
      !verify(
        'whsec_not-the-secret',
        String(received[1]?.headers['x-adsmcp-signature']),
        received[1]?.body ?? '',
      ),
    );

    // The first delivery was answered 500 and came again, with the same delivery id, and was accepted.
    const firstTry = received[0] as Received;
    assert.equal(firstTry.answered, 500);
    const again = received.filter(
      (r) => r.headers['x-adsmcp-delivery'] === firstTry.headers['x-adsmcp-delivery'],
    );
    assert.deepEqual(
      again.map((r) => r.answered),
      [500, 200],
      'retried after the failure, then delivered once',
    );
    assert.equal(again[1]?.body, firstTry.body, 'the retry sends the same body');

    await page.goto(`${stack.gatewayUrl}/dashboard/webhooks`);
    const log = (await page.locator('#delivery-log tbody tr').allTextContents()).join('\n');
    assert.match(
      log,
      /change\.awaiting_approval[\s\S]*failed[\s\S]*500/,
      'the log shows the failed attempt with its status',
    );
    assert.match(log, /delivered/);
  });

  test('a proposal awaiting approval reaches a Slack-format webhook, signed, linking its review page', async () => {
    await register(`${receiverUrl}?format=slack`, ['proposal.awaiting_approval'], 'slack');
    const secret = ((await page.textContent('#secret')) ?? '').trim();
    assert.match(secret, /^whsec_/);
    const ad = ads.find((a, i) => i >= 3 && a.status === 'active');
    assert.ok(ad, 'an active ad no other test changed');
    const { optimizer } = await ok<{ optimizer: { optimizer_id: string } }>('ads_save_optimizer', {
      account_id: account.account_id,
      name: 'Webhook review',
      config: optimizerConfig([ad.campaign_id], QUICK_REVIEW),
      enabled: true,
    });
    const { run } = await ok<{ run: { run_id: string } }>('ads_request_optimization_review', {
      optimizer_id: optimizer.optimizer_id,
    });
    const claim = await ok<{ claim_token: string }>('ads_claim_optimization_run', { run_id: run.run_id });
    const done = await ok<{ proposals: { proposal_id: string }[] }>('ads_complete_optimization_run', {
      run_id: run.run_id,
      claim_token: claim.claim_token,
      outcome: 'proposals',
      summary: 'One ad can name its offer.',
      variants: [
        {
          base_ad_id: ad.id,
          name: `Proposal for ${ad.id}`,
          title: 'Spring plants, 20% off',
          body: 'Healthy plants delivered in two days.',
          target_url: 'https://example.com/spring',
          rationale: 'The title names no offer.',
          hypothesis: 'Naming the offer raises CTR.',
        },
      ],
    });
    const proposalId = done.proposals[0]?.proposal_id as string;
    const got = await waitFor('the proposal event', () =>
      received.find(
        (r) => r.headers['x-adsmcp-event'] === 'proposal.awaiting_approval' && r.answered === 200,
      ),
    );
    assert.ok(verify(secret, String(got.headers['x-adsmcp-signature']), got.body), 'the signature verifies');
    // Its 2xx with a large page is the delivery, sent once: the page is not read.
    await new Promise((r) => setTimeout(r, 1000));
    const sends = received.filter((r) => r.headers['x-adsmcp-delivery'] === got.headers['x-adsmcp-delivery']);
    assert.equal(sends.length, 1, 'delivered at the first attempt, not sent again');
    assert.deepEqual(JSON.parse(got.body), {
      text: `*A proposal awaits approval*: Spring plants, 20% off (One ad can name its offer.)\n<${stack.gatewayUrl}/dashboard/proposals/${proposalId}|Review it in the dashboard>`,
    });
    // The audit log, which every member reads, names a receiver by its origin alone: the path and
    // query of a Slack incoming webhook's URL are the credential to post into its channel.
    await page.goto(`${stack.gatewayUrl}/dashboard/audit`);
    const audit = (await page.textContent('body')) ?? '';
    assert.match(audit, /webhook registered/);
    assert.ok(audit.includes(`${new URL(receiverUrl).origin}/…`), 'the receiver is named by its origin');
    assert.ok(!audit.includes('/hooks/adsmcp'), 'no receiver path or query is shown');
    // Nor can its path be found by searching for it (entries from before kept the whole URL).
    await page.goto(`${stack.gatewayUrl}/dashboard/audit?object=${encodeURIComponent('hooks/adsmcp')}`);
    assert.doesNotMatch((await page.textContent('body')) ?? '', /webhook registered/);
  });
  test('a performance import that completes, and one that fails, each reach an import.finished webhook, signed', async () => {
    await register(`${receiverUrl}?for=imports`, ['import.finished']);
    const secret = ((await page.textContent('#secret')) ?? '').trim();
    assert.match(secret, /^whsec_/);
    const meta = {
      source: 'vendor_b_ads',
      currency: 'EUR',
      timezone: 'Europe/Berlin',
      attribution: '7-day click, 1-day view',
      since: '2026-10-01',
      until: '2026-10-31',
    };
    const done = await ok<{ import: { import_id: string; status: string } }>('ads_import_performance', {
      ...meta,
      name: 'Webhook week',
      rows: [
        { ad_id: 'ad_w1', impressions: 100, clicks: 3, spend: 1.5 },
        { ad_id: 'ad_w2', impressions: 50, clicks: 1, spend: 0.5 },
      ],
    });
    assert.equal(done.import.status, 'completed');
    const bad = await call('ads_import_performance', {
      ...meta,
      name: 'Webhook bad CSV',
      csv: 'ad_id,impressions,clicks,spend\nad_w3,lots,1,1.00',
    });
    assert.equal(bad.isError, true);
    const failedId = (bad.data.error as { import: { import_id: string } }).import.import_id;
    const importEvent = (id: string) =>
      waitFor(`import.finished of ${id}`, () =>
        received.find(
          (r) =>
            r.answered === 200 &&
            r.headers['x-adsmcp-event'] === 'import.finished' &&
            (JSON.parse(r.body) as { import?: { id: string } }).import?.id === id,
        ),
      );
    const completed = await importEvent(done.import.import_id);
    const failed = await importEvent(failedId);
    for (const got of [completed, failed]) {
      assert.ok(
        verify(secret, String(got.headers['x-adsmcp-signature']), got.body),
        'the signature verifies',
      );
      assert.equal(got.headers['x-adsmcp-delivery'], (JSON.parse(got.body) as { id: string }).id);
    }
    const completedBody = JSON.parse(completed.body) as Record<string, unknown>;
    assert.equal(completedBody.event, 'import.finished');
    assert.equal(completedBody.workspace_id, seed.workspaceId);
    assert.deepEqual(completedBody.import, {
      id: done.import.import_id,
      status: 'completed',
      summary: 'Webhook week: 2 rows of 2 ads saved',
    });
    const failedImport = (JSON.parse(failed.body) as { import: { status: string; summary: string } }).import;
    assert.equal(failedImport.status, 'failed');
    assert.match(failedImport.summary, /^Webhook bad CSV: failed with 1 error \(.*must be a whole number/);
    // The delivery log names the import, with no link to a page the dashboard does not have.
    await page.goto(`${stack.gatewayUrl}/dashboard/webhooks`);
    const logged = await page
      .locator('#delivery-log tr.delivery', { hasText: failedId })
      .first()
      .textContent();
    assert.match(logged ?? '', /import\.finished.*performance import/s);
  });
});
