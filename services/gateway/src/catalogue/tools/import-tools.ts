/**
 * Performance imports (the performance_imports feature) and business-outcome imports. The work of
 * a performance import runs on the marketing service's bus; the import tool's route waits for it a
 * bounded time (its `poll`) and reports MCP progress while it waits, when the client asked for it.
 */
import {
  type ImportPerformanceResponse,
  ImportPerformanceResponseSchema,
  ImportService,
  type PerformanceImport,
} from '@adsmcp/proto/marketing/v1/imports_pb';
import type { GatewayDeps } from '../../deps.ts';
import { ToolFailure } from '../../mcp/tool-failure.ts';
import type { ProgressUpdate, ToolRow } from '../catalogue.ts';
import { type FieldAdditions, inputFromRequest } from '../input-schema.ts';
import { messageSchema } from '../output-schema.ts';
import { resultOf } from '../rpc-mapping.ts';
import { array, enumOf, integer, nullable, number, object, type Schema, string } from '../schema.ts';
import { ACCOUNT_ID_TEXT, EXAMPLE_ACCOUNT } from './platform-arguments.ts';

const FEATURES = ['performance_imports'] as const;
const MAX_SAFE = 9_007_199_254_740_991;
const EXAMPLE_IMPORT = '6b2f9c1d-4e8a-4f3b-9d2c-7a1e5b8c3f60';
/** How long the import tool waits for the outcome before answering with the status. */
export const IMPORT_WAIT_MS = 10_000;

const count = (description: string) => nullable(integer({ min: 0, max: MAX_SAFE, description }));

const performanceRow = object(
  {
    ad_id: string({ min: 1, max: 255, nonBlank: true, description: 'The ad, as the source names it.' }),
    name: string({ max: 1000, multiline: true }),
    headline: string({ max: 1000, multiline: true }),
    body: string({ max: 5000, multiline: true }),
    campaign: string({ max: 1000, multiline: true }),
    audience: string({ max: 1000, multiline: true }),
    hook: string({ max: 200, multiline: true }),
    offer: string({ max: 200, multiline: true }),
    impressions: count('Required; null when the source did not report it (unknown, never 0).'),
    clicks: count('Required; null when unknown.'),
    spend: nullable(
      number({ min: 0, description: 'Required; in the import currency (not micros); null when unknown.' }),
    ),
    conversions: nullable(number({ min: 0, description: 'Null or left out when unknown.' })),
    revenue: nullable(number({ description: 'In the import currency; null or left out when unknown.' })),
  },
  ['ad_id', 'impressions', 'clicks', 'spend'],
);

const ROW_FIELDS = Object.keys((performanceRow.json as { properties: object }).properties);

const columnMapping = object(
  Object.fromEntries(
    ROW_FIELDS.map((f) => [f, string({ min: 1, max: 200, description: `The CSV header holding ${f}.` })]),
  ),
  [],
  'Only with csv: our field name -> the CSV header that holds it. A field not mapped is read from the header of ' +
    'its own name; other CSV columns are ignored.',
);

/** One leading byte-order mark dropped: spreadsheets' "CSV UTF-8" export starts with one. */
const withoutBom = (text: string) => (text.startsWith('\uFEFF') ? text.slice(1) : text);

const csvRules = string({
  min: 1,
  max: 1_500_000,
  multiline: true,
  description:
    'CSV text (RFC 4180; lines may end in CRLF or LF) with a header line; or give rows instead. Empty cells are ' +
    'unknown. One leading byte-order mark is dropped.',
});

/**
 * The csv argument: the string rules on the text after one leading byte-order mark, which is no
 * character of the CSV. The text is sent as given: the marketing service drops the mark before it
 * counts, hashes and parses the CSV. Any other U+FEFF is refused as the hidden character it is.
 */
const csvText: Schema<string> = {
  json: csvRules.json,
  check(value, path, out) {
    csvRules.check(typeof value === 'string' ? withoutBom(value) : value, path, out);
  },
};

const importInput = object(
  {
    source: enumOf(['vendor_a_ads', 'vendor_b_ads', 'other'], 'Where the performance comes from.'),
    name: string({ min: 1, max: 200, nonBlank: true }),
    currency: string({
      min: 3,
      max: 3,
      pattern: /^[A-Z]{3}$/,
      patternHint: 'three uppercase letters (ISO 4217, such as EUR)',
      description: 'The currency of spend and revenue.',
    }),
    timezone: string({ min: 1, max: 100, description: 'The IANA time zone of the dates (Europe/Berlin).' }),
    attribution: string({
      min: 1,
      max: 1000,
      nonBlank: true,
      multiline: true,
      description: 'How the source attributed conversions and revenue (7-day click, 1-day view).',
    }),
    since: string({ format: 'date', description: 'The first day the rows cover.' }),
    until: string({ format: 'date', description: 'The last day the rows cover; since <= until.' }),
    rows: array(performanceRow, { min: 1, max: 5000, description: '1 to 5000 rows; or give csv instead.' }),
    csv: csvText,
    column_mapping: columnMapping,
  },
  ['source', 'name', 'currency', 'timezone', 'attribution', 'since', 'until'],
);

const EXAMPLE_META = {
  source: 'vendor_a_ads',
  name: 'October, vendor A',
  currency: 'EUR',
  timezone: 'Europe/Berlin',
  attribution: '7-day click, 1-day view',
  since: '2026-10-01',
  until: '2026-10-31',
};

const STEPS: Record<string, number> = { queued: 1, running: 2, completed: 3, failed: 3 };

function progressOf(imp: PerformanceImport): ProgressUpdate {
  const message =
    imp.status === 'queued'
      ? 'import queued'
      : imp.status === 'running'
        ? 'reading and checking the rows'
        : imp.status === 'completed'
          ? `import completed: ${imp.rowsSaved} rows saved`
          : `import failed: ${imp.errorCount} problems, nothing saved`;
  return { progress: STEPS[imp.status] ?? 1, total: 3, message };
}

/** The reason a failed import gives, with its first problems by row and column. */
function failureMessage(imp: PerformanceImport): string {
  const shown = imp.errors.slice(0, 5).map((e) => {
    const where = [
      e.row > 0 ? `row ${e.row}` : 'the CSV',
      e.column ? `column ${e.column}` : '',
      e.line ? `(line ${e.line})` : '',
    ]
      .filter((w) => w !== '')
      .join(' ');
    return `${where}: ${e.message}`;
  });
  const more = imp.errorCount > shown.length ? `; and ${imp.errorCount - shown.length} more` : '';
  return `the import failed and nothing was saved: ${shown.join('; ')}${more}. Correct the rows and import again.`;
}

export const importPerformance: ToolRow<GatewayDeps> = {
  name: 'ads_import_performance',
  title: 'Import performance',
  group: 'Marketing',
  behavior: 'write',
  features: FEATURES,
  description:
    'Imports ad-level performance from another ad platform or a spreadsheet: give rows (1 to 5000) or csv (up to ' +
    '1,500,000 characters, with a header line; column_mapping maps our field names to its headers). Money stays in ' +
    'the given currency as exact decimals (not micros); a metric given as null (or an empty CSV cell) stays unknown, ' +
    'never 0. Every row is checked: one bad row fails the whole import (an error result, code import_failed, naming ' +
    'rows and columns) and nothing is saved. Importing the same content and metadata again returns the first import ' +
    'that has not failed (created false); content whose import failed is imported anew. Waits up to 10 seconds for the outcome and sends progress notifications when the client gives ' +
    'a progressToken; an import still queued or running then is finished later: read it with ' +
    'ads_get_performance_import. Needs the performance_imports feature.',
  input: importInput,
  // The same content again answers the first import and records nothing.
  idempotent: true,
  output: messageSchema(ImportPerformanceResponseSchema),
  example: {
    ...EXAMPLE_META,
    rows: [
      {
        ad_id: 'ad_1001',
        headline: 'Spring sale',
        impressions: 12000,
        clicks: 340,
        spend: 152.4,
        conversions: 12,
      },
      { ad_id: 'ad_1002', impressions: 8000, clicks: 95, spend: 61.2, revenue: 410.5 },
    ],
  },
  route: {
    kind: 'rpc',
    method: ImportService.method.importPerformance,
    // The import runs on the marketing service's bus: the tool waits a bounded time for its outcome.
    poll: {
      method: ImportService.method.getPerformanceImport,
      request: { import_id: 'import_id' },
      field: 'import',
      status: 'status',
      final: ['completed', 'failed'],
      withinMs: IMPORT_WAIT_MS,
      progress: (work) => progressOf(work as PerformanceImport),
    },
    view(response) {
      const result = resultOf(ImportPerformanceResponseSchema, response as ImportPerformanceResponse);
      const imp = (response as ImportPerformanceResponse).import;
      if (imp?.status === 'failed') throw new ToolFailure('import_failed', failureMessage(imp), result);
      return result;
    },
  },
};

export const listPerformanceImports: ToolRow<GatewayDeps> = {
  name: 'ads_list_performance_imports',
  title: 'List performance imports',
  group: 'Marketing',
  behavior: 'read',
  features: FEATURES,
  description:
    'Lists the workspace’s performance imports, newest first, each with its status (queued, running, completed, ' +
    'failed), counts, first errors and totals (no rows). Returns total and next_offset (null on the last page).',
  input: inputFromRequest(ImportService.method.listPerformanceImports.input, {
    offset: { description: 'Imports to skip; 0 when omitted.' },
    limit: { description: 'Page size; 20 when omitted.' },
  }),
  example: { offset: 0, limit: 20 },
  route: { kind: 'rpc', method: ImportService.method.listPerformanceImports },
};

export const getPerformanceImport: ToolRow<GatewayDeps> = {
  name: 'ads_get_performance_import',
  title: 'Get performance import',
  group: 'Marketing',
  behavior: 'read',
  features: FEATURES,
  description:
    'Returns one performance import: status (queued, running, completed or failed), rows read and saved, distinct ' +
    'ads, the first 100 refused rows with row number, column and CSV line, and per metric the exact sum over the ' +
    'rows that reported it and how many did (a metric no row reported has sum null: unknown). Rows are not returned.',
  input: inputFromRequest(ImportService.method.getPerformanceImport.input, {
    import_id: { description: 'The import.' },
  }),
  example: { import_id: EXAMPLE_IMPORT },
  route: { kind: 'rpc', method: ImportService.method.getPerformanceImport },
};

const PLATFORM_ID_HINT = 'an id of letters, digits, underscore, hyphen, dot or colon';
const platformIdText = (description: string) => ({ patternHint: PLATFORM_ID_HINT, description });

/** What an outcome row's fields add to BusinessOutcomeRow's rules. */
const outcomeRow = {
  fields: {
    external_id: {
      nonBlank: true,
      description:
        'The CRM’s id of the outcome, unique within the source. Not an email address or phone number.',
    },
    // The import refuses a row without one; the rules cannot state a date-time.
    occurred_at: {
      required: true,
      format: 'date-time',
      description: 'When it happened, with an offset (RFC 3339).',
    },
    ad_id: platformIdText('The ad the outcome is attributed to.'),
    value: {
      patternHint: 'a decimal string of at least 0 such as "49.90"',
      description:
        'In the import currency, as a decimal string; required except for a qualified_lead. A refund gives the amount refunded.',
    },
    quantity: { description: 'Items ordered or booked.' },
    campaign_id: platformIdText('The campaign of the ad, when the CRM knows it.'),
    ad_group_id: platformIdText('The ad group of the ad, when the CRM knows it.'),
    refund_of: {
      nonBlank: true,
      description:
        'For a refund: the external_id of the order or booking it refunds (of the same source, account and currency).',
    },
  },
} satisfies FieldAdditions;

export const importBusinessOutcomes: ToolRow<GatewayDeps> = {
  name: 'ads_import_business_outcomes',
  title: 'Import business outcomes',
  group: 'Campaign support',
  behavior: 'write',
  features: [],
  description:
    'Imports outcomes from a CRM (qualified leads, bookings, orders, refunds) attributed to ads of an account, in one ' +
    'transaction. The attribution is what you supply, never inferred. An external_id already imported from the same ' +
    'source (or earlier in the rows) with the same content is skipped and counted (skipped_duplicates); with ' +
    'different content the whole import fails, naming the ids, and nothing is saved. A refund whose refund_of names ' +
    'an outcome already imported or in the rows must name an order or a booking (not a refund or a lead) of the same ' +
    'account and currency, and the refunds of one order together give back at most its value; otherwise the whole ' +
    'import fails, naming the ids. Only the listed fields are ' +
    'accepted: no customer names, emails, phone numbers or free-form payloads, and a value that looks like an email ' +
    'address or a phone number is refused, naming the field, also in full-width forms or spelled out ' +
    '(jane (at) example (dot) com, jane[at]example[.]com) and phone numbers such as 555-123-4567 or ' +
    '(555) 123-4567 inside other text; a bare run of digits (an order number) is accepted.',
  input: inputFromRequest(ImportService.method.importBusinessOutcomes.input, {
    account_id: { description: ACCOUNT_ID_TEXT },
    source: {
      patternHint: 'letters, digits, underscores or hyphens',
      description: 'The CRM the outcomes come from (hubspot, crm-eu).',
    },
    name: { nonBlank: true },
    // The rule is the pattern alone (the rule set has no exact length); the tool states the length too.
    currency: string({
      min: 3,
      max: 3,
      pattern: /^[A-Z]{3}$/,
      patternHint: 'three uppercase letters (ISO 4217, such as EUR)',
    }),
    attribution: {
      nonBlank: true,
      multiline: true,
      description: 'How the outcomes were attributed to ads (last click within 7 days).',
    },
    rows: { items: outcomeRow, description: '1 to 5000 outcomes.' },
  }),
  example: {
    account_id: EXAMPLE_ACCOUNT,
    source: 'crm-eu',
    name: 'October orders',
    currency: 'EUR',
    attribution: 'last click within 7 days',
    rows: [
      {
        external_id: 'ord_5001',
        occurred_at: '2026-10-12T14:30:00+02:00',
        kind: 'order',
        ad_id: 'ad_1001',
        value: '49.90',
        quantity: 2,
        campaign_id: 'cmp_1001',
        ad_group_id: 'adg_1001',
      },
      {
        external_id: 'lead_77',
        occurred_at: '2026-10-13T09:00:00Z',
        kind: 'qualified_lead',
        ad_id: 'ad_1002',
      },
      {
        external_id: 'ref_12',
        occurred_at: '2026-10-20T10:00:00+02:00',
        kind: 'refund',
        ad_id: 'ad_1001',
        value: '49.90',
        refund_of: 'ord_5001',
      },
    ],
  },
  route: { kind: 'rpc', method: ImportService.method.importBusinessOutcomes, account: 'account_id' },
};

export const importTools: readonly ToolRow<GatewayDeps>[] = [
  importPerformance,
  listPerformanceImports,
  getPerformanceImport,
  importBusinessOutcomes,
];
