/**
 * Campaign building in bulk: rows of campaigns, ad groups and ads (a workbook's three sheets, or an
 * ad batch) compiled into the body of one bulk mutation job (`POST /bulk_mutation_jobs`) that
 * creates every object paused. Money goes through the planning money rules (exact micros, the
 * account currency's minor units, the platform's bounds), ad groups and ads through their own rules
 * and the bounds of the platform bodies the prepare tools publish (`platform-bodies.ts`, against
 * which each compiled ad group and ad is checked too), so a workbook, an ad batch and a single
 * prepare agree. A refused row is reported with its sheet,
 * row number and column, every one at once.
 */
import {
  FailedPreconditionError,
  InvalidArgumentError,
  InvalidArgumentIssuesError,
} from '@adsmcp/runtime/errors';
import {
  adCreative,
  adGroupCreateBody,
  adGroupFields,
  adName,
  contextHint,
  creativeFields,
  lengthBounds,
  MAX_BID_MICROS,
  MAX_CONTEXT_HINTS,
  platformId,
} from '@adsmcp/runtime/platform-bodies';
import { enumOf, type Issue, object, type Schema, validate } from '@adsmcp/runtime/schema';
import { blankRefusal, hiddenCharacter, stackedMarksRefusal, textLength } from '@adsmcp/runtime/text';
import { isWrittenUrl } from '@adsmcp/runtime/written-url';
import { iso31661 } from 'iso-3166';
import { Temporal } from 'temporal-polyfill';
import { checkAdGroup } from './ad-group-rules.ts';
import { checkAd } from './ad-rules.ts';
import { MAX_BUDGET_MICROS, planMoney } from './money.ts';
import { checkRfc3339, resolveLocal } from './schedule.ts';

export const SHEETS = ['campaigns', 'adgroups', 'ads'] as const;
export type SheetName = (typeof SHEETS)[number];
/** The most rows a sheet may have (besides a workbook sheet's header row). */
export const MAX_SHEET_ROWS = 1000;
/** The smallest campaign budget the platform accepts: one unit of the account currency. */
export const MIN_BUDGET_MICROS = 1_000_000n;
/** Objectives a bulk job may create; conversion campaigns need a conversion goal a job cannot set. */
export const BULK_OBJECTIVES = ['clicks', 'impressions'] as const;
const BUDGET_TYPES = ['daily', 'lifetime'] as const;
export const MAX_COUNTRIES = 250;
/**
 * The bounds of what the rows give, taken from the platform bodies the prepare tools publish
 * (`platform-bodies.ts`), so that a workbook's row and a single prepare are held to one number.
 */
const AD_GROUP_NAME = lengthBounds(adGroupFields.name);
const HINT = lengthBounds(contextHint);
const AD_NAME = lengthBounds(adName);
const TITLE = lengthBounds(creativeFields.title);
const AD_BODY = lengthBounds(creativeFields.body);
const TARGET_URL = lengthBounds(creativeFields.target_url);
const COUNTRY_CODES: ReadonlySet<string> = new Set(iso31661.map((c) => c.alpha2));

/** The columns of each sheet; the first ones listed are required. */
export const COLUMNS: Record<SheetName, { required: readonly string[]; optional: readonly string[] }> = {
  campaigns: {
    required: ['name', 'objective', 'budget', 'budget_type'],
    optional: ['launch_date', 'end_date', 'status'],
  },
  adgroups: {
    required: ['campaign', 'name', 'countries'],
    optional: ['bid', 'bid_micros', 'context_hints', 'status'],
  },
  ads: {
    required: ['ad_group', 'name', 'title', 'target_url'],
    optional: ['body', 'image_url', 'status'],
  },
};

/** A row as read: its number as the source counts it (a workbook row, or the item's position). */
export interface SheetRow {
  row: number;
  cells: Record<string, unknown>;
}

export type Sheets = Record<SheetName, SheetRow[]>;

/**
 * How text cells are read: a workbook's (XLSX or JSON rows) with the spaces around them trimmed, as
 * spreadsheet cells are; an ad batch's exactly as its arguments and saved variants give them, so
 * that what is checked, reported and created is the value sent.
 */
export type TextMode = 'trimmed' | 'exact';

export interface RowIssue {
  sheet: SheetName;
  row: number;
  column: string;
  message: string;
}

export interface BulkAccount {
  name: string;
  currency: string;
  timeZone: string;
}

export type OperationType = 'create_campaign' | 'create_ad_group' | 'create_ad';

export interface BulkOperation {
  type: OperationType;
  ref?: string;
  body: Record<string, unknown>;
}

/** Where a bulk mutation job is created: its impression bids are per thousand impressions (CPM). */
export const BULK_JOB_PATH = '/bulk_mutation_jobs';

/** The body of POST /bulk_mutation_jobs. */
export interface BulkJobBody {
  operations: BulkOperation[];
  validate_only: boolean;
  partial_failure: boolean;
}

/** A campaign's launch and end dates: shown, while the job creates the campaign paused. */
export interface PreviewedSchedule {
  campaign: string;
  launchDate: string;
  endDate: string;
  startTime: string;
  endTime: string;
  note: string;
}

export interface PreviewedAdGroup {
  campaign: string;
  name: string;
  countries: string[];
  bidMicros: bigint;
  billingEventType: string;
}

export interface BulkPlan {
  body: BulkJobBody;
  schedule: PreviewedSchedule[];
  adGroups: PreviewedAdGroup[];
  campaignCount: number;
  adGroupCount: number;
  adCount: number;
}

/** Header text as a column name: "Budget Type" is budget_type. */
export function columnName(header: string): string {
  return header
    .trim()
    .toLowerCase()
    .replace(/[\s-]+/g, '_');
}

/**
 * jsonRows turns JSON rows (`sheets`, each an object of column to value) into the rows of `sheet`,
 * numbered from 1 as the array counts them, their keys matched as a workbook header is (case,
 * spaces and hyphens aside). Two keys of one row that are the same column once matched ("Name" and
 * "name") are refused, naming the sheet, the row and both keys, as a header two columns share is:
 * one of the values would otherwise be planned and the other dropped.
 */
export function jsonRows(sheet: SheetName, items: readonly Record<string, unknown>[]): SheetRow[] {
  const twice: string[] = [];
  const rows = items.map((item, i) => {
    const cells: Record<string, unknown> = {};
    const keyOf = new Map<string, string>();
    for (const [key, value] of Object.entries(item)) {
      const column = columnName(key);
      const other = keyOf.get(column);
      if (other !== undefined)
        twice.push(
          `${sheet} row ${i + 1}: the keys ${JSON.stringify(other)} and ${JSON.stringify(key)} are both the ` +
            `column ${JSON.stringify(column)} (columns are matched without regard to case, spaces and hyphens); give it once`,
        );
      keyOf.set(column, key);
      cells[column] = value;
    }
    return { row: i + 1, cells };
  });
  if (twice.length > 0) {
    const more = twice.length > 20 ? `; and ${twice.length - 20} more` : '';
    throw new InvalidArgumentError(`${twice.slice(0, 20).join('; ')}${more}`);
  }
  return rows;
}

/**
 * A cell as text, as every rule reads it: numbers, booleans and dates as they are written (a name
 * 12345 is the text "12345"), text trimmed unless `mode` is exact; undefined when empty.
 */
function cellText(v: unknown, mode: TextMode): string | undefined {
  if (v === undefined || v === null) return undefined;
  if (v instanceof Date) return Number.isNaN(v.getTime()) ? undefined : v.toISOString().slice(0, 10);
  if (typeof v === 'number' || typeof v === 'bigint') return String(v);
  if (typeof v === 'boolean') return String(v);
  if (typeof v !== 'string') return undefined;
  const t = mode === 'exact' ? v : v.trim();
  return t === '' ? undefined : t;
}

/** A value in a message: quoted, its first 40 characters. */
const shownValue = (value: string) => JSON.stringify(value.length > 40 ? `${value.slice(0, 40)}…` : value);

/** Collects the issues of one row; a check that fails records its issue and yields undefined. */
class RowReader {
  constructor(
    private readonly sheet: SheetName,
    private readonly row: SheetRow,
    private readonly issues: RowIssue[],
    private readonly mode: TextMode,
  ) {}

  issue(column: string, message: string): undefined {
    this.issues.push({ sheet: this.sheet, row: this.row.row, column, message });
    return undefined;
  }

  /** Runs `fn`, turning the refusal of a shared rule into this row's issue in `column`. */
  rule<T>(column: string, fn: () => T): T | undefined {
    try {
      return fn();
    } catch (e) {
      if (e instanceof InvalidArgumentError || e instanceof FailedPreconditionError)
        return this.issue(column, e.message);
      throw e;
    }
  }

  /** Whether `check` accepts; its refusal becomes this row's issue in `column`. */
  passes(column: string, check: () => void): boolean {
    return (
      this.rule(column, () => {
        check();
        return true;
      }) === true
    );
  }

  /**
   * Whether the request the row compiled to meets its declared platform body; each issue becomes
   * this row's issue in the column `columnOf` maps its field to. The row's own checks come first
   * and say it in the sheet's words, so this reports only what they leave to the declaration.
   */
  declared(schema: Schema, request: Record<string, unknown>, columnOf: (field: string) => string): boolean {
    const issues: Issue[] = validate(schema, request);
    for (const i of issues) this.issue(columnOf(i.path), i.message);
    return issues.length === 0;
  }

  /** The cell as text; numbers and dates as they are written. Empty cells are absent. */
  text(column: string): string | undefined {
    return cellText(this.row.cells[column], this.mode);
  }

  required(column: string): string | undefined {
    const t = this.text(column);
    if (t !== undefined) return t;
    return this.row.cells[column] === undefined || this.row.cells[column] === null || this.isBlank(column)
      ? this.issue(column, `${column} is required`)
      : this.issue(column, `${column} must be text or a number`);
  }

  private isBlank(column: string): boolean {
    const v = this.row.cells[column];
    return typeof v === 'string' && v.trim() === '';
  }

  /** Lengths count code points, as the gateway's JSON Schemas do. */
  length(column: string, value: string | undefined, min: number, max: number): string | undefined {
    if (value === undefined) return undefined;
    const length = textLength(value);
    if (length < min || length > max) {
      const raw = this.row.cells[column];
      const trimmed = typeof raw === 'string' && raw !== value ? ', not counting the spaces around it' : '';
      return this.issue(column, `${column} must be ${min} to ${max} characters (got ${length}${trimmed})`);
    }
    return value;
  }

  /**
   * Text a person reads in the campaign, ad group or ad: refused with a hidden character (the rule
   * every prepare tool applies), or, unless `mayBeBlank`, with nothing visible.
   */
  shown(column: string, value: string | undefined, mayBeBlank = false): string | undefined {
    if (value === undefined) return undefined;
    const refusal = textRefusal(column, value, mayBeBlank);
    return refusal === undefined ? value : this.issue(column, refusal);
  }

  oneOf<const V extends readonly string[]>(column: string, value: string | undefined, allowed: V) {
    if (value === undefined) return undefined;
    if (!allowed.includes(value))
      return this.issue(column, `${column} must be one of ${allowed.join(', ')} (got "${value}")`);
    return value as V[number];
  }

  /** The optional `status` column: the job creates paused objects only. */
  pausedOnly(): void {
    const status = this.text('status');
    if (status !== undefined && status !== 'paused')
      this.issue('status', `status must be paused (got "${status}"): a bulk job creates paused objects only`);
  }

  httpsUrl(column: string, value: string | undefined): string | undefined {
    if (value === undefined) return undefined;
    if (!isWrittenUrl(value) || textLength(value) > TARGET_URL.max) {
      const spaces = /[\s\\]/.test(value) ? ' with no spaces or backslashes' : '';
      return this.issue(
        column,
        `${column} must be an https URL${spaces}, of at most ${TARGET_URL.max} characters (got ${shownValue(value)})`,
      );
    }
    return this.shown(column, value);
  }

  /** A list of codes (countries): an array, or text separated by commas, semicolons or spaces. */
  list(column: string): string[] | undefined {
    const v = this.row.cells[column];
    if (Array.isArray(v)) return v.map((x) => (typeof x === 'string' ? x.trim() : String(x)));
    const t = this.text(column);
    return t === undefined ? undefined : t.split(/[\s,;]+/).filter((x) => x !== '');
  }

  /**
   * The context hints, carried into the ad group as given: a list item by item, never trimmed or
   * split; text (an XLSX cell is always text) one hint per line, so a hint may hold spaces, commas
   * and semicolons (a hint cannot hold a line break). Each hint is 1 to 1000 characters with a
   * visible one and no hidden ones, at most 2000 hints.
   */
  hints(column: string): string[] | undefined {
    const v = this.row.cells[column];
    let hints: string[];
    if (Array.isArray(v)) hints = v.map((x) => (typeof x === 'string' ? x : String(x)));
    else if (typeof v === 'string') {
      if (this.text(column) === undefined) return undefined;
      hints = v.split(/\r\n|\r|\n/);
    } else {
      const t = this.text(column);
      if (t === undefined) return undefined;
      hints = [t];
    }
    if (hints.length > MAX_CONTEXT_HINTS)
      return this.issue(
        column,
        `${column} must have at most ${MAX_CONTEXT_HINTS} hints (got ${hints.length})`,
      );
    for (const [i, hint] of hints.entries()) {
      const at = `${column}[${i}]`;
      const refusal = textRefusal(at, hint, false);
      if (refusal !== undefined) return this.issue(column, refusal);
      const length = textLength(hint);
      if (length < HINT.min || length > HINT.max)
        return this.issue(column, `${at} must be ${HINT.min} to ${HINT.max} characters (got ${length})`);
    }
    return hints;
  }
}

/**
 * Why `value` cannot be text a person reads, named as `field`: a hidden character (control and
 * format characters change how the text is displayed), marks stacked high enough to draw over the
 * text around it, or nothing visible unless `mayBeBlank`.
 */
function textRefusal(field: string, value: string, mayBeBlank: boolean): string | undefined {
  const hidden = hiddenCharacter(value);
  if (hidden !== undefined)
    return `${field} must not contain the invisible character ${hidden}: control, format and blank characters hide or change what the text shows`;
  return stackedMarksRefusal(field, value) ?? (mayBeBlank ? undefined : blankRefusal(field, value));
}

/** checkCountries refuses what is not a list of distinct ISO 3166-1 alpha-2 codes; the message names `field`. */
export function checkCountries(countries: readonly string[], field: string): string[] {
  if (countries.length < 1 || countries.length > MAX_COUNTRIES)
    throw new InvalidArgumentError(
      `${field} must have 1 to ${MAX_COUNTRIES} countries (got ${countries.length})`,
    );
  const seen = new Set<string>();
  for (const c of countries) {
    if (!/^[A-Z]{2}$/.test(c) || !COUNTRY_CODES.has(c))
      throw new InvalidArgumentError(
        `${field}: "${c}" is not an ISO 3166-1 alpha-2 country code (two uppercase letters, such as US or DE)`,
      );
    if (seen.has(c)) throw new InvalidArgumentError(`${field} lists ${c} twice`);
    seen.add(c);
  }
  return [...seen];
}

/**
 * The local date `date` (YYYY-MM-DD) at midnight in `timeZone`, as an RFC 3339 instant in UTC;
 * refused, naming `field` and `shown`, when RFC 3339 cannot write it.
 */
function midnight(date: Temporal.PlainDate, timeZone: string, field: string, shown: string): string {
  const { zoned } = resolveLocal(date.toPlainDateTime(), timeZone, 'later', field);
  checkRfc3339(zoned, field, shown, false);
  return zoned.toInstant().toString();
}

function parseDate(r: RowReader, column: string): Temporal.PlainDate | undefined {
  const t = r.text(column);
  if (t === undefined) return undefined;
  if (!/^\d{4}-\d{2}-\d{2}$/.test(t))
    return r.issue(column, `${column} must be a date YYYY-MM-DD (got "${t}")`);
  return r.rule(column, () => {
    try {
      return Temporal.PlainDate.from(t, { overflow: 'reject' });
    } catch {
      throw new InvalidArgumentError(`${column} ${t} is not a real date`);
    }
  });
}

/** The first field of a request's field path: `creative.title` is creative, `context_hints[2]` context_hints. */
const topField = (path: string) => path.split(/[.[]/, 1)[0] ?? path;

/** The adgroups column an ad group request's field comes from. */
function groupColumn(path: string): string {
  const field = topField(path);
  if (field === 'campaign_id') return 'campaign';
  if (field === 'bidding_config') return 'bid';
  return field === 'context_hints' || field === 'status' ? field : 'name';
}

/**
 * An ad a bulk job creates: the name and creative an ad update declares, in the ad group the job
 * creates (named by its reference), paused.
 */
const adInBulkJob = object(
  { ad_group_id: platformId(), name: adName, status: enumOf(['paused']), creative: adCreative },
  ['ad_group_id', 'name', 'status', 'creative'],
);

/** The ads column an ad request's field comes from. */
function adColumn(path: string): string {
  const field = path.startsWith('creative.')
    ? path.slice('creative.'.length).split(/[.[]/, 1)[0]
    : topField(path);
  return field === 'title' || field === 'body' || field === 'target_url' ? field : 'name';
}

interface CampaignOut {
  name: string;
  objective: (typeof BULK_OBJECTIVES)[number];
  ref: string;
}

/** A campaign row's budget in micros of the account's currency, at least the smallest budget. */
function campaignBudget(r: RowReader, account: BulkAccount): bigint | undefined {
  const budget = r.required('budget');
  if (budget === undefined) return undefined;
  return r.rule('budget', () => {
    const plan = planMoney({
      amount: budget,
      currency: account.currency,
      purpose: 'budget',
      objective: '',
      wireFormat: '',
      accountName: account.name,
      accountCurrency: account.currency,
    });
    if (plan.amountMicros < MIN_BUDGET_MICROS)
      throw new InvalidArgumentError(
        `budget ${budget} ${account.currency} is below the smallest budget, 1 ${account.currency}`,
      );
    return plan.amountMicros;
  });
}

/**
 * A campaign row's run: its launch and end dates, and the instants they start and end at in the
 * account's time zone (a lifetime budget needs an end date, which is not before the launch).
 */
function campaignRun(r: RowReader, account: BulkAccount, budgetType: string | undefined) {
  const launch = parseDate(r, 'launch_date');
  const end = parseDate(r, 'end_date');
  if (budgetType === 'lifetime' && end === undefined && r.text('end_date') === undefined)
    r.issue('end_date', 'end_date is required with a lifetime budget: the budget is spread over the run');
  if (launch !== undefined && end !== undefined && Temporal.PlainDate.compare(end, launch) < 0)
    r.issue('end_date', `end_date ${end} must not be before launch_date ${launch}`);
  const startTime =
    launch === undefined
      ? undefined
      : r.rule('launch_date', () => midnight(launch, account.timeZone, 'launch_date', launch.toString()));
  // The campaign runs through its end date: it ends at the next local midnight.
  const endTime =
    end === undefined
      ? undefined
      : r.rule('end_date', () =>
          midnight(
            end.add({ days: 1 }),
            account.timeZone,
            'end_date',
            `${end} (ending at the midnight after it)`,
          ),
        );
  return { launch, end, startTime, endTime };
}

function compileCampaign(
  r: RowReader,
  account: BulkAccount,
  index: number,
  out: BulkPlan,
): CampaignOut | undefined {
  const name = r.shown('name', r.length('name', r.required('name'), 3, 200));
  const rawObjective = r.required('objective');
  const objective =
    rawObjective === 'conversions'
      ? r.issue(
          'objective',
          'conversion campaigns are refused: a bulk job cannot set the conversion goal they need; use clicks or impressions',
        )
      : r.oneOf('objective', rawObjective, BULK_OBJECTIVES);
  const budgetType = r.oneOf('budget_type', r.required('budget_type'), BUDGET_TYPES);
  const micros = campaignBudget(r, account);
  r.pausedOnly();
  const { launch, end, startTime, endTime } = campaignRun(r, account, budgetType);
  if (name === undefined || objective === undefined || budgetType === undefined || micros === undefined)
    return undefined;
  const ref = `c${index + 1}`;
  out.body.operations.push({
    type: 'create_campaign',
    ref,
    body: {
      name,
      objective,
      budget_micros: Number(micros),
      budget_type: budgetType,
      status: 'paused',
      ...(startTime === undefined ? {} : { start_time: startTime }),
      ...(endTime === undefined ? {} : { end_time: endTime }),
    },
  });
  if (launch !== undefined || end !== undefined) {
    out.schedule.push({
      campaign: name,
      launchDate: launch?.toString() ?? '',
      endDate: end?.toString() ?? '',
      startTime: startTime ?? '',
      endTime: endTime ?? '',
      note:
        'previewed only: the job creates the campaign paused, so nothing launches on the launch date until a ' +
        'person activates it',
    });
  }
  return { name, objective, ref };
}

/**
 * The bid of an ad group row: `bid` in the account currency, or `bid_micros` as they are. Without
 * the campaign's `objective` (its row was refused), `bid_micros` is still checked, `bid` is not.
 */
function compileBid(r: RowReader, account: BulkAccount, objective: string | undefined): bigint | undefined {
  const bid = r.text('bid');
  const bidMicros = r.text('bid_micros');
  if ((bid === undefined) === (bidMicros === undefined))
    return r.issue('bid', 'give exactly one of bid (in the account currency) and bid_micros');
  if (bidMicros !== undefined) {
    if (!/^\d{1,16}$/.test(bidMicros))
      return r.issue('bid_micros', 'bid_micros must be a whole number of micros');
    const micros = BigInt(bidMicros);
    if (micros < 1n || micros > BigInt(MAX_BID_MICROS))
      return r.issue(
        'bid_micros',
        `bid_micros must be from 1 to ${MAX_BID_MICROS}, the largest bid an ad group accepts (got ${micros})`,
      );
    return micros;
  }
  if (objective === undefined) return undefined;
  // A CPM bid is sent per thousand impressions in a bulk job (the bulk wire format).
  const purpose = objective === 'impressions' ? 'cpm' : 'cpc';
  return r.rule(
    'bid',
    () =>
      planMoney({
        amount: bid as string,
        currency: account.currency,
        purpose,
        objective,
        wireFormat: 'bulk',
        accountName: account.name,
        accountCurrency: account.currency,
      }).wireMicros,
  );
}

function compileAdGroup(
  r: RowReader,
  account: BulkAccount,
  campaigns: ReadonlyMap<string, CampaignOut>,
  index: number,
  out: BulkPlan,
): { name: string; ref: string } | undefined {
  const campaignName = r.required('campaign');
  const campaign = campaignName === undefined ? undefined : campaigns.get(campaignName);
  if (campaignName !== undefined && campaign === undefined)
    r.issue('campaign', `campaign "${campaignName}" is not the name of a valid row of the campaigns sheet`);
  const name = r.shown('name', r.length('name', r.required('name'), AD_GROUP_NAME.min, AD_GROUP_NAME.max));
  const countryList = r.list('countries');
  const countries =
    countryList === undefined
      ? r.issue('countries', 'countries is required')
      : r.rule('countries', () => checkCountries(countryList, 'countries'));
  const hints = r.hints('context_hints');
  r.pausedOnly();
  const bid = compileBid(r, account, campaign?.objective);
  if (campaign === undefined || name === undefined || countries === undefined || bid === undefined)
    return undefined;
  const billing = campaign.objective === 'clicks' ? 'click' : 'impression';
  const body: Record<string, unknown> = {
    campaign_id: `ref:${campaign.ref}`,
    name,
    status: 'paused',
    bidding_config: { billing_event_type: billing, strategy: 'fixed_bid', max_bid_micros: Number(bid) },
    ...(hints === undefined || hints.length === 0 ? {} : { context_hints: hints }),
  };
  if (!r.declared(adGroupCreateBody, body, groupColumn)) return undefined;
  if (!r.passes('bid', () => checkAdGroup(body, body))) return undefined;
  const ref = `g${index + 1}`;
  out.body.operations.push({ type: 'create_ad_group', ref, body });
  out.adGroups.push({ campaign: campaign.name, name, countries, bidMicros: bid, billingEventType: billing });
  return { name, ref };
}

function compileAd(r: RowReader, adGroups: ReadonlyMap<string, { ref: string }>, out: BulkPlan): void {
  const groupName = r.required('ad_group');
  const group = groupName === undefined ? undefined : adGroups.get(groupName);
  if (groupName !== undefined && group === undefined)
    r.issue('ad_group', `ad_group "${groupName}" is not the name of a valid row of the adgroups sheet`);
  const name = r.shown('name', r.length('name', r.required('name'), AD_NAME.min, AD_NAME.max));
  const title = r.shown('title', r.length('title', r.required('title'), TITLE.min, TITLE.max));
  const text = r.shown('body', r.length('body', r.text('body') ?? '', AD_BODY.min, AD_BODY.max), true);
  const targetUrl = r.httpsUrl('target_url', r.required('target_url'));
  r.httpsUrl('image_url', r.text('image_url'));
  r.pausedOnly();
  if (
    group === undefined ||
    name === undefined ||
    title === undefined ||
    text === undefined ||
    targetUrl === undefined
  )
    return;
  const body = {
    ad_group_id: `ref:${group.ref}`,
    name,
    status: 'paused',
    creative: { type: 'chat_card', title, body: text, target_url: targetUrl },
  };
  if (!r.declared(adInBulkJob, body, adColumn)) return;
  if (!r.passes('title', () => checkAd(body, body))) return;
  out.body.operations.push({ type: 'create_ad', body });
}

function unknownColumns(sheet: SheetName, rows: readonly SheetRow[], issues: RowIssue[]): void {
  const known = new Set([...COLUMNS[sheet].required, ...COLUMNS[sheet].optional]);
  for (const row of rows) {
    for (const column of Object.keys(row.cells)) {
      if (!known.has(column))
        issues.push({
          sheet,
          row: row.row,
          column,
          message: `unknown column "${column}"; the columns of ${sheet} are ${[...known].join(', ')}`,
        });
    }
  }
}

/**
 * The rows of `sheet` whose name another row has (as text: a name 12345 is "12345"), each refused
 * after the first: rows refer to campaigns and ad groups by name.
 */
function duplicates(
  sheet: SheetName,
  rows: readonly SheetRow[],
  issues: RowIssue[],
  mode: TextMode,
): Set<number> {
  const seen = new Map<string, number>();
  const dup = new Set<number>();
  for (const row of rows) {
    const name = cellText(row.cells.name, mode);
    if (name === undefined) continue;
    const first = seen.get(name);
    if (first !== undefined) {
      issues.push({
        sheet,
        row: row.row,
        column: 'name',
        message: `name "${name}" is used by row ${first} too`,
      });
      dup.add(row.row);
    } else seen.set(name, row.row);
  }
  return dup;
}

/**
 * The ad group rows named like an earlier ad group of their campaign but for case ("plants" after
 * "Plants"), each refused: the platform refuses an ad group whose name another one of the campaign
 * has, compared without regard to case (409 duplicate_name). Rows with the same name exactly are
 * refused by `duplicates` already.
 */
function caseDuplicates(rows: readonly SheetRow[], issues: RowIssue[], mode: TextMode): Set<number> {
  const seen = new Map<string, { name: string; row: number }>();
  const dup = new Set<number>();
  for (const row of rows) {
    const name = cellText(row.cells.name, mode);
    const campaign = cellText(row.cells.campaign, mode);
    if (name === undefined || campaign === undefined) continue;
    const key = JSON.stringify([campaign, name.toLowerCase()]);
    const first = seen.get(key);
    if (first === undefined) seen.set(key, { name, row: row.row });
    else if (first.name !== name) {
      issues.push({
        sheet: 'adgroups',
        row: row.row,
        column: 'name',
        message:
          `name "${name}" differs only in case from "${first.name}" (row ${first.row}), another ad group of the ` +
          `campaign "${campaign}": the platform refuses ad group names that differ only in case within a campaign`,
      });
      dup.add(row.row);
    }
  }
  return dup;
}

/**
 * compileBulkJob compiles the rows into a bulk job body that creates every object paused, or
 * returns the issues of every refused row. `flags` are carried into the body as they are; `text`
 * says how text cells are read (a workbook's trimmed, an ad batch's exactly).
 */
export function compileBulkJob(
  sheets: Sheets,
  account: BulkAccount,
  flags: { validateOnly: boolean; partialFailure: boolean },
  text: TextMode = 'trimmed',
): { plan: BulkPlan; issues: RowIssue[] } {
  const issues: RowIssue[] = [];
  const plan: BulkPlan = {
    body: { operations: [], validate_only: flags.validateOnly, partial_failure: flags.partialFailure },
    schedule: [],
    adGroups: [],
    campaignCount: 0,
    adGroupCount: 0,
    adCount: 0,
  };
  for (const sheet of SHEETS) {
    if (sheets[sheet].length > MAX_SHEET_ROWS)
      throw new InvalidArgumentError(
        `the ${sheet} sheet has ${sheets[sheet].length} rows; at most ${MAX_SHEET_ROWS}`,
      );
    unknownColumns(sheet, sheets[sheet], issues);
  }
  if (sheets.campaigns.length === 0)
    throw new InvalidArgumentError('the campaigns sheet has no rows: a bulk job needs at least one campaign');
  const campaigns = new Map<string, CampaignOut>();
  const dupCampaigns = duplicates('campaigns', sheets.campaigns, issues, text);
  sheets.campaigns.forEach((row, i) => {
    const c = compileCampaign(new RowReader('campaigns', row, issues, text), account, i, plan);
    if (c !== undefined && !dupCampaigns.has(row.row)) campaigns.set(c.name, c);
  });
  const adGroups = new Map<string, { ref: string }>();
  const dupGroups = new Set([
    ...duplicates('adgroups', sheets.adgroups, issues, text),
    ...caseDuplicates(sheets.adgroups, issues, text),
  ]);
  sheets.adgroups.forEach((row, i) => {
    const g = compileAdGroup(new RowReader('adgroups', row, issues, text), account, campaigns, i, plan);
    if (g !== undefined && !dupGroups.has(row.row)) adGroups.set(g.name, g);
  });
  for (const row of sheets.ads) compileAd(new RowReader('ads', row, issues, text), adGroups, plan);
  const count = (t: OperationType) => plan.body.operations.filter((o) => o.type === t).length;
  plan.campaignCount = count('create_campaign');
  plan.adGroupCount = count('create_ad_group');
  plan.adCount = count('create_ad');
  return { plan, issues };
}

/** Issues as one message: each with its sheet, row and column; the first 50, then how many more. */
export function describeIssues(issues: readonly RowIssue[]): string {
  const shown = issues
    .slice(0, 50)
    .map((i) => `${i.sheet} row ${i.row}, column ${i.column}: ${i.message}`)
    .join('; ');
  const more = issues.length > 50 ? `; and ${issues.length - 50} more` : '';
  return `${issues.length} problem${issues.length === 1 ? '' : 's'} in the rows: ${shown}${more}`;
}

/** A saved batch's variant, as the marketing item holds it. */
export interface BatchVariant {
  title: string;
  body: string;
  targetUrl: string;
  sourceImageUrl: string;
  /**
   * The campaign asset saved from sourceImageUrl, which the ad's creative names (pinned with the
   * change, uploaded on apply); empty or absent when it is not saved yet, and the ad has no image.
   */
  assetId?: string;
}

export interface AdBatchInput {
  campaignName: string;
  budgetAmount: number;
  budgetType: string;
  objective: string;
  bidMicros: bigint;
  countries: readonly string[];
  contextHints: readonly string[];
  variants: readonly BatchVariant[];
}

/**
 * The columns an ad batch fills in itself: the links between its rows and the names made from
 * campaign_name. An issue there follows from one already reported (a refused campaign row leaves
 * its ad group's `campaign` unknown), and names nothing the caller sent.
 */
const BATCH_DERIVED: Record<SheetName, readonly string[]> = {
  campaigns: [],
  adgroups: ['campaign', 'name'],
  ads: ['ad_group', 'name'],
};

/** How the rows of an ad batch name its arguments, for its issues. */
function batchField(i: RowIssue): string {
  if (i.sheet === 'ads')
    return `variants[${i.row - 1}].${i.column === 'image_url' ? 'source_image_url' : i.column}`;
  const fields: Record<string, string> = {
    name: 'campaign_name',
    budget: 'budget_amount',
    bid_micros: 'bid_micros',
    bid: 'bid_micros',
  };
  return fields[i.column] ?? i.column;
}

/** An issue of an ad batch, naming the argument rather than the sheet's column. */
function batchMessage(i: RowIssue): string {
  const field = batchField(i);
  return i.message.startsWith(i.column)
    ? `${field}${i.message.slice(i.column.length)}`
    : `${field}: ${i.message}`;
}

/**
 * compileAdBatch compiles a saved batch into one paused campaign, one ad group and an ad per
 * variant, by the same rows a workbook has; refusals name the tool's arguments.
 */
export function compileAdBatch(input: AdBatchInput, account: BulkAccount): BulkPlan {
  if (input.budgetType === 'lifetime')
    throw new InvalidArgumentError(
      'budget_type lifetime needs an end date, which an ad batch does not take: use daily, or plan the ' +
        'campaign with an end_date in ads_plan_workbook',
    );
  // The number as its shortest decimal text: 19.99 is "19.99", then exact decimal arithmetic.
  const amount = String(input.budgetAmount);
  const sheets: Sheets = {
    campaigns: [
      {
        row: 1,
        cells: {
          name: input.campaignName,
          objective: input.objective,
          budget: /e/i.test(amount) ? input.budgetAmount.toFixed(6) : amount,
          budget_type: input.budgetType,
        },
      },
    ],
    adgroups: [
      {
        row: 1,
        cells: {
          campaign: input.campaignName,
          name: `${input.campaignName} — ad group`,
          countries: [...input.countries],
          bid_micros: input.bidMicros.toString(),
          ...(input.contextHints.length > 0 ? { context_hints: [...input.contextHints] } : {}),
        },
      },
    ],
    ads: input.variants.map((v, i) => ({
      row: i + 1,
      cells: {
        ad_group: `${input.campaignName} — ad group`,
        name: `${input.campaignName} — variant ${i + 1}`,
        title: v.title,
        body: v.body,
        target_url: v.targetUrl,
        image_url: v.sourceImageUrl,
      },
    })),
  };
  const { plan, issues } = compileBulkJob(
    sheets,
    account,
    { validateOnly: false, partialFailure: false },
    'exact',
  );
  if (issues.length > 0) {
    const own = issues.filter((i) => !BATCH_DERIVED[i.sheet].includes(i.column));
    // A derived issue alone (none expected) is still reported, never passed over.
    const shown = own.length > 0 ? own : issues;
    throw new InvalidArgumentIssuesError(
      shown.map(batchMessage).join('; '),
      shown.map((i) => ({ path: batchField(i), message: batchMessage(i) })),
    );
  }
  // One ad per variant, in order: each shows its variant's saved source image.
  const ads = plan.body.operations.filter((o) => o.type === 'create_ad');
  input.variants.forEach((v, i) => {
    const creative = ads[i]?.body.creative as Record<string, unknown> | undefined;
    if (v.assetId !== undefined && v.assetId !== '' && creative !== undefined) creative.asset_id = v.assetId;
  });
  return plan;
}

// ---- The bulk job body a change records, checked again when it is prepared. ----

type Fields = Record<string, unknown>;
const isObject = (v: unknown): v is Fields => typeof v === 'object' && v !== null && !Array.isArray(v);

/** Refuses `body` when it breaks its declared platform body, naming each field at `path`. */
function checkDeclared(schema: Schema, body: Fields, path: string): void {
  const issues: Issue[] = [];
  schema.check(body, path, issues);
  if (issues.length > 0) throw new InvalidArgumentError(issues.map((x) => x.message).join('; '));
}

function checkOperation(op: unknown, i: number): void {
  const at = `\`body.operations[${i}]\``;
  if (!isObject(op) || !isObject(op.body))
    throw new InvalidArgumentError(`${at} must be an object with a body`);
  const body = op.body;
  if (body.status !== 'paused')
    throw new InvalidArgumentError(
      `${at}.body.status must be "paused": a bulk job creates paused objects only`,
    );
  switch (op.type) {
    case 'create_campaign': {
      if (!(BULK_OBJECTIVES as readonly unknown[]).includes(body.objective))
        throw new InvalidArgumentError(
          `${at}.body.objective must be clicks or impressions: conversion campaigns are refused`,
        );
      const micros = body.budget_micros;
      if (
        typeof micros !== 'number' ||
        !Number.isSafeInteger(micros) ||
        BigInt(micros) < MIN_BUDGET_MICROS ||
        BigInt(micros) > MAX_BUDGET_MICROS
      )
        throw new InvalidArgumentError(
          `${at}.body.budget_micros must be a whole number from ${MIN_BUDGET_MICROS} to ${MAX_BUDGET_MICROS}`,
        );
      return;
    }
    case 'create_ad_group':
      checkDeclared(adGroupCreateBody, body, `body.operations[${i}].body`);
      checkAdGroup(body, body);
      return;
    case 'create_ad':
      checkDeclared(adInBulkJob, body, `body.operations[${i}].body`);
      checkAd(body, body);
      return;
    default:
      throw new InvalidArgumentError(`${at}.type must be create_campaign, create_ad_group or create_ad`);
  }
}

/** checkBulkJob refuses a bulk job body that would create anything not paused, or break the object rules. */
export function checkBulkJob(job: Fields): void {
  const ops = job.operations;
  if (!Array.isArray(ops) || ops.length === 0)
    throw new InvalidArgumentError('`body.operations` must list at least one operation');
  ops.forEach(checkOperation);
}

const quoted = (v: unknown) => JSON.stringify(String(v ?? ''));

/** A person's reading of a bulk job: what it creates, all paused, with budgets and bids in micros. */
export function summarizeBulkJob(job: Fields, accountName: string): string {
  const ops = (Array.isArray(job.operations) ? job.operations : []).filter(isObject);
  const parts: string[] = [];
  const of = (type: string) =>
    ops.filter((o) => o.type === type).map((o) => (isObject(o.body) ? o.body : {}));
  for (const c of of('create_campaign').slice(0, 20)) {
    const schedule = [
      c.start_time ? `from ${String(c.start_time)}` : '',
      c.end_time ? `to ${String(c.end_time)}` : '',
    ]
      .filter((s) => s !== '')
      .join(' ');
    parts.push(
      `campaign ${quoted(c.name)} (${String(c.objective)}, ${String(c.budget_type)} budget ${String(c.budget_micros)} micros${schedule ? `, ${schedule}` : ''})`,
    );
  }
  for (const g of of('create_ad_group').slice(0, 20)) {
    const bidding = isObject(g.bidding_config) ? g.bidding_config : {};
    // The bulk wire format's impression bid is a CPM: per thousand impressions, as planned.
    const per =
      bidding.billing_event_type === 'impression'
        ? 'thousand impressions (CPM)'
        : String(bidding.billing_event_type);
    parts.push(`ad group ${quoted(g.name)} (fixed bid ${String(bidding.max_bid_micros)} micros per ${per})`);
  }
  const ads = of('create_ad');
  if (ads.length > 0) {
    const titles = ads
      .slice(0, 20)
      .map((a) => quoted(isObject(a.creative) ? a.creative.title : ''))
      .join(', ');
    const images = ads.filter(
      (a) => isObject(a.creative) && ('asset_id' in a.creative || 'file_id' in a.creative),
    ).length;
    const shown =
      images === 0 ? '' : `, ${images === ads.length ? 'each' : `${images} of them`} with an image`;
    parts.push(
      `${ads.length} ad${ads.length === 1 ? '' : 's'} titled ${titles}${ads.length > 20 ? ', …' : ''}${shown}`,
    );
  }
  const flags = [
    job.validate_only === true ? 'validate only' : '',
    job.partial_failure === true ? 'partial failure allowed' : 'all or nothing',
  ]
    .filter((s) => s !== '')
    .join(', ');
  return `Create with one bulk mutation job on ${accountName}, every object paused (${flags}): ${parts.join('; ')}`;
}
