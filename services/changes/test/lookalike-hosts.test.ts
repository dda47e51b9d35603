/**
 * Look-alike landing-page hosts in the changes service, over real gRPC and PostgreSQL with the real
 * sandbox behind the real upstream-proxy: a URL whose host mixes scripts (`shop.exаmple.com` with a
 * Cyrillic "а") or looks like an allowed domain or the ad's current host is refused when a change
 * is prepared or planned, in an ad update, a bulk job, an ad batch and a workbook, with nothing
 * recorded, unless a standard of the account lists that exact host, in ASCII form or in Unicode.
 */
import assert from 'node:assert/strict';
import { randomUUID } from 'node:crypto';
import { after, afterEach, before, describe, test } from 'node:test';
import { BatchService } from '@adsmcp/proto/changes/v1/batches_pb';
import type { ChangesService } from '@adsmcp/proto/changes/v1/changes_pb';
import { StandardsService } from '@adsmcp/proto/changes/v1/standards_pb';
import type { Pool } from '@adsmcp/runtime/db';
import type { Principal } from '@adsmcp/runtime/principal';
import { as } from '@adsmcp/testkit/service-harness';
import { type Client, Code } from '@connectrpc/connect';
import { type ChangesUnderTest, startChangesService } from './changes-under-test.ts';
import { type LivePlatform, startLivePlatform } from './live-platform.ts';
import { refusal } from './people.ts';

let svc: ChangesUnderTest;
let _pool: Pool;
let changes: Client<typeof ChangesService>;
let standards: Client<typeof StandardsService>;
let batches: Client<typeof BatchService>;
let platform: LivePlatform;
let account: string;
let ad: { id: string; name: string };

const workspace = randomUUID();
const agent: Principal = {
  workspaceId: workspace,
  credentialId: 'cred',
  userId: randomUUID(),
  role: 'editor',
  scopes: ['read', 'write'],
  via: 'mcp',
};

/** `shop.example.com` with a Cyrillic "а" (U+0430) for the Latin "a". */
const LOOKALIKE = 'https://shop.ex\u0430mple.com/spring';
const A_LABEL = 'shop.xn--exmple-4nf.com';

async function changeCount(): Promise<number> {
  const { total } = await changes.listChanges({ accountId: account, limit: 1, offset: 0 }, as(agent));
  return total;
}

async function allowDomains(domains: string[]) {
  const { standard } = await standards.saveAccountStandard(
    { accountId: account, name: 'Domains', kind: 'standard', data: { allowedDomains: domains } },
    as(agent),
  );
  assert.ok(standard);
  return standard;
}

function updateAd(targetUrl: string) {
  return {
    accountId: account,
    tool: 'ads_update_ad',
    objectType: 'ad',
    effect: 'update',
    operation: {
      method: 'POST',
      path: `/ads/${ad.id}`,
      bodyJson: JSON.stringify({ creative: { target_url: targetUrl } }),
    },
    targetPath: `/ads/${ad.id}`,
  };
}

function adBatch(targetUrl: string) {
  return {
    accountId: account,
    itemId: randomUUID(),
    itemRevision: 1,
    campaignName: 'Spring Sale',
    budgetAmount: 50,
    budgetType: 'daily',
    objective: 'clicks',
    bidMicros: 300_000n,
    countries: ['US'],
    variants: [
      { title: 'Fine plants', body: 'Grow', targetUrl: 'https://shop.example.com/a' },
      { title: 'Two for one', body: 'This week', targetUrl },
    ],
  };
}

const sheet = (targetUrl: string) => ({
  accountId: account,
  sheets: {
    campaigns: [{ name: 'Winter Sale', objective: 'clicks', budget: '19.99', budget_type: 'daily' }],
    adgroups: [{ campaign: 'Winter Sale', name: 'Warm plants', bid: '0.30', countries: ['US'] }],
    ads: [{ ad_group: 'Warm plants', name: 'Cosy one', title: 'Plants for winter', target_url: targetUrl }],
  },
  validateOnly: false,
  partialFailure: false,
});

before(async () => {
  platform = await startLivePlatform(workspace);
  account = platform.accountId;
  const [first] = await platform.ads();
  assert.ok(first, 'the sandbox account has an ad');
  ad = first;

  svc = await startChangesService(platform);
  _pool = svc.pool;
  changes = svc.client;
  standards = svc.clientOf(StandardsService);
  batches = svc.clientOf(BatchService);
});

/** Every test starts with no standard. */
afterEach(async () => {
  const { standards: list } = await standards.listAccountStandards(
    { accountId: account, limit: 100 },
    as(agent),
  );
  for (const s of list)
    await standards.archiveAccountStandard(
      { standardId: s.standardId, expectedRevision: s.revision },
      as({ ...agent, role: 'admin', via: 'dashboard' }),
    );
});

after(async () => {
  await platform?.stop();
  await svc?.stop();
});

describe('a landing page on a host that mixes scripts', () => {
  test('is refused at prepare and in the plan, naming the field, the rule and the ASCII form, with nothing recorded', async () => {
    const before = await changeCount();
    // Each call is made when it is awaited: a refusal made before its turn would be unhandled.
    for (const attempt of [
      () => changes.prepareChange(updateAd(LOOKALIKE), as(agent)),
      () => changes.planChange({ change: updateAd(LOOKALIKE) }, as(agent)),
    ]) {
      const refused = await refusal(attempt());
      assert.equal(refused.code, Code.InvalidArgument);
      assert.equal(
        refused.message,
        `body.creative.target_url must not link to a look-alike host: ${A_LABEL} (shown as "shop.ex\u0430mple.com": mixed Latin and Cyrillic letters; looks like shop.example.com) mixes scripts in its label "ex\u0430mple" (UTS #39, highly restrictive); a standard of this account must list ${A_LABEL} in allowed_domains for it to be used`,
      );
    }
    // Written as its A-label it is the same host, refused the same way.
    const asLabel = await refusal(changes.prepareChange(updateAd(`https://${A_LABEL}/spring`), as(agent)));
    assert.equal(asLabel.code, Code.InvalidArgument);
    assert.equal(await changeCount(), before);
  });

  test('listed exactly in allowed_domains (as its A-label) it is prepared, and the summary shows the A-label first', async () => {
    await allowDomains([A_LABEL, 'example.com']);
    const { change } = await changes.prepareChange(updateAd(LOOKALIKE), as(agent));
    assert.ok(change);
    assert.match(
      change.summary,
      new RegExp(
        `creative\\.target_url "https://shop\\.example\\.com/[^"]+" → "https://${A_LABEL.replaceAll('.', '\\.')}/spring" \\(its host ${A_LABEL.replaceAll('.', '\\.')} is shown as "shop\\.ex\u0430mple\\.com": mixed Latin and Cyrillic letters; looks like shop\\.example\\.com\\)$`,
      ),
    );
    // The operation sends the URL as the agent wrote it; the reviewer reads its ASCII host.
    assert.equal(JSON.parse(change.operation?.bodyJson ?? '{}').creative.target_url, LOOKALIKE);
  });

  test('an allowed domain written in Unicode matches its ASCII form', async () => {
    await allowDomains(['shop.ex\u0430mple.com']);
    const { change } = await changes.prepareChange(updateAd(`https://${A_LABEL}/spring`), as(agent));
    assert.ok(change?.summary.includes(A_LABEL));
  });

  test('an allowed domain that is no domain name is refused when the standard is saved, naming its position', async () => {
    const refused = await refusal(allowDomains(['example.com', 'xn--zz.com']));
    assert.equal(refused.code, Code.InvalidArgument);
    assert.match(
      refused.message,
      /^`data\.allowed_domains\[1\]` must be a domain name .* \(got "xn--zz\.com"\)$/,
    );
  });
});

describe('a host that looks like one the account has', () => {
  test("a single-script look-alike of an allowed domain, or of the ad's current host, is refused", async () => {
    const current = await refusal(changes.prepareChange(updateAd('https://shop.examp1e.com/a'), as(agent)));
    assert.equal(current.code, Code.InvalidArgument);
    assert.match(
      current.message,
      /^body\.creative\.target_url must not link to a look-alike host: shop\.examp1e\.com \(looks like shop\.example\.com\) is not shop\.example\.com, which the creative\.target_url links to now \(UTS #39 confusables\)/,
    );
    await allowDomains(['example.com', 'other.test']);
    const allowed = await refusal(changes.prepareChange(updateAd('https://exarnple.com/a'), as(agent)));
    assert.equal(allowed.code, Code.InvalidArgument);
    assert.match(allowed.message, /is not the allowed domain example\.com of standard "Domains"/);
  });
});

describe('bulk jobs', () => {
  test("an ad batch with such a URL is refused the same way, naming the variant's ad; nothing recorded", async () => {
    const before = await changeCount();
    // One call at a time: a second call's refusal must not arrive before anything awaits it.
    for (const attempt of [
      () => batches.prepareAdBatch(adBatch(LOOKALIKE), as(agent)),
      () => batches.planAdBatch({ batch: adBatch(LOOKALIKE) }, as(agent)),
    ]) {
      const refused = await refusal(attempt());
      assert.equal(refused.code, Code.InvalidArgument);
      assert.match(
        refused.message,
        /^body\.operations\[3\]\.body\.creative\.target_url \(the ad "Spring Sale — variant 2"\) must not link to a look-alike host: shop\.xn--exmple-4nf\.com \(shown as/,
      );
    }
    assert.equal(await changeCount(), before);
  });

  test('a workbook with such a URL is refused the same way, and planned once the host is listed', async () => {
    const refused = await refusal(batches.planWorkbook(sheet(LOOKALIKE), as(agent)));
    assert.equal(refused.code, Code.InvalidArgument);
    assert.match(
      refused.message,
      /^body\.operations\[2\]\.body\.creative\.target_url \(the ad "Cosy one"\) must not link to a look-alike host: shop\.xn--exmple-4nf\.com/,
    );
    await allowDomains([A_LABEL]);
    const planned = await batches.planWorkbook(sheet(LOOKALIKE), as(agent));
    assert.equal(planned.adCount, 1);
  });
});
