/**
 * `completion/complete` for prompt arguments and resource-template variables: the caller's own
 * ad accounts, campaigns, marketing items, optimizers, changes awaiting approval and reports whose
 * name (or id) starts with what was typed, read through the RPCs their list tools use, with the
 * caller's principal, only where the caller may use those tools.
 */

import { ChangeStatus } from '@adsmcp/proto/changes/v1/changes_pb';
import { ReportService } from '@adsmcp/proto/marketing/v1/reports_pb';
import { OptimizerService } from '@adsmcp/proto/optimizer/v1/optimizer_pb';
import { type CompleteRequest, type CompleteResult, ProtocolError } from '@modelcontextprotocol/server';
import { isRecord, readPlatform } from '../catalogue/platform.ts';
import { onBehalfOf } from '../deps.ts';
import { type ArgumentKind, promptNamed } from './prompts.ts';
import type { ResourceContext } from './resources.ts';
import { invalidParam, mayUse } from './surface-access.ts';

/** MCP caps a completion at 100 values. */
const MAX_VALUES = 100;

/** What each resource template's variables hold. */
const TEMPLATE_VARIABLES: Record<string, Record<string, ArgumentKind | 'report' | 'format' | 'asset'>> = {
  'adsmcp://reports/{report_id}/{format}': { report_id: 'report', format: 'format' },
  'adsmcp://assets/{asset_id}': { asset_id: 'asset' },
  'adsmcp://accounts/{account_id}/standards': { account_id: 'account' },
  'adsmcp://changes/{change_id}/review': { change_id: 'change' },
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
  const candidates = await candidatesOf(ctx, kind, known);
  const matching = candidates.filter((c) => startsWith(c, argument.value));
  return {
    completion: {
      values: matching.slice(0, MAX_VALUES).map((c) => c.value),
      total: matching.length,
      hasMore: matching.length > MAX_VALUES,
    },
  };
}

async function candidatesOf(
  ctx: ResourceContext,
  kind: ArgumentKind | 'report' | 'format' | 'asset',
  known: Record<string, string>,
): Promise<Candidate[]> {
  const { caller, deps, catalogue } = ctx;
  const as = onBehalfOf(caller.principal);
  const may = (tool: string) => mayUse(catalogue, caller, tool);
  switch (kind) {
    case 'date':
      return [];
    case 'format':
      return ['json', 'csv', 'markdown'].map((f) => ({ value: f, name: f }));
    case 'account': {
      if (!may('ads_list_accounts')) return [];
      const res = await deps.upstream.listAccounts({}, as);
      return res.accounts.map((a) => ({ value: a.accountId, name: a.name }));
    }
    case 'campaign': {
      // Campaigns belong to an account: without one given, there is nothing to offer.
      const accountId = known.account_id;
      if (accountId === undefined || !may('ads_list_campaigns')) return [];
      try {
        const page = await readPlatform(caller, deps, {
          accountId,
          path: '/campaigns',
          query: { limit: 100 },
          notFound: `no ad account ${accountId}`,
          shape: 'list',
        });
        return (Array.isArray(page.data) ? page.data : []).flatMap((c) =>
          isRecord(c) && typeof c.id === 'string' ? [{ value: c.id, name: String(c.name ?? '') }] : [],
        );
      } catch (err) {
        // An account of another workspace, or one the platform does not know: nothing to offer.
        if (err instanceof ProtocolError) throw err;
        return [];
      }
    }
    case 'marketing_item': {
      if (!may('ads_list_marketing_items')) return [];
      const res = await deps.marketing.listMarketingItems({ limit: 100 }, as);
      return res.items.map((i) => ({ value: i.itemId, name: i.name }));
    }
    case 'optimizer': {
      if (!may('ads_list_optimizers')) return [];
      const res = await deps.clientOf(OptimizerService).listOptimizers({ limit: 100 }, as);
      return res.optimizers.map((o) => ({ value: o.optimizerId, name: o.name }));
    }
    case 'change': {
      if (!may('ads_list_changes')) return [];
      const res = await deps.changes.listChanges({ state: ChangeStatus.PREPARED, limit: 100 }, as);
      return res.changes.map((c) => ({ value: c.changeId, name: c.summary }));
    }
    case 'report': {
      if (!may('ads_list_performance_reports')) return [];
      const res = await deps.clientOf(ReportService).listPerformanceReports({ limit: 100 }, as);
      return res.reports.map((r) => ({ value: r.reportId, name: r.name }));
    }
    case 'asset':
      // Assets are listed per account, and a template variable has no account beside it.
      return [];
  }
}
