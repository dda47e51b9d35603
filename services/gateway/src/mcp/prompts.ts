/**
 * Prompts: the work an agent is most often asked to do with this server, each written once with
 * the tools it takes and the order they go in. Arguments are typed (a UUID of a record of the
 * caller's workspace, an account-local date) and checked when the prompt is got: a bad one is
 * invalid params naming the argument and the rule, never a prompt with a hole in it.
 */
import { validDate } from '@adsmcp/runtime/schema';
import { Code, ConnectError } from '@connectrpc/connect';
import {
  type GetPromptResult,
  type ListPromptsResult,
  type PromptArgument,
  ProtocolError,
  ProtocolErrorCode,
} from '@modelcontextprotocol/server';
import { workspaceAccount } from '../catalogue/platform.ts';
import { CACHE } from './discovery.ts';
import type { ResourceContext } from './resources.ts';
import { invalidParam, uuidParam } from './surface-access.ts';

/** What an argument holds: completion/complete offers values of its kind. */
export type ArgumentKind = 'account' | 'campaign' | 'marketing_item' | 'optimizer' | 'change' | 'date';

interface TypedArgument extends PromptArgument {
  kind: ArgumentKind;
}

interface PromptDefinition {
  name: string;
  title: string;
  description: string;
  arguments: TypedArgument[];
  text(args: Record<string, string>): string;
}

const account: TypedArgument = {
  name: 'account_id',
  description: 'The ad account, a UUID from ads_list_accounts (completion offers them by name).',
  required: true,
  kind: 'account',
};

function date(name: string, what: string, required: boolean): TypedArgument {
  return { name, description: `${what}, an account-local date YYYY-MM-DD.`, required, kind: 'date' };
}

export const PROMPTS: readonly PromptDefinition[] = [
  {
    name: 'weekly_account_review',
    title: 'Weekly account review',
    description:
      'Review an ad account’s last week against the week before and propose changes for a person to approve.',
    arguments: [
      account,
      date('week_ending', 'The last day of the week to review (default: yesterday)', false),
    ],
    text: (a) =>
      `Review ad account ${a.account_id} for the week ending ${a.week_ending ?? 'yesterday (in the account’s time zone)'}.\n` +
      '1. ads_get_connection_context and ads_list_accounts: the account’s currency and time zone.\n' +
      '2. ads_create_performance_report for the seven days ending that day: it compares them with the week before.\n' +
      '3. ads_list_account_standards: the account’s naming, domain, UTM and operating-window rules.\n' +
      '4. Summarise what moved (spend, results, cost per result) by campaign and ad, naming the ads that explain most of it.\n' +
      '5. Where a change would help, prepare it (ads_update_ad, ads_pause_ad_group, …) and list each change_id with its ' +
      'review text; nothing reaches the account until a person approves it in the dashboard.',
  },
  {
    name: 'launch_from_brief',
    title: 'Launch from a brief',
    description:
      'Turn a saved marketing item (a brief or a batch) into one reviewable ad batch for an ad account.',
    arguments: [
      account,
      {
        name: 'item_id',
        description:
          'The marketing item, a UUID from ads_list_marketing_items (completion offers them by name).',
        required: true,
        kind: 'marketing_item',
      },
    ],
    text: (a) =>
      `Launch ads in ad account ${a.account_id} from marketing item ${a.item_id}.\n` +
      '1. ads_get_marketing_item: read the item; ads_get_marketing_context for the brand voice and guidance.\n' +
      '2. If it is a brief, write the variants and save them as a batch item (ads_save_marketing_item, kind batch).\n' +
      '3. ads_validate_creative on each variant; fix what it refuses.\n' +
      '4. ads_prepare_ad_batch with the batch item at its revision: one paused campaign, ad group and ads, as one change.\n' +
      '5. Give the person the change_id and its review text resource; it is applied only after they approve it.',
  },
  {
    name: 'triage_serving_issues',
    title: 'Triage serving issues',
    description:
      'Find why an ad account’s ads are not serving (or serve poorly) and say what to do about each.',
    arguments: [
      account,
      {
        name: 'campaign_id',
        description: 'Only this campaign, an id from ads_list_campaigns (completion offers them by name).',
        required: false,
        kind: 'campaign',
      },
    ],
    text: (a) =>
      `Triage serving issues in ad account ${a.account_id}${a.campaign_id ? `, campaign ${a.campaign_id}` : ''}.\n` +
      '1. ads_list_campaigns, ads_list_ad_groups and ads_list_ads: statuses, review states and schedules.\n' +
      '2. ads_get_ad_insights for the last 3 days: ads with spend but no delivery, or delivery but no results.\n' +
      '3. ads_list_changes: changes prepared, approved or failed that touch these objects.\n' +
      '4. For each issue: the object, what is wrong, the evidence, and the fix; prepare fixes as changes for approval.',
  },
  {
    name: 'answer_optimizer_run',
    title: 'Answer a queued optimizer run',
    description:
      'Claim an optimizer’s queued review run, study its performance snapshot and answer it with proposals.',
    arguments: [
      {
        name: 'optimizer_id',
        description: 'The optimizer, a UUID from ads_list_optimizers (completion offers them by name).',
        required: true,
        kind: 'optimizer',
      },
    ],
    text: (a) =>
      `Answer the queued review run of optimizer ${a.optimizer_id}.\n` +
      '1. ads_get_optimizer: its account, goal, target and brand instructions.\n' +
      '2. ads_list_optimization_runs: its queued run; ads_claim_optimization_run claims it and records the ' +
      'performance snapshot the proposals are judged against (ads_get_optimization_run shows it).\n' +
      '3. ads_complete_optimization_run with proposals that follow the optimizer’s instructions and the account’s ' +
      'standards, saying why for each. A person reviews and approves each proposal in the dashboard.',
  },
  {
    name: 'import_and_report',
    title: 'Import performance and report',
    description:
      'Import a period’s performance figures for an ad account and write the report of that period.',
    arguments: [
      account,
      date('since', 'The first day of the period', true),
      date('until', 'The last day of the period', true),
    ],
    text: (a) =>
      `Import performance for ad account ${a.account_id} from ${a.since} to ${a.until} and report it.\n` +
      '1. ads_import_performance with the rows or CSV the person gives (exact decimals; unknown metrics stay empty).\n' +
      '2. ads_create_performance_report for the same period: the platform’s figures beside the imported ones.\n' +
      '3. Read the report as Markdown (its resource, or ads_get_performance_report with format markdown) and ' +
      'summarise it: what changed against the period before, and which ads explain it.',
  },
];

export function listPrompts(): ListPromptsResult {
  return {
    prompts: PROMPTS.map((p) => ({
      name: p.name,
      title: p.title,
      description: p.description,
      arguments: p.arguments.map(({ kind: _kind, ...arg }) => arg),
    })),
    ...CACHE.release,
  };
}

export function promptNamed(name: string, field = 'name'): PromptDefinition {
  const prompt = PROMPTS.find((p) => p.name === name);
  if (prompt === undefined) {
    throw invalidParam(
      field,
      `must name a prompt (prompts/list lists them: ${PROMPTS.map((p) => p.name).join(', ')})`,
    );
  }
  return prompt;
}

/** The prompt with its arguments checked; an account must be one of the caller's workspace. */
export async function getPrompt(
  ctx: ResourceContext,
  name: string,
  given: Record<string, string> | undefined,
): Promise<GetPromptResult> {
  const prompt = promptNamed(name);
  const args: Record<string, string> = {};
  for (const key of Object.keys(given ?? {})) {
    if (!prompt.arguments.some((a) => a.name === key)) {
      throw invalidParam(
        `arguments.${key}`,
        `is not an argument of ${name} (it takes ${prompt.arguments.map((a) => a.name).join(', ')})`,
      );
    }
  }
  for (const arg of prompt.arguments) {
    const value = given?.[arg.name];
    if (value === undefined || value === '') {
      if (arg.required) throw invalidParam(`arguments.${arg.name}`, `is required: ${arg.description}`);
      continue;
    }
    if (arg.kind === 'date') {
      if (!validDate(value)) {
        throw invalidParam(
          `arguments.${arg.name}`,
          `must be a date YYYY-MM-DD (got ${JSON.stringify(value.slice(0, 40))})`,
        );
      }
      args[arg.name] = value;
    } else if (arg.kind === 'campaign') {
      if (!/^[A-Za-z0-9_-]{1,64}$/.test(value)) {
        throw invalidParam(`arguments.${arg.name}`, 'must be a campaign id: 1 to 64 letters, digits, _ or -');
      }
      args[arg.name] = value;
    } else {
      args[arg.name] = uuidParam(`arguments.${arg.name}`, value);
    }
  }
  if (args.since !== undefined && args.until !== undefined && args.since > args.until) {
    throw invalidParam('arguments.until', `must not be before since (${args.since})`);
  }
  if (args.account_id !== undefined) {
    try {
      await workspaceAccount(ctx.deps, ctx.caller.principal, args.account_id);
    } catch (err) {
      if (!(err instanceof ConnectError && err.code === Code.NotFound)) throw err;
      throw new ProtocolError(
        ProtocolErrorCode.InvalidParams,
        `Invalid params: \`arguments.account_id\` names no ad account of this workspace (ads_list_accounts lists them)`,
      );
    }
  }
  return {
    description: prompt.description,
    messages: [{ role: 'user', content: { type: 'text', text: prompt.text(args) } }],
  };
}
