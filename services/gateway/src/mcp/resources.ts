/**
 * The workspace's records as MCP resources: performance reports (JSON, CSV, Markdown), campaign
 * image assets (the image itself), an account's standards, a change's review text, and the
 * downloadable catalogue. Each is read through the RPC its tool uses, with the caller's principal,
 * so a record of another workspace is not found, and only by a caller who may use that tool.
 */
import { ChangeStatus } from '@adsmcp/proto/changes/v1/changes_pb';
import { ListAccountStandardsResponseSchema, StandardsService } from '@adsmcp/proto/changes/v1/standards_pb';
import { AssetService } from '@adsmcp/proto/marketing/v1/assets_pb';
import { GetPerformanceReportResponseSchema, ReportService } from '@adsmcp/proto/marketing/v1/reports_pb';
import {
  type ListResourcesResult,
  type ListResourceTemplatesResult,
  type ReadResourceResult,
  ResourceNotFoundError,
  UriTemplate,
} from '@modelcontextprotocol/server';
import type { Caller, Catalogue } from '../catalogue/catalogue.ts';
import { workspaceAccount } from '../catalogue/platform.ts';
import { resultOf } from '../catalogue/rpc-mapping.ts';
import { type GatewayDeps, onBehalfOf } from '../deps.ts';
import { CHANGE_REVIEW_FRAGMENT_TEMPLATE, CHANGE_REVIEW_VIEW_LISTED, readAppView } from './app-views.ts';
import { CACHE } from './discovery.ts';
import { invalidParam, mayUse, requireTool, resourceError, uuidParam } from './surface-access.ts';

export const CATALOGUE_URI = 'adsmcp://catalogue.json';
const REPORT = new UriTemplate('adsmcp://reports/{report_id}/{format}');
const ASSET = new UriTemplate('adsmcp://assets/{asset_id}');
const STANDARDS = new UriTemplate('adsmcp://accounts/{account_id}/standards');
const CHANGE_REVIEW = new UriTemplate('adsmcp://changes/{change_id}/review');

const REPORT_FORMATS = ['json', 'csv', 'markdown'] as const;
const REPORT_MEDIA: Record<(typeof REPORT_FORMATS)[number], string> = {
  json: 'application/json',
  csv: 'text/csv',
  markdown: 'text/markdown',
};

/** How many records one page of `resources/list` holds at most (the services' largest page). */
export const RECORDS_PER_PAGE = 100;

export function reportUri(reportId: string, format: (typeof REPORT_FORMATS)[number]): string {
  return REPORT.expand({ report_id: reportId, format });
}
export function changeReviewUri(changeId: string): string {
  return CHANGE_REVIEW.expand({ change_id: changeId });
}

export interface ResourceContext {
  caller: Caller;
  deps: GatewayDeps;
  catalogue: Catalogue<GatewayDeps>;
}

export function resourceTemplates(): ListResourceTemplatesResult {
  return {
    resourceTemplates: [
      {
        uriTemplate: REPORT.toString(),
        name: 'performance-report',
        title: 'Performance report',
        description:
          'A saved performance report of the workspace (ads_list_performance_reports lists them), as json, csv or ' +
          'markdown: the same content as ads_get_performance_report. A report never changes once saved.',
      },
      {
        uriTemplate: ASSET.toString(),
        name: 'campaign-asset',
        title: 'Campaign image asset',
        description:
          'A saved campaign image (ads_list_campaign_assets lists them): the stored PNG or JPEG itself. An archived ' +
          'asset is not found.',
      },
      {
        uriTemplate: STANDARDS.toString(),
        name: 'account-standards',
        title: 'Account standards',
        description:
          'The standards and templates of one ad account (JSON), as ads_list_account_standards lists them: every ' +
          'one that is not archived.',
        mimeType: 'application/json',
      },
      {
        uriTemplate: CHANGE_REVIEW.toString(),
        name: 'change-review',
        title: 'Change review text',
        description:
          'What a person reviews of a prepared change (Markdown): its summary, the exact request that is sent ' +
          'when it is applied, and its SHA-256 digest. None of these change once the change is prepared.',
        mimeType: 'text/markdown',
      },
      CHANGE_REVIEW_FRAGMENT_TEMPLATE,
    ],
    ...CACHE.release,
  };
}

type Listed = ListResourcesResult['resources'][number];

/** The lists `resources/list` pages through, in this order, after the catalogue and the standards. */
const STREAMS = ['reports', 'assets', 'changes'] as const;
type StreamKind = (typeof STREAMS)[number];

/** One list: the workspace's reports, one ad account's assets, or the changes awaiting approval. */
interface Stream {
  kind: StreamKind;
  account?: { accountId: string; name: string };
}

/** Where a page starts: a stream and the offset in it. The cursor is this, as base64url JSON. */
interface Position {
  kind: StreamKind;
  accountId?: string;
  offset: number;
}

/** The largest offset the services' lists accept (packages/runtime/src/paging.ts). */
const OFFSET_MAX = 100_000;

/** A stream's place in the order: by kind, then by account id (accounts are paged in id order). */
function streamKey(p: { kind: StreamKind; accountId?: string | undefined }): string {
  return `${STREAMS.indexOf(p.kind)}:${p.accountId ?? ''}`;
}

function writeCursor(p: Position): string {
  return Buffer.from(JSON.stringify(p)).toString('base64url');
}

/**
 * The position a cursor names. The cursor is opaque to the client; one this server did not give is
 * refused naming the field rather than read as the first page, which would list records twice.
 * It needs no signature: it only says where to continue, and every page is read on the caller's
 * own principal.
 */
function readCursor(cursor: string): Position {
  const refused = invalidParam(
    'cursor',
    'is not a cursor this server gave: pass the nextCursor of the previous resources/list page unchanged',
  );
  let parsed: unknown;
  try {
    parsed = cursor.length <= 200 ? JSON.parse(Buffer.from(cursor, 'base64url').toString('utf8')) : undefined;
  } catch {
    throw refused;
  }
  const p = parsed as Partial<Record<keyof Position, unknown>> | null;
  if (
    typeof p !== 'object' ||
    p === null ||
    !(STREAMS as readonly unknown[]).includes(p.kind) ||
    !Number.isSafeInteger(p.offset) ||
    (p.offset as number) < 0 ||
    (p.offset as number) > OFFSET_MAX ||
    (p.accountId !== undefined && (p.kind !== 'assets' || typeof p.accountId !== 'string')) ||
    (p.kind === 'assets' && p.accountId === undefined) ||
    Object.keys(p).some((k) => !['kind', 'accountId', 'offset'].includes(k))
  ) {
    throw refused;
  }
  const kind = p.kind as StreamKind;
  const offset = p.offset as number;
  if (p.accountId === undefined) return { kind, offset };
  try {
    return { kind, offset, accountId: uuidParam('cursor', p.accountId) };
  } catch {
    throw refused;
  }
}

/** One stream's records from `offset`, at most `limit`, and the offset after them (none at the end). */
async function readStream(
  ctx: ResourceContext,
  stream: Stream,
  offset: number,
  limit: number,
): Promise<{ listed: Listed[]; records: number; nextOffset: number | undefined }> {
  const { deps, caller } = ctx;
  const as = onBehalfOf(caller.principal);
  if (stream.kind === 'reports') {
    const res = await deps.clientOf(ReportService).listPerformanceReports({ offset, limit }, as);
    return {
      listed: res.reports.flatMap((r) =>
        REPORT_FORMATS.map((format) => ({
          uri: reportUri(r.reportId, format),
          name: `${r.name} (${format})`,
          title: `Performance report ${r.name}, ${r.since} to ${r.until} (${format})`,
          mimeType: REPORT_MEDIA[format],
        })),
      ),
      records: res.reports.length,
      nextOffset: res.nextOffset,
    };
  }
  if (stream.kind === 'assets') {
    const account = stream.account as { accountId: string; name: string };
    const res = await deps
      .clientOf(AssetService)
      .listCampaignAssets({ accountId: account.accountId, offset, limit }, as);
    return {
      // Delivery links are not made here: a listing carries no token to the image.
      listed: res.assets.map((a) => ({
        uri: ASSET.expand({ asset_id: a.assetId }),
        name: a.name,
        title: `${a.name} (${a.width}×${a.height}, ${account.name})`,
        mimeType: a.mimeType,
        size: a.byteSize,
      })),
      records: res.assets.length,
      nextOffset: res.nextOffset,
    };
  }
  const res = await deps.changes.listChanges({ state: ChangeStatus.PREPARED, offset, limit }, as);
  return {
    listed: res.changes.map((c) => ({
      uri: changeReviewUri(c.changeId),
      name: `review of change ${c.changeId}`,
      title: c.summary.slice(0, 200),
      mimeType: 'text/markdown',
    })),
    records: res.changes.length,
    nextOffset: res.nextOffset,
  };
}

/**
 * One page of `resources/list`: the first page starts with the catalogue and each account's
 * standards; then every page holds up to RECORDS_PER_PAGE records (a report once, in its three
 * formats) of the caller's reports, each account's assets and the changes awaiting approval, in
 * that order, newest first, and a `nextCursor` while any are left. Only the lists the caller may
 * read (as their tools) are paged.
 */
export async function listResources(ctx: ResourceContext, cursor?: string): Promise<ListResourcesResult> {
  const { caller, deps, catalogue } = ctx;
  let at: Position | undefined = cursor === undefined ? undefined : readCursor(cursor);
  const as = onBehalfOf(caller.principal);
  const accounts = [...(await deps.upstream.listAccounts({}, as)).accounts].sort((a, b) =>
    a.accountId < b.accountId ? -1 : a.accountId > b.accountId ? 1 : 0,
  );
  const resources: Listed[] = [];
  if (at === undefined) {
    resources.push({
      uri: CATALOGUE_URI,
      name: 'catalogue',
      title: 'Tool catalogue',
      description:
        'Every tool with its input and output schema and an example (the content of /catalogue.json).',
      mimeType: 'application/json',
    });
    if (mayUse(catalogue, caller, 'ads_get_change')) resources.push({ ...CHANGE_REVIEW_VIEW_LISTED });
    if (mayUse(catalogue, caller, 'ads_list_account_standards')) {
      for (const account of accounts) {
        resources.push({
          uri: STANDARDS.expand({ account_id: account.accountId }),
          name: `standards of ${account.name}`,
          title: `Account standards of ${account.name}`,
          mimeType: 'application/json',
        });
      }
    }
  }
  const streams: Stream[] = [
    ...(mayUse(catalogue, caller, 'ads_list_performance_reports') ? [{ kind: 'reports' as const }] : []),
    ...(mayUse(catalogue, caller, 'ads_list_campaign_assets')
      ? accounts.map((account) => ({ kind: 'assets' as const, account }))
      : []),
    ...(mayUse(catalogue, caller, 'ads_list_changes') ? [{ kind: 'changes' as const }] : []),
  ];
  const keyOf = (s: Stream) => streamKey({ kind: s.kind, accountId: s.account?.accountId });
  let index = 0;
  let offset = 0;
  if (at !== undefined) {
    // A cursor's stream that is gone (an account no longer connected) continues with the next one.
    const key = streamKey(at);
    index = streams.findIndex((s) => keyOf(s) >= key);
    if (index === -1) index = streams.length;
    else if (keyOf(streams[index] as Stream) === key) offset = at.offset;
  }
  let records = 0;
  while (index < streams.length && records < RECORDS_PER_PAGE) {
    const stream = streams[index] as Stream;
    const page = await readStream(ctx, stream, offset, RECORDS_PER_PAGE - records);
    resources.push(...page.listed);
    records += page.records;
    if (page.nextOffset === undefined) {
      index += 1;
      offset = 0;
    } else {
      offset = page.nextOffset;
    }
  }
  const next = streams[index];
  at =
    next === undefined
      ? undefined
      : next.account === undefined
        ? { kind: next.kind, offset }
        : { kind: next.kind, accountId: next.account.accountId, offset };
  return { resources, ...(at === undefined ? {} : { nextCursor: writeCursor(at) }), ...CACHE.workspaceList };
}

/** The longest `resources/read` URI looked at: far longer than any resource's. */
const MAX_URI_LENGTH = 2048;

/** Reads one resource; a URI of no resource is not found, a template's variable out of its rules is invalid params. */
export async function readResource(ctx: ResourceContext, uri: string): Promise<ReadResourceResult> {
  // Every resource's URI is short; a longer one names nothing, and is not echoed back whole.
  if (uri.length > MAX_URI_LENGTH) {
    throw invalidParam('uri', `must be at most ${MAX_URI_LENGTH} characters (got ${uri.length})`);
  }
  try {
    return await read(ctx, uri);
  } catch (err) {
    throw resourceError(err, uri);
  }
}

async function read(ctx: ResourceContext, uri: string): Promise<ReadResourceResult> {
  const { caller, deps, catalogue } = ctx;
  const view = await readAppView(ctx, uri);
  if (view !== undefined) return view;
  const as = onBehalfOf(caller.principal);
  if (uri === CATALOGUE_URI) {
    return {
      contents: [{ uri, mimeType: 'application/json', text: JSON.stringify(catalogue.document) }],
      ...CACHE.release,
    };
  }
  const report = REPORT.match(uri);
  if (report !== null) {
    const reportId = uuidParam('report_id', report.report_id);
    const format = report.format;
    if (typeof format !== 'string' || !(REPORT_FORMATS as readonly string[]).includes(format)) {
      throw invalidParam(
        'format',
        `must be one of ${REPORT_FORMATS.join(', ')} (got ${JSON.stringify(format)})`,
      );
    }
    requireTool(catalogue, caller, 'ads_get_performance_report', 'a performance report');
    const res = await deps.clientOf(ReportService).getPerformanceReport({ reportId, format }, as);
    // JSON is the report as ads_get_performance_report gives it; CSV and Markdown as rendered.
    const text =
      format === 'json'
        ? JSON.stringify(resultOf(GetPerformanceReportResponseSchema, res).report)
        : res.content;
    return { contents: [{ uri, mimeType: res.mediaType, text }], ...CACHE.finished };
  }
  const asset = ASSET.match(uri);
  if (asset !== null) {
    const assetId = uuidParam('asset_id', asset.asset_id);
    requireTool(catalogue, caller, 'ads_list_campaign_assets', 'a campaign asset');
    const res = await deps.clientOf(AssetService).getCampaignAssetContent({ assetId }, as);
    if (res.asset === undefined) throw new ResourceNotFoundError(uri);
    return {
      contents: [{ uri, mimeType: res.asset.mimeType, blob: Buffer.from(res.content).toString('base64') }],
      ...CACHE.finished,
    };
  }
  const standards = STANDARDS.match(uri);
  if (standards !== null) {
    const accountId = uuidParam('account_id', standards.account_id);
    requireTool(catalogue, caller, 'ads_list_account_standards', "an account's standards");
    // As the tool's route does: the standards service trusts the gateway for the account.
    await workspaceAccount(deps, caller.principal, accountId);
    const all: unknown[] = [];
    for (let offset: number | undefined = 0; offset !== undefined; ) {
      const page = await deps
        .clientOf(StandardsService)
        .listAccountStandards({ accountId, limit: 100, offset }, as);
      all.push(...(resultOf(ListAccountStandardsResponseSchema, page).standards as unknown[]));
      offset = page.nextOffset;
    }
    return {
      contents: [
        {
          uri,
          mimeType: 'application/json',
          text: JSON.stringify({ account_id: accountId, standards: all }),
        },
      ],
      ...CACHE.live,
    };
  }
  const review = CHANGE_REVIEW.match(uri);
  if (review !== null) {
    const changeId = uuidParam('change_id', review.change_id);
    requireTool(catalogue, caller, 'ads_get_change', 'a change');
    const { change } = await deps.changes.getChange({ changeId }, as);
    if (change === undefined) throw new ResourceNotFoundError(uri);
    return { contents: [{ uri, mimeType: 'text/markdown', text: reviewText(change) }], ...CACHE.finished };
  }
  throw new ResourceNotFoundError(
    uri,
    `Resource not found: ${uri} (resources/list and resources/templates/list name them)`,
  );
}

/** The review text: what a person approves, exactly (the request as reviewed, byte for byte). */
export function reviewText(change: {
  changeId: string;
  accountId: string;
  summary: string;
  digest: string;
  operation?: { method: string; path: string; bodyJson: string };
}): string {
  const op = change.operation;
  return [
    `# Change ${change.changeId}`,
    '',
    `Ad account: ${change.accountId}`,
    '',
    '## Summary',
    '',
    change.summary,
    '',
    '## Exact request',
    '',
    `${op?.method ?? ''} ${op?.path ?? ''}`,
    '',
    '```json',
    op?.bodyJson ?? '',
    '```',
    '',
    '## Digest',
    '',
    `SHA-256 ${change.digest}`,
    '',
  ].join('\n');
}

/** The first revision with `resource_link` content; an older client is not sent one. */
const RESOURCE_LINKS_SINCE = '2025-06-18';

interface ToolResultLike {
  content: unknown[];
  structuredContent?: Record<string, unknown>;
  isError?: boolean;
}

/**
 * A tool result with links to the resources that show what it made: a prepared change links its
 * review text; a saved performance report links its Markdown, CSV and JSON renderings.
 */
export function withResourceLinks<R extends ToolResultLike>(
  result: R,
  protocolVersion: string | undefined,
): R {
  if (result.isError === true || protocolVersion === undefined || protocolVersion < RESOURCE_LINKS_SINCE) {
    return result;
  }
  const data = result.structuredContent ?? {};
  const links: unknown[] = [];
  if (typeof data.change_id === 'string' && data.status === 'prepared' && typeof data.digest === 'string') {
    links.push({
      type: 'resource_link',
      uri: changeReviewUri(data.change_id),
      name: `review of change ${data.change_id}`,
      description: 'What a person reviews before approving: the summary, the exact request and its digest.',
      mimeType: 'text/markdown',
    });
  }
  const report = data.report;
  if (
    report !== null &&
    typeof report === 'object' &&
    'report_id' in report &&
    typeof report.report_id === 'string'
  ) {
    for (const format of REPORT_FORMATS) {
      links.push({
        type: 'resource_link',
        uri: reportUri(report.report_id, format),
        name: `performance report (${format})`,
        mimeType: REPORT_MEDIA[format],
      });
    }
  }
  return links.length === 0 ? result : { ...result, content: [...result.content, ...links] };
}
