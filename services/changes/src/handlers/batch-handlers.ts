/**
 * The BatchService RPCs: a workbook compiled into a paused bulk job preview (nothing recorded), and a
 * saved ad batch prepared as one reviewable change whose operation is POST /bulk_mutation_jobs. The
 * change is recorded by the same path as every prepared change (planning, standards, digest), so
 * approval and apply (once, with its idempotency key) are the ones every change has. The saved
 * batch is read, and its source images saved as campaign assets, through the marketing service
 * on behalf of the caller (planning/saved-ad-batch.ts).
 */
import type {
  BatchService,
  PrepareAdBatchRequest,
  WorkbookSheets,
} from '@adsmcp/proto/changes/v1/batches_pb';
import type { Account } from '@adsmcp/proto/upstream/v1/upstream_pb';
import { principalOf } from '@adsmcp/runtime/connect-server';
import type { Pool } from '@adsmcp/runtime/db';
import {
  InvalidArgumentError,
  InvalidArgumentIssuesError,
  PermissionDeniedError,
  type RefusalIssue,
} from '@adsmcp/runtime/errors';
import type { Principal } from '@adsmcp/runtime/principal';
import type { JsonObject } from '@bufbuild/protobuf';
import type { HandlerContext, ServiceImpl } from '@connectrpc/connect';
import {
  BULK_JOB_PATH,
  type BulkPlan,
  compileAdBatch,
  describeIssues,
  jsonRows,
  type RowIssue,
  type Sheets,
} from '../domain/bulk-job-rules.ts';
import { checkMayPrepare } from '../domain/change.ts';
import { type ChangeRequest, planChange, prepareChange } from '../planning/planned-change.ts';
import {
  type AccessCheck,
  accountToPlan,
  liveObject,
  readableAccount,
  type Upstream,
} from '../planning/platform-reads.ts';
import {
  adBatchRequest,
  type MarketingItems,
  readSavedBatch,
  saveSourceImages,
  unsavedNotes,
} from '../planning/saved-ad-batch.ts';
import { refuseLookalikeHosts } from '../planning/standards.ts';
import { expiryHours } from '../store/expiry-store.ts';
import { planWorkbook } from '../workbook-reader.ts';
import { toProto } from './change-proto.ts';
import { type Peers, planReport } from './changes-handlers.ts';

function sheetsOf(sheets: WorkbookSheets): Sheets {
  return {
    campaigns: jsonRows('campaigns', sheets.campaigns),
    adgroups: jsonRows('adgroups', sheets.adgroups),
    ads: jsonRows('ads', sheets.ads),
  };
}

/**
 * A refused row's issue at the argument that holds it: the cell of JSON rows
 * (`sheets.ads[0].title`, rows counted from 0 as the array is), or the workbook, whose rows are
 * the spreadsheet's (the message names the sheet, row and column either way).
 */
const rowIssueAt =
  (workbook: boolean) =>
  (i: RowIssue): RefusalIssue => ({
    path: workbook ? 'workbook_base64' : `sheets.${i.sheet}[${i.row - 1}].${i.column}`,
    message: `${i.sheet} row ${i.row}, column ${i.column}: ${i.message}`,
  });

function previewOf(plan: BulkPlan) {
  return {
    method: 'POST',
    path: BULK_JOB_PATH,
    job: plan.body as unknown as JsonObject,
    campaignCount: plan.campaignCount,
    adGroupCount: plan.adGroupCount,
    adCount: plan.adCount,
    schedule: plan.schedule,
    adGroups: plan.adGroups,
  };
}

/**
 * requireBulkAccess refuses an account the platform does not let submit bulk jobs: the platform
 * says so in GET /me (`bulk_access`), so the refusal comes at prepare, not at apply.
 */
async function requireBulkAccess(upstream: Upstream, p: Principal, account: Account): Promise<void> {
  const me = await liveObject(upstream, p, account, '/me', 'account');
  if (me.bulk_access === false) {
    throw new PermissionDeniedError(
      `ad account ${account.name} has no bulk access on the ad platform: bulk mutation jobs are not enabled for it, so an ad batch cannot be prepared`,
    );
  }
}

/**
 * The change an ad batch is: the batch compiled for the account (which must allow changes and have
 * bulk access), as the request of a bulk job that creates it, with the account it was compiled for.
 */
async function batchChange(
  upstream: Upstream,
  p: Principal,
  req: PrepareAdBatchRequest,
  access: AccessCheck = 'enforce',
): Promise<{ change: ChangeRequest; plan: BulkPlan; account: Account }> {
  if (access === 'enforce') checkMayPrepare(p);
  const account = await accountToPlan(upstream, p, req.accountId, access);
  const plan = compileAdBatch(
    {
      campaignName: req.campaignName,
      budgetAmount: req.budgetAmount,
      budgetType: req.budgetType,
      objective: req.objective,
      bidMicros: req.bidMicros,
      countries: req.countries,
      contextHints: req.contextHints,
      variants: req.variants,
    },
    account,
  );
  await requireBulkAccess(upstream, p, account);
  const change: ChangeRequest = {
    accountId: req.accountId,
    tool: 'ads_prepare_ad_batch',
    objectType: 'bulk_mutation_job',
    effect: 'create',
    operation: { method: 'POST', path: BULK_JOB_PATH, bodyJson: JSON.stringify(plan.body) },
    targetPath: '',
  };
  return { change, plan, account };
}

export interface BatchHandlerDeps extends Peers {
  pool: Pool;
  /** The marketing service's items, where saved batches are kept (unset: none can be prepared). */
  items?: MarketingItems;
}

// Each RPC's function takes its request and answer types from the generated service, so a moved
// function is checked exactly as its table entry was.
type Impl = ServiceImpl<typeof BatchService>;
type Req<K extends keyof Impl> = Parameters<Impl[K]>[0];
type Res<K extends keyof Impl> = Promise<Awaited<ReturnType<Impl[K]>>>;

export function batchHandlers(d: BatchHandlerDeps): Impl {
  return {
    planWorkbook: (req, ctx) => planWorkbookRpc(d, req, ctx),
    prepareAdBatch: (req, ctx) => prepareBatch(d, principalOf(ctx), req),
    planAdBatch: (req, ctx) => planAdBatch(d, req, ctx),
    prepareSavedAdBatch: (req, ctx) => prepareSavedAdBatch(d, req, ctx),
    planSavedAdBatch: (req, ctx) => planSavedAdBatch(d, req, ctx),
  };
}

const planningOf = (d: BatchHandlerDeps) => ({ db: d.pool, upstream: d.upstream, marketing: d.marketing });

async function planWorkbookRpc(
  { pool, upstream }: BatchHandlerDeps,
  req: Req<'planWorkbook'>,
  ctx: HandlerContext,
): Res<'planWorkbook'> {
  const hasWorkbook = req.workbookBase64 !== undefined;
  if (hasWorkbook === (req.sheets !== undefined))
    throw new InvalidArgumentError(
      'give exactly one of workbook_base64 (an XLSX file) and sheets (JSON rows)',
    );
  const account = await readableAccount(upstream, principalOf(ctx), req.accountId);
  const { plan, issues } = await planWorkbook(
    req.workbookBase64 !== undefined
      ? { base64: req.workbookBase64 }
      : { sheets: sheetsOf(req.sheets as WorkbookSheets) },
    account,
    { validateOnly: req.validateOnly, partialFailure: req.partialFailure },
  );
  if (issues.length > 0)
    throw new InvalidArgumentIssuesError(describeIssues(issues), issues.map(rowIssueAt(hasWorkbook)));
  // Its landing pages are held to the look-alike rule a prepared job is held to.
  await refuseLookalikeHosts(pool, principalOf(ctx).workspaceId, account.accountId, plan.body);
  return {
    accountId: account.accountId,
    currency: account.currency,
    timeZone: account.timeZone,
    source: hasWorkbook ? 'workbook' : 'sheets',
    ...previewOf(plan),
  };
}

/** The batch recorded as a change for review, and the countries checked for its ad group. */
async function prepareBatch(
  d: BatchHandlerDeps,
  p: Principal,
  req: PrepareAdBatchRequest,
): Promise<{ change: ReturnType<typeof toProto>; countries: string[] }> {
  const { change, plan, account } = await batchChange(d.upstream, p, req);
  const row = await prepareChange(planningOf(d), p, change, { account });
  const expiry = await expiryHours(d.pool, p.workspaceId);
  return {
    change: toProto(row, { expiry, now: new Date() }),
    countries: plan.adGroups[0]?.countries ?? [],
  };
}

/** What preparing the batch would record, recording nothing; who may not prepare it is told why. */
async function planBatch(d: BatchHandlerDeps, p: Principal, req: PrepareAdBatchRequest) {
  const { change, account } = await batchChange(d.upstream, p, req, 'report');
  // A batch creates, so it has no target a `current` could stand for (the gateway refuses
  // one): it is always planned against the live account.
  return planChange(planningOf(d), p, change, { access: 'report', account });
}

async function planAdBatch(
  d: BatchHandlerDeps,
  req: Req<'planAdBatch'>,
  ctx: HandlerContext,
): Res<'planAdBatch'> {
  if (req.batch === undefined) throw new InvalidArgumentError('batch is required');
  return { plan: planReport(await planBatch(d, principalOf(ctx), req.batch)) };
}

/**
 * The saved batch, read on behalf of the caller, prepared: its source images not saved yet are
 * saved as campaign assets first, once the batch has passed every check of its plan (arguments,
 * account, standards, the caller's access), so that a batch refused for any of those fetches and
 * saves nothing.
 */
async function prepareSavedAdBatch(
  d: BatchHandlerDeps,
  req: Req<'prepareSavedAdBatch'>,
  ctx: HandlerContext,
): Res<'prepareSavedAdBatch'> {
  const p = principalOf(ctx);
  const batch = await readSavedBatch(d, p, req, ctx.signal);
  let variants = batch.found;
  if (batch.unsaved > 0) {
    const planned = await planBatch(d, p, adBatchRequest(req, batch.found));
    if (planned.accessRefusal !== '') throw new PermissionDeniedError(planned.accessRefusal);
    variants = await saveSourceImages(d, p, req.accountId, batch.variants, ctx.signal);
  }
  return prepareBatch(d, p, adBatchRequest(req, variants));
}

/**
 * What PrepareSavedAdBatch would record, fetching and saving no image: a variant whose source
 * image is not saved yet is planned without it, and a note says so.
 */
async function planSavedAdBatch(
  d: BatchHandlerDeps,
  req: Req<'planSavedAdBatch'>,
  ctx: HandlerContext,
): Res<'planSavedAdBatch'> {
  if (req.batch === undefined) throw new InvalidArgumentError('batch is required');
  const p = principalOf(ctx);
  const batch = await readSavedBatch(d, p, req.batch, ctx.signal);
  const planned = await planBatch(d, p, adBatchRequest(req.batch, batch.found));
  return { plan: planReport(planned), notes: unsavedNotes(batch) };
}
