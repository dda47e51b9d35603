/**
 * The workspace's records as MCP resources: performance reports (JSON, CSV, Markdown), campaign
 * image assets (the image itself), an account's standards, a change's review text, and the
 * downloadable catalogue. Each is read through the RPC its tool uses, with the caller's principal,
 * so a record of another workspace is not found, and only by a caller who may use that tool.
 */
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

/** How many records of each kind `resources/list` shows: the newest; the templates read any. */
export const LISTED_PER_KIND = 100;

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
    ],
    ...CACHE.release,
  };
}

type Listed = ListResourcesResult['resources'][number];

/** The catalogue, and the newest records of each kind the caller may read. */
export async function listResources(ctx: ResourceContext): Promise<ListResourcesResult> {
  const { caller, deps, catalogue } = ctx;
  const as = onBehalfOf(caller.principal);
  const resources: Listed[] = [
    {
      uri: CATALOGUE_URI,
      name: 'catalogue',
      title: 'Tool catalogue',
      description:
        'Every tool with its input and output schema and an example (the content of /catalogue.json).',
      mimeType: 'application/json',
    },
  ];
  const kinds: Promise<Listed[]>[] = [];
  if (mayUse(catalogue, caller, 'ads_list_performance_reports')) {
    kinds.push(
      deps
        .clientOf(ReportService)
        .listPerformanceReports({ limit: LISTED_PER_KIND }, as)
        .then((res) =>
          res.reports.flatMap((r) =>
            REPORT_FORMATS.map((format) => ({
              uri: reportUri(r.reportId, format),
              name: `${r.name} (${format})`,
              title: `Performance report ${r.name}, ${r.since} to ${r.until} (${format})`,
              mimeType: REPORT_MEDIA[format],
            })),
          ),
        ),
    );
  }
  const accounts = await deps.upstream.listAccounts({}, as);
  if (mayUse(catalogue, caller, 'ads_list_campaign_assets')) {
    for (const account of accounts.accounts) {
      kinds.push(
        deps
          .clientOf(AssetService)
          .listCampaignAssets({ accountId: account.accountId, limit: LISTED_PER_KIND }, as)
          // Delivery links are not made here: a listing carries no token to the image.
          .then((res) =>
            res.assets.map((a) => ({
              uri: ASSET.expand({ asset_id: a.assetId }),
              name: a.name,
              title: `${a.name} (${a.width}×${a.height}, ${account.name})`,
              mimeType: a.mimeType,
              size: a.byteSize,
            })),
          ),
      );
    }
  }
  if (mayUse(catalogue, caller, 'ads_list_account_standards')) {
    for (const account of accounts.accounts) {
      resources.push({
        uri: STANDARDS.expand({ account_id: account.accountId }),
        name: `standards of ${account.name}`,
        title: `Account standards of ${account.name}`,
        mimeType: 'application/json',
      });
    }
  }
  if (mayUse(catalogue, caller, 'ads_list_changes')) {
    kinds.push(
      deps.changes.listChanges({ status: 'prepared', limit: LISTED_PER_KIND }, as).then((res) =>
        res.changes.map((c) => ({
          uri: changeReviewUri(c.changeId),
          name: `review of change ${c.changeId}`,
          title: c.summary.slice(0, 200),
          mimeType: 'text/markdown',
        })),
      ),
    );
  }
  for (const listed of await Promise.all(kinds)) resources.push(...listed);
  return { resources, ...CACHE.workspaceList };
}

/** Reads one resource; a URI of no resource is not found, a template's variable out of its rules is invalid params. */
export async function readResource(ctx: ResourceContext, uri: string): Promise<ReadResourceResult> {
  try {
    return await read(ctx, uri);
  } catch (err) {
    throw resourceError(err, uri);
  }
}

async function read(ctx: ResourceContext, uri: string): Promise<ReadResourceResult> {
  const { caller, deps, catalogue } = ctx;
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
