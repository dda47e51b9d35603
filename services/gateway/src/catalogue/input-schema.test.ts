import assert from 'node:assert/strict';
import { test } from 'node:test';
import { ListChangesRequestSchema } from '@adsmcp/proto/changes/v1/changes_pb';
import { ListAccountStandardsRequestSchema } from '@adsmcp/proto/changes/v1/standards_pb';
import { SaveCompetitorSourceRequestSchema } from '@adsmcp/proto/marketing/v1/competitors_pb';
import {
  GetOptimizerRequestSchema,
  ListOptimizersRequestSchema,
} from '@adsmcp/proto/optimizer/v1/optimizer_pb';
import type { DescField, DescMessage } from '@bufbuild/protobuf';
import { inputFromRequest } from './input-schema.ts';
import { hasPresence, toolFieldName } from './output-schema.ts';
import { type JsonSchema, validate } from './schema.ts';
import { allTools } from './tools/index.ts';

/** One way a row's published input differs from the one its request message gives. */
interface Difference {
  field: string;
  keyword: string;
  hand: unknown;
  derived: unknown;
}

const show = (v: unknown) => (v === undefined ? '(none)' : JSON.stringify(v));

/** The message a field's value is, for walking into it (a message or a list of messages). */
function inner(field: DescField | undefined): DescMessage | undefined {
  if (field?.fieldKind === 'message') return field.message;
  if (field?.fieldKind === 'list' && field.listKind === 'message') return field.message;
  return undefined;
}

/**
 * What a row may add to a field without a difference: what the proto cannot say. A description;
 * a visible character (`\S`, nonBlank); a URL or date format the rules do not know, with its
 * pattern. A required argument for a field without presence, and null taken for a field with
 * presence, are checked apart (see differences).
 */
function rowOnly(d: Difference, hand: JsonSchema): boolean {
  if (d.keyword === 'description') return true;
  if (d.derived !== undefined) return false;
  if (d.keyword === 'pattern' && d.hand === '\\S') return true;
  if (d.keyword === 'format' && ['uri', 'date', 'date-time'].includes(String(d.hand))) return true;
  if (
    d.keyword === 'pattern' &&
    hand.format === 'uri' &&
    ['^https://', '^https?://'].includes(String(d.hand))
  )
    return true;
  return false;
}

/**
 * The hand schema of a field with presence that also takes null (input-schema.ts's `nullable`, as
 * the JSON mapping reads null as unset) without it, to compare with the derived one.
 */
function withoutNull(hand: JsonSchema, derived: JsonSchema, field: DescField | undefined): JsonSchema {
  const alternatives = hand.anyOf;
  if (field === undefined || !hasPresence(field) || derived.anyOf !== undefined) return hand;
  if (!Array.isArray(alternatives) || alternatives.length !== 2) return hand;
  if (JSON.stringify(alternatives[1]) !== JSON.stringify({ type: 'null' })) return hand;
  return alternatives[0] as JsonSchema;
}

/** Every difference between `hand` and `derived` at `path`, keyword by keyword, into objects and items. */
function differences(
  hand: JsonSchema,
  derived: JsonSchema,
  path: string,
  desc: DescMessage | undefined,
): Difference[] {
  const out: Difference[] = [];
  const add = (keyword: string, h: unknown, d: unknown) => {
    const diff = { field: path === '' ? '(arguments)' : path, keyword, hand: h, derived: d };
    if (!rowOnly(diff, hand)) out.push(diff);
  };
  const keys = new Set([...Object.keys(hand), ...Object.keys(derived)]);
  for (const k of keys) {
    if (k === 'properties' || k === 'items' || k === 'required') continue;
    if (JSON.stringify(hand[k]) !== JSON.stringify(derived[k])) add(k, hand[k], derived[k]);
  }
  if (hand.items !== undefined && derived.items !== undefined) {
    out.push(...differences(hand.items as JsonSchema, derived.items as JsonSchema, `${path}[]`, desc));
  }
  const hp = (hand.properties ?? {}) as Record<string, JsonSchema>;
  const dp = (derived.properties ?? {}) as Record<string, JsonSchema>;
  if (hand.properties === undefined && derived.properties === undefined) return out;
  const at = (k: string) => (path === '' ? k : `${path}.${k}`);
  const hr = new Set((hand.required ?? []) as string[]);
  const dr = new Set((derived.required ?? []) as string[]);
  const common = Object.keys(hp).filter((k) => Object.hasOwn(dp, k));
  const derivedOrder = Object.keys(dp).filter((k) => Object.hasOwn(hp, k));
  if (common.join() !== derivedOrder.join()) add('(order)', common, derivedOrder);
  for (const k of new Set([...Object.keys(hp), ...Object.keys(dp)])) {
    const f = desc?.fields.find((x) => toolFieldName(x) === k);
    if (!Object.hasOwn(dp, k)) {
      out.push({ field: at(k), keyword: '(argument)', hand: 'present', derived: 'absent' });
      continue;
    }
    if (!Object.hasOwn(hp, k)) {
      out.push({ field: at(k), keyword: '(argument)', hand: 'absent', derived: 'present' });
      continue;
    }
    if (hr.has(k) !== dr.has(k)) {
      // A row may require a field without presence (input-schema.ts says when).
      const allowed = hr.has(k) && f !== undefined && !hasPresence(f);
      if (!allowed) out.push({ field: at(k), keyword: 'required', hand: hr.has(k), derived: dr.has(k) });
    }
    const derivedField = dp[k] as JsonSchema;
    out.push(
      ...differences(withoutNull(hp[k] as JsonSchema, derivedField, f), derivedField, at(k), inner(f)),
    );
  }
  return out;
}

/**
 * Rows whose published input keeps a schema of their own where their request says otherwise,
 * and why; each entry lists the differences (field and keyword) it keeps. A difference not listed
 * here fails the test, and so does a listed one that went away (convert the row).
 */
const KEPT: Record<string, { why: string; differences: string[] }> = {
  ads_plan_money: {
    why: 'PlanMoneyRequest declares no field rules: the changes service plans the amount, currency and purpose in code; the tool states the limits the plan applies',
    differences: [
      'account_id format',
      'amount maxLength',
      'amount pattern',
      'currency pattern',
      'purpose enum',
      'objective enum',
      'wire_format enum',
    ],
  },
  ads_plan_schedule: {
    why: 'PlanScheduleRequest declares no field rules: the changes service reads the account-local times in code; the tool states their shape',
    differences: ['account_id format', 'start_local pattern', 'end_local pattern', 'ambiguity enum'],
  },
  ads_validate_creative: {
    why: 'ValidateCreativeRequest declares no field rules: the creative is checked in code against the platform’s limits, which the tool states',
    differences: [
      'account_id format',
      'creative required',
      'creative.type enum',
      'creative.title minLength',
      'creative.title maxLength',
      'creative.body maxLength',
      'creative.target_url maxLength',
      'creative.file_id minLength',
      'creative.file_id maxLength',
    ],
  },
  ads_plan_workbook: {
    why: 'explicit override: each sheet row is a google.protobuf.Struct in the request; the tool bounds a row to 30 columns and its cells',
    differences: [
      'sheets.campaigns[] maxProperties',
      'sheets.adgroups[] maxProperties',
      'sheets.ads[] maxProperties',
    ],
  },
  ads_prepare_ad_batch: {
    why: 'the batch’s limits (campaign name of 3 or more characters, budget and bid ranges, 1 to 250 unique ISO country codes, non-empty hints) are checked by the changes service’s batch compiler, not by the request’s rules',
    differences: [
      'campaign_name minLength',
      'budget_amount minimum',
      'budget_amount maximum',
      'expected_revision maximum',
      'bid_micros minimum',
      'countries minItems',
      'countries uniqueItems',
      'countries[] pattern',
      'context_hints[] minLength',
      'context_hints[] maxLength',
    ],
  },
  ads_apply_change: {
    why: 'the request states the digest by its pattern alone (64 lowercase hex); the tool also states its length',
    differences: ['digest minLength', 'digest maxLength'],
  },
  ads_get_change: {
    why: 'check_live is the dashboard’s: the tool does not offer re-reading the platform',
    differences: ['check_live (argument)'],
  },
  ads_list_changes: {
    why: 'the tool pages at most 100 changes and does not offer outcome_unknown; the service allows 200 for the dashboard, which lists unsettled outcomes',
    differences: ['limit maximum', 'outcome_unknown (argument)'],
  },
  ads_save_marketing_item: {
    why: 'explicit override of data: a google.protobuf.Struct in the request, whose shape the tool states per kind',
    differences: ['data anyOf', 'data type'],
  },
  ads_create_performance_report: {
    why: 'currency, time_zone, current and previous are retired fields the service refuses: the row omits them',
    differences: ['currency (argument)', 'time_zone (argument)', 'current (argument)', 'previous (argument)'],
  },
  ads_import_performance: {
    why: 'rows, column_mapping and the import’s text limits are checked by the import’s own parser (rows and CSV alike); the request declares only the outer bounds',
    differences: [
      'name minLength',
      'currency minLength',
      'currency maxLength',
      'currency pattern',
      'timezone minLength',
      'attribution minLength',
      'rows minItems',
      'rows[].ad_id minLength',
      'rows[].ad_id maxLength',
      'rows[].name maxLength',
      'rows[].headline maxLength',
      'rows[].body maxLength',
      'rows[].campaign maxLength',
      'rows[].audience maxLength',
      'rows[].hook maxLength',
      'rows[].offer maxLength',
      'rows[].impressions required',
      'rows[].impressions type',
      'rows[].impressions minimum',
      'rows[].impressions maximum',
      'rows[].clicks required',
      'rows[].clicks type',
      'rows[].clicks minimum',
      'rows[].clicks maximum',
      'rows[].spend required',
      'rows[].spend minimum',
      'rows[].conversions minimum',
      'csv maxLength',
      'column_mapping additionalProperties',
      'column_mapping.ad_id (argument)',
      'column_mapping.name (argument)',
      'column_mapping.headline (argument)',
      'column_mapping.body (argument)',
      'column_mapping.campaign (argument)',
      'column_mapping.audience (argument)',
      'column_mapping.hook (argument)',
      'column_mapping.offer (argument)',
      'column_mapping.impressions (argument)',
      'column_mapping.clicks (argument)',
      'column_mapping.spend (argument)',
      'column_mapping.conversions (argument)',
      'column_mapping.revenue (argument)',
    ],
  },
  ads_import_business_outcomes: {
    why: 'explicit override of currency: its rule is the pattern ^[A-Z]{3}$ alone (the rule set has no exact length, and buf lint refuses an equal minimum and maximum); the tool states its length too',
    differences: ['currency minLength', 'currency maxLength'],
  },
  ads_save_campaign_asset: {
    why: 'explicit override of content_base64: bytes, which the request’s rule set cannot bound; the tool bounds its base64 text itself (standard base64 of at most 1 MiB)',
    differences: ['content_base64 minLength', 'content_base64 maxLength', 'content_base64 pattern'],
  },
  ads_save_account_standard: {
    why: 'explicit overrides: the tool takes allowed domains in their ASCII form only (the service also takes a Unicode domain, compared by its A-label), and bounds the template, a google.protobuf.Struct, to 100 properties',
    differences: ['data.allowed_domains[] pattern', 'data.template maxProperties'],
  },
  ads_list_optimization_proposals: {
    why: 'the tool filters by optimizer and status only; account, run and creation-time filters are the dashboard’s: the row omits them',
    differences: [
      'account_id (argument)',
      'run_id (argument)',
      'created_after (argument)',
      'created_before (argument)',
    ],
  },
};

const rpcRows = allTools.flatMap((row) => (row.route.kind === 'rpc' ? [{ row, route: row.route }] : []));

test('every rpc tool’s published input agrees with its request message and rules, but for the differences listed with their reason', () => {
  const unexpected: string[] = [];
  for (const { row, route } of rpcRows) {
    const derived = inputFromRequest(
      route.method.input,
      {},
      route.fixed === undefined ? {} : { fixed: route.fixed },
    );
    const found = differences(row.input.json, derived.json, '', route.method.input);
    const listed = new Set(KEPT[row.name]?.differences ?? []);
    const keys = new Set(found.map((d) => `${d.field} ${d.keyword}`));
    for (const d of found) {
      if (!listed.has(`${d.field} ${d.keyword}`))
        unexpected.push(
          `${row.name}: ${d.field} ${d.keyword}: hand ${show(d.hand)}, derived ${show(d.derived)}`,
        );
    }
    for (const key of listed) {
      if (!keys.has(key)) unexpected.push(`${row.name}: ${key} is listed as kept but no longer differs`);
    }
  }
  assert.equal(unexpected.length, 0, `differences not listed in KEPT:\n${unexpected.join('\n')}`);
});

test('a derived input refuses an argument in the words of a hand-written one, naming the argument and the rule', () => {
  const input = inputFromRequest(ListAccountStandardsRequestSchema);
  const messages = (args: Record<string, unknown>) => validate(input, args).map((i) => i.message);
  assert.deepEqual(messages({ limit: 500 }), [
    '`account_id` is required',
    '`limit` must be an integer from 1 to 100 (got 500)',
  ]);
  assert.deepEqual(messages({ account_id: 'acct-1' }), ['`account_id` must be a UUID (got "acct-1")']);
  assert.deepEqual(messages({ account_id: '3f0c2a8e-5b7d-4c1e-9a6f-2d8b7e4c1a90', offset: 0, page: 2 }), [
    'unknown argument `page`; allowed: account_id, limit, offset',
  ]);
});

test('an argument is required when its rules refuse the zero value leaving it out would send, or when the row says so', () => {
  const required = (schema: { json: JsonSchema }) => schema.json.required ?? [];
  // account_id must be a UUID, name at least 1 character and interval_hours at least 1; url has only
  // a maximum, enabled no rule.
  assert.deepEqual(required(inputFromRequest(SaveCompetitorSourceRequestSchema)), [
    'account_id',
    'name',
    'interval_hours',
  ]);
  assert.deepEqual(
    required(
      inputFromRequest(SaveCompetitorSourceRequestSchema, {
        url: { required: true },
        enabled: { required: true },
      }),
    ),
    ['account_id', 'name', 'url', 'interval_hours', 'enabled'],
  );
  // Rules ignored at the zero value (account_id, limit) and a range that holds 0 (offset) leave it optional.
  assert.deepEqual(required(inputFromRequest(ListChangesRequestSchema)), []);
  assert.deepEqual(
    validate(inputFromRequest(SaveCompetitorSourceRequestSchema), { name: 'Rival', interval_hours: 24 }).map(
      (i) => i.message,
    ),
    ['`account_id` is required'],
  );
});

test('a row may take null for a field with presence, as unset; for a field without presence the gateway does not start', () => {
  const messages = (schema: Parameters<typeof validate>[0], args: Record<string, unknown>) =>
    validate(schema, args).map((i) => i.message);
  const nullableLimit = inputFromRequest(ListOptimizersRequestSchema, { limit: { nullable: true } });
  assert.deepEqual(messages(nullableLimit, { limit: null }), []);
  assert.deepEqual(messages(nullableLimit, { limit: 0 }), [
    '`limit` must be an integer from 1 to 100 (got 0)',
  ]);
  assert.notDeepEqual(messages(inputFromRequest(ListOptimizersRequestSchema), { limit: null }), []);
  assert.throws(
    () => inputFromRequest(GetOptimizerRequestSchema, { optimizer_id: { nullable: true } }),
    /optimizer\.v1\.GetOptimizerRequest\.optimizer_id: only a field with presence may take null/,
  );
});

test('a row may leave out request fields the tool does not offer, but not one the rules require', () => {
  const input = inputFromRequest(ListOptimizersRequestSchema, {}, { omit: ['account_id'] });
  assert.deepEqual(Object.keys(input.json.properties ?? {}), ['limit', 'offset']);
  assert.deepEqual(
    validate(input, { account_id: '3f0c2a8e-5b7d-4c1e-9a6f-2d8b7e4c1a90' }).map((i) => i.message),
    ['unknown argument `account_id`; allowed: limit, offset'],
  );
  assert.throws(
    () => inputFromRequest(GetOptimizerRequestSchema, {}, { omit: ['optimizer_id'] }),
    /optimizer\.v1\.GetOptimizerRequest\.optimizer_id is required: it cannot be omitted/,
  );
  assert.throws(
    () => inputFromRequest(ListOptimizersRequestSchema, {}, { omit: ['page'] }),
    /ListOptimizersRequest has no field page to override or omit/,
  );
});
