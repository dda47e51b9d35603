import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import type { AdGroupJson } from '../src/ad-groups.ts';
import type { AdJson } from '../src/ads.ts';
import { type BulkJobJson, OPERATION_MS, QUEUED_MS, type validationJson } from '../src/bulk-jobs.ts';
import type { CampaignJson } from '../src/campaigns.ts';
import type { ErrorJson, Sandbox } from './sandbox.ts';
import { startSandbox } from './sandbox.ts';
import { type ListJson, type Structure, seededStructure } from './structure.ts';

type ValidationJson = ReturnType<typeof validationJson>;

let sb: Sandbox;
/** The fake clock the sandbox reads (ms since the epoch). */
let clock = Date.parse('2026-11-20T12:00:00.000Z');

before(async () => {
  sb = await startSandbox({ now: () => clock });
});

after(async () => {
  await sb?.stop();
});

const campaignOp = (ref: string, name = 'Bulk campaign') => ({
  type: 'create_campaign',
  ref,
  body: { name, objective: 'clicks', budget_micros: 20_000_000, budget_type: 'daily' },
});
const adGroupOp = (ref: string, campaignId: string, name = 'Bulk ad group') => ({
  type: 'create_ad_group',
  ref,
  body: {
    campaign_id: campaignId,
    name,
    bidding_config: { billing_event_type: 'click', strategy: 'fixed_bid', max_bid_micros: 900_000 },
  },
});
const adOp = (adGroupId: string, name = 'Bulk ad') => ({
  type: 'create_ad',
  body: {
    ad_group_id: adGroupId,
    name,
    creative: {
      type: 'chat_card',
      title: 'Hello',
      body: 'Bulk created',
      target_url: 'https://shop.example.com',
    },
  },
});

/** adOp with `file_id` as the creative's image. */
const adOpWithFile = (adGroupId: string, name: string, fileId: string) => {
  const op = adOp(adGroupId, name);
  return { ...op, body: { ...op.body, creative: { ...op.body.creative, file_id: fileId } } };
};

/** The file_id of one of the account's seeded chat cards: a file of the account. */
async function seededFileId(s: Structure): Promise<string> {
  const res = await sb.call<ListJson<AdJson>>('GET', '/ads?limit=500', { token: s.credential });
  const fileId = res.body.data.find((a) => a.creative.file_id !== undefined)?.creative.file_id;
  assert.ok(fileId !== undefined, 'a seeded chat card with a file');
  return fileId;
}

async function adNames(s: Structure): Promise<string[]> {
  const res = await sb.call<ListJson<AdJson>>('GET', '/ads?limit=500', { token: s.credential });
  return res.body.data.map((a) => a.name);
}

function createJob<T = BulkJobJson>(s: Structure, body: unknown, key?: string) {
  return sb.call<T>('POST', '/bulk_mutation_jobs', {
    token: s.credential,
    body,
    ...(key === undefined ? {} : { headers: { 'idempotency-key': key } }),
  });
}

/** Each operation's status, and its error's code and field when it failed. */
const outcomes = (job: BulkJobJson) =>
  job.results.map((r) => [
    r.status,
    'error' in r ? r.error?.code : undefined,
    'error' in r ? r.error?.field : undefined,
  ]);

async function getJob(s: Structure, id: string): Promise<BulkJobJson> {
  const res = await sb.call<BulkJobJson>('GET', `/bulk_mutation_jobs/${id}`, { token: s.credential });
  assert.equal(res.status, 200);
  return res.body;
}

async function campaignNames(s: Structure): Promise<string[]> {
  const res = await sb.call<ListJson<CampaignJson>>('GET', '/campaigns', { token: s.credential });
  return res.body.data.map((c) => c.name);
}

describe('bulk mutation jobs', () => {
  it('creates paused objects, linked by refs, and reveals them as the job progresses over time', async () => {
    const s = await seededStructure(sb);
    const created = clock;
    const res = await createJob(s, {
      operations: [campaignOp('c1'), adGroupOp('g1', 'ref:c1'), adOp('ref:g1')],
    });
    assert.equal(res.status, 201, JSON.stringify(res.body));
    const job = res.body;
    assert.match(job.id, /^job_[0-9a-f]{16}$/);
    assert.deepEqual(
      [job.status, job.operation_count, job.processed_count, job.started_at, job.completed_at],
      ['queued', 3, 0, null, null],
    );
    assert.equal(job.created_at, new Date(created).toISOString());
    assert.deepEqual(
      job.results.map((r) => r.status),
      ['pending', 'pending', 'pending'],
    );

    clock = created + QUEUED_MS - 1;
    assert.equal((await getJob(s, job.id)).status, 'queued');

    clock = created + QUEUED_MS + OPERATION_MS;
    const running = await getJob(s, job.id);
    assert.deepEqual([running.status, running.processed_count, running.succeeded_count], ['running', 1, 1]);
    assert.equal(running.started_at, new Date(created + QUEUED_MS).toISOString());
    assert.deepEqual(
      running.results.map((r) => r.status),
      ['succeeded', 'pending', 'pending'],
    );

    clock = created + QUEUED_MS + 3 * OPERATION_MS;
    const done = await getJob(s, job.id);
    assert.deepEqual(
      [done.status, done.processed_count, done.succeeded_count, done.failed_count],
      ['succeeded', 3, 3, 0],
    );
    assert.equal(done.completed_at, new Date(clock).toISOString());
    const [campaign, group, ad] = done.results;
    assert.match(campaign?.id ?? '', /^cmp_/);
    assert.match(group?.id ?? '', /^adg_/);
    assert.match(ad?.id ?? '', /^ad_/);

    const c = await sb.call<CampaignJson>('GET', `/campaigns/${campaign?.id}`, { token: s.credential });
    assert.deepEqual([c.body.name, c.body.status], ['Bulk campaign', 'paused']);
    const a = await sb.call<AdJson>('GET', `/ads/${ad?.id}`, { token: s.credential });
    assert.deepEqual(
      [a.body.status, a.body.ad_group_id, a.body.campaign_id],
      ['paused', group?.id, campaign?.id],
    );
    const g = await sb.call<AdGroupJson>('GET', `/ad_groups/${group?.id}?include=serving_issues`, {
      token: s.credential,
    });
    assert.deepEqual(
      g.body.serving_issues?.map((i) => i.code),
      ['paused', 'campaign_paused'],
    );
    clock += 60_000;
    assert.deepEqual((await getJob(s, job.id)).results, done.results, 'a finished job stays as it is');
  });

  it('applies nothing when an operation fails without partial_failure, and reports each one', async () => {
    const s = await seededStructure(sb);
    const res = await createJob(s, {
      operations: [
        campaignOp('c1', 'Never created'),
        { ...campaignOp('c2'), body: { ...campaignOp('c2').body, budget_type: 'lifetime' } },
        adGroupOp('g1', 'ref:c1', 'no'),
      ],
    });
    assert.equal(res.status, 201);
    clock += QUEUED_MS + 3 * OPERATION_MS;
    const job = await getJob(s, res.body.id);
    assert.equal(job.status, 'failed');
    assert.deepEqual(outcomes(job), [
      ['skipped', undefined, undefined],
      ['failed', 'invalid_request', 'operations.1.body.end_time'],
      ['failed', 'invalid_request', 'operations.2.body.name'],
    ]);
    assert.ok(!(await campaignNames(s)).includes('Never created'));
  });

  it('applies the valid operations with partial_failure, failing those that depend on a failed one', async () => {
    const s = await seededStructure(sb);
    const res = await createJob(s, {
      partial_failure: true,
      operations: [
        campaignOp('ok', 'Partial campaign'),
        { ...campaignOp('bad'), body: { ...campaignOp('bad').body, budget_micros: 0 } },
        adGroupOp('g-bad', 'ref:bad'),
        adGroupOp('g-ok', 'ref:ok'),
        {
          ...adGroupOp('g-active', 'ref:ok', 'Active one'),
          body: { ...adGroupOp('x', 'ref:ok').body, status: 'active' },
        },
      ],
    });
    clock += QUEUED_MS + 5 * OPERATION_MS;
    const job = await getJob(s, res.body.id);
    assert.equal(job.status, 'succeeded');
    assert.deepEqual([job.succeeded_count, job.failed_count], [2, 3]);
    assert.deepEqual(outcomes(job), [
      ['succeeded', undefined, undefined],
      ['failed', 'invalid_request', 'operations.1.body.budget_micros'],
      ['failed', 'dependency_failed', 'operations.2.body.campaign_id'],
      ['succeeded', undefined, undefined],
      ['failed', 'invalid_request', 'operations.4.body.status'],
    ]);
    assert.ok((await campaignNames(s)).includes('Partial campaign'));
  });

  it('validates only, applying nothing and creating no job, with validate_only', async () => {
    const s = await seededStructure(sb);
    const res = await createJob<ValidationJson>(s, {
      validate_only: true,
      operations: [
        campaignOp('c1', 'Only validated'),
        adGroupOp('g1', 'ref:c1'),
        adOp('adg_0000000000000000'),
      ],
    });
    assert.equal(res.status, 200, JSON.stringify(res.body));
    assert.equal(res.body.valid, false);
    assert.deepEqual(
      res.body.results.map((r) => [r.status, 'error' in r ? r.error?.field : undefined]),
      [
        ['valid', undefined],
        ['valid', undefined],
        ['invalid', 'operations.2.body.ad_group_id'],
      ],
    );
    assert.ok(!(await campaignNames(s)).includes('Only validated'));
  });

  it('checks an ad group operation as POST /ad_groups does, against the existing campaigns', async () => {
    const s = await seededStructure(sb);
    const archived = s.adGroups[0];
    assert.ok(archived !== undefined);
    await sb.call('POST', `/ad_groups/${archived.id}/archive`, { token: s.credential });
    const res = await createJob<ValidationJson>(s, {
      validate_only: true,
      operations: [
        adGroupOp('dup', s.adGroups[1]?.campaign_id ?? '', s.adGroups[1]?.name),
        adGroupOp('fine', s.campaigns[0]?.id ?? ''),
        adOp(archived.id),
      ],
    });
    assert.deepEqual(
      res.body.results.map((r) => ('error' in r ? r.error?.code : r.status)),
      ['duplicate_name', 'valid', 'ad_group_archived'],
    );
  });

  it("refuses an ad group operation whose bid multiplier names another account's custom audience", async () => {
    const s = await seededStructure(sb);
    const other = await seededStructure(sb);
    const op = adGroupOp('g1', s.campaigns[0]?.id ?? '');
    const res = await createJob<ValidationJson>(s, {
      validate_only: true,
      operations: [
        {
          ...op,
          body: {
            ...op.body,
            bidding_config: {
              ...op.body.bidding_config,
              custom_audience_bid_multipliers: [
                { custom_audience_id: other.audiences[0]?.id, bid_multiplier_micros: 1_500_000 },
              ],
            },
          },
        },
      ],
    });
    assert.equal(res.status, 200, JSON.stringify(res.body));
    assert.deepEqual(
      res.body.results.map((r) => [r.status, 'error' in r ? r.error?.field : undefined]),
      [['invalid', 'operations.0.body.bidding_config.custom_audience_bid_multipliers.0.custom_audience_id']],
    );
  });

  describe('create_ad whose creative.file_id is no file of the account', () => {
    const unknown = 'file_000000000000000000000000';

    it('fails that operation with partial_failure, naming creative.file_id, and creates the others', async () => {
      const s = await seededStructure(sb);
      const groupId = s.adGroups[0]?.id ?? '';
      const res = await createJob(s, {
        partial_failure: true,
        operations: [
          adOp(groupId, 'Ad without image'),
          adOpWithFile(groupId, 'Ad with unknown image', unknown),
          adOpWithFile(groupId, 'Ad with seeded image', await seededFileId(s)),
        ],
      });
      assert.equal(res.status, 201, JSON.stringify(res.body));
      clock += QUEUED_MS + 3 * OPERATION_MS;
      const job = await getJob(s, res.body.id);
      assert.equal(job.status, 'succeeded');
      assert.deepEqual(outcomes(job), [
        ['succeeded', undefined, undefined],
        ['failed', 'invalid_request', 'operations.1.body.creative.file_id'],
        ['succeeded', undefined, undefined],
      ]);
      assert.match(
        job.results[1]?.error?.message ?? '',
        new RegExp(`${unknown} is not a file of this account`),
      );
      const names = await adNames(s);
      assert.ok(names.includes('Ad without image') && names.includes('Ad with seeded image'));
      assert.ok(!names.includes('Ad with unknown image'));
    });

    it('applies nothing without partial_failure', async () => {
      const s = await seededStructure(sb);
      const before = await adNames(s);
      const res = await createJob(s, {
        operations: [
          campaignOp('c1', 'Never created either'),
          adOp(s.adGroups[0]?.id ?? '', 'Ad never created'),
          adOpWithFile(s.adGroups[0]?.id ?? '', 'Ad with unknown image', unknown),
        ],
      });
      assert.equal(res.status, 201, JSON.stringify(res.body));
      clock += QUEUED_MS + 3 * OPERATION_MS;
      const job = await getJob(s, res.body.id);
      assert.equal(job.status, 'failed');
      assert.deepEqual(outcomes(job), [
        ['skipped', undefined, undefined],
        ['skipped', undefined, undefined],
        ['failed', 'invalid_request', 'operations.2.body.creative.file_id'],
      ]);
      assert.deepEqual(await adNames(s), before);
      assert.ok(!(await campaignNames(s)).includes('Never created either'));
    });
  });

  it('replays a job retried with the same key, creating one job; another body is 422', async () => {
    const s = await seededStructure(sb);
    const body = { operations: [campaignOp('c1', 'Replayed campaign')] };
    const first = await createJob(s, body, 'job-1');
    const retry = await createJob(s, body, 'job-1');
    assert.equal(retry.headers.get('idempotent-replayed'), 'true');
    assert.deepEqual(retry.body, first.body);
    const reused = await createJob<ErrorJson>(s, { operations: [campaignOp('c1', 'Other')] }, 'job-1');
    assert.equal(reused.status, 422);
    clock += QUEUED_MS + OPERATION_MS;
    assert.equal((await getJob(s, first.body.id)).status, 'succeeded');
    assert.equal((await campaignNames(s)).filter((n) => n === 'Replayed campaign').length, 1);
    assert.equal((await sb.ledger(s.accountId, '/bulk_mutation_jobs')).length, 1);
  });

  describe('refuses a malformed job request with 400 naming the field', () => {
    const cases: [string, unknown, string | undefined][] = [
      ['a body that is not an object', [], undefined],
      ['no operations', {}, 'operations'],
      ['an empty list', { operations: [] }, 'operations'],
      ['3001 operations', { operations: Array.from({ length: 3001 }, () => campaignOp('x')) }, 'operations'],
      ['an unknown operation type', { operations: [{ type: 'delete_ad', body: {} }] }, 'operations.0.type'],
      ['an operation without a body', { operations: [{ type: 'create_campaign' }] }, 'operations.0.body'],
      ['a bad ref', { operations: [{ ...campaignOp('x'), ref: 'has space' }] }, 'operations.0.ref'],
      ['a ref used twice', { operations: [campaignOp('x'), campaignOp('x')] }, 'operations.1.ref'],
      [
        'a ref to a later operation',
        { operations: [adGroupOp('g', 'ref:c'), campaignOp('c')] },
        'operations.0.body.campaign_id',
      ],
      [
        'a ref of the wrong type',
        { operations: [campaignOp('c'), adOp('ref:c')] },
        'operations.1.body.ad_group_id',
      ],
      [
        'validate_only that is not a boolean',
        { operations: [campaignOp('c')], validate_only: 'yes' },
        'validate_only',
      ],
      ['an unknown property', { operations: [campaignOp('c')], priority: 1 }, 'priority'],
    ];
    for (const [what, body, field] of cases) {
      it(`refuses ${what}`, async () => {
        const s = await seededStructure(sb);
        const res = await createJob<ErrorJson>(s, body);
        assert.equal(res.status, 400, JSON.stringify(res.body));
        assert.equal(res.body.error.field, field);
        assert.deepEqual(await sb.ledger(s.accountId), []);
      });
    }
  });

  it("answers 404 for an unknown job and another account's job", async () => {
    const s = await seededStructure(sb);
    const other = await seededStructure(sb);
    const job = await createJob(other, { operations: [campaignOp('c')] });
    for (const id of [job.body.id, 'job_0000000000000000']) {
      const res = await sb.call<ErrorJson>('GET', `/bulk_mutation_jobs/${id}`, { token: s.credential });
      assert.equal(res.status, 404);
    }
  });

  it('refuses a job from an account without bulk access, and says so in /me', async () => {
    const created = await sb.admin<{ account_id: string; credential: string }>('POST', '/_sandbox/accounts', {
      name: 'No bulk',
      currency: 'USD',
      time_zone: 'UTC',
      bulk_access: false,
    });
    assert.equal(created.status, 201, JSON.stringify(created.body));
    const token = created.body.credential;
    const me = await sb.call<{ bulk_access: boolean }>('GET', '/me', { token });
    assert.equal(me.body.bulk_access, false);
    const res = await sb.call<ErrorJson>('POST', '/bulk_mutation_jobs', {
      token,
      body: { operations: [campaignOp('c')] },
      headers: { 'idempotency-key': 'no-bulk-1' },
    });
    assert.equal(res.status, 403, JSON.stringify(res.body));
    assert.equal(res.body.error.code, 'bulk_access_denied');
    assert.equal((await sb.ledger(created.body.account_id)).length, 0);
  });
});
