/**
 * Account standards and spend guards in the changes service, over real gRPC and PostgreSQL with
 * the real sandbox behind the real upstream-proxy: saved with revisions, enforced when a change is
 * prepared and again by the apply worker before anything is sent.
 */
import assert from 'node:assert/strict';
import { randomUUID } from 'node:crypto';
import { after, before, describe, test } from 'node:test';
import { BatchService } from '@adsmcp/proto/changes/v1/batches_pb';
import type { ChangesService } from '@adsmcp/proto/changes/v1/changes_pb';
import { StandardsService } from '@adsmcp/proto/changes/v1/standards_pb';
import type { Pool } from '@adsmcp/runtime/db';
import { readingFor } from '@adsmcp/runtime/service-client';
import { as } from '@adsmcp/testkit/service-harness';
import { type Client, Code, ConnectError } from '@connectrpc/connect';
import { deliverApply } from './apply-delivery.ts';
import { type ChangesUnderTest, startChangesService, statusOf } from './changes-under-test.ts';
import { type LivePlatform, startLivePlatform } from './live-platform.ts';
import { personIn, refusal } from './people.ts';

let svc: ChangesUnderTest;
let pool: Pool;
let changes: Client<typeof ChangesService>;
let standards: Client<typeof StandardsService>;
let batches: Client<typeof BatchService>;
let platform: LivePlatform;
let account: string;
let ads: { id: string; name: string; revision: number }[];
let adGroup: { id: string; status: string };

const workspace = randomUUID();
const person = personIn(workspace);
const agent = person();
const reviewer = person({ via: 'dashboard', credentialId: 'dashboard:x' });
const dashboardAdmin = person({ role: 'admin', via: 'dashboard', credentialId: 'dashboard:admin' });

type Data = Parameters<typeof standards.saveAccountStandard>[0]['data'];

async function saveStandard(name: string, data: Data, kind = 'standard') {
  const { standard } = await standards.saveAccountStandard(
    { accountId: account, name, kind, data },
    as(agent),
  );
  assert.ok(standard);
  return standard;
}

/** Archives every standard of the account, so each test starts with none. */
async function archiveAll(): Promise<void> {
  const { standards: list } = await standards.listAccountStandards(
    { accountId: account, limit: 100 },
    as(agent),
  );
  for (const s of list) {
    await standards.archiveAccountStandard(
      { standardId: s.standardId, expectedRevision: s.revision },
      as(dashboardAdmin),
    );
  }
}

function updateAd(ad: { id: string }, patch: Record<string, unknown>) {
  return {
    accountId: account,
    tool: 'ads_update_ad',
    objectType: 'ad',
    effect: 'update',
    operation: { method: 'POST', path: `/ads/${ad.id}`, bodyJson: JSON.stringify(patch) },
    targetPath: `/ads/${ad.id}`,
  };
}

function updateAdGroup(patch: Record<string, unknown>, group: { id: string } = adGroup) {
  return {
    accountId: account,
    tool: 'ads_update_ad_group',
    objectType: 'ad_group',
    effect: 'update',
    operation: { method: 'POST', path: `/ad_groups/${group.id}`, bodyJson: JSON.stringify(patch) },
    targetPath: `/ad_groups/${group.id}`,
  };
}

/** The seeded ad group billed per impression. */
async function impressionGroup(): Promise<{ id: string }> {
  const groups = await platform.upstream.call(
    { accountId: account, method: 'GET', path: '/ad_groups', query: [] },
    readingFor(agent),
  );
  type Group = { id: string; bidding_config: { billing_event_type: string } };
  const found = (JSON.parse(groups.bodyJson) as { data: Group[] }).data.find(
    (g) => g.bidding_config.billing_event_type === 'impression',
  );
  assert.ok(found, 'the sandbox account has an ad group billed per impression');
  return found;
}

/** ads_create_ad_group's change: the single wire format, where an impression bid is per impression. */
function createAdGroup(bidding: Record<string, unknown>) {
  const body = { campaign_id: 'cmp_any', name: 'Night owls', status: 'paused', bidding_config: bidding };
  return {
    accountId: account,
    tool: 'ads_create_ad_group',
    objectType: 'ad_group',
    effect: 'create',
    operation: { method: 'POST', path: '/ad_groups', bodyJson: JSON.stringify(body) },
    targetPath: '',
  };
}

/** A bulk job creating a paused impressions campaign and its ad group: an impression bid is a CPM. */
function bulkJob(bidding: Record<string, unknown>) {
  const body = {
    operations: [
      {
        type: 'create_campaign',
        ref: 'c',
        body: {
          name: 'Night',
          objective: 'impressions',
          budget_micros: 50_000_000,
          budget_type: 'daily',
          status: 'paused',
        },
      },
      {
        type: 'create_ad_group',
        ref: 'g',
        body: { campaign_id: 'ref:c', name: 'Night owls', status: 'paused', bidding_config: bidding },
      },
    ],
    validate_only: false,
    partial_failure: false,
  };
  return {
    accountId: account,
    tool: 'ads_prepare_ad_batch',
    objectType: 'bulk_mutation_job',
    effect: 'create',
    operation: { method: 'POST', path: '/bulk_mutation_jobs', bodyJson: JSON.stringify(body) },
    targetPath: '',
  };
}

/** An ad batch (ads_prepare_ad_batch) of one impressions campaign bidding a CPM of `bidMicros`. */
function impressionBatch(bidMicros: bigint) {
  return {
    accountId: account,
    itemId: randomUUID(),
    itemRevision: 1,
    campaignName: 'Night Sale',
    budgetAmount: 50,
    budgetType: 'daily',
    objective: 'impressions',
    bidMicros,
    countries: ['US'],
    variants: [{ title: 'Night plants', body: 'Grow by moonlight', targetUrl: 'https://example.com/n' }],
  };
}

before(async () => {
  platform = await startLivePlatform(workspace);
  account = platform.accountId;
  ads = await platform.ads();
  assert.ok(ads.length >= 4, 'the sandbox account has ads');
  const groups = await platform.upstream.call(
    { accountId: account, method: 'GET', path: '/ad_groups', query: [] },
    readingFor(agent),
  );
  const first = (JSON.parse(groups.bodyJson) as { data: { id: string; status: string }[] }).data[0];
  assert.ok(first, 'the sandbox account has an ad group');
  adGroup = first;

  svc = await startChangesService(platform);
  pool = svc.pool;
  changes = svc.client;
  standards = svc.clientOf(StandardsService);
  batches = svc.clientOf(BatchService);
});

after(async () => {
  await platform?.stop();
  await svc?.stop();
});

describe('saving standards', () => {
  test('a standard is created at revision 1, listed, updated at its revision and archived; a stale revision is refused with the current one', async () => {
    const created = await saveStandard('Naming', { namingPrefix: 'ACME-', guidance: 'Keep it tidy.' });
    assert.equal(created.revision, 1);
    assert.equal(created.kind, 'standard');
    const listed = await standards.listAccountStandards({ accountId: account }, as(agent));
    assert.deepEqual(
      listed.standards.map((s) => s.name),
      ['Naming'],
    );
    assert.equal(listed.total, 1);
    const { standard: updated } = await standards.saveAccountStandard(
      {
        accountId: account,
        name: 'Naming v2',
        kind: 'standard',
        data: { namingPrefix: 'ACME-' },
        standardId: created.standardId,
        expectedRevision: 1,
      },
      as(agent),
    );
    assert.equal(updated?.revision, 2);
    assert.equal(updated?.name, 'Naming v2');
    const stale = await refusal(
      standards.saveAccountStandard(
        {
          accountId: account,
          name: 'Naming v3',
          kind: 'standard',
          data: {},
          standardId: created.standardId,
          expectedRevision: 1,
        },
        as(agent),
      ),
    );
    assert.equal(stale.code, Code.Aborted);
    assert.match(stale.message, /at revision 2/);
    const staleArchive = await refusal(
      standards.archiveAccountStandard({ standardId: created.standardId, expectedRevision: 1 }, as(agent)),
    );
    assert.match(staleArchive.message, /at revision 2/);
    const { standard: archived } = await standards.archiveAccountStandard(
      { standardId: created.standardId, expectedRevision: 2 },
      as(dashboardAdmin),
    );
    assert.equal(archived?.archived, true);
    assert.equal(archived?.revision, 3);
    const after = await standards.listAccountStandards({ accountId: account }, as(agent));
    assert.equal(after.total, 0);
  });

  test('a template holding authorization or remote identity fields is refused, each named by its path', async () => {
    const refused = await refusal(
      standards.saveAccountStandard(
        {
          accountId: account,
          name: 'Spring ad',
          kind: 'template',
          data: {
            template: {
              creative: { title: 'Spring', account_id: 'act_1' },
              headers: [{ Authorization: 'Bearer x' }],
            },
          },
        },
        as(agent),
      ),
    );
    assert.equal(refused.code, Code.InvalidArgument);
    assert.match(refused.message, /data\.template\.creative\.account_id \(a remote identity field\)/);
    assert.match(refused.message, /data\.template\.headers\[0\]\.Authorization \(an authorization field\)/);
    const ok = await saveStandard('Spring ad', { template: { creative: { title: 'Spring' } } }, 'template');
    assert.equal(ok.kind, 'template');
    await archiveAll();
  });

  test('an operating window that ends before it starts, and a viewer, are refused', async () => {
    const order = await refusal(
      standards.saveAccountStandard(
        {
          accountId: account,
          name: 'Window',
          kind: 'standard',
          data: { operatingStart: '2026-02-01', operatingEnd: '2026-01-01' },
        },
        as(agent),
      ),
    );
    assert.match(
      order.message,
      /operating_start` 2026-02-01 must not be after `data.operating_end` 2026-01-01/,
    );
    const viewer = await refusal(
      standards.saveAccountStandard(
        { accountId: account, name: 'X', kind: 'standard', data: {} },
        as(person({ role: 'viewer', scopes: ['read'] })),
      ),
    );
    assert.equal(viewer.code, Code.PermissionDenied);
  });

  test('a standard saved straight to the service is held to the bounds of the tool, each refusal naming its field', async () => {
    const bounds = await refusal(
      standards.saveAccountStandard(
        {
          accountId: account,
          name: 'Bounds',
          kind: 'standard',
          data: {
            namingPrefix: 'A'.repeat(101),
            allowedDomains: ['example.com', 'example.com'],
            utm: { utmSource: '' },
            guidance: 'g'.repeat(10_001),
          },
        },
        as(agent),
      ),
    );
    assert.equal(bounds.code, Code.InvalidArgument);
    assert.equal(
      bounds.message,
      '`data.naming_prefix` must be 1 to 100 characters (got 101); ' +
        '`data.allowed_domains[1]` repeats an earlier item; items must be unique; ' +
        '`data.utm.utm_source` must be 1 to 200 characters (got 0); ' +
        '`data.guidance` must be at most 10000 characters (got 10001)',
    );
    const noData = await refusal(
      standards.saveAccountStandard({ accountId: account, name: 'No data', kind: 'template' }, as(agent)),
    );
    assert.equal(noData.message, '`data` is required');
  });

  test('ids in upper case name the same account and standard: an update is not taken for a move to another account', async () => {
    const created = await saveStandard('Naming', { namingPrefix: 'ACME-' });
    const { standard: updated } = await standards.saveAccountStandard(
      {
        accountId: account.toUpperCase(),
        name: 'Naming v2',
        kind: 'standard',
        data: { namingPrefix: 'ACME-' },
        standardId: created.standardId.toUpperCase(),
        expectedRevision: 1,
      },
      as(agent),
    );
    assert.equal(updated?.revision, 2);
    assert.equal(updated?.accountId, account.toLowerCase());
    const { standard: made } = await standards.saveAccountStandard(
      { accountId: account.toUpperCase(), name: 'Upper', kind: 'template', data: {} },
      as(agent),
    );
    assert.equal(made?.accountId, account.toLowerCase());
    await archiveAll();
  });

  test("another workspace's standard is not found, and an account not of the workspace is refused", async () => {
    const mine = await saveStandard('Mine', { namingPrefix: 'ACME-' });
    const other = person({ workspaceId: randomUUID() });
    const archive = await refusal(
      standards.archiveAccountStandard({ standardId: mine.standardId, expectedRevision: 1 }, as(other)),
    );
    assert.equal(archive.code, Code.NotFound);
    const save = await refusal(
      standards.saveAccountStandard({ accountId: account, name: 'X', kind: 'standard', data: {} }, as(other)),
    );
    assert.equal(save.code, Code.NotFound);
    await archiveAll();
  });
});

describe('standards that contradict each other', () => {
  const names = async () =>
    (await standards.listAccountStandards({ accountId: account, limit: 100 }, as(agent))).standards.map(
      (s) => `${s.name} ${s.revision}`,
    );

  test('a standard no name could keep with another is refused naming both, and nothing is saved; a compatible one is accepted', async () => {
    const house = await saveStandard('House style', { namingPrefix: 'ACME-' });
    try {
      const refused = await refusal(saveStandard('Beta', { namingPrefix: 'BETA-' }));
      assert.equal(refused.code, Code.InvalidArgument);
      assert.equal(
        refused.message,
        `\`data.naming_prefix\` "BETA-" contradicts standard "House style" (${house.standardId}), whose naming_prefix is "ACME-": no name can start with both; archive or change one of them`,
      );
      assert.deepEqual(await names(), ['House style 1']);
      // A name starting with ACME-EU- keeps both.
      await saveStandard('Europe', { namingPrefix: 'ACME-EU-' });
      // A template is not enforced, so it contradicts nothing.
      await saveStandard('Beta template', { namingPrefix: 'BETA-' }, 'template');
      assert.deepEqual((await names()).sort(), ['Beta template 1', 'Europe 1', 'House style 1']);
    } finally {
      await archiveAll();
    }
  });

  test('UTM values, allowed domains and operating windows that no change could keep together are refused', async () => {
    const tracking = await saveStandard('Tracking', {
      utm: { utmCampaign: 'spring' },
      allowedDomains: ['example.com'],
      operatingStart: '2026-03-01',
      operatingEnd: '2026-03-31',
    });
    try {
      const refused = await refusal(
        saveStandard('Autumn', {
          utm: { utmCampaign: 'autumn' },
          allowedDomains: ['autumn.test'],
          operatingStart: '2026-09-01',
        }),
      );
      assert.equal(refused.code, Code.InvalidArgument);
      const id = tracking.standardId;
      assert.equal(
        refused.message,
        [
          `\`data.allowed_domains\` ["autumn.test"] contradicts standard "Tracking" (${id}), whose allowed_domains are ["example.com"]: no target URL can link to a domain allowed by both (a subdomain is within its domain); archive or change one of them`,
          `\`data.utm.utm_campaign\` "autumn" contradicts standard "Tracking" (${id}), whose utm_campaign is "spring": a target URL must carry utm_campaign exactly once, so it cannot carry both values; archive or change one of them`,
          `\`data.operating_start\` "2026-09-01" contradicts standard "Tracking" (${id}), whose operating window is 2026-03-01 to 2026-03-31: this window, from 2026-09-01, shares no day with it; archive or change one of them`,
        ].join('; '),
      );
      // A subdomain, the same campaign and a window sharing the 31st keep both.
      await saveStandard('Shop', {
        utm: { utmCampaign: 'spring', utmSource: 'ads' },
        allowedDomains: ['shop.example.com'],
        operatingStart: '2026-03-31',
      });
      assert.deepEqual((await names()).sort(), ['Shop 1', 'Tracking 1']);
    } finally {
      await archiveAll();
    }
  });

  test('archiving the standard a new one contradicts lets the new one be saved', async () => {
    const house = await saveStandard('House style', { namingPrefix: 'ACME-' });
    try {
      assert.equal(
        (await refusal(saveStandard('Beta', { namingPrefix: 'BETA-' }))).code,
        Code.InvalidArgument,
      );
      await standards.archiveAccountStandard(
        { standardId: house.standardId, expectedRevision: 1 },
        as(dashboardAdmin),
      );
      const beta = await saveStandard('Beta', { namingPrefix: 'BETA-' });
      assert.equal(beta.revision, 1);
      assert.deepEqual(await names(), ['Beta 1']);
    } finally {
      await archiveAll();
    }
  });

  test('an update is judged against the other standards, not against what it replaces', async () => {
    const house = await saveStandard('House style', { namingPrefix: 'ACME-' });
    const tracking = await saveStandard('Tracking', { utm: { utmCampaign: 'spring' } });
    try {
      const update = (s: typeof house, name: string, data: Data) =>
        standards.saveAccountStandard(
          {
            accountId: account,
            name,
            kind: 'standard',
            data,
            standardId: s.standardId,
            expectedRevision: s.revision,
          },
          as(dashboardAdmin),
        );
      // BETA- contradicts the ACME- it replaces, which no longer applies once replaced.
      const { standard: renamed } = await update(house, 'House style', { namingPrefix: 'BETA-' });
      assert.equal(renamed?.revision, 2);
      const refused = await refusal(
        update(tracking, 'Tracking', { namingPrefix: 'ACME-', utm: { utmCampaign: 'spring' } }),
      );
      assert.equal(refused.code, Code.InvalidArgument);
      assert.equal(
        refused.message,
        `\`data.naming_prefix\` "ACME-" contradicts standard "House style" (${house.standardId}), whose naming_prefix is "BETA-": no name can start with both; archive or change one of them`,
      );
      assert.deepEqual((await names()).sort(), ['House style 2', 'Tracking 1']);
      const kept = (await standards.listAccountStandards({ accountId: account }, as(agent))).standards.find(
        (s) => s.standardId === tracking.standardId,
      );
      assert.equal(kept?.data?.namingPrefix, undefined);
    } finally {
      await archiveAll();
    }
  });

  test('of two contradicting standards saved at the same moment, only one is kept', async () => {
    // The table lock stops each save at the latest where it stores its row; once both wait, they
    // are let go together. Had both read the account's standards before either stored its own,
    // each would have found the other absent.
    const holder = await pool.connect();
    try {
      await holder.query('BEGIN');
      await holder.query('LOCK TABLE account_standards IN SHARE ROW EXCLUSIVE MODE');
      const { rows: me } = await holder.query<{ pid: number }>('SELECT pg_backend_pid() AS pid');
      const holderPid = me[0]?.pid;
      const saves = Promise.allSettled([
        saveStandard('Acme', { namingPrefix: 'ACME-' }),
        saveStandard('Beta', { namingPrefix: 'BETA-' }),
      ]);
      const deadline = Date.now() + 10_000;
      for (;;) {
        const { rows } = await pool.query<{ n: number }>(
          `SELECT count(*)::int AS n FROM pg_stat_activity
            WHERE datname = current_database() AND wait_event_type = 'Lock' AND pid <> $1`,
          [holderPid],
        );
        if (rows[0]?.n === 2) break;
        assert.ok(Date.now() < deadline, 'both saves were expected to wait');
        await new Promise((r) => setTimeout(r, 20));
      }
      await holder.query('COMMIT');
      const outcomes = await saves;
      assert.deepEqual(outcomes.map((o) => o.status).sort(), ['fulfilled', 'rejected']);
      const rejected = outcomes.find((o) => o.status === 'rejected');
      assert.equal(ConnectError.from(rejected?.reason).code, Code.InvalidArgument);
      assert.equal((await names()).length, 1);
    } finally {
      await holder.query('ROLLBACK').catch(() => undefined);
      holder.release();
      await archiveAll();
    }
  });
});

describe('enforcement at prepare', () => {
  test('a name without the prefix is refused naming the field, the rule and the standard; one with it is recorded with the standards checked', async () => {
    const s = await saveStandard('Naming', { namingPrefix: 'ACME-', guidance: 'Names start with ACME-.' });
    try {
      const refused = await refusal(
        changes.prepareChange(updateAd(ads[0] as { id: string }, { name: 'Spring' }), as(agent)),
      );
      assert.equal(refused.code, Code.FailedPrecondition);
      assert.equal(refused.message, 'body.name must start with ACME- (standard Naming)');
      const { change } = await changes.prepareChange(
        updateAd(ads[0] as { id: string }, { name: 'ACME-Spring' }),
        as(agent),
      );
      assert.deepEqual(
        change?.standardsChecked.map((c) => ({
          id: c.standardId,
          name: c.name,
          revision: c.revision,
          guidance: c.guidance,
        })),
        [{ id: s.standardId, name: 'Naming', revision: 1, guidance: 'Names start with ACME-.' }],
      );
      const read = await changes.getChange({ changeId: change?.changeId ?? '' }, as(reviewer));
      assert.equal(read.change?.standardsChecked[0]?.name, 'Naming');
    } finally {
      await archiveAll();
    }
  });

  test('a target URL outside the allowed domains, or without the required UTM values, is refused; a subdomain with them passes', async () => {
    await saveStandard('Links', {
      allowedDomains: ['example.com'],
      utm: { utmSource: 'ads', utmMedium: 'cpc' },
    });
    try {
      const ad = ads[0] as { id: string };
      const elsewhere = await refusal(
        changes.prepareChange(
          updateAd(ad, { creative: { target_url: 'https://evil.test/x?utm_source=ads&utm_medium=cpc' } }),
          as(agent),
        ),
      );
      assert.equal(
        elsewhere.message,
        'body.creative.target_url must link to an allowed domain (example.com), not evil.test (standard Links)',
      );
      const untracked = await refusal(
        changes.prepareChange(
          updateAd(ad, { creative: { target_url: 'https://shop.example.com/x?utm_source=mail' } }),
          as(agent),
        ),
      );
      assert.match(
        untracked.message,
        /body\.creative\.target_url must carry utm_source=ads in its query \(it has utm_source=mail\) \(standard Links\)/,
      );
      assert.match(
        untracked.message,
        /must carry utm_medium=cpc in its query \(it has none\) \(standard Links\)/,
      );
      const { change } = await changes.prepareChange(
        updateAd(ad, {
          creative: { target_url: 'https://shop.example.com/x?utm_source=ads&utm_medium=cpc' },
        }),
        as(agent),
      );
      assert.equal(statusOf(change), 'prepared');
    } finally {
      await archiveAll();
    }
  });

  test('outside the operating window no change is prepared or planned, but a pause still is', async () => {
    await saveStandard('Season', { operatingStart: '2020-01-01', operatingEnd: '2020-01-31' });
    try {
      const refused = await refusal(
        changes.prepareChange(updateAd(ads[0] as { id: string }, { name: 'Later' }), as(agent)),
      );
      assert.match(
        refused.message,
        /^today \(\d{4}-\d{2}-\d{2} in UTC\) is outside the operating window 2020-01-01 to 2020-01-31: no change but a pause or an archive may be made now \(standard Season\)$/,
      );
      const planned = await refusal(
        changes.planChange({ change: updateAd(ads[0] as { id: string }, { name: 'Later' }) }, as(agent)),
      );
      assert.match(planned.message, /outside the operating window/);
      const pause = await changes.planChange(
        {
          change: {
            accountId: account,
            tool: 'ads_pause_ad_group',
            objectType: 'ad_group',
            effect: 'pause',
            operation: { method: 'POST', path: `/ad_groups/${adGroup.id}/pause`, bodyJson: '{}' },
            targetPath: `/ad_groups/${adGroup.id}`,
          },
          currentJson: JSON.stringify({ id: adGroup.id, status: 'active' }),
        },
        as(agent),
      );
      assert.match(pause.summary, /^Pause/);
    } finally {
      await archiveAll();
    }
  });

  test('a template is not enforced', async () => {
    await saveStandard('Template', { namingPrefix: 'ACME-' }, 'template');
    try {
      const { change } = await changes.prepareChange(
        updateAd(ads[0] as { id: string }, { name: 'Plain name' }),
        as(agent),
      );
      assert.deepEqual(change?.standardsChecked, []);
    } finally {
      await archiveAll();
    }
  });
});

describe('spend guards', () => {
  test('only a workspace admin in the dashboard sets a cap; an admin over MCP and an editor cannot', async () => {
    const overMcp = await refusal(
      standards.setSpendGuard({ accountId: account, maxBidMicros: 10n }, as(person({ role: 'admin' }))),
    );
    assert.equal(overMcp.code, Code.PermissionDenied);
    const editor = await refusal(
      standards.setSpendGuard({ accountId: account, maxBidMicros: 10n }, as(reviewer)),
    );
    assert.equal(editor.code, Code.PermissionDenied);
    const { guard } = await standards.getSpendGuard({ accountId: account }, as(agent));
    assert.equal(guard?.maxBidMicros, undefined);
  });

  test('a bid over the cap is refused naming the cap, at prepare; a bid within it is prepared', async () => {
    await standards.setSpendGuard({ accountId: account, maxBidMicros: 2_000_000n }, as(dashboardAdmin));
    try {
      const over = await refusal(
        changes.prepareChange(
          updateAdGroup({ bidding_config: { strategy: 'fixed_bid', max_bid_micros: 3_000_000 } }),
          as(agent),
        ),
      );
      assert.equal(over.code, Code.FailedPrecondition);
      assert.equal(
        over.message,
        "body.bidding_config.max_bid_micros 3000000 exceeds this account's bid cap 2000000 (spend guard)",
      );
      const { change } = await changes.prepareChange(
        updateAdGroup({ bidding_config: { strategy: 'fixed_bid', max_bid_micros: 1_900_000 } }),
        as(agent),
      );
      assert.equal(statusOf(change), 'prepared');
    } finally {
      await standards.setSpendGuard({ accountId: account }, as(dashboardAdmin));
    }
  });

  const perThousand = 'spend guard; impression bids are held to it per thousand impressions';
  const impression = (bid: number, multipliers: Record<string, unknown>[] = []) => ({
    billing_event_type: 'impression',
    strategy: 'fixed_bid',
    max_bid_micros: bid,
    custom_audience_bid_multipliers: multipliers,
  });
  const tenfold = [{ custom_audience_id: 'aud_vip', bid_multiplier_micros: 10_000_000 }];

  test("a single ad group's impression bid is held to the cap as its CPM, in a create and in an update that sets only the bid", async () => {
    await standards.setSpendGuard({ accountId: account, maxBidMicros: 2_000_000n }, as(dashboardAdmin));
    try {
      // 2500 micros per impression is a CPM of 2.50, above a cap of 2.00.
      const over = await refusal(changes.prepareChange(createAdGroup(impression(2_500)), as(agent)));
      assert.equal(over.code, Code.FailedPrecondition);
      assert.equal(
        over.message,
        `body.bidding_config.max_bid_micros 2500 per impression is a CPM of 2500000 micros, above this account's bid cap 2000000 (${perThousand})`,
      );
      const { change } = await changes.prepareChange(createAdGroup(impression(1_999)), as(agent));
      assert.equal(statusOf(change), 'prepared');

      // The seeded ad group billed per impression: an update of its bid alone keeps that billing.
      const billedPerImpression = await impressionGroup();
      const bidOnly = await refusal(
        changes.prepareChange(
          updateAdGroup({ bidding_config: { max_bid_micros: 2_500 } }, billedPerImpression),
          as(agent),
        ),
      );
      assert.equal(
        bidOnly.message,
        `body.bidding_config.max_bid_micros 2500 per impression is a CPM of 2500000 micros, above this account's bid cap 2000000 (${perThousand})`,
      );
      const { change: within } = await changes.prepareChange(
        updateAdGroup({ bidding_config: { max_bid_micros: 1_500 } }, billedPerImpression),
        as(agent),
      );
      assert.equal(statusOf(within), 'prepared');
    } finally {
      await standards.setSpendGuard({ accountId: account }, as(dashboardAdmin));
    }
  });

  test("an ad batch's impression bid is a CPM, held to the cap as it is", async () => {
    await standards.setSpendGuard({ accountId: account, maxBidMicros: 2_000_000n }, as(dashboardAdmin));
    try {
      const { change } = await batches.prepareAdBatch(impressionBatch(1_500_000n), as(agent));
      assert.equal(statusOf(change), 'prepared');
      const over = await refusal(batches.prepareAdBatch(impressionBatch(5_000_000n), as(agent)));
      assert.equal(over.code, Code.FailedPrecondition);
      assert.equal(
        over.message,
        `body.operations[1].body.bidding_config.max_bid_micros 5000000 per thousand impressions (a CPM) exceeds this account's bid cap 2000000 (${perThousand})`,
      );
    } finally {
      await standards.setSpendGuard({ accountId: account }, as(dashboardAdmin));
    }
  });

  test('a custom audience multiplier raises an impression bid held per thousand impressions, in a single ad group and in a bulk job', async () => {
    await standards.setSpendGuard({ accountId: account, maxBidMicros: 2_000_000n }, as(dashboardAdmin));
    try {
      // A CPM of 1.90, ten times for one audience: 19.00.
      const single = await refusal(
        changes.prepareChange(createAdGroup(impression(1_900, tenfold)), as(agent)),
      );
      assert.equal(
        single.message,
        `body.bidding_config.custom_audience_bid_multipliers[0]: the bid 1900 per impression times custom audience aud_vip's multiplier 10000000 (micros) is a CPM of 19000000 micros, above this account's bid cap 2000000 (${perThousand})`,
      );
      const bulk = await refusal(changes.prepareChange(bulkJob(impression(1_900_000, tenfold)), as(agent)));
      assert.equal(
        bulk.message,
        `body.operations[1].body.bidding_config.custom_audience_bid_multipliers[0]: the bid 1900000 per thousand impressions times custom audience aud_vip's multiplier 10000000 (micros) is 19000000 micros per thousand impressions, above this account's bid cap 2000000 (${perThousand})`,
      );
      const slight = [{ custom_audience_id: 'aud_vip', bid_multiplier_micros: 1_050_000 }];
      const { change } = await changes.prepareChange(bulkJob(impression(1_900_000, slight)), as(agent));
      assert.equal(statusOf(change), 'prepared');
    } finally {
      await standards.setSpendGuard({ accountId: account }, as(dashboardAdmin));
    }
  });
});

describe('enforcement at approval', () => {
  test('a change that breaks a standard saved after it was prepared cannot be approved, and the live check says why', async () => {
    const ad = ads[3] as { id: string; name: string; revision: number };
    const { change } = await changes.prepareChange(updateAd(ad, { name: 'Winter' }), as(agent));
    assert.ok(change);
    await saveStandard('Naming', { namingPrefix: 'ACME-' });
    try {
      const refused = await refusal(
        changes.approveChange({ changeId: change.changeId, digest: change.digest }, as(reviewer)),
      );
      assert.equal(refused.code, Code.FailedPrecondition);
      assert.equal(
        refused.message,
        "the change cannot be approved: it breaks the account's standards or spend guard as they are now: body.name must start with ACME- (standard Naming)",
      );
      const { change: still, live } = await changes.getChange(
        { changeId: change.changeId, checkLive: true },
        as(agent),
      );
      assert.equal(statusOf(still), 'prepared');
      assert.equal(live?.stale, true);
      assert.match(
        live?.reason ?? '',
        /^it breaks the account's standards or spend guard as they are now: body\.name must start with ACME-/,
      );
    } finally {
      await archiveAll();
    }
    // With the standard gone, the same change is approved.
    const { change: approved } = await changes.approveChange(
      { changeId: change.changeId, digest: change.digest },
      as(reviewer),
    );
    assert.equal(statusOf(approved), 'approved');
  });
});

describe('enforcement at apply', () => {
  /** Runs the apply worker once on the change, as the bus would deliver it. */
  function runWorker(changeId: string): Promise<void> {
    return deliverApply({ pool, upstream: platform.upstream }, workspace, changeId);
  }

  async function approvedAndApplying(ad: { id: string }, patch: Record<string, unknown>) {
    const { change } = await changes.prepareChange(updateAd(ad, patch), as(agent));
    assert.ok(change);
    await changes.approveChange({ changeId: change.changeId, digest: change.digest }, as(reviewer));
    await changes.applyChange({ changeId: change.changeId, digest: change.digest, waitMs: 0 }, as(agent));
    return change;
  }

  test('a change prepared before a standard it breaks fails at apply with the reason, and nothing reaches the ad platform', async () => {
    const ad = ads[2] as { id: string; name: string; revision: number };
    const change = await approvedAndApplying(ad, { name: 'Summer' });
    await saveStandard('Naming', { namingPrefix: 'ACME-' });
    try {
      await runWorker(change.changeId);
      const { change: failed } = await changes.getChange({ changeId: change.changeId }, as(agent));
      assert.equal(statusOf(failed), 'failed');
      assert.equal(
        failed?.error,
        'refused before applying, nothing was sent to the ad account: body.name must start with ACME- (standard Naming)',
      );
      assert.equal(failed?.upstreamStatus, undefined);
      const live = (await platform.ads()).find((a) => a.id === ad.id);
      assert.equal(live?.name, ad.name);
      assert.equal(live?.revision, ad.revision);
    } finally {
      await archiveAll();
    }
  });

  test('an operating window set after approval that leaves out today refuses the apply, dated in the account time zone', async () => {
    // The one rule at apply that reads the account (its time zone): read only when a standard is active.
    const ad = ads[2] as { id: string; name: string; revision: number };
    const change = await approvedAndApplying(ad, { name: 'Winter' });
    await saveStandard('Season', { operatingStart: '2020-01-01', operatingEnd: '2020-01-31' });
    try {
      await runWorker(change.changeId);
      const { change: failed } = await changes.getChange({ changeId: change.changeId }, as(agent));
      assert.equal(statusOf(failed), 'failed');
      assert.match(
        failed?.error ?? '',
        /^refused before applying, nothing was sent to the ad account: today \(\d{4}-\d{2}-\d{2} in UTC\) is outside the operating window 2020-01-01 to 2020-01-31: no change but a pause or an archive may be made now \(standard Season\)$/,
      );
      const live = (await platform.ads()).find((a) => a.id === ad.id);
      assert.equal(live?.name, ad.name);
    } finally {
      await archiveAll();
    }
  });

  test('a bid set alone on an ad group billed per impression is held to a cap set after approval as its CPM, and nothing is sent', async () => {
    const group = await impressionGroup();
    const { change } = await changes.prepareChange(
      updateAdGroup({ bidding_config: { max_bid_micros: 2_500 } }, group),
      as(agent),
    );
    assert.ok(change);
    await changes.approveChange({ changeId: change.changeId, digest: change.digest }, as(reviewer));
    await changes.applyChange({ changeId: change.changeId, digest: change.digest, waitMs: 0 }, as(agent));
    await standards.setSpendGuard({ accountId: account, maxBidMicros: 2_000_000n }, as(dashboardAdmin));
    try {
      await runWorker(change.changeId);
      const { change: failed } = await changes.getChange({ changeId: change.changeId }, as(agent));
      assert.equal(statusOf(failed), 'failed');
      assert.equal(
        failed?.error,
        "refused before applying, nothing was sent to the ad account: body.bidding_config.max_bid_micros 2500 per impression is a CPM of 2500000 micros, above this account's bid cap 2000000 (spend guard; impression bids are held to it per thousand impressions)",
      );
      assert.equal(failed?.upstreamStatus, undefined);
    } finally {
      await standards.setSpendGuard({ accountId: account }, as(dashboardAdmin));
    }
  });

  test('a change that keeps the standards is applied by the worker', async () => {
    const ad = ads[3] as { id: string };
    const change = await approvedAndApplying(ad, { name: 'ACME-Autumn' });
    await saveStandard('Naming', { namingPrefix: 'ACME-' });
    try {
      await runWorker(change.changeId);
      const { change: done } = await changes.getChange({ changeId: change.changeId }, as(agent));
      assert.equal(statusOf(done), 'applied', done?.error);
      assert.equal((await platform.ads()).find((a) => a.id === ad.id)?.name, 'ACME-Autumn');
    } finally {
      await archiveAll();
    }
  });
});
