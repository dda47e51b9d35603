/**
 * PrepareRevert over real gRPC, PostgreSQL, the real upstream-proxy and the ads sandbox: a revert
 * planned back to the recorded before-state and linked both ways, a second revert refused while the
 * first is pending, an ad group create reverted by archiving it and a pause by an activation, and a
 * revert refused, naming the object and the field, when the object moved since the change was applied.
 */
import assert from 'node:assert/strict';
import { randomUUID } from 'node:crypto';
import { after, before, describe, test } from 'node:test';
import { RevertService } from '@adsmcp/proto/changes/v1/revert_pb';
import type { Pool } from '@adsmcp/runtime/db';
import { callerKey, readingFor } from '@adsmcp/runtime/service-client';
import { as } from '@adsmcp/testkit/service-harness';
import { type Client, Code, createContextValues } from '@connectrpc/connect';
import { digestOf } from '../src/domain/change.ts';
import { findChange, insertChange } from '../src/store/change-store.ts';
import { revertLinksOf } from '../src/store/revert-store.ts';
import { type ChangesUnderTest, startChangesService, statusOf } from './changes-under-test.ts';
import { type LivePlatform, startLivePlatform } from './live-platform.ts';
import { personIn, refusal } from './people.ts';

let svc: ChangesUnderTest;
let reverts: Client<typeof RevertService>;
let pool: Pool;
let platform: LivePlatform;
let ads: { id: string; name: string; revision: number }[];

const workspace = randomUUID();
const agent = personIn(workspace)();

/**
 * An update of the ad's name that was applied: the platform's ad renamed (its revision moves, as an
 * applied update's does) and the change recorded as applied, with the ad as it was before and the
 * platform's answer.
 */
async function appliedRename(ad: { id: string; name: string; revision: number }, name: string) {
  await platform.editAd(ad.id, name);
  const operation = { method: 'POST', path: `/ads/${ad.id}`, bodyJson: JSON.stringify({ name }) };
  const changeId = randomUUID();
  await insertChange(pool, {
    change_id: changeId,
    workspace_id: workspace,
    account_id: platform.accountId,
    tool: 'ads_update_ad',
    summary: `Update ad ${ad.id}`,
    method: operation.method,
    path: operation.path,
    body_json: operation.bodyJson,
    digest: digestOf(operation),
    target_path: `/ads/${ad.id}`,
    target_before_json: JSON.stringify(ad),
    prepared_by: 'user:x via mcp',
    reviewed_result_json: JSON.stringify({ name }),
  });
  await pool.query(
    `UPDATE changes SET status = 'applied', applied_at = now(), upstream_status = 200, upstream_response_json = $2
      WHERE change_id = $1`,
    [changeId, JSON.stringify({ ...ad, name, revision: ad.revision + 1 })],
  );
  return changeId;
}

/** A change recorded as applied: `operation` sent, `before` the object then, `answer` the platform's. */
async function applied(
  tool: string,
  operation: { path: string; body: Record<string, unknown> },
  targetPath: string,
  before: Record<string, unknown>,
  answer: Record<string, unknown>,
) {
  const op = { method: 'POST', path: operation.path, bodyJson: JSON.stringify(operation.body) };
  const changeId = randomUUID();
  await insertChange(pool, {
    change_id: changeId,
    workspace_id: workspace,
    account_id: platform.accountId,
    tool,
    summary: `${tool} ${operation.path}`,
    method: op.method,
    path: op.path,
    body_json: op.bodyJson,
    digest: digestOf(op),
    target_path: targetPath,
    target_before_json: JSON.stringify(before),
    prepared_by: 'user:x via mcp',
    reviewed_result_json: '{}',
  });
  await pool.query(
    `UPDATE changes SET status = 'applied', applied_at = now(), upstream_status = 200, upstream_response_json = $2
      WHERE change_id = $1`,
    [changeId, JSON.stringify(answer)],
  );
  return changeId;
}

/** The account's ad groups as the platform shows them now. */
async function adGroups(): Promise<{ id: string; name: string; status: string; revision: number }[]> {
  const res = await platform.upstream.call(
    {
      accountId: platform.accountId,
      method: 'GET',
      path: '/ad_groups',
      query: [],
      bodyJson: '',
      idempotencyKey: '',
    },
    readingFor({ workspaceId: workspace, credentialId: 'revert-test', userId: null }),
  );
  return (
    JSON.parse(res.bodyJson) as { data: { id: string; name: string; status: string; revision: number }[] }
  ).data;
}

before(async () => {
  platform = await startLivePlatform(workspace);
  ads = await platform.ads();
  svc = await startChangesService(platform);
  reverts = svc.clientOf(RevertService);
  pool = svc.pool;
});

after(async () => {
  await platform?.stop();
  await svc?.stop();
});

describe('PrepareRevert', () => {
  test('plans the update back to the recorded name, links both ways, and refuses a second while the first is pending', async () => {
    const ad = ads[0] as (typeof ads)[number];
    const applied = await appliedRename(ad, 'Renamed for winter');
    const res = await reverts.prepareRevert({ changeId: applied, reason: 'winter is over' }, as(agent));
    const revert = res.change;
    assert.equal(statusOf(revert), 'prepared');
    assert.equal(revert?.tool, 'ads_prepare_revert');
    assert.equal(revert?.revertsChangeId, applied);
    assert.deepEqual(JSON.parse(revert?.operation?.bodyJson ?? ''), { name: ad.name });
    assert.equal(revert?.operation?.path, `/ads/${ad.id}`);
    assert.match(
      revert?.summary ?? '',
      new RegExp(`^Revert of change ${applied} \\(ads_update_ad\\), because "winter is over": Update ad `),
    );
    assert.match(revert?.summary ?? '', /name "Renamed for winter" → /);
    const reverted = await findChange(pool, workspace, applied);
    assert.deepEqual(reverted && revertLinksOf(reverted).reverted_by, [revert?.changeId]);

    const again = await refusal(reverts.prepareRevert({ changeId: applied, reason: '' }, as(agent)));
    assert.equal(again.code, Code.FailedPrecondition);
    assert.match(again.message, new RegExp(`already has a revert prepared: change ${revert?.changeId}`));
  });

  test('refuses when the object moved since the change was applied, naming the object and the field', async () => {
    const ad = ads[1] as (typeof ads)[number];
    const applied = await appliedRename(ad, 'Renamed once');
    await platform.editAd(ad.id, 'Renamed by someone else');
    const moved = await refusal(reverts.prepareRevert({ changeId: applied, reason: '' }, as(agent)));
    assert.equal(moved.code, Code.FailedPrecondition);
    assert.match(
      moved.message,
      new RegExp(
        `^ad "Renamed by someone else" \\(${ad.id}\\) moved since change ${applied} was applied: name is now "Renamed by someone else" \\(the change left "Renamed once"\\)`,
      ),
    );
    const { rows } = await pool.query('SELECT count(*)::int AS n FROM changes WHERE reverts_change_id = $1', [
      applied,
    ]);
    assert.deepEqual(rows, [{ n: 0 }], 'nothing was recorded');
  });

  test('an ad group create is reverted by archiving the ad group, a pause by activating it again, and a created ad group that moved is refused', async () => {
    const [created, paused] = (await adGroups()).filter((g) => g.status === 'active');
    assert.ok(created && paused, 'the sandbox account has active ad groups');
    const create = await applied(
      'ads_create_ad_group',
      { path: '/ad_groups', body: { name: created.name } },
      '',
      {},
      created,
    );
    const archive = (await reverts.prepareRevert({ changeId: create, reason: '' }, as(agent))).change;
    assert.equal(archive?.operation?.path, `/ad_groups/${created.id}/archive`);
    assert.equal(archive?.targetPath, `/ad_groups/${created.id}`);
    assert.match(archive?.summary ?? '', /: Archive ad group .* \(status "active" → "archived"\)/);

    // A pause that was applied: sent to the platform, its answer recorded.
    const writer = {
      contextValues: createContextValues().set(callerKey, {
        workspaceId: workspace,
        credentialId: 'revert-test',
        userId: null,
        role: 'editor',
        scopes: ['read', 'write'],
        via: 'worker',
      }),
    };
    const res = await platform.upstream.call(
      {
        accountId: platform.accountId,
        method: 'POST',
        path: `/ad_groups/${paused.id}/pause`,
        query: [],
        bodyJson: '{}',
        idempotencyKey: randomUUID(),
      },
      writer,
    );
    assert.equal(res.status, 200, res.bodyJson);
    const pause = await applied(
      'ads_pause_ad_group',
      { path: `/ad_groups/${paused.id}/pause`, body: {} },
      `/ad_groups/${paused.id}`,
      paused,
      JSON.parse(res.bodyJson) as Record<string, unknown>,
    );
    const activate = (await reverts.prepareRevert({ changeId: pause, reason: '' }, as(agent))).change;
    assert.equal(activate?.operation?.path, `/ad_groups/${paused.id}/activate`);
    assert.match(activate?.summary ?? '', /: Activate ad group .* \(status "paused" → "active"\)/);

    // A create whose ad group was archived on the platform since: it moved, and the revert says how.
    const [other] = (await adGroups()).filter((g) => g.status === 'active' && g.id !== created.id);
    assert.ok(other);
    const stale = await applied(
      'ads_create_ad_group',
      { path: '/ad_groups', body: {} },
      '',
      {},
      {
        ...other,
        status: 'paused',
      },
    );
    const moved = await refusal(reverts.prepareRevert({ changeId: stale, reason: '' }, as(agent)));
    assert.equal(moved.code, Code.FailedPrecondition);
    assert.match(
      moved.message,
      /^ad group .* moved since change .* was applied: status is now "active" \(the change left "paused"\)/,
    );
  });

  test('refuses a change that is not applied, and a reason with a hidden character, naming the field', async () => {
    const bad = await refusal(
      reverts.prepareRevert({ changeId: randomUUID(), reason: 'oops\u202e' }, as(agent)),
    );
    assert.equal(bad.code, Code.InvalidArgument);
    assert.match(bad.message, /^reason contains the hidden character U\+202E/);
    const missing = await refusal(reverts.prepareRevert({ changeId: randomUUID(), reason: '' }, as(agent)));
    assert.equal(missing.code, Code.NotFound);
  });
});
