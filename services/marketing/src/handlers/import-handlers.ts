/** ImportService: proto <-> domain for performance imports and business-outcome imports. */

import { randomUUID } from 'node:crypto';
import type {
  ImportService,
  MetricTotalSchema,
  PerformanceImportRowSchema,
  PerformanceImportSchema,
} from '@adsmcp/proto/marketing/v1/imports_pb';
import { enqueue } from '@adsmcp/runtime/bus/outbox';
import { principalOf } from '@adsmcp/runtime/connect-server';
import { inTransaction, type Pool } from '@adsmcp/runtime/db';
import { NotFoundError } from '@adsmcp/runtime/errors';
import { nextOffset, pageOf } from '@adsmcp/runtime/paging';
import type { MessageInitShape, MessageShape } from '@bufbuild/protobuf';
import type { HandlerContext, ServiceImpl } from '@connectrpc/connect';
import { validateOutcomeImport } from '../domain/business-outcomes.ts';
import {
  contentHash,
  type RequestRow,
  storedRows,
  validateImport,
  validateImportId,
} from '../domain/performance-import.ts';
import {
  findImport,
  findImportByContent,
  type ImportRecord,
  insertImport,
  listImports,
  type MetricSum,
} from '../store/import-store.ts';
import { saveOutcomes } from '../store/outcome-store.ts';
import { IMPORT_TOPIC, type ImportMessage } from '../work/import-worker.ts';

export interface ImportHandlerDeps {
  pool: Pool;
}

function metric(m: MetricSum | undefined): MessageInitShape<typeof MetricTotalSchema> {
  return { knownRows: m?.known ?? 0, ...(m?.sum == null ? {} : { sum: m.sum }) };
}

function toMessage(r: ImportRecord): MessageInitShape<typeof PerformanceImportSchema> {
  return {
    importId: r.import_id,
    source: r.source,
    name: r.name,
    currency: r.currency,
    timezone: r.timezone,
    attribution: r.attribution,
    since: r.since,
    until: r.until,
    format: r.format,
    status: r.status,
    contentHash: r.content_hash,
    rowCount: r.row_count,
    rowsSaved: r.rows_saved,
    adCount: r.ad_count,
    errorCount: r.error_count,
    errors: r.errors.map((e) => ({
      row: e.row,
      message: e.message,
      ...(e.column === undefined ? {} : { column: e.column }),
      ...(e.line === undefined ? {} : { line: e.line }),
    })),
    ...(r.totals === null
      ? {}
      : {
          totals: {
            impressions: metric(r.totals.impressions),
            clicks: metric(r.totals.clicks),
            spend: metric(r.totals.spend),
            conversions: metric(r.totals.conversions),
            revenue: metric(r.totals.revenue),
          },
        }),
    createdAt: r.created_at.toISOString(),
    ...(r.started_at === null ? {} : { startedAt: r.started_at.toISOString() }),
    ...(r.finished_at === null ? {} : { finishedAt: r.finished_at.toISOString() }),
  };
}

/** A request row as the domain takes it (absent optional fields stay absent). */
function requestRow(r: MessageShape<typeof PerformanceImportRowSchema>): RequestRow {
  return {
    ad_id: r.adId,
    name: r.name,
    headline: r.headline,
    body: r.body,
    campaign: r.campaign,
    audience: r.audience,
    hook: r.hook,
    offer: r.offer,
    impressions: r.impressions,
    clicks: r.clicks,
    spend: r.spend,
    conversions: r.conversions,
    revenue: r.revenue,
  };
}

// Each RPC's function takes its request and answer types from the generated service, so a moved
// function is checked exactly as its table entry was.
type Impl = ServiceImpl<typeof ImportService>;
type Req<K extends keyof Impl> = Parameters<Impl[K]>[0];
type Res<K extends keyof Impl> = Promise<Awaited<ReturnType<Impl[K]>>>;

/** createImportHandlers builds the ImportService implementation from its dependencies. */
export function createImportHandlers(deps: ImportHandlerDeps): ServiceImpl<typeof ImportService> {
  return {
    importPerformance: (req, ctx) => importPerformance(deps, req, ctx),
    getPerformanceImport: (req, ctx) => getPerformanceImport(deps, req, ctx),
    listPerformanceImports: (req, ctx) => listPerformanceImports(deps, req, ctx),
    importBusinessOutcomes: (req, ctx) => importBusinessOutcomes(deps, req, ctx),
  };
}

async function importPerformance(
  deps: ImportHandlerDeps,
  req: Req<'importPerformance'>,
  ctx: HandlerContext,
): Res<'importPerformance'> {
  const p = principalOf(ctx);
  const request = validateImport({
    source: req.source,
    name: req.name,
    currency: req.currency,
    timezone: req.timezone,
    attribution: req.attribution,
    since: req.since,
    until: req.until,
    rows: req.rows.map(requestRow),
    csv: req.csv,
    columnMapping: req.columnMapping,
  });
  const hash = contentHash(request);
  const workspaceId = p.workspaceId;
  const { input } = request;
  // The first import of this content that has not failed is the answer. Between the look and
  // the insert another request may record it, or it may fail: then look again.
  for (let attempt = 1; ; attempt++) {
    const existing = await findImportByContent(deps.pool, workspaceId, hash);
    if (existing !== undefined) return { import: toMessage(existing), created: false };
    // The import and the work it causes commit together.
    const created = await inTransaction(deps.pool, async (tx) => {
      const importId = randomUUID();
      const row = await insertImport(tx, {
        workspaceId,
        importId,
        meta: request.meta,
        format: input.format,
        contentHash: hash,
        inputRows: input.format === 'rows' ? storedRows(input.rows) : null,
        inputCsv: input.format === 'csv' ? input.csv : null,
        columnMapping: input.format === 'csv' ? input.columnMapping : {},
        rowCount: input.format === 'rows' ? input.rows.length : 0,
        createdBy: `${p.via}:${p.credentialId}`,
      });
      if (row === undefined) return undefined;
      const message: ImportMessage = { workspace_id: workspaceId, import_id: importId };
      await enqueue(tx, { topic: IMPORT_TOPIC, key: importId, payload: { ...message }, id: importId });
      return row;
    });
    if (created !== undefined) return { import: toMessage(created), created: true };
    if (attempt >= 3) throw new Error(`import of content ${hash} neither found nor recorded`);
  }
}

async function getPerformanceImport(
  deps: ImportHandlerDeps,
  req: Req<'getPerformanceImport'>,
  ctx: HandlerContext,
): Res<'getPerformanceImport'> {
  const p = principalOf(ctx);
  const importId = validateImportId(req.importId);
  const row = await findImport(deps.pool, p.workspaceId, importId);
  if (row === undefined) throw new NotFoundError(`no performance import ${importId} in this workspace`);
  return { import: toMessage(row) };
}

async function listPerformanceImports(
  deps: ImportHandlerDeps,
  req: Req<'listPerformanceImports'>,
  ctx: HandlerContext,
): Res<'listPerformanceImports'> {
  const p = principalOf(ctx);
  // Within its bounds by the request's field rules.
  const page = pageOf(req);
  const { imports, total } = await listImports(deps.pool, p.workspaceId, page.offset, page.limit);
  const next = nextOffset(page, imports.length, total);
  return {
    imports: imports.map(toMessage),
    total,
    ...(next === undefined ? {} : { nextOffset: next }),
  };
}

async function importBusinessOutcomes(
  deps: ImportHandlerDeps,
  req: Req<'importBusinessOutcomes'>,
  ctx: HandlerContext,
): Res<'importBusinessOutcomes'> {
  const p = principalOf(ctx);
  const request = validateOutcomeImport({
    accountId: req.accountId,
    source: req.source,
    name: req.name,
    currency: req.currency,
    attribution: req.attribution,
    rows: req.rows.map((r) => ({
      external_id: r.externalId,
      occurred_at: r.occurredAt,
      kind: r.kind,
      ad_id: r.adId,
      value: r.value,
      quantity: r.quantity,
      campaign_id: r.campaignId,
      ad_group_id: r.adGroupId,
      refund_of: r.refundOf,
    })),
  });
  const saved = await inTransaction(deps.pool, (tx) =>
    saveOutcomes(tx, {
      workspaceId: p.workspaceId,
      importId: randomUUID(),
      request,
      createdBy: `${p.via}:${p.credentialId}`,
    }),
  );
  return {
    import: {
      importId: saved.import_id,
      accountId: saved.account_id,
      source: saved.source,
      name: saved.name,
      currency: saved.currency,
      attribution: saved.attribution,
      received: saved.received,
      saved: saved.saved,
      skippedDuplicates: saved.skipped_duplicates,
      createdAt: saved.created_at.toISOString(),
    },
  };
}
