import assert from 'node:assert/strict';
import { test } from 'node:test';
import { InvalidArgumentError } from '@adsmcp/runtime/errors';
import { type MoneyPlanInput, planMoney } from './money.ts';

const usd: MoneyPlanInput = {
  amount: '0',
  currency: 'USD',
  purpose: 'budget',
  objective: '',
  wireFormat: '',
  accountName: 'Demo Store (USD)',
  accountCurrency: 'USD',
};
const plan = (over: Partial<MoneyPlanInput>) => planMoney({ ...usd, ...over });
const refused = (over: Partial<MoneyPlanInput>, message: RegExp) =>
  assert.throws(
    () => plan(over),
    (e: unknown) => e instanceof InvalidArgumentError && message.test(e.message),
  );

test('decimal amounts become exact micros, with no binary floating point error', () => {
  assert.equal(plan({ amount: '0.3' }).amountMicros, 300_000n);
  assert.equal(plan({ amount: '19.99' }).amountMicros, 19_990_000n);
  assert.equal(plan({ amount: '0.1' }).amountMicros + plan({ amount: '0.2' }).amountMicros, 300_000n);
  assert.equal(plan({ amount: '12' }).wireMicros, 12_000_000n);
});

test('an amount with more decimals than the currency has is refused; JPY has none', () => {
  const yen = { currency: 'JPY', accountCurrency: 'JPY' };
  refused({ ...yen, amount: '1.5' }, /JPY has no minor units/);
  assert.equal(plan({ ...yen, amount: '1500' }).amountMicros, 1_500_000_000n);
  assert.equal(plan({ ...yen, amount: '1500' }).minorUnits, 0);
  refused({ amount: '1.999' }, /3 decimal places, but USD has 2/);
});

test('a currency other than the account’s is refused, naming the one the account uses', () => {
  refused(
    { currency: 'EUR', amount: '10' },
    /ad account Demo Store \(USD\) uses USD, not EUR.*give the amount in USD/,
  );
});

test('a CPM shows both wire formats: micros per single impression and per thousand', () => {
  const single = plan({ purpose: 'cpm', amount: '2.50', objective: 'impressions' });
  assert.equal(single.cpmSingleMicros, 2_500n);
  assert.equal(single.cpmBulkMicros, 2_500_000n);
  assert.equal(single.wireFormat, 'single');
  assert.equal(single.wireMicros, 2_500n);
  const bulk = plan({ purpose: 'cpm', amount: '2.50', wireFormat: 'bulk' });
  assert.equal(bulk.wireMicros, 2_500_000n);
  assert.equal(bulk.cpmSingleMicros, 2_500n);
  assert.equal(plan({ purpose: 'cpc', amount: '1' }).cpmSingleMicros, undefined);
});

test('a bid purpose with an objective it does not pay for is refused', () => {
  refused({ purpose: 'cpc', objective: 'impressions', amount: '1' }, /purpose cpc pays for clicks/);
  refused({ purpose: 'cpm', objective: 'conversions', amount: '1' }, /purpose cpm pays for impressions/);
  assert.equal(plan({ purpose: 'cpa', objective: 'conversions', amount: '5' }).amountMicros, 5_000_000n);
  assert.equal(plan({ purpose: 'budget', objective: 'clicks', amount: '5' }).objective, 'clicks');
  refused({ objective: 'reach', amount: '1' }, /objective must be one of/);
});

test('amounts are bounded: above zero, bids up to 30,400,000 units, budgets up to 1,000,000,000 units', () => {
  refused({ amount: '0' }, /greater than 0/);
  assert.equal(plan({ purpose: 'cpc', amount: '30400000' }).amountMicros, 30_400_000_000_000n);
  refused({ purpose: 'cpc', amount: '30400000.01' }, /above the largest bid, 30400000 USD/);
  assert.equal(plan({ amount: '1000000000' }).amountMicros, 1_000_000_000_000_000n);
  refused({ amount: '1000000000.01' }, /above the largest budget/);
  refused({ amount: '99999999999999999999999' }, /above the largest budget/);
});

test('a CPM in a currency with 4 minor units is refused unless a single impression is a whole number of micros', () => {
  const clf = { currency: 'CLF', accountCurrency: 'CLF', purpose: 'cpm', objective: 'impressions' };
  refused(
    { ...clf, amount: '0.0001' },
    /100 micros per thousand, 0\.1 micros per single impression, .*steps of 0\.001 CLF/,
  );
  refused({ ...clf, amount: '1.2345' }, /1234\.5 micros per single impression/);
  const whole = plan({ ...clf, amount: '1.234' });
  assert.equal(whole.cpmSingleMicros, 1234n);
  assert.equal(whole.cpmBulkMicros, 1_234_000n);
  // A CPC in CLF keeps all four decimals.
  assert.equal(plan({ ...clf, purpose: 'cpc', objective: 'clicks', amount: '0.0001' }).wireMicros, 100n);
});

test('a malformed amount, currency or purpose is refused naming the field', () => {
  refused({ amount: '1e3' }, /amount must be decimal digits/);
  refused({ amount: '-1' }, /amount must be decimal digits/);
  refused({ amount: '.5' }, /amount must be decimal digits/);
  refused({ currency: 'usd', amount: '1' }, /currency must be 3 uppercase letters/);
  refused({ purpose: 'cpv', amount: '1' }, /purpose must be one of budget, cpm, cpc, cpa/);
  refused({ wireFormat: 'csv', amount: '1' }, /wire_format must be one of single, bulk/);
});
