/**
 * Guardrails only a person loosens, in the changes service over real gRPC and PostgreSQL with the
 * real sandbox behind the real upstream-proxy: an agent's tightening save applies at once, its
 * loosening save or archive waits for a workspace admin in the dashboard while the stricter standard
 * keeps refusing changes, and a confirmation computed against a standard that moved since is refused.
 */
import assert from 'node:assert/strict';
import { randomUUID } from 'node:crypto';
import { after, before, describe, test } from 'node:test';
import type { ChangesService } from '@adsmcp/proto/changes/v1/changes_pb';
import { StandardsService } from '@adsmcp/proto/changes/v1/standards_pb';
import type { Pool } from '@adsmcp/runtime/db';
import { as } from '@adsmcp/testkit/service-harness';
import { type Client, Code } from '@connectrpc/connect';
import { type ChangesUnderTest, startChangesService, statusOf } from './changes-under-test.ts';
import { type LivePlatform, startLivePlatform } from './live-platform.ts';
import { personIn, refusal } from './people.ts';

let svc: ChangesUnderTest;
let pool: Pool;
let changes: Client<typeof ChangesService>;
let standards: Client<typeof StandardsService>;
let platform: LivePlatform;
let account: string;
let ads: { id: string; name: string; revision: number }[];

const workspace = randomUUID();
const person = personIn(workspace);
/** An agent holding an admin's MCP credential: its role does not let it loosen a standard. */
const agent = person({ role: 'admin' });
const dashboardAdmin = person({ role: 'admin', via: 'dashboard', credentialId: 'dashboard:admin' });
const dashboardEditor = person({ via: 'dashboard', credentialId: 'dashboard:editor' });

function renameAd(ad: { id: string }, name: string) {
  return {
    accountId: account,
    tool: 'ads_update_ad',
    objectType: 'ad',
    effect: 'update',
    operation: { method: 'POST', path: `/ads/${ad.id}`, bodyJson: JSON.stringify({ name }) },
    targetPath: `/ads/${ad.id}`,
  };
}

async function auditKinds(standardId: string): Promise<string[]> {
  const { rows } = await pool.query<{ kind: string }>(
    'SELECT kind FROM audit_log WHERE workspace_id = $1 AND subject = $2 ORDER BY seq',
    [workspace, standardId],
  );
  return rows.map((r) => r.kind);
}

before(async () => {
  platform = await startLivePlatform(workspace);
  account = platform.accountId;
  ads = await platform.ads();
  svc = await startChangesService(platform);
  pool = svc.pool;
  changes = svc.client;
  standards = svc.clientOf(StandardsService);
});

after(async () => {
  await platform?.stop();
  await svc?.stop();
});

describe('a loosening save waits for a person', () => {
  test('tighten applies at once; loosen is pending and the stricter standard still refuses; an admin in the dashboard confirms it', async () => {
    const ad = ads[0] as (typeof ads)[number];
    const { standard: created } = await standards.saveAccountStandard(
      { accountId: account, name: 'Naming', kind: 'standard', data: { namingPrefix: 'ACME-' } },
      as(agent),
    );
    assert.ok(created);
    // Tightening: a longer prefix that starts with the one in force.
    const tightened = await standards.saveAccountStandard(
      {
        accountId: account,
        name: 'Naming',
        kind: 'standard',
        data: { namingPrefix: 'ACME-EU-' },
        standardId: created.standardId,
        expectedRevision: 1,
      },
      as(agent),
    );
    assert.equal(tightened.pending, undefined);
    assert.equal(tightened.standard?.revision, 2);
    assert.equal(tightened.standard?.data?.namingPrefix, 'ACME-EU-');

    const loosened = await standards.saveAccountStandard(
      {
        accountId: account,
        name: 'Naming',
        kind: 'standard',
        data: { namingPrefix: 'BETA-' },
        standardId: created.standardId,
        expectedRevision: 2,
      },
      as(agent),
    );
    assert.equal(loosened.pending?.status, 'pending');
    assert.deepEqual(loosened.pending?.loosenings, [
      'changes the naming prefix from "ACME-EU-" to "BETA-": names starting with "BETA-" but not "ACME-EU-" would pass',
    ]);
    assert.equal(loosened.standard?.revision, 2, 'the standard in force is unchanged');
    assert.equal(loosened.standard?.data?.namingPrefix, 'ACME-EU-');

    const stillRefused = await refusal(changes.prepareChange(renameAd(ad, 'BETA-Spring'), as(agent)));
    assert.equal(stillRefused.code, Code.FailedPrecondition);
    assert.match(stillRefused.message, /body\.name must start with ACME-EU- \(standard Naming\)/);

    const pendingId = loosened.pending?.pendingId ?? '';
    const listed = await standards.listPendingStandardChanges({ accountId: account }, as(agent));
    assert.deepEqual(
      listed.changes.map((c) => c.pendingId),
      [pendingId],
    );
    for (const who of [agent, dashboardEditor]) {
      const denied = await refusal(standards.confirmPendingStandardChange({ pendingId }, as(who)));
      assert.equal(denied.code, Code.PermissionDenied);
      assert.match(denied.message, /needs a workspace admin signed in to the dashboard/);
    }

    const confirmed = await standards.confirmPendingStandardChange({ pendingId }, as(dashboardAdmin));
    assert.equal(confirmed.change?.status, 'confirmed');
    assert.equal(confirmed.standard?.revision, 3);
    assert.equal(confirmed.standard?.data?.namingPrefix, 'BETA-');
    const prepared = await changes.prepareChange(renameAd(ad, 'BETA-Spring'), as(agent));
    assert.equal(statusOf(prepared.change), 'prepared');
    assert.deepEqual(await auditKinds(created.standardId), [
      'standard.created',
      'standard.updated',
      'standard.change_pending',
      'standard.updated',
      'standard.change_confirmed',
    ]);
    assert.deepEqual(
      (await standards.listPendingStandardChanges({ accountId: account }, as(agent))).changes,
      [],
    );

    // The agent's archive is a loosening too; a person rejects it and the standard stays.
    const archive = await standards.archiveAccountStandard(
      { standardId: created.standardId, expectedRevision: 3 },
      as(agent),
    );
    assert.equal(archive.standard?.archived, false);
    assert.equal(archive.pending?.action, 'archive');
    const rejected = await standards.rejectPendingStandardChange(
      { pendingId: archive.pending?.pendingId ?? '' },
      as(dashboardAdmin),
    );
    assert.equal(rejected.change?.status, 'rejected');
    assert.equal(rejected.standard?.archived, false);
  });

  test('a pending change computed against a revision the standard has left is refused, saying so', async () => {
    const { standard } = await standards.saveAccountStandard(
      { accountId: account, name: 'Tracking', kind: 'standard', data: { utm: { utmSource: 'ads' } } },
      as(agent),
    );
    assert.ok(standard);
    const { pending } = await standards.saveAccountStandard(
      {
        accountId: account,
        name: 'Tracking',
        kind: 'standard',
        data: {},
        standardId: standard.standardId,
        expectedRevision: 1,
      },
      as(agent),
    );
    assert.deepEqual(pending?.loosenings, ['drops the required utm_source=ads']);
    // The agent tightens meanwhile: the standard moves to revision 2.
    await standards.saveAccountStandard(
      {
        accountId: account,
        name: 'Tracking',
        kind: 'standard',
        data: { utm: { utmSource: 'ads', utmMedium: 'cpc' } },
        standardId: standard.standardId,
        expectedRevision: 1,
      },
      as(agent),
    );
    const stale = await refusal(
      standards.confirmPendingStandardChange({ pendingId: pending?.pendingId ?? '' }, as(dashboardAdmin)),
    );
    assert.equal(stale.code, Code.FailedPrecondition);
    assert.match(
      stale.message,
      /account standard "Tracking" \(.+\) is at revision 2 since this change was asked for at revision 1; .* cannot be confirmed: reject it/,
    );
    const { standards: now } = await standards.listAccountStandards({ accountId: account }, as(agent));
    const tracking = now.find((s) => s.standardId === standard.standardId);
    assert.equal(tracking?.data?.utm?.utmMedium, 'cpc', 'the standard in force is the one saved since');
  });

  test("an admin's own loosening save from the dashboard applies at once", async () => {
    const { standard } = await standards.saveAccountStandard(
      { accountId: account, name: 'Window', kind: 'standard', data: { operatingEnd: '2099-01-31' } },
      as(agent),
    );
    assert.ok(standard);
    const saved = await standards.saveAccountStandard(
      {
        accountId: account,
        name: 'Window',
        kind: 'standard',
        data: { operatingEnd: '2099-12-31' },
        standardId: standard.standardId,
        expectedRevision: 1,
      },
      as(dashboardAdmin),
    );
    assert.equal(saved.pending, undefined);
    assert.equal(saved.standard?.data?.operatingEnd, '2099-12-31');
  });
});
