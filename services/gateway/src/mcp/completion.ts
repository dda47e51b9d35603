/**
 * `completion/complete` for prompt arguments and resource-template variables: the caller's own
 * ad accounts, campaigns, marketing items, optimizers, changes awaiting approval and reports whose
 * name (or id) starts with what was typed, read through the RPCs their list tools use, with the
 * caller's principal, only where the caller may use those tools.
 */

import { ChangeStatus } from '@adsmcp/proto/changes/v1/changes_pb';
import { ReportService } from '@adsmcp/proto/marketing/v1/reports_pb';
import { OptimizerService } from '@adsmcp/proto/optimizer/v1/optimizer_pb';
import { Code, ConnectError } from '@connectrpc/connect';
import type { CompleteRequest, CompleteResult } from '@modelcontextprotocol/server';
import { isRecord, readPlatform } from '../catalogue/platform.ts';
import { onBehalfOf } from '../deps.ts';
import { CHANGE_REVIEW_FRAGMENT_TEMPLATE } from './app-views.ts';
import { type ArgumentKind, promptNamed } from './prompts.ts';
import type { ResourceContext } from './resources.ts';
import { invalidParam, mayUse } from './surface-access.ts';
import { ToolFailure } from './tool-failure.ts';

/** MCP caps a completion at 100 values. */
const MAX_VALUES = 100;

/** Refusals that say the account is not one the caller may read: nothing to offer. */
const NOT_OURS: ReadonlySet<Code> = new Set([Code.NotFound, Code.PermissionDenied, Code.InvalidArgument]);

/** What each resource template's variables hold. */
const TEMPLATE_VARIABLES: Record<string, Record<string, ArgumentKind | 'report' | 'format' | 'asset'>> = {
  'adsmcp://reports/{report_id}/{format}': { report_id: 'report', format: 'format' },
  'adsmcp://assets/{asset_id}': { asset_id: 'asset' },
  'adsmcp://accounts/{account_id}/standards': { account_id: 'account' },
  'adsmcp://changes/{change_id}/review': { change_id: 'change' },
  [CHANGE_REVIEW_FRAGMENT_TEMPLATE.uriTemplate]: { change_id: 'change' },
};

interface Candidate {
  value: string;
  name: string;
}

function startsWith(c: Candidate, typed: string): boolean {
  const t = typed.toLowerCase();
  return c.name.toLowerCase().startsWith(t) || c.value.toLowerCase().startsWith(t);
}

export async function complete(
  ctx: ResourceContext,
  params: CompleteRequest['params'],
): Promise<CompleteResult> {
  const { ref, argument } = params;
  let kind: ArgumentKind | 'report' | 'format' | 'asset' | undefined;
  if (ref.type === 'ref/prompt') {
    kind = promptNamed(ref.name, 'ref.name').arguments.find((a) => a.name === argument.name)?.kind;
    if (kind === undefined)
      throw invalidParam('argument.name', `is not an argument of the prompt ${ref.name}`);
  } else {
    // Own properties only: a client's `constructor` or `toString` names nothing here.
    const variables = Object.hasOwn(TEMPLATE_VARIABLES, ref.uri) ? TEMPLATE_VARIABLES[ref.uri] : undefined;
    if (variables === undefined) {
      throw invalidParam('ref.uri', 'must be a resource template resources/templates/list lists');
    }
    kind = Object.hasOwn(variables, argument.name) ? variables[argument.name] : undefined;
    if (kind === undefined) throw invalidParam('argument.name', `is not a variable of ${ref.uri}`);
  }
  const known = params.context?.arguments ?? {};
  const { candidates, whole } = await candidatesOf(ctx, kind, known);
  const matching = candidates.filter((c) => startsWith(c, argument.value));
  // A list read only in part says so: `hasMore`, and no `total`, which would count the part.
  return {
    completion: {
      values: matching.slice(0, MAX_VALUES).map((c) => c.value),
      ...(whole ? { total: matching.length } : {}),
      hasMore: matching.length > MAX_VALUES || !whole,
    },
  };
}

/** What a completion chooses from, and whether it is every record (`whole`) or only the newest. */
interface Listing {
  candidates: Candidate[];
  whole: boolean;
}

const every = (candidates: Candidate[]): Listing => ({ candidates, whole: true });
const NOTHING: Listing = every([]);

/** The most records one completion reads of a list: five pages of a hundred, newest first. */
const LISTED_MAX = 500;

/** A list RPC's records read page by page (by offset), up to LISTED_MAX of them. */
async function byOffset<T>(
  read: (offset: number) => Promise<{ rows: T[]; nextOffset?: number }>,
  candidate: (row: T) => Candidate,
): Promise<Listing> {
  const candidates: Candidate[] = [];
  let offset: number | undefined = 0;
  while (offset !== undefined && candidates.length < LISTED_MAX) {
    const page: { rows: T[]; nextOffset?: number } = await read(offset);
    candidates.push(...page.rows.map(candidate));
    offset = page.rows.length === 0 ? undefined : page.nextOffset;
  }
  return { candidates, whole: offset === undefined };
}

async function candidatesOf(
  ctx: ResourceContext,
  kind: ArgumentKind | 'report' | 'format' | 'asset',
  known: Record<string, string>,
): Promise<Listing> {
  const { caller, deps, catalogue } = ctx;
  const as = onBehalfOf(caller.principal);
  const may = (tool: string) => mayUse(catalogue, caller, tool);
  const limit = 100;
  switch (kind) {
    case 'date':
      return NOTHING;
    case 'format':
      return every(['json', 'csv', 'markdown'].map((f) => ({ value: f, name: f })));
    case 'account': {
      if (!may('ads_list_accounts')) return NOTHING;
      const res = await deps.upstream.listAccounts({}, as);
      return every(res.accounts.map((a) => ({ value: a.accountId, name: a.name })));
    }
    case 'campaign': {
      // Campaigns belong to an account: without one given, there is nothing to offer.
      const accountId = known.account_id;
      if (accountId === undefined || !may('ads_list_campaigns')) return NOTHING;
      try {
        const page = await readPlatform(caller, deps, {
          accountId,
          path: '/campaigns',
          query: { limit, order: 'desc' },
          notFound: `no ad account ${accountId}`,
          shape: 'list',
        });
        const candidates = (Array.isArray(page.data) ? page.data : []).flatMap((c) =>
          isRecord(c) && typeof c.id === 'string' ? [{ value: c.id, name: String(c.name ?? '') }] : [],
        );
        return { candidates, whole: !(isRecord(page.paging) && page.paging.has_more === true) };
      } catch (err) {
        // An account of another workspace, or one the platform does not know: nothing to offer.
        // A service or the platform that does not answer is an error, not an empty list.
        if (err instanceof ToolFailure && (err.code === 'not_found' || err.code === 'invalid_argument'))
          return NOTHING;
        if (err instanceof ConnectError && NOT_OURS.has(err.code)) return NOTHING;
        throw err;
      }
    }
    case 'marketing_item': {
      if (!may('ads_list_marketing_items')) return NOTHING;
      return byOffset(
        async (offset) => {
          const res = await deps.marketing.listMarketingItems({ limit, offset }, as);
          return { rows: res.items, nextOffset: res.nextOffset };
        },
        (i) => ({ value: i.itemId, name: i.name }),
      );
    }
    case 'optimizer': {
      if (!may('ads_list_optimizers')) return NOTHING;
      const optimizers = deps.clientOf(OptimizerService);
      return byOffset(
        async (offset) => {
          const res = await optimizers.listOptimizers({ limit, offset }, as);
          return { rows: res.optimizers, nextOffset: res.nextOffset };
        },
        (o) => ({ value: o.optimizerId, name: o.name }),
      );
    }
    case 'change': {
      if (!may('ads_list_changes')) return NOTHING;
      return byOffset(
        async (offset) => {
          const res = await deps.changes.listChanges({ state: ChangeStatus.PREPARED, limit, offset }, as);
          return { rows: res.changes, nextOffset: res.nextOffset };
        },
        (c) => ({ value: c.changeId, name: c.summary }),
      );
    }
    case 'report': {
      if (!may('ads_list_performance_reports')) return NOTHING;
      const reports = deps.clientOf(ReportService);
      return byOffset(
        async (offset) => {
          const res = await reports.listPerformanceReports({ limit, offset }, as);
          return { rows: res.reports, nextOffset: res.nextOffset };
        },
        (r) => ({ value: r.reportId, name: r.name }),
      );
    }
    case 'asset':
      // Assets are listed per account, and a template variable has no account beside it.
      return NOTHING;
  }
}
