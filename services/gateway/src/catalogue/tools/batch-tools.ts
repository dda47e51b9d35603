/**
 * Campaign building in bulk: a workbook planned as a paused bulk mutation job (read only), and a
 * saved ad batch prepared as one change that creates a paused campaign, its ad group and an ad per
 * variant with one bulk job. The changes service compiles both with the same rules.
 */

import {
  BatchService,
  PrepareSavedAdBatchRequestSchema,
  type PrepareSavedAdBatchResponse,
} from '@adsmcp/proto/changes/v1/batches_pb';
import { connectionFailure } from '@adsmcp/runtime/service-client';
import { showHidden, textLength } from '@adsmcp/runtime/text';
import { Code, ConnectError } from '@connectrpc/connect';
import { type GatewayDeps, onBehalfOf } from '../../deps.ts';
import { ToolFailure } from '../../mcp/tool-failure.ts';
import { unstorable, unstorablePath } from '../../storable-text.ts';
import { defineTool, type ToolContext, type ToolRow } from '../catalogue.ts';
import { CHANGE_OUTPUT, changeView } from '../change-view.ts';
import { inputFromRequest } from '../input-schema.ts';
import { requestFrom } from '../rpc-mapping.ts';
import { array, enumOf, integer, type JsonSchema, number, object, type Schema, string } from '../schema.ts';
import { ACCOUNT_ID_TEXT, accountId, EXAMPLE_ACCOUNT, PREPARE_TEXT } from './platform-arguments.ts';

const MAX_ROWS = 1000;
const MAX_COLUMNS = 30;

/**
 * A cell of a JSON row: text, a number, a boolean, or a list of text (countries, context hints).
 * Lengths count code points, as JSON Schema does.
 */
function isCell(v: unknown): boolean {
  if (typeof v === 'string') return textLength(v) <= 5000;
  if (typeof v === 'number') return Number.isFinite(v);
  if (typeof v === 'boolean' || v === null) return true;
  return (
    Array.isArray(v) && v.length <= 2000 && v.every((x) => typeof x === 'string' && textLength(x) <= 1000)
  );
}

/** One row of a sheet: column name to cell; the columns are the sheet's (see the description). */
const row: Schema<Record<string, unknown>> = {
  json: {
    type: 'object',
    description:
      'A row: column name (1 to 100 characters) to value: text up to 5000 characters, a number, a boolean, or a ' +
      'list of up to 2000 texts of up to 1000 characters each; at most 30 columns.',
    maxProperties: MAX_COLUMNS,
  },
  check(value, path, out) {
    if (typeof value !== 'object' || value === null || Array.isArray(value)) {
      out.push({ path, message: `\`${path}\` must be an object of column name to value` });
      return;
    }
    const entries = Object.entries(value);
    if (entries.length > MAX_COLUMNS)
      out.push({ path, message: `\`${path}\` must have at most ${MAX_COLUMNS} columns` });
    for (const [k, v] of entries.slice(0, MAX_COLUMNS + 1)) {
      if (k.length < 1 || textLength(k) > 100)
        out.push({ path, message: `\`${path}\` column names must be 1 to 100 characters` });
      else if (!isCell(v))
        out.push({
          path: `${path}.${k}`,
          // The column name is the caller's: its hidden characters are shown as tokens.
          message: `\`${path}.${showHidden(k)}\` must be text (up to 5000 characters), a number, a boolean or a list of text`,
        });
      else {
        // A NUL or a lone surrogate would be stored as nothing or as U+FFFD: refused, by name.
        const key = unstorable(k);
        const cell = key === undefined ? unstorablePath(v) : undefined;
        if (key !== undefined)
          out.push({ path: `${path}.${k}`, message: `a column name of \`${path}\` ${key}` });
        else if (cell !== undefined)
          out.push({
            path: `${path}.${k}`,
            message: `\`${path}.${showHidden(k)}${cell.path}\` ${cell.rule}`,
          });
      }
    }
  },
};

const sheet = (description: string) => array(row, { max: MAX_ROWS, description });

const planWorkbookInput = inputFromRequest(BatchService.method.planWorkbook.input, {
  account_id: { description: ACCOUNT_ID_TEXT },
  workbook_base64: {
    description:
      'An XLSX workbook, base64-encoded (at most 800,000 characters), with sheets named campaigns, adgroups ' +
      '(or "ad groups") and ads; the first row of each names the columns. Give this or sheets.',
  },
  // Each row is a google.protobuf.Struct in the request: its columns and cells are bounded here.
  sheets: object(
    {
      campaigns: sheet(
        'Campaign rows: name (3 to 200), objective (clicks or impressions; conversions is refused), budget ' +
          '(decimal in the account currency), budget_type (daily or lifetime), optional launch_date and end_date ' +
          '(YYYY-MM-DD, account time zone; lifetime needs end_date), optional status (paused only).',
      ),
      adgroups: sheet(
        'Ad group rows: campaign (a campaign row name), name, countries (ISO 3166-1 alpha-2 codes, a list or ' +
          'comma-separated), bid (decimal in the account currency; for impressions per thousand) or bid_micros, ' +
          'optional context_hints (a list, each hint carried as given; or text with one hint per line, so a ' +
          'hint may hold spaces, commas and semicolons), status (paused only).',
      ),
      ads: sheet(
        'Ad rows: ad_group (an ad group row name), name, title (1 to 50), target_url (https), optional body ' +
          '(up to 100), image_url (https, shown only), status (paused only). Names, titles and bodies follow ' +
          'the text rules of the prepare tools: no control or format characters, and something visible.',
      ),
    },
    [],
    'The workbook as JSON rows instead of a file, at most 1000 rows per sheet. Give this or workbook_base64.',
  ),
  validate_only: {
    description: 'Carried into the job body: the platform would only validate it, creating nothing.',
  },
  partial_failure: {
    description:
      'Carried into the job body: the platform would keep the operations that succeed when others fail ' +
      '(otherwise all or nothing).',
  },
});

const planWorkbook: ToolRow<GatewayDeps> = {
  name: 'ads_plan_workbook',
  title: 'Plan a workbook of campaigns',
  group: 'Campaign creation',
  behavior: 'read',
  features: [],
  description:
    'Compiles a workbook of campaigns, ad groups and ads (an XLSX file in workbook_base64, or the same rows as ' +
    'JSON in sheets: exactly one) into the bulk mutation job that would create them, every object paused ' +
    '(POST /bulk_mutation_jobs; job.operations linked by ref), and previews it: nothing is saved or sent. ' +
    'Budgets and bids are exact micros of the account currency (its minor units, at most 1,000,000,000 units ' +
    'of budget, 30,400,000 of bid; a CPM bid per thousand impressions, the bulk wire format). Conversion ' +
    'campaigns are refused. Countries must be ISO 3166-1 alpha-2 codes; they are checked and shown in ' +
    'ad_groups, not sent (the platform has no country targeting field). launch_date and end_date are ' +
    'previewed only: schedule shows the instants they are in the account time zone, and the campaigns are ' +
    'still created paused. validate_only and partial_failure are carried into the job. A refused row is an ' +
    'error naming its sheet, row number (the spreadsheet row, or the position in the JSON array from 1) and ' +
    'column, for every such row at once; error.issues lists each as {path, message}, path its cell in ' +
    'sheets (sheets.ads[0].title, counted from 0) or workbook_base64. Lengths count Unicode code points; ' +
    'text cells are read with the spaces around them trimmed, except context_hints, whose hints are ' +
    'carried as given: in an XLSX cell ' +
    '(always text) one hint per line. XLSX files are checked before they are read: at most 100 zip ' +
    'entries, 16 MiB per inflated entry, 40 MiB in all and 1000 rows per sheet.',
  input: planWorkbookInput,
  example: {
    account_id: EXAMPLE_ACCOUNT,
    sheets: {
      campaigns: [
        {
          name: 'Spring Sale',
          objective: 'clicks',
          budget: '50.00',
          budget_type: 'daily',
          launch_date: '2026-12-01',
        },
      ],
      adgroups: [{ campaign: 'Spring Sale', name: 'Plants', bid: '0.80', countries: ['US', 'CA'] }],
      ads: [
        {
          ad_group: 'Plants',
          name: 'Two for one',
          title: 'Two plants for one',
          body: 'This week only.',
          target_url: 'https://shop.example.com/spring',
        },
      ],
    },
    validate_only: true,
    partial_failure: true,
  },
  route: { kind: 'rpc', method: BatchService.method.planWorkbook, account: 'account_id' },
};

const prepareAdBatchInput = object(
  {
    item_id: string({ format: 'uuid', description: 'The saved marketing item of kind batch.' }),
    expected_revision: integer({
      min: 1,
      description: 'The revision of the batch you read (ads_get_marketing_item); another one is refused.',
    }),
    account_id: accountId,
    campaign_name: string({ min: 3, max: 200, nonBlank: true, description: 'The new campaign’s name.' }),
    budget_amount: number({
      min: 1,
      max: 1_000_000_000,
      description:
        'The campaign budget in units of the account currency (19.99), converted to exact micros; no more ' +
        'decimals than the currency has.',
    }),
    budget_type: enumOf(
      ['daily', 'lifetime'],
      'daily; lifetime needs an end date, which a batch does not take, so it is refused (plan it with ads_plan_workbook).',
    ),
    objective: enumOf(['clicks', 'impressions'], 'What the campaign optimizes for.'),
    bid_micros: integer({
      min: 1,
      max: 9_007_199_254_740_991,
      description:
        'The ad group’s fixed bid in micros: per click for clicks, per thousand impressions for impressions ' +
        '(the bulk wire format); at most 30400000000000.',
    }),
    countries: array(
      string({
        pattern: /^[A-Z]{2}$/,
        patternHint: 'two uppercase letters (an ISO 3166-1 alpha-2 code such as US)',
      }),
      {
        min: 1,
        max: 250,
        unique: true,
        description: 'The countries to serve in, ISO 3166-1 alpha-2, each once.',
      },
    ),
    context_hints: array(string({ min: 1, max: 1000, nonBlank: true }), {
      max: 2000,
      description:
        'Hints for the ad group’s placement, carried into it exactly as given (not trimmed or split).',
    }),
  },
  [
    'item_id',
    'expected_revision',
    'account_id',
    'campaign_name',
    'budget_amount',
    'budget_type',
    'objective',
    'bid_micros',
    'countries',
  ],
);

const prepareAdBatchOutput: JsonSchema = {
  ...CHANGE_OUTPUT,
  properties: {
    ...(CHANGE_OUTPUT.properties as Record<string, JsonSchema>),
    countries: {
      type: 'array',
      items: { type: 'string' },
      description: 'The countries checked (the platform has no country targeting field: not sent).',
    },
  },
  required: [...(CHANGE_OUTPUT.required as string[]), 'countries'],
};

/** How long preparing may take: fetching and checking up to 100 source images, then planning. */
const PREPARE_TIMEOUT_MS = 150_000;

/**
 * planAdBatch is ads_prepare_ad_batch's preflight: PlanSavedAdBatch makes the same reads and
 * checks as PrepareSavedAdBatch and plans the change it would record (summary, operation,
 * digest), recording nothing. It fetches and saves no image: a variant whose source image is not
 * saved yet is planned without it, and a note says so.
 */
export async function planAdBatch(ctx: ToolContext<GatewayDeps>, input: Record<string, unknown>) {
  const batch = requestFrom(PrepareSavedAdBatchRequestSchema, input);
  try {
    const { plan, notes } = await ctx.deps
      .clientOf(BatchService)
      .planSavedAdBatch({ batch }, onBehalfOf(ctx.caller.principal));
    if (plan === undefined) throw new Error('the changes service planned the batch without a plan');
    return { plan, notes };
  } catch (err) {
    // ads_preflight_change reports the prepare tool's refusals as its `refusal`; a stale revision
    // comes as Aborted, which it does not take for one (a reset connection is Aborted too).
    const stale =
      err instanceof ConnectError && err.code === Code.Aborted && connectionFailure(err) === undefined;
    if (stale) throw new ToolFailure('stale_revision', err.rawMessage);
    throw err;
  }
}

const prepareAdBatch = defineTool<GatewayDeps, typeof prepareAdBatchInput>({
  name: 'ads_prepare_ad_batch',
  title: 'Prepare an ad batch',
  group: 'Marketing',
  behavior: 'prepare',
  features: [],
  description:
    'Prepares a saved marketing item of kind batch, at exactly expected_revision (another revision is refused, ' +
    'stating the current one; another kind is refused), as one change: a bulk mutation job (POST ' +
    '/bulk_mutation_jobs) that creates one paused campaign (campaign_name, objective, the budget as exact ' +
    'micros of the account currency), one paused ad group with a fixed bid of bid_micros and context_hints, ' +
    'and one paused chat_card ad per variant (title, body, target_url, and its source image). Each ' +
    'source_image_url becomes a campaign asset of the account: one saved from that URL before is reused, ' +
    'any other is fetched (https, through request-forgery protection) and saved first, with the rules of ' +
    'ads_save_campaign_asset, once the batch has passed the checks below. An image that cannot be saved ' +
    'refuses the batch, naming each variant that shows it (variants[2].source_image_url), each one also in ' +
    'error.issues as {path, message}; the images saved are kept, so preparing again fetches only the ' +
    'rest. The images are pinned with the change (each one’s ' +
    'sha256 is part of the digest, and ads_get_change lists them in uploads) and uploaded to the platform only ' +
    'when the approved change is applied. ' +
    'Conversion campaigns cannot be built; countries must be ISO 3166-1 alpha-2 codes (checked, and ' +
    'returned in countries: the platform has no country targeting field). Refused at prepare: budgets and ' +
    'bids beyond the platform limits, a read-only connection, and an account without bulk access. The ' +
    'arguments and the saved variants are used exactly as given (nothing trimmed, each context hint carried ' +
    'whole); a refusal names the argument or the variant field (variants[0].title) and the rule, lengths ' +
    'counted in Unicode code points. ' +
    `${PREPARE_TEXT} Once applied, upstream_response is the job: call ads_get_bulk_job with its id to follow ` +
    'it and see each row’s result.',
  input: prepareAdBatchInput,
  example: {
    item_id: '0b0e4b6a-6a0e-4d8e-9c61-3c1f0f7b8a11',
    expected_revision: 2,
    account_id: EXAMPLE_ACCOUNT,
    campaign_name: 'Spring batch',
    budget_amount: 50,
    budget_type: 'daily',
    objective: 'clicks',
    bid_micros: 800000,
    countries: ['US', 'CA'],
    context_hints: ['indoor plants'],
  },
  output: prepareAdBatchOutput,
  idempotent: false,
  route: {
    kind: 'rpc',
    method: BatchService.method.prepareSavedAdBatch,
    timeoutMs: PREPARE_TIMEOUT_MS,
    view: (res, ctx) => {
      const { change, countries } = res as PrepareSavedAdBatchResponse;
      return { ...changeView(change, ctx.deps.publicUrl), countries };
    },
  },
});

export const batchTools: readonly ToolRow<GatewayDeps>[] = [planWorkbook, prepareAdBatch];

/** The prepare tool of this file that ads_preflight_change plans with its own planner (PlanSavedAdBatch). */
export const batchPreflight = {
  tool: prepareAdBatch,
  plan: planAdBatch,
  noCurrent:
    'does not apply to ads_prepare_ad_batch: an ad batch creates a new campaign, ad group and ads, so there ' +
    'is no target for it to stand for; leave current out',
};
