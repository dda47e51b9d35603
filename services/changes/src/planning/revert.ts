/**
 * Undo: the change that reverts an applied change. It is planned from what the applied change
 * recorded (the object as it was, the body it sent, the platform's answer) and then planned,
 * recorded, reviewed, approved and applied exactly as any other change (planChange), so every
 * rule, standard and the apply worker's stale-plan check hold for it too.
 *
 * - An update is reverted by an update back to the recorded before-state of the fields it set.
 * - A status change of an ad group (pause, activate) by the status effect back to its before-state.
 * - What a change created is archived: an ad group create's ad group; an ad batch's (a bulk job's)
 *   ad group, whose campaign and ads the job created paused and which stay paused (the platform has
 *   no campaign archive, and the ads of an archived ad group cannot serve). Archiving is final on
 *   the platform, which is why an archive itself cannot be reverted.
 *
 * Before planning, the object(s) are read live and the revert is refused when any moved since the
 * reverted change was applied, naming the object and the field: a revert planned from a stale
 * before-state would silently overwrite what someone changed meanwhile.
 */
import { randomUUID } from 'node:crypto';
import type { Account } from '@adsmcp/proto/upstream/v1/upstream_pb';
import { inTransaction, type Pool, type Queryable } from '@adsmcp/runtime/db';
import { FailedPreconditionError, InvalidArgumentError, NotFoundError } from '@adsmcp/runtime/errors';
import { isUuid } from '@adsmcp/runtime/ids';
import { isRecord } from '@adsmcp/runtime/json';
import type { Principal } from '@adsmcp/runtime/principal';
import { blankRefusal, hiddenCharacter, showSpaces, textLength, withSpaceLegend } from '@adsmcp/runtime/text';
import { type ExpiryHours, shownStatus } from '../domain/change.ts';
import { type PlatformObject, rulesFor } from '../domain/plan.ts';
import { type ChangeRow, findChange, lockChange } from '../store/change-store.ts';
import { linkRevert, revertsOf } from '../store/revert-store.ts';
import { type ChangeRequest, type PlanningDeps, planChange, recordPlannedChange } from './planned-change.ts';
import { liveObject, platformGet, readableAccount, writableAccount } from './platform-reads.ts';

const LEGEND = withSpaceLegend('␣').slice(1);

/** The tool a revert is recorded as prepared by. */
export const REVERT_TOOL = 'ads_prepare_revert';

/** The longest reason a person or an agent may give for a revert. */
export const REASON_MAX = 500;

/** What an applied change did, as far as reverting it goes (revertedKind). */
export type RevertedKind =
  | { kind: 'update'; objectType: 'ad' | 'ad_group' }
  | { kind: 'status'; objectType: 'ad_group' }
  | { kind: 'created-ad-group' }
  | { kind: 'ad-batch' };

const ID = '[A-Za-z0-9_.:-]+';

/**
 * What the applied change with `path` and `target_path` did, or a refusal naming what can be
 * reverted. Read from the recorded operation, which is what was sent.
 */
export function revertedKind(c: Pick<ChangeRow, 'path' | 'target_path'>): RevertedKind {
  const { path, target_path: target } = c;
  if (new RegExp(`^/ads/${ID}$`).test(path) && target === path) return { kind: 'update', objectType: 'ad' };
  if (new RegExp(`^/ad_groups/${ID}$`).test(path) && target === path)
    return { kind: 'update', objectType: 'ad_group' };
  if (new RegExp(`^/ad_groups/${ID}/(pause|activate)$`).test(path) && path.startsWith(`${target}/`))
    return { kind: 'status', objectType: 'ad_group' };
  if (path === '/ad_groups' && target === '') return { kind: 'created-ad-group' };
  if (path === '/bulk_mutation_jobs' && target === '') return { kind: 'ad-batch' };
  if (/\/archive$/.test(path))
    throw new FailedPreconditionError(
      `the change archived ${target}, and archiving is final on the ad platform (an archived object cannot be changed again), so it cannot be reverted`,
    );
  throw new FailedPreconditionError(
    `a change sent as POST ${path} cannot be reverted: reverts exist for ad and ad group updates, ad group pauses and activations, ad group creates and ad batches`,
  );
}

function isObject(v: unknown): v is PlatformObject {
  return isRecord(v) && !Array.isArray(v);
}

function parseObject(json: string | null): PlatformObject | undefined {
  if (json === null || json === '') return undefined;
  try {
    const v: unknown = JSON.parse(json);
    return isObject(v) ? v : undefined;
  } catch {
    return undefined;
  }
}

/**
 * The body that puts back what `body` changed: each field it set, as `before` had it. A merged
 * field (an ad's creative, an ad group's bidding_config or product_set) is put back field by field;
 * a creative given a campaign asset (`asset_id`, uploaded as a new file) gets its earlier file_id
 * back. A field `before` did not have is sent as null, which the platform reads as "remove it"
 * where it may be removed and refuses, naming the field, where it may not.
 */
export function inverseUpdate(
  body: PlatformObject,
  before: PlatformObject,
  mergedFields: readonly string[],
): PlatformObject {
  const inverse: PlatformObject = {};
  for (const [field, value] of Object.entries(body)) {
    const was = before[field];
    if (mergedFields.includes(field) && isObject(value) && isObject(was)) {
      const sub: PlatformObject = {};
      for (const key of Object.keys(value)) {
        const k = key === 'asset_id' ? 'file_id' : key;
        sub[k] = was[k] ?? null;
      }
      inverse[field] = sub;
    } else {
      inverse[field] = was ?? null;
    }
  }
  return inverse;
}

/** The status effect that puts an ad group back to `before`'s status. */
export function inverseStatus(before: PlatformObject): 'pause' | 'activate' {
  if (before.status === 'active') return 'activate';
  if (before.status === 'paused') return 'pause';
  throw new FailedPreconditionError(
    `the object was ${JSON.stringify(before.status)} before the change, a status no change can put back`,
  );
}

/** Fields that move with every write or are computed by the platform, never compared. */
const UNCOMPARED = new Set(['revision', 'updated_at', 'created_at', 'serving_issues']);

const shown = (v: unknown) =>
  v === undefined ? '(unset)' : JSON.stringify(v, (_k, x) => (typeof x === 'string' ? showSpaces(x) : x));

/** `v` as JSON with every object's keys in order, so equal values are equal text. */
function canonical(v: unknown): string {
  if (Array.isArray(v)) return `[${v.map(canonical).join(',')}]`;
  if (isObject(v)) {
    return `{${Object.keys(v)
      .sort()
      .map((k) => `${JSON.stringify(k)}:${canonical(v[k])}`)
      .join(',')}}`;
  }
  return JSON.stringify(v) ?? 'null';
}

/**
 * The fields of `live` that differ from `left` (the object as the change left it), a line each:
 * `name is now "B" (the change left "A")`. Only fields `left` shows are compared, and an object
 * field field by field; `skip` names fields not to compare (a reference to another object).
 */
export function movedFields(
  left: PlatformObject,
  live: PlatformObject,
  skip: readonly string[] = [],
): string[] {
  const lines: string[] = [];
  const compare = (field: string, was: unknown, now: unknown) => {
    if (canonical(was) !== canonical(now))
      lines.push(`${field} is now ${shown(now)} (the change left ${shown(was)})`);
  };
  for (const [field, was] of Object.entries(left)) {
    if (UNCOMPARED.has(field) || skip.includes(field)) continue;
    const now = live[field];
    if (isObject(was) && isObject(now)) {
      for (const [sub, w] of Object.entries(was)) {
        if (skip.includes(`${field}.${sub}`)) continue;
        compare(`${field}.${sub}`, w, now[sub]);
      }
    } else {
      compare(field, was, now);
    }
  }
  if (lines.length === 0 && typeof left.revision === 'number' && live.revision !== left.revision) {
    lines.push(`its revision is now ${String(live.revision)} (the change left ${left.revision})`);
  }
  return lines;
}

/** How a person names the object: `ad group "Spring" (adg_1)`. */
export function nameOf(label: string, o: PlatformObject): string {
  const id = String(o.id ?? '');
  return typeof o.name === 'string' ? `${label} "${showSpaces(o.name)}" (${id})` : `${label} ${id}`;
}

function refuseMoved(what: string, changeId: string, lines: string[]): void {
  if (lines.length === 0) return;
  throw new FailedPreconditionError(
    `${what} moved since change ${changeId} was applied: ${lines.join('; ')}; a revert would overwrite that, so none was prepared: prepare a change against its current state instead`,
  );
}

/**
 * The object as the applied change left it: the platform's answer when it is the object (an
 * update's, a status change's, a create's), else the fields the change set as reviewed (a change
 * a person found applied has no answer).
 */
function leftBy(row: ChangeRow): PlatformObject {
  const answer = parseObject(row.upstream_response_json);
  if (answer !== undefined && typeof answer.id === 'string') return answer;
  return parseObject(row.reviewed_result_json) ?? {};
}

/** What a revert asks planChange for, and what its summary says first. */
export interface RevertRequest {
  request: ChangeRequest;
  /** What the summary adds about the objects the revert leaves as they are. */
  note: string;
}

interface Reads {
  deps: PlanningDeps;
  p: Principal;
  account: Account;
}

const read = ({ deps, p, account }: Reads, path: string, what: string) =>
  liveObject(deps.upstream, p, account, path, what);

function request(
  row: ChangeRow,
  objectType: string,
  effect: string,
  target: string,
  path: string,
  body: PlatformObject,
): ChangeRequest {
  return {
    accountId: row.account_id,
    tool: REVERT_TOOL,
    objectType,
    effect,
    targetPath: target,
    operation: { method: 'POST', path, bodyJson: JSON.stringify(body) },
  };
}

const LABELS = { ad: 'ad', ad_group: 'ad group' } as const;

/** The revert of an update or a status change: back to the recorded before-state. */
async function revertInPlace(r: Reads, row: ChangeRow, kind: RevertedKind & { kind: 'update' | 'status' }) {
  const before = parseObject(row.target_before_json);
  if (before === undefined || Object.keys(before).length === 0)
    throw new FailedPreconditionError(`change ${row.change_id} recorded no before-state to revert to`);
  const label = LABELS[kind.objectType];
  const live = await read(r, row.target_path, `${label} ${row.target_path.split('/').pop() ?? ''}`);
  refuseMoved(nameOf(label, live), row.change_id, movedFields(leftBy(row), live));
  if (kind.kind === 'status') {
    const effect = inverseStatus(before);
    return {
      request: request(row, kind.objectType, effect, row.target_path, `${row.target_path}/${effect}`, {}),
      note: '',
    };
  }
  const body = parseObject(row.body_json) ?? {};
  const inverse = inverseUpdate(body, before, rulesFor(kind.objectType, 'update').mergedFields);
  return { request: request(row, kind.objectType, 'update', row.target_path, row.path, inverse), note: '' };
}

/** The revert of an ad group create: the ad group archived, as the create left it. */
async function revertCreatedAdGroup(r: Reads, row: ChangeRow): Promise<RevertRequest> {
  const created = parseObject(row.upstream_response_json);
  const id = created?.id;
  if (created === undefined || typeof id !== 'string')
    throw new FailedPreconditionError(
      `change ${row.change_id} has no answer of the platform naming the ad group it created`,
    );
  const path = `/ad_groups/${id}`;
  const live = await read(r, path, `ad group ${id}`);
  refuseMoved(nameOf('ad group', live), row.change_id, movedFields(created, live));
  return { request: request(row, 'ad_group', 'archive', path, `${path}/archive`, {}), note: '' };
}

const CREATED_PATH: Record<string, { prefix: string; label: string }> = {
  create_campaign: { prefix: '/campaigns/', label: 'campaign' },
  create_ad_group: { prefix: '/ad_groups/', label: 'ad group' },
  create_ad: { prefix: '/ads/', label: 'ad' },
};

/**
 * The revert of an ad batch: the job is read for what it created; each object must still be as the
 * job created it (paused, its fields as sent); its one ad group is archived, and the summary says
 * what stays paused.
 */
async function revertAdBatch(r: Reads, row: ChangeRow): Promise<RevertRequest> {
  const jobId = parseObject(row.upstream_response_json)?.id;
  if (typeof jobId !== 'string')
    throw new FailedPreconditionError(
      `change ${row.change_id} has no answer of the platform naming its bulk job`,
    );
  const res = await platformGet(
    r.deps.upstream,
    r.p,
    r.account,
    `/bulk_mutation_jobs/${jobId}`,
    `bulk job ${jobId}`,
    () => new NotFoundError(`no bulk job ${jobId} in ad account ${r.account.name}`),
  );
  const job = parseObject(res.bodyJson) ?? {};
  if (job.status !== 'succeeded' && job.status !== 'failed')
    throw new FailedPreconditionError(
      `bulk job ${jobId} is still ${String(job.status)}: what it creates is known once it has finished; try again shortly`,
    );
  const operations = (parseObject(row.body_json)?.operations ?? []) as unknown[];
  const results = Array.isArray(job.results) ? job.results.filter(isObject) : [];
  const created: { label: string; path: string; body: PlatformObject; live: PlatformObject }[] = [];
  for (const result of results) {
    if (result.status !== 'succeeded' || typeof result.id !== 'string' || typeof result.index !== 'number')
      continue;
    const op = operations[result.index];
    const type = isObject(op) ? op.type : undefined;
    const where = typeof type === 'string' ? CREATED_PATH[type] : undefined;
    if (where === undefined || !isObject(op) || !isObject(op.body)) continue;
    const path = `${where.prefix}${result.id}`;
    created.push({
      label: where.label,
      path,
      body: op.body,
      live: await read(r, path, `${where.label} ${result.id}`),
    });
  }
  for (const c of created) {
    // The references to the job's other objects were written as "ref:…" and the images as assets.
    const lines = movedFields(c.body, c.live, ['campaign_id', 'ad_group_id', 'creative.asset_id']);
    refuseMoved(
      nameOf(c.label, c.live),
      row.change_id,
      lines.map((l) => l.replace('(the change left', '(the job created it')),
    );
  }
  const groups = created.filter((c) => c.label === 'ad group');
  if (groups.length !== 1)
    throw new FailedPreconditionError(
      `bulk job ${jobId} created ${groups.length} ad groups; a revert archives the one ad group an ad batch creates`,
    );
  const group = groups[0] as (typeof groups)[number];
  const rest = created.filter((c) => c !== group).map((c) => nameOf(c.label, c.live));
  const note =
    rest.length === 0
      ? ''
      : ` ${rest.join(', ')} stay paused, as the job created them: the platform offers no campaign archive, and the ads of an archived ad group cannot serve.`;
  return { request: request(row, 'ad_group', 'archive', group.path, `${group.path}/archive`, {}), note };
}

/** The revert's request for the applied change `row`, after the objects were found unmoved. */
export async function revertRequest(
  deps: PlanningDeps,
  p: Principal,
  row: ChangeRow,
  account: Account,
): Promise<RevertRequest> {
  const kind = revertedKind(row);
  const r = { deps, p, account };
  switch (kind.kind) {
    case 'update':
    case 'status':
      return revertInPlace(r, row, kind);
    case 'created-ad-group':
      return revertCreatedAdGroup(r, row);
    case 'ad-batch':
      return revertAdBatch(r, row);
  }
}

/** The reason given, checked: at most REASON_MAX characters, one line, nothing hidden. */
export function checkReason(reason: string): string {
  if (reason === '') return '';
  if (textLength(reason) > REASON_MAX)
    throw new InvalidArgumentError(`reason must be at most ${REASON_MAX} characters`);
  const hidden = hiddenCharacter(reason);
  if (hidden !== undefined)
    throw new InvalidArgumentError(`reason contains the hidden character ${hidden}, which is refused`);
  const blank = blankRefusal('reason', reason);
  if (blank !== undefined) throw new InvalidArgumentError(blank);
  return reason;
}

/** Why `row` cannot be reverted now, given the reverts already recorded for it; undefined when it can. */
export function revertRefusal(
  row: Pick<ChangeRow, 'change_id' | 'status'>,
  reverts: readonly Pick<ChangeRow, 'change_id' | 'status' | 'prepared_at' | 'approved_at'>[],
  expiry: ExpiryHours,
  now: Date,
): string | undefined {
  if (row.status !== 'applied')
    return `change ${row.change_id} is ${row.status}; only an applied change can be reverted`;
  const pending = reverts.find((c) =>
    ['prepared', 'approved', 'applying'].includes(shownStatus(c, expiry, now)),
  );
  if (pending !== undefined)
    return `change ${row.change_id} already has a revert ${shownStatus(pending, expiry, now)}: change ${pending.change_id}; approve and apply or reject it before preparing another`;
  return undefined;
}

/**
 * prepareRevert plans the revert of the applied change `changeId` and records it, prepared, with
 * its link to the reverted change both ways; it throws what stops it (not applied, a revert already
 * pending, an object that moved, what planning refuses).
 */
interface RevertInput {
  changeId: string;
  reason: string;
  expiry: ExpiryHours;
  now: () => Date;
  /** For a preflight: the account planned on (a change of another is refused), and nothing recorded. */
  report?: { accountId: string };
}

/**
 * The revert of `changeId` planned (its summary naming the reverted change and the reason), and
 * what to check again when recording it; throws what stops it.
 */
export async function planRevert(deps: PlanningDeps & { db: Pool }, p: Principal, input: RevertInput) {
  if (!isUuid(input.changeId)) throw new InvalidArgumentError('change_id must be a UUID');
  const reason = checkReason(input.reason);
  const row = await findChange(deps.db, p.workspaceId, input.changeId);
  if (row === undefined) throw new NotFoundError(`no change ${input.changeId} in this workspace`);
  if (input.report !== undefined && row.account_id.toLowerCase() !== input.report.accountId.toLowerCase())
    throw new InvalidArgumentError(
      `change ${row.change_id} is a change of ad account ${row.account_id}, not of account_id ${input.report.accountId}`,
    );
  const refuse = async (db: Queryable, r: ChangeRow) => {
    const why = revertRefusal(r, await revertsOf(db, p.workspaceId, r.change_id), input.expiry, input.now());
    if (why !== undefined) throw new FailedPreconditionError(why);
  };
  await refuse(deps.db, row);
  // A preflight is a read: it plans on an account the caller may not change, and says why.
  const account =
    input.report === undefined
      ? await writableAccount(deps.upstream, p, row.account_id)
      : await readableAccount(deps.upstream, p, row.account_id);
  const { request: req, note } = await revertRequest(deps, p, row, account);
  const planned = await planChange(deps, p, req, {
    account,
    // The body puts back the platform's own before-state, which no tool's bounds need hold.
    declaredBody: false,
    ...(input.report !== undefined && { access: 'report' as const }),
  });
  const because = reason === '' ? '' : `, because "${showSpaces(reason)}"`;
  // The legend goes once, at the end of the whole summary.
  const plannedSummary = planned.summary.endsWith(LEGEND)
    ? planned.summary.slice(0, -LEGEND.length)
    : planned.summary;
  const summary = withSpaceLegend(
    `Revert of change ${row.change_id} (${row.tool})${because}: ${plannedSummary}${note}`,
  );
  return { row, planned: { ...planned, summary }, refuse };
}

export async function prepareRevert(
  deps: PlanningDeps & { db: Pool },
  p: Principal,
  input: RevertInput,
): Promise<ChangeRow> {
  const { row, planned, refuse } = await planRevert(deps, p, input);
  return inTransaction(deps.db, async (tx) => {
    // Held until commit, so two reverts of one change prepared at once cannot both pass the check.
    const locked = await lockChange(tx, p.workspaceId, row.change_id);
    if (locked === undefined) throw new NotFoundError(`no change ${row.change_id} in this workspace`);
    await refuse(tx, locked);
    const revertId = randomUUID();
    await recordPlannedChange(tx, planned, p, revertId);
    return linkRevert(tx, { workspaceId: p.workspaceId, revertId, revertedId: row.change_id });
  });
}
