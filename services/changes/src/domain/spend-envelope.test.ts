import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import fc from 'fast-check';
import { amountOf, envelopeLeft, envelopeRefusal, envelopeUse } from './spend-envelope.ts';

const budget = fc.integer({ min: 1, max: 1_000_000_000_000 });

describe('what a change uses of the spend envelope', () => {
  test('a new daily budget uses all of it; a lifetime budget uses nothing', () => {
    const job = {
      operations: [
        { type: 'create_campaign', body: { name: 'A', budget_micros: 50_000_000, budget_type: 'daily' } },
        { type: 'create_campaign', body: { name: 'B', budget_micros: 70_000_000, budget_type: 'lifetime' } },
      ],
    };
    const use = envelopeUse(job);
    assert.equal(use.micros, 50_000_000n);
    assert.deepEqual(use.parts, ['body.operations[0].body.budget_micros 50000000 (a new daily budget)']);
  });

  test('an increase uses the difference, a decrease or the same budget uses nothing (any amounts)', () => {
    fc.assert(
      fc.property(budget, budget, (was, now) => {
        const use = envelopeUse({ daily_budget_micros: now }, { daily_budget_micros: was });
        assert.equal(use.micros, now > was ? BigInt(now - was) : 0n);
        assert.equal(use.parts.length, now > was ? 1 : 0);
      }),
    );
  });

  test('a lifetime budget switched to daily is a new daily budget', () => {
    const use = envelopeUse(
      { budget_micros: 9_000_000, budget_type: 'daily' },
      { budget_micros: 20_000_000, budget_type: 'lifetime' },
    );
    assert.equal(use.micros, 9_000_000n);
  });

  test('the uses of a job are the sum of its parts, whatever their order', () => {
    fc.assert(
      fc.property(fc.array(budget, { maxLength: 20 }), (amounts) => {
        const job = {
          operations: amounts.map((a) => ({ body: { budget_micros: a, budget_type: 'daily' } })),
        };
        const expected = amounts.reduce((s, a) => s + BigInt(a), 0n);
        assert.equal(envelopeUse(job).micros, expected);
        assert.equal(envelopeUse({ operations: [...job.operations].reverse() }).micros, expected);
      }),
    );
  });
});

describe('the envelope refuses what does not fit', () => {
  test('a use fits exactly when it is at most what is left (any envelope, used and use)', () => {
    fc.assert(
      fc.property(budget, fc.integer({ min: 0, max: 2_000_000_000_000 }), budget, (env, used, use) => {
        const envelope = { envelopeMicros: BigInt(env), failClosed: false };
        const refusal = envelopeRefusal('acc', envelope, { micros: BigInt(use), parts: ['x'] }, BigInt(used));
        const left = envelopeLeft(envelope, BigInt(used)) ?? 0n;
        assert.equal(refusal === undefined, BigInt(use) <= left);
        assert.ok(left >= 0n);
      }),
    );
  });

  test('without an envelope a change passes, unless fail closed refuses every raise', () => {
    const use = { micros: 1n, parts: ['body.daily_budget_micros 1 (a new daily budget)'] };
    assert.equal(envelopeRefusal('acc', { envelopeMicros: null, failClosed: false }, use, 0n), undefined);
    assert.match(
      envelopeRefusal('acc', { envelopeMicros: null, failClosed: true }, use, 0n) ?? '',
      /no spend envelope and is set to "no envelope, no write".*body\.daily_budget_micros/,
    );
    assert.equal(
      envelopeRefusal('acc', { envelopeMicros: null, failClosed: true }, { micros: 0n, parts: [] }, 0n),
      undefined,
    );
  });

  test('a refusal names the envelope, the used and the left amounts in the account currency', () => {
    const refusal = envelopeRefusal(
      'acc',
      { envelopeMicros: 80_000_000n, failClosed: false },
      { micros: 50_000_000n, parts: ['body.operations[0].body.budget_micros 50000000 (a new daily budget)'] },
      50_000_000n,
      'USD',
    );
    assert.equal(
      refusal,
      "ad account acc's spend envelope is 80.00 USD (80000000 micros) in any 24 hours, of which 50.00 USD (50000000 micros) is used and 30.00 USD (30000000 micros) is left; it raises daily budgets by 50.00 USD (50000000 micros): body.operations[0].body.budget_micros 50000000 (a new daily budget)",
    );
    assert.equal(amountOf(1_500_000n, 'JPY'), '1 JPY (1500000 micros)');
  });
});
