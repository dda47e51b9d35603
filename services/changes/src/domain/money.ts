/**
 * Money for planning: a decimal amount as exact integer micros of the ad account's currency. The
 * arithmetic is on the decimal digits (BigInt), never binary floating point: "0.3" is 300000.
 */
import { InvalidArgumentError } from '@adsmcp/runtime/errors';

export const PURPOSES = ['budget', 'cpm', 'cpc', 'cpa'] as const;
export const OBJECTIVES = ['impressions', 'clicks', 'conversions'] as const;
export const WIRE_FORMATS = ['single', 'bulk'] as const;
export type Purpose = (typeof PURPOSES)[number];
export type WireFormat = (typeof WIRE_FORMATS)[number];

const MICROS_PER_UNIT = 1_000_000n;
/** The largest bid an ad group accepts (and so the largest CPM, CPC or CPA): 30,400,000 units. */
export const MAX_BID_MICROS = 30_400_000_000_000n;
/** The largest campaign budget the platform accepts, well within an int64: 1,000,000,000 units. */
export const MAX_BUDGET_MICROS = 1_000_000_000_000_000n;
const AMOUNT = /^(\d+)(?:\.(\d+))?$/;

/**
 * The objective each bid purpose pays for: a CPM bid pays for impressions, a CPC bid for clicks,
 * a CPA bid for conversions, so any other objective with it is refused. A budget serves any objective.
 */
const OBJECTIVE_OF: Record<Purpose, string | undefined> = {
  budget: undefined,
  cpm: 'impressions',
  cpc: 'clicks',
  cpa: 'conversions',
};

export interface MoneyPlanInput {
  amount: string;
  currency: string;
  purpose: string;
  objective: string;
  wireFormat: string;
  accountName: string;
  accountCurrency: string;
}

export interface MoneyPlan {
  currency: string;
  minorUnits: number;
  purpose: Purpose;
  objective: string;
  wireFormat: WireFormat;
  amountMicros: bigint;
  wireMicros: bigint;
  cpmSingleMicros?: bigint;
  cpmBulkMicros?: bigint;
  explanation: string;
}

/**
 * How many digits after the decimal point `currency` has: the Unicode CLDR's currency digits, as
 * the runtime's ICU knows them. They differ from ISO 4217 where the minor unit is not used in
 * practice (HUF, IDR, COP: whole units; IQD: whole dinars), as ad platforms bill those currencies.
 */
export function minorUnitsOf(currency: string): number {
  return (
    new Intl.NumberFormat('en', { style: 'currency', currency }).resolvedOptions().maximumFractionDigits ?? 2
  );
}

function oneOf<const V extends readonly string[]>(value: string, allowed: V, field: string): V[number] {
  if (!allowed.includes(value)) {
    throw new InvalidArgumentError(`${field} must be one of ${allowed.join(', ')} (got "${value}")`);
  }
  return value;
}

/** `amount` (decimal digits) as micros, refusing more decimals than the currency has. */
export function toMicros(amount: string, currency: string, minorUnits: number): bigint {
  const m = AMOUNT.exec(amount);
  if (m === null) {
    throw new InvalidArgumentError(
      `amount must be decimal digits with an optional fractional part, such as "19.99" (got "${amount}")`,
    );
  }
  const whole = m[1] ?? '0';
  const fraction = m[2] ?? '';
  if (fraction.length > minorUnits) {
    throw new InvalidArgumentError(
      minorUnits === 0
        ? `amount ${amount} has a fractional part, but ${currency} has no minor units: give a whole number`
        : `amount ${amount} has ${fraction.length} decimal places, but ${currency} has ${minorUnits}`,
    );
  }
  return BigInt(whole) * MICROS_PER_UNIT + BigInt(fraction.padEnd(6, '0'));
}

function checkObjective(purpose: Purpose, objective: string): void {
  if (objective === '') return;
  oneOf(objective, OBJECTIVES, 'objective');
  const paidFor = OBJECTIVE_OF[purpose];
  if (paidFor !== undefined && objective !== paidFor) {
    throw new InvalidArgumentError(
      `purpose ${purpose} pays for ${paidFor}, so it cannot serve objective ${objective}: ` +
        `use objective ${paidFor}, or the purpose that pays for ${objective}`,
    );
  }
}

function checkBounds(micros: bigint, purpose: Purpose, amount: string, currency: string): void {
  if (micros === 0n) throw new InvalidArgumentError('amount must be greater than 0');
  const max = purpose === 'budget' ? MAX_BUDGET_MICROS : MAX_BID_MICROS;
  if (micros > max) {
    throw new InvalidArgumentError(
      `amount ${amount} ${currency} is above the largest ${purpose === 'budget' ? 'budget' : 'bid'}, ` +
        `${max / MICROS_PER_UNIT} ${currency} (${max} micros)`,
    );
  }
}

/** Plans `input.amount` as micros of the account's currency, for the purpose and wire format. */
export function planMoney(input: MoneyPlanInput): MoneyPlan {
  const purpose = oneOf(input.purpose, PURPOSES, 'purpose');
  const wireFormat = oneOf(
    input.wireFormat === '' ? 'single' : input.wireFormat,
    WIRE_FORMATS,
    'wire_format',
  );
  checkObjective(purpose, input.objective);
  if (!/^[A-Z]{3}$/.test(input.currency)) {
    throw new InvalidArgumentError(
      `currency must be 3 uppercase letters, such as USD (got "${input.currency}")`,
    );
  }
  if (input.currency !== input.accountCurrency) {
    throw new InvalidArgumentError(
      `ad account ${input.accountName} uses ${input.accountCurrency}, not ${input.currency}; ` +
        `amounts are not converted: give the amount in ${input.accountCurrency}`,
    );
  }
  const minorUnits = minorUnitsOf(input.accountCurrency);
  const amountMicros = toMicros(input.amount, input.currency, minorUnits);
  checkBounds(amountMicros, purpose, input.amount, input.currency);
  const base = {
    currency: input.currency,
    minorUnits,
    purpose,
    objective: input.objective,
    wireFormat,
    amountMicros,
  };
  if (purpose !== 'cpm') {
    return {
      ...base,
      wireMicros: amountMicros,
      explanation: `${input.amount} ${input.currency} ${purpose === 'budget' ? 'budget' : `${purpose} bid`} is ${amountMicros} micros`,
    };
  }
  // A currency with up to 3 minor units always divides; one with 4 (CLF, UYW) may not, and a bid
  // is never rounded.
  if (amountMicros % 1000n !== 0n) {
    throw new InvalidArgumentError(
      `a CPM of ${input.amount} ${input.currency} per thousand impressions is ${amountMicros} micros per thousand, ` +
        `${Number(amountMicros) / 1000} micros per single impression, which is not a whole number of micros: ` +
        `give the CPM in steps of 0.001 ${input.currency}`,
    );
  }
  const single = amountMicros / 1000n;
  const wireMicros = wireFormat === 'single' ? single : amountMicros;
  return {
    ...base,
    wireMicros,
    cpmSingleMicros: single,
    cpmBulkMicros: amountMicros,
    explanation:
      `a CPM of ${input.amount} ${input.currency} per thousand impressions is ${single} micros per single ` +
      `impression (single wire format) or ${amountMicros} micros per thousand impressions (bulk wire format); ` +
      `send ${wireMicros} for ${wireFormat}`,
  };
}
