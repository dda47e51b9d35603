/**
 * Business outcomes from a CRM: the request's rules (no personal data: only the listed fields,
 * and no value that looks like an email address or a phone number), each outcome's fingerprint
 * (the SHA-256 of its normalised content), and the duplicates within one request.
 */
import { createHash } from 'node:crypto';
import { dateTimeProblem, isDateTime, shapedAsDateTime } from '@adsmcp/runtime/date-time';
import { InvalidArgumentError } from '@adsmcp/runtime/errors';
import { isUuid } from '@adsmcp/runtime/ids';
import { firstCodePoints } from './code-points.ts';
import { checkCurrency, checkLength } from './import-rules.ts';
import { type PersonalDataField, personalDataIn } from './personal-data.ts';

export const OUTCOME_KINDS = ['qualified_lead', 'booking', 'order', 'refund'] as const;
export type OutcomeKind = (typeof OUTCOME_KINDS)[number];
export const MAX_OUTCOME_ROWS = 5000;
const SOURCE = /^[A-Za-z0-9_-]{1,255}$/;
const DECIMAL = /^\d{1,20}(\.\d{1,10})?$/;
/** Issues listed in one refusal; the rest are counted. */
const MAX_LISTED = 10;

export interface OutcomeRowInput {
  external_id: string;
  occurred_at: string;
  kind: string;
  ad_id: string;
  value?: string | undefined;
  quantity?: number | undefined;
  campaign_id?: string | undefined;
  ad_group_id?: string | undefined;
  refund_of?: string | undefined;
}

/**
 * An outcome as stored: value as canonical decimal text, the instant in UTC to the full precision
 * given (occurredAt), and occurred_at as written (occurredAtText).
 */
export interface Outcome {
  externalId: string;
  occurredAt: string;
  occurredAtText: string;
  kind: OutcomeKind;
  adId: string;
  value: string | null;
  quantity: number | null;
  campaignId: string | null;
  adGroupId: string | null;
  refundOf: string | null;
  fingerprint: string;
  /**
   * The fingerprint as it was computed before instants kept more than milliseconds: outcomes
   * saved then (without occurred_at_text) are compared with it. The same as fingerprint unless
   * occurred_at has digits beyond the millisecond.
   */
  legacyFingerprint: string;
}

export interface OutcomeImportRequest {
  accountId: string;
  source: string;
  name: string;
  currency: string;
  attribution: string;
  received: number;
  /** The first row of each external_id (later exact repeats are dropped and counted). */
  outcomes: Outcome[];
  skippedInRequest: number;
}

/** The decimal with no leading zeros (but one before the point) and no trailing fraction zeros. */
export function canonicalDecimal(text: string): string {
  const [int = '0', frac = ''] = text.split('.');
  const i = int.replace(/^0+(?=\d)/, '');
  const f = frac.replace(/0+$/, '');
  return f === '' ? i : `${i}.${f}`;
}

/** Refuses a text value that looks like personal data, naming the field. */
function personal(field: string, value: string, issues: string[], kind: PersonalDataField = 'text'): void {
  const looks = personalDataIn(value, kind);
  if (looks !== undefined)
    issues.push(
      `${field} looks like ${looks}; customer contact details are not accepted in any form (full-width or spelled out too), send an id instead`,
    );
}

function idField(field: string, value: string | undefined, required: boolean, issues: string[]): void {
  if (value === undefined) {
    if (required) issues.push(`${field} is required`);
    return;
  }
  const length = [...value].length;
  if (length < 1 || length > 255 || value.trim() === '') {
    issues.push(`${field} must be 1 to 255 characters with a visible one (got ${length})`);
    return;
  }
  if (value.includes('\u0000')) issues.push(`${field} must not contain the NUL character (U+0000)`);
  personal(field, value, issues, 'id');
}

function checkRow(r: OutcomeRowInput, at: string, issues: string[]): void {
  idField(`${at}.external_id`, r.external_id, true, issues);
  idField(`${at}.ad_id`, r.ad_id, true, issues);
  idField(`${at}.campaign_id`, r.campaign_id, false, issues);
  idField(`${at}.ad_group_id`, r.ad_group_id, false, issues);
  idField(`${at}.refund_of`, r.refund_of, false, issues);
  if (!isDateTime(r.occurred_at))
    issues.push(
      `${at}.occurred_at must be a date-time with an offset (RFC 3339, such as 2026-11-20T14:30:00+01:00)${shapedAsDateTime(r.occurred_at) ? `: ${dateTimeProblem(r.occurred_at)}` : ''}`,
    );
  if (!(OUTCOME_KINDS as readonly string[]).includes(r.kind))
    issues.push(
      `${at}.kind must be one of ${OUTCOME_KINDS.join(', ')} (got ${JSON.stringify(firstCodePoints(r.kind, 40))})`,
    );
  if (r.value === undefined) {
    if (r.kind !== 'qualified_lead')
      issues.push(`${at}.value is required when kind is ${r.kind} (a decimal string such as "49.90")`);
  } else if (!DECIMAL.test(r.value)) {
    issues.push(
      `${at}.value must be a decimal string of at least 0 such as "49.90" (got ${JSON.stringify(firstCodePoints(r.value, 40))})`,
    );
  }
  if (r.quantity !== undefined && (!Number.isInteger(r.quantity) || r.quantity < 1 || r.quantity > 1_000_000))
    issues.push(`${at}.quantity must be an integer from 1 to 1000000 (got ${r.quantity})`);
  if (r.refund_of !== undefined && r.kind !== 'refund') issues.push(`${at}.refund_of is only for a refund`);
  else if (r.refund_of !== undefined && r.refund_of === r.external_id)
    issues.push(
      `${at}.refund_of names the refund itself (${JSON.stringify(firstCodePoints(r.refund_of, 40))}); give the external_id of the order it refunds`,
    );
}

function refuse(issues: string[]): void {
  if (issues.length === 0) return;
  const more = issues.length > MAX_LISTED ? `; and ${issues.length - MAX_LISTED} more` : '';
  throw new InvalidArgumentError(`${issues.slice(0, MAX_LISTED).join('; ')}${more}`);
}

const PARTS = /^(\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2})(?:\.(\d{1,9}))?(Z|[+-]\d{2}:\d{2})$/;

/**
 * exactInstant is a checked RFC 3339 date-time as its instant in UTC, with every digit of its
 * fraction: `2026-10-12T12:30:00.000Z` for `14:30+02:00`, and `…00.000100Z` for `…00.0001Z`.
 * Up to milliseconds it is what Date#toISOString writes; digits beyond are kept (JavaScript's
 * Date would drop them, and two instants apart by less than a millisecond would look equal).
 */
export function exactInstant(text: string): string {
  const m = PARTS.exec(text);
  if (m === null) throw new Error(`not a checked date-time: ${text}`);
  const [, seconds = '', fraction = '', offset = ''] = m;
  const digits = fraction.padEnd(9, '0');
  const iso = new Date(Date.parse(`${seconds}${offset}`) + Number(digits.slice(0, 3))).toISOString();
  const beyond = digits.slice(3).replace(/0+$/, '');
  return beyond === '' ? iso : `${iso.slice(0, -1)}${beyond}Z`;
}

const fingerprintOf = (content: unknown[]) =>
  createHash('sha256').update(JSON.stringify(content)).digest('hex');

function outcomeOf(r: OutcomeRowInput, accountId: string, currency: string): Outcome {
  const o = {
    externalId: r.external_id,
    occurredAt: exactInstant(r.occurred_at),
    occurredAtText: r.occurred_at,
    kind: r.kind as OutcomeKind,
    adId: r.ad_id,
    value: r.value === undefined ? null : canonicalDecimal(r.value),
    quantity: r.quantity ?? null,
    campaignId: r.campaign_id ?? null,
    adGroupId: r.ad_group_id ?? null,
    refundOf: r.refund_of ?? null,
  };
  const content = (instant: string) => [
    accountId,
    currency,
    o.kind,
    instant,
    o.adId,
    o.value,
    o.quantity,
    o.campaignId,
    o.adGroupId,
    o.refundOf,
  ];
  const fingerprint = fingerprintOf(content(o.occurredAt));
  // Before: the instant cut to milliseconds by JavaScript's Date.
  const cut = new Date(Date.parse(r.occurred_at)).toISOString();
  const legacyFingerprint = cut === o.occurredAt ? fingerprint : fingerprintOf(content(cut));
  return { ...o, fingerprint, legacyFingerprint };
}

/**
 * validateOutcomeImport checks the request and folds its exact repeats; a repeated external_id
 * with other content refuses the whole request, naming the ids.
 */
export function validateOutcomeImport(req: {
  accountId: string;
  source: string;
  name: string;
  currency: string;
  attribution: string;
  rows: OutcomeRowInput[];
}): OutcomeImportRequest {
  if (!isUuid(req.accountId))
    throw new InvalidArgumentError('account_id must be a UUID (an account_id from ads_list_accounts)');
  if (!SOURCE.test(req.source))
    throw new InvalidArgumentError('source must be 1 to 255 letters, digits, underscores or hyphens');
  checkLength('name', req.name, 1, 200);
  checkCurrency('currency', req.currency);
  checkLength('attribution', req.attribution, 1, 1000);
  if (req.rows.length < 1 || req.rows.length > MAX_OUTCOME_ROWS)
    throw new InvalidArgumentError(`rows must have 1 to ${MAX_OUTCOME_ROWS} items (got ${req.rows.length})`);
  const issues: string[] = [];
  personal('source', req.source, issues, 'id');
  personal('name', req.name, issues);
  personal('attribution', req.attribution, issues);
  for (const [i, r] of req.rows.entries()) checkRow(r, `rows[${i}]`, issues);
  refuse(issues);
  const first = new Map<string, Outcome>();
  const conflicts = new Set<string>();
  let skipped = 0;
  for (const r of req.rows) {
    const o = outcomeOf(r, req.accountId, req.currency);
    const earlier = first.get(o.externalId);
    if (earlier === undefined) first.set(o.externalId, o);
    else if (earlier.fingerprint === o.fingerprint) skipped++;
    else conflicts.add(o.externalId);
  }
  if (conflicts.size > 0) {
    throw new InvalidArgumentError(
      `external_id ${describeIds([...conflicts])} appear${conflicts.size === 1 ? 's' : ''} more than once with different content; nothing was imported`,
    );
  }
  return {
    accountId: req.accountId,
    source: req.source,
    name: req.name,
    currency: req.currency,
    attribution: req.attribution,
    received: req.rows.length,
    outcomes: [...first.values()],
    skippedInRequest: skipped,
  };
}

/** The ids, quoted, the first 20 of them. */
export function describeIds(ids: readonly string[]): string {
  const shown = ids.slice(0, 20).map((id) => JSON.stringify(id));
  return ids.length > 20 ? `${shown.join(', ')} and ${ids.length - 20} more` : shown.join(', ');
}

/** An outcome as the refund rules read it: saved, or being imported (`earlier`: by another import). */
export interface RefundRuleOutcome {
  externalId: string;
  accountId: string;
  currency: string;
  kind: OutcomeKind;
  value: string | null;
  refundOf: string | null;
  earlier: boolean;
}

/** Outcomes a refund may name: they have a value to give back. */
const REFUNDABLE: readonly OutcomeKind[] = ['order', 'booking'];
/** Decimal places of a value (`value` has at most 10). */
const VALUE_SCALE = 10;

const valueUnits = (text: string): bigint => {
  const [whole = '0', fraction = ''] = text.split('.');
  return BigInt(whole + fraction.padEnd(VALUE_SCALE, '0'));
};

const unitsText = (units: bigint): string => {
  const digits = units.toString().padStart(VALUE_SCALE + 1, '0');
  return canonicalDecimal(`${digits.slice(0, -VALUE_SCALE)}.${digits.slice(-VALUE_SCALE)}`);
};

/** A refund rule broken, and whether an outcome of another import takes part in it. */
export interface RefundProblem {
  message: string;
  earlier: boolean;
}

/**
 * refundProblems checks the refunds among `outcomes` (one source's) whose refund_of names an
 * outcome among them: it must be an order or a booking (a refund of a refund would count the
 * money twice; a qualified lead has no value), of the same account and currency, and its refunds
 * together may not give back more than its value. A refund whose order is not known is not checked.
 */
export function refundProblems(outcomes: readonly RefundRuleOutcome[]): RefundProblem[] {
  const byId = new Map(outcomes.map((o) => [o.externalId, o]));
  const refundsOf = new Map<string, RefundRuleOutcome[]>();
  const problems: RefundProblem[] = [];
  for (const r of outcomes) {
    const target = r.refundOf === null ? undefined : byId.get(r.refundOf);
    if (target === undefined) continue;
    const earlier = r.earlier || target.earlier;
    const names = `refund_of of external_id ${JSON.stringify(r.externalId)} names ${JSON.stringify(target.externalId)}`;
    if (!REFUNDABLE.includes(target.kind)) {
      problems.push({
        message: `${names}, which is a ${target.kind}${target.kind === 'refund' ? '' : ' (it has no value to refund)'}; give the external_id of the order or booking it refunds`,
        earlier,
      });
    } else if (target.accountId !== r.accountId) {
      problems.push({
        message: `${names}, an outcome of another ad account (${target.accountId}); a refund belongs to the account of the order it refunds`,
        earlier,
      });
    } else if (target.currency !== r.currency) {
      problems.push({
        message: `${names}, which is in ${target.currency} where the refund is in ${r.currency}; a refund is in the currency of the order it refunds`,
        earlier,
      });
    } else {
      refundsOf.set(target.externalId, [...(refundsOf.get(target.externalId) ?? []), r]);
    }
  }
  for (const [id, refunds] of refundsOf) {
    const target = byId.get(id) as RefundRuleOutcome;
    const refunded = refunds.reduce((sum, r) => sum + valueUnits(r.value ?? '0'), 0n);
    if (target.value === null || refunded <= valueUnits(target.value)) continue;
    problems.push({
      message: `the refunds of external_id ${JSON.stringify(id)} (${describeIds(refunds.map((r) => r.externalId))}) come to ${unitsText(refunded)} ${target.currency}, more than its value of ${canonicalDecimal(target.value)} ${target.currency}; refunds give back at most what was paid`,
      earlier: target.earlier || refunds.some((r) => r.earlier),
    });
  }
  return problems;
}
