/**
 * The spend envelope of an ad account: the most its daily spend may rise in any rolling 24 hours,
 * the sum of daily-budget increases and of new daily budgets, in micros of the account currency.
 * Pure rules; the ledger of what applied changes used is the controls store's.
 */
import { minorUnitsOf } from './money.ts';
import { fieldsOf } from './standards-rules.ts';

/** The rolling window the envelope is counted over. */
export const ENVELOPE_WINDOW_HOURS = 24;

/** What one change raises daily budgets by, and where. */
export interface EnvelopeUse {
  micros: bigint;
  /** One line per daily budget the change raises or creates, naming its field. */
  parts: string[];
}

/** The envelope a person set for an account; `envelopeMicros` null is "no envelope". */
export interface Envelope {
  envelopeMicros: bigint | null;
  /** With no envelope: refuse every change that raises a daily budget ("no envelope, no write"). */
  failClosed: boolean;
}

const isObject = (v: unknown): v is Record<string, unknown> =>
  typeof v === 'object' && v !== null && !Array.isArray(v);

function micros(v: unknown): bigint | undefined {
  if (typeof v === 'number' && Number.isSafeInteger(v)) return BigInt(v);
  if (typeof v === 'string' && /^-?\d{1,20}$/.test(v)) return BigInt(v);
  return undefined;
}

/** The object at `path` (`body.a.b[2]` as fieldsOf writes it) within `root`, the `body.` left out. */
function objectAt(root: unknown, path: string): Record<string, unknown> | undefined {
  const steps = path.replace(/^body\.?/, '').match(/[^.[\]]+/g) ?? [];
  let at: unknown = root;
  for (const step of steps) {
    if (Array.isArray(at) && /^\d+$/.test(step)) at = at[Number(step)];
    else if (isObject(at)) at = at[step];
    else return undefined;
  }
  return isObject(at) ? at : undefined;
}

const parentPath = (path: string) => path.slice(0, path.lastIndexOf('.'));

/**
 * The daily budget `object` has: its `daily_budget_micros`, or its `budget_micros` unless its
 * `budget_type` (`type` when the patch sets none) is lifetime. A lifetime budget is no daily
 * budget; zero when there is none.
 */
function dailyBudgetOf(object: Record<string, unknown> | undefined, type?: unknown): bigint {
  if (object === undefined) return 0n;
  const daily = micros(object.daily_budget_micros);
  if (daily !== undefined) return daily;
  const budgetType = object.budget_type ?? type;
  const amount = micros(object.budget_micros);
  return amount !== undefined && budgetType !== 'lifetime' ? amount : 0n;
}

/**
 * envelopeUse says what the operation `body` raises daily budgets by: for each object it sets a
 * daily budget of, the new budget less the daily budget the object has now in `before` (the live
 * object the change is made to, none for a create), when that is an increase. A decrease, a
 * lifetime budget and a budget left as it is use nothing.
 */
export function envelopeUse(body: unknown, before?: unknown): EnvelopeUse {
  const parts: string[] = [];
  let total = 0n;
  const seen = new Set<string>();
  for (const f of fieldsOf(body)) {
    if (f.key !== 'daily_budget_micros' && f.key !== 'budget_micros') continue;
    const at = parentPath(f.path);
    if (seen.has(at)) continue;
    seen.add(at);
    const was = objectAt(before, at);
    const now = dailyBudgetOf(f.parent, was?.budget_type);
    if (now === 0n) continue;
    const old = dailyBudgetOf(was);
    if (now <= old) continue;
    total += now - old;
    parts.push(
      old === 0n
        ? `${f.path} ${now} (a new daily budget)`
        : `${f.path} ${old} → ${now} (a daily budget raised by ${now - old})`,
    );
  }
  return { micros: total, parts };
}

/** `value` micros as an amount of `currency` with its minor units, and the micros beside it. */
export function amountOf(value: bigint, currency: string): string {
  if (currency === '') return `${value} micros`;
  const digits = minorUnitsOf(currency);
  const negative = value < 0n;
  const abs = negative ? -value : value;
  const units = abs / 1_000_000n;
  const fraction = (abs % 1_000_000n).toString().padStart(6, '0').slice(0, digits);
  const shown = digits === 0 ? `${units}` : `${units}.${fraction}`;
  return `${negative ? '-' : ''}${shown} ${currency} (${value} micros)`;
}

/** How much of the envelope is left after `usedMicros` in the window; null without an envelope. */
export function envelopeLeft(envelope: Envelope, usedMicros: bigint): bigint | null {
  if (envelope.envelopeMicros === null) return null;
  const left = envelope.envelopeMicros - usedMicros;
  return left > 0n ? left : 0n;
}

/**
 * Why a change that raises daily budgets by `useMicros` may not be made now, the envelope having
 * `usedMicros` used in the last 24 hours, or undefined when it may. A change that raises nothing
 * is never refused.
 */
export function envelopeRefusal(
  accountId: string,
  envelope: Envelope,
  use: EnvelopeUse,
  usedMicros: bigint,
  currency = '',
): string | undefined {
  if (use.micros <= 0n) return undefined;
  const raises = `it raises daily budgets by ${amountOf(use.micros, currency)}: ${use.parts.join(', ')}`;
  if (envelope.envelopeMicros === null) {
    if (!envelope.failClosed) return undefined;
    return `ad account ${accountId} has no spend envelope and is set to "no envelope, no write": no change that raises a daily budget may be made until an admin sets an envelope; ${raises}`;
  }
  const left = envelopeLeft(envelope, usedMicros) ?? 0n;
  if (use.micros <= left) return undefined;
  return `ad account ${accountId}'s spend envelope is ${amountOf(envelope.envelopeMicros, currency)} in any ${ENVELOPE_WINDOW_HOURS} hours, of which ${amountOf(usedMicros, currency)} is used and ${amountOf(left, currency)} is left; ${raises}`;
}
