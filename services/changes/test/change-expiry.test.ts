/**
 * Expiry of prepared changes and of approvals, enforced by the changes service over real gRPC and
 * PostgreSQL: the times are moved back in the database, as a change left for days would be.
 */
import assert from 'node:assert/strict';
import { randomUUID } from 'node:crypto';
import { after, before, describe, test } from 'node:test';
import { fileURLToPath } from 'node:url';
import { ChangeEventKind, ChangeStatus, ChangesService } from '@adsmcp/proto/changes/v1/changes_pb';
import { migrateBus } from '@adsmcp/runtime/bus/outbox';
import type { Pool } from '@adsmcp/runtime/db';
import { as, type ServiceUnderTest, startServiceUnderTest } from '@adsmcp/testkit/service-harness';
import { type Client, Code } from '@connectrpc/connect';
import { digestOf } from '../src/domain/change.ts';
import { buildServer, SERVICE_NAME } from '../src/server.ts';
import { insertChange } from '../src/store/change-store.ts';
import { insertExpirySetting } from '../src/store/expiry-store.ts';
import { giveUpApply } from './apply-delivery.ts';
import { statusOf } from './changes-under-test.ts';
import { type LivePlatform, startLivePlatform } from './live-platform.ts';
import { personIn, refusal } from './people.ts';

let svc: ServiceUnderTest<typeof ChangesService>;
let pool: Pool;
let client: Client<typeof ChangesService>;
let platform: LivePlatform;
let account: string;
let ad: string;

const workspace = randomUUID();
const person = personIn(workspace);
const agent = person();
const reviewer = person({ via: 'dashboard', credentialId: 'dashboard:x' });
const admin = person({ via: 'dashboard', credentialId: 'dashboard:y', role: 'admin' });

async function prepare() {
  const res = await client.prepareChange(
    {
      accountId: account,
      tool: 'ads_update_ad',
      objectType: 'ad',
      effect: 'update',
      operation: { method: 'POST', path: `/ads/${ad}`, bodyJson: '{"name":"Expiring"}' },
      targetPath: `/ads/${ad}`,
    },
    as(agent),
  );
  return res.change as NonNullable<typeof res.change>;
}

/** Moves a change's preparation and approval `hours` back in time. */
async function age(changeId: string, hours: number): Promise<void> {
  await pool.query(
    `UPDATE changes SET prepared_at = prepared_at - make_interval(hours => $2),
                        approved_at = approved_at - make_interval(hours => $2)
      WHERE change_id = $1`,
    [changeId, hours],
  );
}

async function read(changeId: string) {
  const { change } = await client.getChange({ changeId, checkLive: false }, as(agent));
  return change as NonNullable<typeof change>;
}

const listed = async (state: ChangeStatus) =>
  (await client.listChanges({ state, accountId: '', limit: 100, offset: 0 }, as(agent))).changes.map(
    (c) => c.changeId,
  );

before(async () => {
  platform = await startLivePlatform(workspace);
  account = platform.accountId;
  const ads = await platform.ads();
  ad = (ads[0] as { id: string }).id;
  svc = await startServiceUnderTest({
    service: ChangesService,
    name: SERVICE_NAME,
    migrations: fileURLToPath(new URL('../migrations', import.meta.url)),
    prepare: (p) => migrateBus(p, SERVICE_NAME),
    build: (deps) => buildServer({ ...deps, upstream: platform.upstream }),
  });
  pool = svc.pool;
  client = svc.client;
});

after(async () => {
  await platform?.stop();
  await svc?.stop();
});

describe('a prepared change nobody approved', () => {
  test('reads prepared with its expiry 72 hours after it was prepared, and stays in the queue until then', async () => {
    const c = await prepare();
    assert.equal(statusOf(c), 'prepared');
    assert.equal(Date.parse(c.expiresAt ?? '') - Date.parse(c.preparedAt), 72 * 3_600_000);
    await age(c.changeId, 71);
    assert.equal(statusOf(await read(c.changeId)), 'prepared');
    assert.ok((await listed(ChangeStatus.PREPARED)).includes(c.changeId));
  });

  test('past 72 hours reads expired, leaves the prepared list for the expired one, and cannot be approved or applied', async () => {
    const c = await prepare();
    await age(c.changeId, 73);
    const seen = await read(c.changeId);
    assert.equal(statusOf(seen), 'expired');
    assert.equal(seen.expiresAt, new Date(Date.parse(seen.preparedAt) + 72 * 3_600_000).toISOString());
    assert.ok(
      !(await listed(ChangeStatus.PREPARED)).includes(c.changeId),
      'not in the queue awaiting approval',
    );
    assert.ok((await listed(ChangeStatus.EXPIRED)).includes(c.changeId), 'in the expired filter');
    const all = (await client.listChanges({ accountId: '', limit: 100, offset: 0 }, as(agent))).changes;
    assert.equal(statusOf(all.find((x) => x.changeId === c.changeId)), 'expired');

    const approve = await refusal(
      client.approveChange({ changeId: c.changeId, digest: c.digest }, as(reviewer)),
    );
    assert.equal(approve.code, Code.FailedPrecondition);
    assert.match(approve.message, new RegExp(`expired at ${seen.expiresAt.replace(/[.]/g, '\\.')}`));
    assert.match(approve.message, /within 72 hours .*prepare it again/);
    const apply = await refusal(
      client.applyChange({ changeId: c.changeId, digest: '', waitMs: 0 }, as(agent)),
    );
    assert.equal(apply.code, Code.FailedPrecondition);
    assert.match(apply.message, /expired at .*prepare it again/);
    assert.equal(statusOf(await read(c.changeId)), 'expired');
  });
});

describe('an approval no apply request followed', () => {
  test('expires 24 hours after approval: the change reads expired and is not applied, nothing queued', async () => {
    const c = await prepare();
    const { change: approved } = await client.approveChange(
      { changeId: c.changeId, digest: c.digest },
      as(reviewer),
    );
    assert.equal(statusOf(approved), 'approved');
    assert.equal(
      Date.parse(approved?.expiresAt ?? '') - Date.parse(approved?.approvedAt ?? ''),
      24 * 3_600_000,
    );
    await age(c.changeId, 25);
    assert.equal(statusOf(await read(c.changeId)), 'expired');
    assert.ok(!(await listed(ChangeStatus.APPROVED)).includes(c.changeId));
    const apply = await refusal(
      client.applyChange({ changeId: c.changeId, digest: '', waitMs: 0 }, as(agent)),
    );
    assert.equal(apply.code, Code.FailedPrecondition);
    assert.match(
      apply.message,
      /expired at .*its approval was not followed by an apply request within 24 hours.*prepare it again/,
    );
    const { rows } = await pool.query(
      `SELECT count(*)::int AS n FROM bus_outbox WHERE payload->>'change_id' = $1`,
      [c.changeId],
    );
    assert.deepEqual(rows, [{ n: 0 }]);
  });

  test('once an apply was requested the approval is used: the change no longer expires', async () => {
    const c = await prepare();
    await client.approveChange({ changeId: c.changeId, digest: c.digest }, as(reviewer));
    const { change } = await client.applyChange({ changeId: c.changeId, digest: '', waitMs: 0 }, as(agent));
    assert.equal(statusOf(change), 'applying');
    assert.equal(change?.expiresAt, undefined);
    await age(c.changeId, 100);
    const seen = await read(c.changeId);
    assert.equal(statusOf(seen), 'applying');
    assert.equal(seen.expiresAt, undefined);
  });
});

describe('the workspace expiry settings', () => {
  test('read as the defaults until an admin sets them', async () => {
    const { settings } = await client.getExpirySettings({}, as(agent));
    assert.deepEqual(
      { p: settings?.preparedValidHours, a: settings?.approvalValidHours, by: settings?.setBy },
      { p: 72, a: 24, by: '' },
    );
  });

  test('are set by an admin in person only, within 1 to 720 hours, each field named when wrong', async () => {
    const hours = { preparedValidHours: 48, approvalValidHours: 12 };
    const viaMcp = await refusal(client.setExpirySettings(hours, as(person({ role: 'admin' }))));
    assert.equal(viaMcp.code, Code.PermissionDenied);
    assert.match(viaMcp.message, /admin in the dashboard/);
    const editor = await refusal(client.setExpirySettings(hours, as(reviewer)));
    assert.equal(editor.code, Code.PermissionDenied);
    assert.match(editor.message, /role "editor"/);
    const zero = await refusal(client.setExpirySettings({ ...hours, preparedValidHours: 0 }, as(admin)));
    assert.equal(zero.code, Code.InvalidArgument);
    assert.match(
      zero.message,
      /prepared_valid_hours must be a whole number of hours from 1 to 720 \(got 0\)/,
    );
    const tooLong = await refusal(client.setExpirySettings({ ...hours, approvalValidHours: 721 }, as(admin)));
    assert.match(tooLong.message, /approval_valid_hours must be .* from 1 to 720 \(got 721\)/);
    assert.equal((await client.getExpirySettings({}, as(agent))).settings?.preparedValidHours, 72);
  });

  test('a setting applies to the changes already prepared, at their next read, and is an audit event', async () => {
    const c = await prepare();
    await age(c.changeId, 3);
    assert.equal(statusOf(await read(c.changeId)), 'prepared');
    const { settings } = await client.setExpirySettings(
      { preparedValidHours: 2, approvalValidHours: 5 },
      as(admin),
    );
    assert.deepEqual([settings?.preparedValidHours, settings?.approvalValidHours], [2, 5]);
    assert.match(settings?.setBy ?? '', new RegExp(`^user:${admin.userId} via dashboard`));
    const seen = await read(c.changeId);
    assert.equal(statusOf(seen), 'expired');
    assert.equal(Date.parse(seen.expiresAt ?? '') - Date.parse(seen.preparedAt), 2 * 3_600_000);
    const approve = await refusal(
      client.approveChange({ changeId: c.changeId, digest: c.digest }, as(reviewer)),
    );
    assert.match(approve.message, /within 2 hours of its preparation/);

    const { events } = await client.listChangeEvents(
      { accountId: '', userId: '', limit: 10, beforeAt: '', beforeKey: '' },
      as(agent),
    );
    const event = events.find((e) => e.eventKind === ChangeEventKind.EXPIRY_SETTINGS_CHANGED);
    assert.equal(event?.settings?.preparedValidHours, 2);
    assert.equal(event?.settings?.approvalValidHours, 5);
    assert.equal(event?.settings?.setBy, settings?.setBy);
    assert.match(event?.key ?? '', /^s:\d{20}$/);
    const byAdmin = await client.listChangeEvents(
      { accountId: '', userId: admin.userId ?? '', limit: 10, beforeAt: '', beforeKey: '' },
      as(agent),
    );
    assert.deepEqual(
      byAdmin.events.map((e) => e.eventKind),
      [ChangeEventKind.EXPIRY_SETTINGS_CHANGED],
    );
    const byAccount = await client.listChangeEvents(
      { accountId: account, userId: '', limit: 100, beforeAt: '', beforeKey: '' },
      as(agent),
    );
    assert.ok(!byAccount.events.some((e) => e.eventKind === ChangeEventKind.EXPIRY_SETTINGS_CHANGED));
    // Back to what the other tests expect.
    await client.setExpirySettings({ preparedValidHours: 72, approvalValidHours: 24 }, as(admin));
  });
});

describe("the apply worker's bound", () => {
  /** A change applying, approved `hoursAgo` hours ago and never sent, in a workspace of its own. */
  async function applyingChange(ws: string, hoursAgo: number): Promise<string> {
    const changeId = randomUUID();
    const op = { method: 'POST', path: '/ads/ad_1', bodyJson: '{"name":"x"}' };
    await insertChange(pool, {
      change_id: changeId,
      workspace_id: ws,
      account_id: randomUUID(),
      tool: 'ads_update_ad',
      summary: 'Update ad',
      method: op.method,
      path: op.path,
      body_json: op.bodyJson,
      digest: digestOf(op),
      target_path: '/ads/ad_1',
      target_before_json: '{}',
      prepared_by: 'user:x via mcp (c)',
      reviewed_result_json: '{}',
    });
    await pool.query(
      `UPDATE changes SET status = 'applying', approved_at = now() - make_interval(hours => $2),
              apply_requested_at = now() - make_interval(hours => $2) WHERE change_id = $1`,
      [changeId, hoursAgo],
    );
    return changeId;
  }

  async function giveUp(ws: string, changeId: string): Promise<{ status: string; error: string | null }> {
    await giveUpApply({ pool, upstream: platform.upstream }, ws, changeId, {
      kind: 'abandoned',
      detail: 'the worker applying it was stopped',
    });
    const { rows } = await pool.query<{ status: string; error: string | null }>(
      'SELECT status, error FROM changes WHERE change_id = $1',
      [changeId],
    );
    return rows[0] as { status: string; error: string | null };
  }

  test("is the workspace's approval expiry when an admin set one, else the default 24 hours", async () => {
    const unset = randomUUID();
    const kept = await giveUp(unset, await applyingChange(unset, 3));
    assert.equal(kept.status, 'applying', 'within 24 hours of approval it is tried again');

    const set = randomUUID();
    await insertExpirySetting(pool, {
      workspaceId: set,
      by: 'operator:test',
      hours: { preparedValidHours: 72, approvalValidHours: 2 },
    });
    const ended = await giveUp(set, await applyingChange(set, 3));
    assert.equal(ended.status, 'failed');
    assert.match(ended.error ?? '', /its approval \(valid 2 hours\) has expired/);
  });
});
