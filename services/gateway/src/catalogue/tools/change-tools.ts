/**
 * Prepared changes. A prepare tool records the exact upstream operation with the changes
 * service and returns a change_id; nothing reaches the ad account until a person approves the
 * change in the dashboard and ads_apply_change applies it, once, with exactly that payload.
 */
import type { Change } from '@adsmcp/proto/changes/v1/changes_pb';
import { Code, ConnectError } from '@connectrpc/connect';
import { type GatewayDeps, onBehalfOf } from '../../deps.ts';
import { describeDiff } from '../../domain/change-diff.ts';
import { type Caller, defineTool } from '../catalogue.ts';
import { enumOf, integer, nullable, number, object, string } from '../schema.ts';
import { isRecord, readPlatform, segment, workspaceAccount } from './platform.ts';

const UUID_RULE = { format: 'uuid' as const };
const OBJECT_ID = string({
  min: 1,
  max: 255,
  pattern: /^[A-Za-z0-9_.:-]+$/,
  patternHint: 'an id of letters, digits, underscore, hyphen, dot or colon',
});

const creative = object({
  type: enumOf(['chat_card', 'product_ad_template']),
  title: string({ min: 1, max: 50, nonBlank: true }),
  body: string({ max: 100 }),
  price: string({ max: 100 }),
  target_url: string({ max: 2048 }),
  file_id: string({ min: 1, max: 255 }),
  image_crop: object(
    {
      x: number({ min: 0, max: 1 }),
      y: number({ min: 0, max: 1 }),
      width: number({ min: 0, max: 1 }),
      height: number({ min: 0, max: 1 }),
    },
    ['x', 'y', 'width', 'height'],
    'A square crop of the EXIF-oriented source image, as fractions; chat_card only; needs file_id.',
  ),
});

const adUpdateBody = object(
  {
    name: string({ min: 3, max: 1000, nonBlank: true }),
    creative,
    status: enumOf(['active', 'paused', 'archived']),
    landing_page_configuration: nullable(
      object({ query_string_template: string({ max: 2048 }) }, ['query_string_template']),
    ),
  },
  [],
  'The fields to change; fields left out keep their value.',
);

/** The change as tools show it: the reviewed operation, its state, and what to do next. */
function changeView(c: Change, publicUrl: string): Record<string, unknown> {
  const parse = (text: string) => {
    if (text === '') return null;
    try {
      return JSON.parse(text) as unknown;
    } catch {
      return text;
    }
  };
  const next: Record<string, string> = {
    prepared:
      'A person must approve this change in the dashboard; then call ads_apply_change with this change_id.',
    approved: 'Approved: call ads_apply_change with this change_id to apply it.',
    rejected: 'Rejected: it will not be applied.',
    applying: 'Being applied: call ads_get_change to see the outcome.',
    applied: 'Applied to the ad account.',
    failed: 'Failed: see error; prepare a new change if it is still wanted.',
  };
  const view: Record<string, unknown> = {
    change_id: c.changeId,
    account_id: c.accountId,
    tool: c.tool,
    status: c.status,
    summary: c.summary,
    operation: {
      method: c.operation?.method,
      path: c.operation?.path,
      body: parse(c.operation?.bodyJson ?? ''),
    },
    digest: c.digest,
    review_url: `${publicUrl}/dashboard/changes/${c.changeId}`,
    next_step: next[c.status] ?? '',
    prepared_by: c.preparedBy,
    prepared_at: c.preparedAt,
  };
  const optional: [string, unknown][] = [
    ['approved_by', c.approvedBy],
    ['approved_at', c.approvedAt],
    ['rejected_by', c.rejectedBy],
    ['rejected_at', c.rejectedAt],
    ['reject_reason', c.rejectReason],
    ['apply_requested_by', c.applyRequestedBy],
    ['apply_requested_at', c.applyRequestedAt],
    ['applied_at', c.appliedAt],
    ['upstream_status', c.upstreamStatus || ''],
    ['upstream_response', parse(c.upstreamResponseJson)],
    ['error', c.error],
  ];
  for (const [k, v] of optional) if (v !== '' && v !== null) view[k] = v;
  return view;
}

interface Ad {
  id: string;
  name?: string;
  status?: string;
  creative?: Record<string, unknown>;
  landing_page_configuration?: unknown;
}

/** The account (must be the workspace's and writable) and the live ad the change is about. */
async function accountAndAd(deps: GatewayDeps, caller: Caller, accountId: string, adId: string) {
  const account = await workspaceAccount(deps, caller.principal, accountId);
  if (!account.canWrite) {
    throw new ConnectError(
      `the connection to ad account ${account.name} is read-only; changes cannot be prepared for it`,
      Code.PermissionDenied,
    );
  }
  const path = `/ads/${segment('ad_id', adId)}`;
  const ad = await readPlatform(caller, deps, {
    accountId,
    path,
    query: {},
    notFound: `no ad ${adId} in ad account ${account.name}`,
  });
  if (!isRecord(ad))
    throw new ConnectError(`the ad platform answered GET ${path} with an unexpected shape`, Code.Unavailable);
  return { account, ad: ad as unknown as Ad, path, bodyJson: JSON.stringify(ad) };
}

function checkCreative(
  body: { creative?: { type?: string; image_crop?: unknown; file_id?: string } },
  ad: Ad,
): void {
  const c = body.creative;
  if (c?.image_crop === undefined) return;
  const type = c.type ?? (ad.creative?.type as string | undefined);
  if (type === 'product_ad_template') {
    throw new ConnectError(
      '`body.creative.image_crop` is not supported for product_ad_template creatives',
      Code.InvalidArgument,
    );
  }
  if (c.file_id === undefined && ad.creative?.file_id === undefined) {
    throw new ConnectError(
      '`body.creative.image_crop` requires `body.creative.file_id`',
      Code.InvalidArgument,
    );
  }
}

const updateAdInput = object({ account_id: string(UUID_RULE), ad_id: OBJECT_ID, body: adUpdateBody }, [
  'account_id',
  'ad_id',
  'body',
]);

export const updateAd = defineTool<GatewayDeps, typeof updateAdInput>({
  name: 'ads_update_ad',
  title: 'Prepare an ad update',
  group: 'Campaign creation',
  behavior: 'prepare',
  features: [],
  description:
    'Prepares an update of an ad (name, creative, status, landing page configuration) and returns a change_id. ' +
    'Nothing changes on the ad account until a person approves the change in the dashboard and ads_apply_change applies it. ' +
    'Upstream: POST /ads/{ad_id}.',
  input: updateAdInput,
  openWorld: true,
  destructive: false,
  routesTo: 'changes.v1.ChangesService/PrepareChange',
  async run({ caller, deps }, args) {
    if (Object.keys(args.body).length === 0) {
      throw new ConnectError(
        '`body` must change at least one field (name, creative, status, landing_page_configuration)',
        Code.InvalidArgument,
      );
    }
    const { account, ad, path, bodyJson } = await accountAndAd(deps, caller, args.account_id, args.ad_id);
    checkCreative(args.body, ad);
    const summary = `Update ad "${ad.name ?? ad.id}" (${ad.id}) on ${account.name}: ${describeDiff(ad, args.body).join('; ')}`;
    const { change } = await deps.changes.prepareChange(
      {
        accountId: args.account_id,
        tool: 'ads_update_ad',
        operation: { method: 'POST', path, bodyJson: JSON.stringify(args.body) },
        summary,
        targetPath: path,
        targetBeforeJson: bodyJson,
      },
      onBehalfOf(caller.principal),
    );
    if (change === undefined) throw new ConnectError('the changes service returned no change', Code.Internal);
    return changeView(change, deps.publicUrl);
  },
});

const archiveAdInput = object({ account_id: string(UUID_RULE), ad_id: OBJECT_ID }, ['account_id', 'ad_id']);

export const archiveAd = defineTool<GatewayDeps, typeof archiveAdInput>({
  name: 'ads_archive_ad',
  title: 'Prepare archiving an ad',
  group: 'Campaign creation',
  behavior: 'prepare',
  features: [],
  description:
    'Prepares archiving an ad and returns a change_id. The ad keeps serving until a person approves the change and ' +
    'ads_apply_change applies it. Upstream: POST /ads/{ad_id}/archive.',
  input: archiveAdInput,
  openWorld: true,
  destructive: true,
  routesTo: 'changes.v1.ChangesService/PrepareChange',
  async run({ caller, deps }, args) {
    const { account, ad, path, bodyJson } = await accountAndAd(deps, caller, args.account_id, args.ad_id);
    if (ad.status === 'archived') {
      throw new ConnectError(
        `ad ${ad.id} is already archived; there is nothing to change`,
        Code.FailedPrecondition,
      );
    }
    const { change } = await deps.changes.prepareChange(
      {
        accountId: args.account_id,
        tool: 'ads_archive_ad',
        operation: { method: 'POST', path: `${path}/archive`, bodyJson: '{}' },
        summary: `Archive ad "${ad.name ?? ad.id}" (${ad.id}) on ${account.name} (status ${ad.status ?? 'unknown'} → archived)`,
        targetPath: path,
        targetBeforeJson: bodyJson,
      },
      onBehalfOf(caller.principal),
    );
    if (change === undefined) throw new ConnectError('the changes service returned no change', Code.Internal);
    return changeView(change, deps.publicUrl);
  },
});

const DIGEST = string({
  min: 64,
  max: 64,
  pattern: /^[0-9a-f]{64}$/,
  patternHint: 'a SHA-256 digest in lowercase hex',
});
const applyInput = object({ change_id: string(UUID_RULE), digest: DIGEST }, ['change_id']);

export const applyChange = defineTool<GatewayDeps, typeof applyInput>({
  name: 'ads_apply_change',
  title: 'Apply an approved change',
  group: 'Campaign creation',
  behavior: 'write',
  features: [],
  description:
    'Applies a change that a person approved, exactly as it was reviewed, once. Give the digest you reviewed to make ' +
    'sure it is that change. Refuses a change that is not approved, was rejected, failed or was already applied. ' +
    'Waits up to 5 seconds for the outcome; if it is still applying, ads_get_change shows it later.',
  input: applyInput,
  openWorld: true,
  destructive: true,
  routesTo: 'changes.v1.ChangesService/ApplyChange',
  async run({ caller, deps }, args) {
    const { change } = await deps.changes.applyChange(
      { changeId: args.change_id, digest: args.digest ?? '', waitMs: 5000 },
      onBehalfOf(caller.principal),
    );
    if (change === undefined) throw new ConnectError('the changes service returned no change', Code.Internal);
    return changeView(change, deps.publicUrl);
  },
});

const getInput = object({ change_id: string(UUID_RULE) }, ['change_id']);

export const getChange = defineTool<GatewayDeps, typeof getInput>({
  name: 'ads_get_change',
  title: 'Get a prepared change',
  group: 'Campaign creation',
  behavior: 'read',
  features: [],
  description:
    "Returns a change with its exact operation, digest and lifecycle: prepared, approved, rejected, applying, applied or failed (with the ad platform's error).",
  input: getInput,
  openWorld: false,
  destructive: false,
  routesTo: 'changes.v1.ChangesService/GetChange',
  async run({ caller, deps }, args) {
    const { change } = await deps.changes.getChange(
      { changeId: args.change_id },
      onBehalfOf(caller.principal),
    );
    if (change === undefined) throw new ConnectError('the changes service returned no change', Code.Internal);
    return changeView(change, deps.publicUrl);
  },
});

const listInput = object({
  status: enumOf(['prepared', 'approved', 'rejected', 'applying', 'applied', 'failed']),
  account_id: string(UUID_RULE),
  limit: integer({ min: 1, max: 100 }),
  offset: integer({ min: 0, max: 100_000 }),
});

export const listChanges = defineTool<GatewayDeps, typeof listInput>({
  name: 'ads_list_changes',
  title: 'List prepared changes',
  group: 'Campaign creation',
  behavior: 'read',
  features: [],
  description:
    "Lists the workspace's changes, newest first, optionally by status and account; offset pagination (limit 1 to 100, default 20).",
  input: listInput,
  openWorld: false,
  destructive: false,
  routesTo: 'changes.v1.ChangesService/ListChanges',
  async run({ caller, deps }, args) {
    const res = await deps.changes.listChanges(
      {
        status: args.status ?? '',
        accountId: args.account_id ?? '',
        limit: args.limit ?? 20,
        offset: args.offset ?? 0,
      },
      onBehalfOf(caller.principal),
    );
    return {
      changes: res.changes.map((c) => changeView(c, deps.publicUrl)),
      total: res.total,
      next_offset: res.nextOffset ?? null,
    };
  },
});

export const changeTools = [updateAd, archiveAd, applyChange, getChange, listChanges];
