import assert from 'node:assert/strict';
import { randomUUID } from 'node:crypto';
import { describe, test } from 'node:test';
import { InvalidArgumentError, StaleRevisionError } from '@adsmcp/runtime/errors';
import {
  type CheckedSave,
  newOptimizer,
  nextOffsetOf,
  pageOf,
  pausedOptimizer,
  type SaveInput,
  statusOf,
  type UncheckedConfig,
  updatedOptimizer,
  validateConfig,
  validateSave,
} from '../src/domain/optimizer.ts';

const validConfig = (): UncheckedConfig => ({
  campaignIds: ['c-1', 'c-2'],
  goal: 'cpa',
  cadenceHours: 24,
  windowHours: 168,
  reportingDelayHours: 48,
  minImpressions: 1000,
  minClicks: 50,
  minConversions: 5,
  maxAdsPerCampaign: 3,
  reviewHours: 24,
  publishHours: 4,
  allowedDomains: ['example.com', 'shop.example.com'],
});

/** Asserts that `fn` throws an InvalidArgumentError whose message matches `message`. */
function refuses(fn: () => unknown, message: RegExp): void {
  assert.throws(fn, (err: unknown) => {
    assert.ok(err instanceof InvalidArgumentError, String(err));
    assert.match(err.message, message);
    return true;
  });
}

const withConfig = (patch: Partial<UncheckedConfig>) => () => validateConfig({ ...validConfig(), ...patch });

describe('optimizer configuration rules', () => {
  test('a configuration within every bound is accepted as it is', () => {
    const full = {
      ...validConfig(),
      conversionGoalId: 'purchase',
      target: 12.5,
      brandInstructions: 'Plain words.',
    };
    assert.deepEqual(validateConfig(full), full);
  });

  test('optional fields may be absent and stay absent', () => {
    const checked = validateConfig(validConfig());
    assert.equal('target' in checked, false);
    assert.equal('conversionGoalId' in checked, false);
    assert.equal('brandInstructions' in checked, false);
  });

  test('campaign_ids needs 1 to 20 items', () => {
    refuses(withConfig({ campaignIds: [] }), /^config\.campaign_ids must have 1 to 20 items \(got 0\)/);
    const twentyOne = Array.from({ length: 21 }, (_, i) => `c-${i}`);
    refuses(
      withConfig({ campaignIds: twentyOne }),
      /config\.campaign_ids must have 1 to 20 items \(got 21\)/,
    );
    assert.doesNotThrow(withConfig({ campaignIds: twentyOne.slice(0, 20) }));
  });

  test('a repeated campaign id is refused, naming the repeating item', () => {
    refuses(withConfig({ campaignIds: ['a', 'b', 'a'] }), /config\.campaign_ids\[2\] repeats "a"/);
  });

  test('each campaign id is 1 to 255 characters', () => {
    refuses(withConfig({ campaignIds: ['ok', ''] }), /config\.campaign_ids\[1\] must be 1 to 255 characters/);
    refuses(withConfig({ campaignIds: ['x'.repeat(256)] }), /config\.campaign_ids\[0\] must be 1 to 255/);
    assert.doesNotThrow(withConfig({ campaignIds: ['x'.repeat(255)] }));
  });

  test('goal is cpc, cpa or ctr', () => {
    refuses(withConfig({ goal: 'roas' }), /config\.goal must be one of cpc, cpa, ctr \(got "roas"\)/);
    for (const goal of ['cpc', 'cpa', 'ctr']) assert.doesNotThrow(withConfig({ goal }));
  });

  test('conversion_goal_id, when given, is 1 to 255 characters', () => {
    refuses(withConfig({ conversionGoalId: '' }), /config\.conversion_goal_id must be 1 to 255/);
    refuses(withConfig({ conversionGoalId: 'g'.repeat(256) }), /config\.conversion_goal_id/);
    assert.doesNotThrow(withConfig({ conversionGoalId: 'g'.repeat(255) }));
  });

  test('target, when given, is greater than 0 and at most 1000000', () => {
    refuses(withConfig({ target: 0 }), /config\.target must be a number greater than 0 and at most 1000000/);
    refuses(withConfig({ target: -1 }), /config\.target/);
    refuses(withConfig({ target: 1_000_000.5 }), /config\.target/);
    refuses(withConfig({ target: Number.NaN }), /config\.target/);
    assert.doesNotThrow(withConfig({ target: 0.0001 }));
    assert.doesNotThrow(withConfig({ target: 1_000_000 }));
  });

  const integerBounds: [keyof UncheckedConfig, string, number, number][] = [
    ['cadenceHours', 'cadence_hours', 6, 720],
    ['windowHours', 'window_hours', 24, 744],
    ['reportingDelayHours', 'reporting_delay_hours', 24, 168],
    ['minImpressions', 'min_impressions', 1, 10_000_000],
    ['minClicks', 'min_clicks', 1, 1_000_000],
    ['minConversions', 'min_conversions', 1, 1_000_000],
    ['maxAdsPerCampaign', 'max_ads_per_campaign', 1, 5],
    ['reviewHours', 'review_hours', 1, 72],
    ['publishHours', 'publish_hours', 1, 24],
  ];
  for (const [key, field, min, max] of integerBounds) {
    test(`${field} is an integer from ${min} to ${max}`, () => {
      const rule = new RegExp(`^config\\.${field} must be an integer from ${min} to ${max}`);
      refuses(withConfig({ [key]: min - 1 }), rule);
      refuses(withConfig({ [key]: max + 1 }), rule);
      refuses(withConfig({ [key]: min + 0.5 }), rule);
      assert.doesNotThrow(withConfig({ [key]: min }));
      assert.doesNotThrow(withConfig({ [key]: max }));
    });
  }

  test('window_hours need not be at least cadence_hours', () => {
    assert.doesNotThrow(withConfig({ cadenceHours: 720, windowHours: 24 }));
  });

  test('brand_instructions, when given, is at most 12000 characters, counted as code points', () => {
    refuses(
      withConfig({ brandInstructions: 'b'.repeat(12_001) }),
      /config\.brand_instructions must be at most 12000 characters \(got 12001\)/,
    );
    assert.doesNotThrow(withConfig({ brandInstructions: '' }));
    assert.doesNotThrow(withConfig({ brandInstructions: '😀'.repeat(12_000) }));
  });

  test('allowed_domains needs 1 to 30 items', () => {
    refuses(withConfig({ allowedDomains: [] }), /config\.allowed_domains must have 1 to 30 items \(got 0\)/);
    const many = Array.from({ length: 31 }, (_, i) => `d${i}.example.com`);
    refuses(
      withConfig({ allowedDomains: many }),
      /config\.allowed_domains must have 1 to 30 items \(got 31\)/,
    );
    assert.doesNotThrow(withConfig({ allowedDomains: many.slice(0, 30) }));
  });

  test('a repeated allowed domain is refused, naming the repeating item', () => {
    refuses(
      withConfig({ allowedDomains: ['a.com', 'a.com'] }),
      /config\.allowed_domains\[1\] repeats "a\.com"/,
    );
  });

  test('each allowed domain is 1 to 253 characters', () => {
    refuses(withConfig({ allowedDomains: [''] }), /config\.allowed_domains\[0\] must be 1 to 253 characters/);
    const label = 'a'.repeat(63);
    const long = [label, label, label, 'a'.repeat(62)].join('.'); // 254
    refuses(
      withConfig({ allowedDomains: [long] }),
      /config\.allowed_domains\[0\] must be 1 to 253 characters/,
    );
    assert.doesNotThrow(withConfig({ allowedDomains: [long.slice(1)] }));
  });

  test('an allowed domain must be a bare lowercase hostname, naming the item that is not', () => {
    const bad = [
      'https://x.com',
      'x.com/path',
      'x.com:443',
      'Example.com',
      'ex ample.com',
      '-x.com',
      'x-.com',
      'x..com',
      '.x.com',
      'x.com.',
      '*.x.com',
      `${'a'.repeat(64)}.com`,
    ];
    for (const domain of bad) {
      refuses(
        withConfig({ allowedDomains: ['ok.com', domain] }),
        /^config\.allowed_domains\[1\] must be a hostname such as example\.com/,
      );
    }
    for (const domain of ['x.com', 'shop-1.example.co.uk', 'xn--bcher-kva.example', 'localhost']) {
      assert.doesNotThrow(withConfig({ allowedDomains: [domain] }), domain);
    }
  });
});

const ACCOUNT = randomUUID();
const saveInput = (patch: Partial<SaveInput> = {}): SaveInput => ({
  accountId: ACCOUNT,
  name: 'Weekly copy review',
  config: validConfig(),
  enabled: true,
  ...patch,
});

describe('save rules', () => {
  test('a create names no optimizer and no revision', () => {
    const save = validateSave(saveInput());
    assert.equal(save.update, undefined);
  });

  test('a create with an expected_revision is refused, since it is most likely an update missing its optimizer_id', () => {
    refuses(() => validateSave(saveInput({ expectedRevision: 1 })), /expected_revision is only for updates/);
  });

  test('an update needs expected_revision', () => {
    refuses(
      () => validateSave(saveInput({ optimizerId: randomUUID() })),
      /expected_revision is required when updating/,
    );
  });

  test('expected_revision is an integer from 1 to 1000000', () => {
    const optimizerId = randomUUID();
    for (const expectedRevision of [0, 1_000_001, 1.5]) {
      refuses(
        () => validateSave(saveInput({ optimizerId, expectedRevision })),
        /expected_revision must be an integer from 1 to 1000000/,
      );
    }
    assert.deepEqual(validateSave(saveInput({ optimizerId, expectedRevision: 1_000_000 })).update, {
      optimizerId,
      expectedRevision: 1_000_000,
    });
  });

  test('account_id and optimizer_id must be UUIDs', () => {
    refuses(() => validateSave(saveInput({ accountId: 'acct-1' })), /account_id must be a UUID/);
    refuses(
      () => validateSave(saveInput({ optimizerId: 'opt-1', expectedRevision: 1 })),
      /optimizer_id must be a UUID/,
    );
  });

  test('name is 1 to 200 characters', () => {
    refuses(() => validateSave(saveInput({ name: '' })), /name must be 1 to 200 characters \(got 0\)/);
    refuses(() => validateSave(saveInput({ name: 'n'.repeat(201) })), /name must be 1 to 200 characters/);
    assert.doesNotThrow(() => validateSave(saveInput({ name: 'n'.repeat(200) })));
  });

  test('a save without a configuration is refused', () => {
    refuses(() => validateSave(saveInput({ config: undefined })), /config is required/);
  });

  test('a configuration rule broken in a save is refused naming the config field', () => {
    refuses(
      () => validateSave(saveInput({ config: { ...validConfig(), cadenceHours: 5 } })),
      /config\.cadence_hours/,
    );
  });
});

const T0 = new Date('2026-03-01T10:00:00.000Z');
const hoursAfter = (t: Date, h: number) => new Date(t.getTime() + h * 3_600_000);
const ids = { optimizerId: randomUUID(), workspaceId: randomUUID() };
const created = (patch: Partial<SaveInput> = {}) => newOptimizer(validateSave(saveInput(patch)), ids, T0);
const updateOf = (revision: number, patch: Partial<SaveInput> = {}): CheckedSave =>
  validateSave(saveInput({ optimizerId: ids.optimizerId, expectedRevision: revision, ...patch }));

describe('optimizer lifecycle', () => {
  test('a new enabled optimizer is active at revision 1 with its first review one cadence away', () => {
    const o = created();
    assert.equal(o.revision, 1);
    assert.equal(statusOf(o), 'active');
    assert.equal(o.pausedAt, null);
    assert.deepEqual(o.nextReviewAt, hoursAfter(T0, 24));
    assert.deepEqual(o.createdAt, T0);
  });

  test('a new disabled optimizer is paused and has no review due', () => {
    const o = created({ enabled: false });
    assert.equal(statusOf(o), 'paused');
    assert.deepEqual(o.pausedAt, T0);
    assert.equal(o.nextReviewAt, null);
  });

  test('an update at the current revision moves to the next revision and reschedules the review', () => {
    const t1 = hoursAfter(T0, 1);
    const next = updatedOptimizer(
      created(),
      updateOf(1, { name: 'Renamed', config: { ...validConfig(), cadenceHours: 48 } }),
      t1,
    );
    assert.equal(next.revision, 2);
    assert.equal(next.name, 'Renamed');
    assert.equal(next.config.cadenceHours, 48);
    assert.deepEqual(next.nextReviewAt, hoursAfter(t1, 48));
    assert.deepEqual(next.updatedAt, t1);
    assert.deepEqual(next.createdAt, T0);
  });

  test('a stale revision is refused with the current revision', () => {
    const current = { ...created(), revision: 3 };
    assert.throws(
      () => updatedOptimizer(current, updateOf(2), T0),
      (err: unknown) => {
        assert.ok(err instanceof StaleRevisionError);
        assert.equal(err.currentRevision, 3);
        assert.match(err.message, /optimizer is at revision 3/);
        return true;
      },
    );
  });

  test('an update may not move the optimizer to another account', () => {
    refuses(
      () => updatedOptimizer(created(), updateOf(1, { accountId: randomUUID() }), T0),
      /account_id cannot change/,
    );
  });

  test('saving a paused optimizer enabled resumes it; saving it disabled keeps when it was paused', () => {
    const paused = pausedOptimizer(created(), T0);
    assert.ok(paused);
    const t1 = hoursAfter(T0, 2);
    const stillPaused = updatedOptimizer(paused, updateOf(2, { enabled: false }), t1);
    assert.deepEqual(stillPaused.pausedAt, T0);
    assert.equal(stillPaused.nextReviewAt, null);
    const resumed = updatedOptimizer(stillPaused, updateOf(3, { enabled: true }), t1);
    assert.equal(statusOf(resumed), 'active');
    assert.equal(resumed.pausedAt, null);
    assert.deepEqual(resumed.nextReviewAt, hoursAfter(t1, 24));
  });

  test('pausing stops the schedule and moves to the next revision', () => {
    const t1 = hoursAfter(T0, 5);
    const paused = pausedOptimizer(created(), t1);
    assert.ok(paused);
    assert.equal(statusOf(paused), 'paused');
    assert.equal(paused.enabled, false);
    assert.deepEqual(paused.pausedAt, t1);
    assert.equal(paused.nextReviewAt, null);
    assert.equal(paused.revision, 2);
  });

  test('pausing a paused optimizer changes nothing', () => {
    assert.equal(pausedOptimizer(created({ enabled: false }), hoursAfter(T0, 1)), undefined);
  });
});

describe('list pages', () => {
  test('limit defaults to 20 and offset to 0', () => {
    assert.deepEqual(pageOf(undefined, undefined), { limit: 20, offset: 0 });
  });

  test('limit is 1 to 100 and offset 0 to 100000', () => {
    refuses(() => pageOf(0, 0), /limit must be an integer from 1 to 100 \(got 0\)/);
    refuses(() => pageOf(101, 0), /limit must be an integer from 1 to 100/);
    refuses(() => pageOf(10, -1), /offset must be an integer from 0 to 100000/);
    refuses(() => pageOf(10, 100_001), /offset must be an integer from 0 to 100000/);
    assert.deepEqual(pageOf(100, 100_000), { limit: 100, offset: 100_000 });
  });

  test('the next offset follows the page while more remain', () => {
    assert.equal(nextOffsetOf({ limit: 2, offset: 0 }, 2, 5), 2);
    assert.equal(nextOffsetOf({ limit: 2, offset: 4 }, 1, 5), undefined);
    assert.equal(nextOffsetOf({ limit: 2, offset: 10 }, 0, 5), undefined);
    assert.equal(nextOffsetOf({ limit: 100, offset: 100_000 }, 100, 200_000), undefined);
  });
});
