/**
 * Running a bulk job's operations, each validated and applied as its own endpoint would, inside
 * the transaction that accepts the job. A savepoint per operation lets a refused one be undone
 * alone (`partial_failure`); a savepoint around them all undoes the whole job when it must be
 * all or nothing, or when it only validates.
 */
import type { Queryable } from '@adsmcp/runtime/db';
import { requireFile } from './ad-files.ts';
import { createAdGroup } from './ad-group-actions.ts';
import { parseAdGroupCreate } from './ad-group-requests.ts';
import { adGroupArchived } from './ad-groups.ts';
import {
  parseCreativePatch,
  parseLandingPageConfiguration,
  refuseUnknownProperties,
  string,
} from './ad-requests.ts';
import { type Creative, checkCreative } from './ads.ts';
import type { ItemResult, Operation } from './bulk-jobs.ts';
import { REF_FIELDS, REF_PREFIX } from './bulk-jobs.ts';
import { parseCampaignCreate, pausedOnly, required } from './campaigns.ts';
import { invalidRequest, PlatformHttpError } from './errors.ts';
import { newId } from './ids.ts';
import { findAdGroup } from './store/ad-group-store.ts';
import { insertAd } from './store/ad-store.ts';
import { insertCampaign } from './store/campaign-store.ts';

const AD_CREATE_KEYS = ['ad_group_id', 'name', 'creative', 'status', 'landing_page_configuration'];

/**
 * createAd validates an ad create body and creates the ad, paused, in its ad group; its image must
 * be a file of the account.
 */
async function createAd(db: Queryable, accountId: string, body: Record<string, unknown>): Promise<string> {
  refuseUnknownProperties(body, AD_CREATE_KEYS, '');
  const adGroupId = string(required(body, 'ad_group_id'), 'ad_group_id', { min: 1, max: 255, content: true });
  const name = string(required(body, 'name'), 'name', { min: 3, max: 1000, content: true });
  const patch = parseCreativePatch(required(body, 'creative'));
  for (const key of ['type', 'title', 'body'] as const) {
    if (patch[key] === undefined) throw invalidRequest(`creative.${key}`, `creative.${key} is required`);
  }
  const creative = checkCreative(patch as Creative);
  pausedOnly(body.status);
  const landingPageConfiguration =
    body.landing_page_configuration === undefined
      ? null
      : parseLandingPageConfiguration(body.landing_page_configuration);
  const group = await findAdGroup(db, accountId, adGroupId, { forUpdate: true });
  if (group === undefined) {
    throw invalidRequest('ad_group_id', `ad_group_id ${adGroupId} is not an ad group of this account`);
  }
  if (group.status === 'archived') throw adGroupArchived(group.id);
  if (creative.file_id !== undefined) await requireFile(db, accountId, creative.file_id);
  const ad = await insertAd(db, {
    id: newId('ad'),
    accountId,
    campaignId: group.campaignId,
    adGroupId,
    name,
    status: 'paused',
    creative,
    landingPageConfiguration,
  });
  return ad.id;
}

async function apply(db: Queryable, accountId: string, op: Operation): Promise<string> {
  switch (op.type) {
    case 'create_campaign': {
      const input = parseCampaignCreate(op.body);
      const campaign = await insertCampaign(db, { ...input, id: newId('cmp'), accountId, status: 'paused' });
      return campaign.id;
    }
    case 'create_ad_group': {
      pausedOnly(op.body.status);
      const input = parseAdGroupCreate({ ...op.body, status: 'paused' });
      return (await createAdGroup(db, accountId, input)).id;
    }
    case 'create_ad':
      return createAd(db, accountId, op.body);
  }
}

/** The body with its `ref:` pointer replaced by the id the earlier operation created. */
function resolveRefs(op: Operation, created: Map<string, string>): Record<string, unknown> {
  const refField = REF_FIELDS[op.type];
  const pointer = refField === undefined ? undefined : op.body[refField.field];
  if (refField === undefined || typeof pointer !== 'string' || !pointer.startsWith(REF_PREFIX))
    return op.body;
  const id = created.get(pointer.slice(REF_PREFIX.length));
  if (id === undefined) {
    throw new PlatformHttpError(
      400,
      'dependency_failed',
      `${refField.field} "${pointer}" names an operation of this job that failed`,
      { field: refField.field },
    );
  }
  return { ...op.body, [refField.field]: id };
}

/**
 * runOperations applies `ops` in order on `db` (inside a transaction) and returns each one's
 * outcome. Refused operations are undone one by one; unless `partialFailure`, any refusal undoes
 * them all (the applied ones become `skipped`). `validateOnly` undoes everything in any case.
 */
export async function runOperations(
  db: Queryable,
  accountId: string,
  ops: Operation[],
  opts: { partialFailure: boolean; validateOnly: boolean },
): Promise<ItemResult[]> {
  await db.query('SAVEPOINT bulk_job');
  const created = new Map<string, string>();
  const results: ItemResult[] = [];
  for (const [i, op] of ops.entries()) {
    await db.query('SAVEPOINT bulk_operation');
    try {
      const id = await apply(db, accountId, { ...op, body: resolveRefs(op, created) });
      await db.query('RELEASE SAVEPOINT bulk_operation');
      if (op.ref !== undefined) created.set(op.ref, id);
      results.push({ status: 'succeeded', id });
    } catch (err) {
      if (!(err instanceof PlatformHttpError)) throw err;
      await db.query('ROLLBACK TO SAVEPOINT bulk_operation');
      const field = `operations.${i}.body${err.field === undefined ? '' : `.${err.field}`}`;
      results.push({ status: 'failed', error: { code: err.code, message: err.message, field } });
    }
  }
  const anyFailed = results.some((r) => r.status === 'failed');
  if (opts.validateOnly || (anyFailed && !opts.partialFailure)) {
    await db.query('ROLLBACK TO SAVEPOINT bulk_job');
    return results.map((r) => (r.status === 'succeeded' ? { status: 'skipped' } : r));
  }
  await db.query('RELEASE SAVEPOINT bulk_job');
  return results;
}
